"""The answer key of problem set 7: every check behaves, the key agrees with hand calculations
from published figures, each choice's key follows from a measurement with chalk, and the prompts
state the key's inputs."""
import math

import nbformat
import numpy as np
import pytest

from chalk import models
from chalk.figures import revnets
from chalk.teaching.chapters import ROOT
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch07_ciphers_revnets as key

EXERCISES = problem_set("07_ciphers_revnets")
rv = key.rv


# --- independent checks: hand calculations from published figures, not from chalk ----------------
PRESENT = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)  # Bogdanov et al. 2007, Table 1


def ddt(sbox, a, b):
    return sum(sbox[x] ^ sbox[x ^ a] == b for x in range(16))


def heys_permute(block):
    """Heys 2002, Table 2: bit i (0 = most significant) moves to 4 (i mod 4) + i // 4."""
    return sum(1 << (15 - (4 * (i % 4) + i // 4)) for i in range(16) if block >> (15 - i) & 1)


def two_couplings_inverse(y1, y2):
    # Second coupling: F = tanh 3t, G = exp(-t^2); first: F = sin t, G = t^2 / 2. Last one first.
    u2 = y2 - math.exp(-y1 ** 2)
    u1 = y1 - math.tanh(3 * u2)
    x2 = u2 - u1 ** 2 / 2
    return u1 - math.sin(x2), x2


CH_D, CH_LAYERS, CH_VOCAB = 8192, 80, 32000  # Chinchilla 70B, Hoffmann et al. 2022, Table 4 and §4
CH_T = 4 * 2048
CH_LAYER = CH_T * CH_D * 2  # one BF16 layer-sized array
# At the peak both policies hold the running layer (34 s b h), the head's input and FP32 logits.
CH_SHARED = 34 * CH_T * CH_D + CH_LAYER + CH_T * CH_VOCAB * 4
# Block: the layer inputs and the running layer's two gradient buffers (dy, dx). Reversible: the output
# pair, the recovered inputs and four gradient buffers (two streams), 8 layer-sized arrays.
CH_BLOCK_OWN, CH_REV_OWN = 2 * CH_LAYER, 8 * CH_LAYER
L2_13B_PARAMS = 13.016e9  # Llama 2 13B, Hugging Face model card (13,015,864,320 parameters)
L8_PARAMS, L8_LAYERS, L8_HEADS, L8_DHEAD = 8.03e9, 32, 32, 128  # Llama 3.1 8B model card / config.json
ATTN8 = L8_LAYERS * 4 * L8_HEADS * L8_DHEAD * 32768 / 2  # causal: 16,384 tokens attended on average
INDEPENDENT = {
    "flip_random_4bit": (sum(k * math.comb(4, k) for k in range(1, 5)) / 15 / 4, 1e-9),
    "pmf_one_bit": (6 / 63, 1e-9),
    # Round 1: nibble 2, 0xA -> 0x5; round 2: 0x0202, two S-boxes 0x2 -> 0x5.
    "characteristic_prob": (ddt(PRESENT, 0xA, 0x5) / 16 * (ddt(PRESENT, 0x2, 0x5) / 16) ** 2, 1e-9),
    "coupling_inverse": (two_couplings_inverse(0.4, 0.3)[0], 1e-9),
    # Block keeps 80 layer inputs; reversible keeps 2 and inverts with 2 more, and 4 gradient buffers.
    "peak_ratio": ((CH_LAYERS * CH_LAYER + CH_BLOCK_OWN + CH_SHARED) / (CH_REV_OWN + CH_SHARED), 1e-3),
    # 8ND with reuse against 10ND naive: C / 8N - C / 10N.
    "reuse_tokens": (1e23 / (8 * L2_13B_PARAMS) - 1e23 / (10 * L2_13B_PARAMS), 1e-3),
    # Korthikanti et al. 2022, §5: recompute the attention core only; the step is 3 forwards.
    "selective_overhead": (ATTN8 / (3 * (2 * L8_PARAMS + ATTN8)), 0.005),
}


@pytest.mark.parametrize("name", INDEPENDENT)
def test_key_agrees_with_hand_calculation(name):
    value, tol = INDEPENDENT[name]
    assert math.isclose(EXERCISES[name].expected(), value, rel_tol=tol)


def test_numeric_items_name_their_topic_and_the_judgement_ones_say_so():
    assert all(ex.topic for ex in EXERCISES.values())
    assert sum(ex.kind != "number" or ex.judgement for ex in EXERCISES.values()) >= 5
    assert EXERCISES["characteristic_prob"].judgement and EXERCISES["reuse_tokens"].judgement


# --- the characteristic ----------------------------------------------------------------------------
def test_the_characteristic_is_the_unique_likeliest_trail_by_hand():
    # Every DDT row on the trail has one largest entry, so the prompt's rule picks one trail.
    for a, b in ((0xA, 0x5), (0x2, 0x5)):
        row = [ddt(PRESENT, a, out) for out in range(16)]
        assert row[b] == max(row) == 4 and row.count(4) == 1, (a, row)
    assert heys_permute(0x0050) == 0x0202  # the 0x5 out of nibble 2 reaches nibbles 1 and 3
    prob, trail = key.characteristic()
    assert trail == [0x00A0, 0x0202, 0x0505] and key.active_sboxes() == 3
    # PRESENT is differentially 4-uniform (Bogdanov et al. 2007, §4.3): 1/4 per active S-box at best.
    assert prob == (4 / 16) ** 3


@pytest.mark.parametrize("wrong, slip", [(4 / 16, "stops after round 1"), ((4 / 16) ** 2, "as many active"),
                                         (64.0, "DDT counts")])
def test_characteristic_slips_get_their_hint(wrong, slip):
    result = judge(EXERCISES["characteristic_prob"], wrong)
    assert result.status == WRONG and slip in result.message


# --- couplings -------------------------------------------------------------------------------------
def test_recovered_input_maps_back_to_the_stated_output():
    x1, x2 = key.recovered_input()
    assert math.isclose(x2, two_couplings_inverse(0.4, 0.3)[1], rel_tol=1e-12)
    y = (np.array(x1), np.array(x2))
    for coupling in key.COUPLINGS:
        y = coupling.forward(*y)
    assert np.allclose(y, key.COUPLED_OUTPUT, rtol=0, atol=1e-12)


@pytest.mark.parametrize("slip, words", [(key._x1_inverting_in_forward_order, "last one first"),
                                         (key._x1_using_y2_for_x2, "F(y2) is not F(x2)"),
                                         (key._x1_running_forward, "runs the couplings forward")])
def test_coupling_slips_get_their_hint(slip, words):
    result = judge(EXERCISES["coupling_inverse"], slip())
    assert result.status == WRONG and words in result.message


# --- memory and FLOPs -------------------------------------------------------------------------------
def test_peak_ratio_at_a_neighbouring_depth_is_wrong():
    ex = EXERCISES["peak_ratio"]
    # The explorer offers depths in steps of 8 for other models; one layer more or less must fail too.
    for layers in (CH_LAYERS - 1, CH_LAYERS + 1):
        hand = ((layers * CH_LAYER + CH_BLOCK_OWN + CH_SHARED) / (CH_REV_OWN + CH_SHARED))
        assert math.isclose(key.peak_ratio(layers), hand, rel_tol=1e-9)
        assert judge(ex, hand).status == WRONG, layers
    assert judge(ex, INDEPENDENT["peak_ratio"][0]).status == RIGHT


def test_no_setting_of_the_explorer_gives_the_peak_ratio():
    # The ratio depends on width, depth and vocabulary only: every model and depth the explorer offers.
    ex = EXERCISES["peak_ratio"]
    for name in revnets.MODELS:
        m = models.get(name)
        for depth in revnets.DEPTHS:
            peak = {p: rv.activation_bytes(1, m.d_model, depth, p, peak=True, vocab=m.vocab,
                                           kept_per_width=rv.layer_kept_per_width(name))
                    for p in ("block", "reversible")}
            assert judge(ex, peak["block"] / peak["reversible"]).status == WRONG, (name, depth)


def test_memory_policy_key_follows_from_the_peaks():
    gpt3_d, gpt3_layers, gpt3_vocab, tokens = 12288, 96, 50257, 2 * 2048  # Brown et al. 2020, Table 2.1
    layer = tokens * gpt3_d * 2
    shared = 34 * tokens * gpt3_d + layer + tokens * gpt3_vocab * 4
    by_hand = {"full": 34 * tokens * gpt3_d * gpt3_layers + 2 * layer + layer + tokens * gpt3_vocab * 4,
               "block": gpt3_layers * layer + 2 * layer + shared, "reversible": 8 * layer + shared}
    budget = key.POLICY_BUDGET_GB * 1e9
    peak = key.policy_memory()["peak"]
    for p, v in by_hand.items():
        assert math.isclose(peak[p] * 1e9, v, rel_tol=1e-9), p
    # The trap of option (b): block's kept inputs fit, its peak does not; only reversible's peak fits.
    assert gpt3_layers * layer < budget < by_hand["block"]
    assert by_hand["reversible"] < budget < by_hand["full"]
    assert key.policy_winner() == "reversible" and EXERCISES["memory_policy"].answer == "c"
    # Option (d) is wrong: what every policy shares is a fraction of the budget.
    assert shared + layer < budget / 2


def test_reuse_saves_one_forward():
    assert key.NAIVE_REVERSIBLE_FLOPS == 10 * rv.D * rv.N_act
    assert rv.TRAINING_FLOPS_BY_POLICY["reversible"] == 8 * rv.D * rv.N_act


# --- the choices: each key from a measurement, each wrong option with its feedback ------------------
def test_residual_network_at_gain_3_is_chaotic_on_every_seed():
    amplification = key.residual_amplification()
    assert len(amplification) == 10 and amplification.min() > 100  # (b), not (d)
    assert EXERCISES["residual_regime"].answer == "b"
    # Option (a)'s regime is real, at gain 1/2: within 3x on every seed; and nothing contracts (c).
    gentle = [rv.residual_sensitivity(24, width=32, scale=0.5, seed=s)[-1] for s in key.RESIDUAL_SEEDS]
    assert 1 < min(gentle) and max(gentle) < 3


def _good_cipher(x):
    return rv.feistel_encrypt(x, 0x0123456789ABCDEF, 8, 16)


def test_a_table_near_one_half_implies_avalanche_but_not_bit_independence():
    # A good 16-bit cipher passes the measurement, and its mean (avalanche) is near 1/2 with it.
    table = rv.avalanche_matrix(_good_cipher, 16, samples=4000)
    assert np.abs(table - 0.5).max() < 0.05 and abs(table.mean() - 0.5) < 0.01
    # Its low byte copied into the high byte: the same table, yet bits j and j + 8 flip together.
    def copied(x):
        low = _good_cipher(x) & np.uint64(0xFF)
        return (low << np.uint64(8)) | low
    table = rv.avalanche_matrix(copied, 16, samples=4000)
    assert np.abs(table - 0.5).max() < 0.05
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2 ** 16, size=4000, dtype=np.uint64)
    diff = copied(x) ^ copied(x ^ np.uint64(1 << 5))
    low, high = diff & np.uint64(0xFF), diff >> np.uint64(8)
    assert np.all(low == high)  # bit independence fails outright
    assert EXERCISES["avalanche_criteria"].answer == {"a", "b"}


def _lossy_round(r, k, half):
    table = np.array(key.LOSSY_TABLE, dtype=np.uint64)
    t, out = r ^ k, np.zeros_like(r)
    for shift in range(0, half, 4):
        out |= table[((t >> np.uint64(shift)) & np.uint64(0xF)).astype(np.intp)] << np.uint64(shift)
    return out


def test_a_lossy_table_serves_feistel_but_not_an_spn():
    assert len(set(key.LOSSY_TABLE)) < 16
    blocks = np.arange(2 ** 16, dtype=np.uint64)
    enc = rv.feistel_encrypt(blocks, 0x5EED, 6, 16, round_function=_lossy_round)
    assert np.unique(enc).size == 2 ** 16  # a permutation of all 16-bit blocks
    assert np.array_equal(rv.feistel_decrypt(enc, 0x5EED, 6, 16, round_function=_lossy_round), blocks)
    # The SPN's substitution layer on 16-bit blocks loses blocks: no inverse, whatever the key.
    assert np.unique(_lossy_round(blocks, np.uint64(0), 16)).size < 2 ** 16
    assert EXERCISES["spn_or_feistel"].answer == "a"


CHOICE_IDS = [i for i, ex in EXERCISES.items() if ex.kind in ("choice", "choices")]


@pytest.mark.parametrize("ex_id", CHOICE_IDS)
def test_choices_right_by_letter_and_text_and_each_wrong_option_gets_its_feedback(ex_id):
    ex = EXERCISES[ex_id]
    right = sorted(ex.right_letters())
    assert judge(ex, ", ".join(right)).status == RIGHT
    assert judge(ex, [ex.options[x].upper() for x in right] if ex.kind == "choices"
                 else "  " + ex.options[right[0]].upper()).status == RIGHT
    for letter, text in ex.feedback.items():
        if ex.kind == "choice":
            picked = letter
        else:  # misjudge this one option, keep the others right
            picked = ", ".join(sorted(set(right) ^ {letter}))
        result = judge(ex, picked) if picked else None
        if result is None:
            continue
        assert result.status == WRONG and text in result.message, (ex_id, letter)
    assert set(ex.feedback) | set(right) == set(ex.options)  # every option is either right or explained


def test_prompts_state_the_keys_inputs():
    text = "\n".join(c.source for c in nbformat.read(ROOT / "exercises" / "07_ciphers_revnets.ipynb", 4).cells)
    for ex_id in EXERCISES:
        assert f"check(\"{ex_id}\", {ex_id})" in text, ex_id
    for ex_id in CHOICE_IDS:
        for letter, option in EXERCISES[ex_id].options.items():
            assert f"({letter}) {option}" in text, (ex_id, letter)
    for stated in ("0x00A0", "depth=24, width=32, scale=3.0", "seeds 0 to 9", "(0.4, 0.3)",
                   "chinchilla-70b", "4 * 2048", "gpt-3-175b", "2 * 2048", "`11` GB", "1.0e23", "llama-2-13b",
                   "llama-3.1-8b", "32768", "FP32"):
        assert stated in text, stated
    assert key.RESIDUAL == dict(depth=24, width=32, scale=3.0) and list(key.RESIDUAL_SEEDS) == list(range(10))
    assert key.COUPLED_OUTPUT == (0.4, 0.3) and key.TRAIL_INPUT == 0x00A0
    assert (key.PEAK_MODEL, key.PEAK_TOKENS, key.POLICY_MODEL, key.POLICY_TOKENS) == \
        ("chinchilla-70b", 4 * 2048, "gpt-3-175b", 2 * 2048)
    assert (key.POLICY_BUDGET_GB, key.REUSE_MODEL, key.REUSE_BUDGET) == (11.0, "llama-2-13b", 1.0e23)
    for table in (key.PRESENT_SBOX, key.LOSSY_TABLE):
        assert ", ".join(f"0x{v:X}" for v in table) in text
