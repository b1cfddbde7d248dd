"""The answer key of problem set 2: every check behaves, and the key agrees with hand calculations.

The hand calculations type the closed forms and the model-card, spec-sheet and paper figures here,
not chalk's catalog or its functions, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import nbformat
import pytest

from chalk import moe
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch02_moe_racks as key
from conftest import ROOT

EXERCISES = problem_set("02_moe_racks")
NOTEBOOK = ROOT / "exercises" / "02_moe_racks.ipynb"

# --- typed from the sources ----------------------------------------------------------------------
# DeepSeek-V3 config_671B.json and report (arXiv 2412.19437): d_model 7,168, 256 routed experts, top-8,
# expert width 2,048, 61 layers of which the first 3 are dense.
DS_D, DS_N, DS_K, DS_FF, DS_MOE_LAYERS = 7168, 256, 8, 2048, 61 - 3
# Kimi K2 (github.com/MoonshotAI/Kimi-K2 README and config.json): d_model 7,168, 384 experts, top-8,
# 1 shared, expert width 2,048, 61 layers of which 1 dense (width 18,432), 64 heads, MLA ranks
# q 1,536 / kv 512, RoPE 64, head 128, vocabulary 163,840, untied embeddings.
KIMI_D, KIMI_N, KIMI_K, KIMI_FF, KIMI_LAYERS, KIMI_DENSE_FF, KIMI_VOCAB = 7168, 384, 8, 2048, 61, 18432, 163840
KIMI_MLA_ATTENTION = (7168 * 1536 + 1536 * 64 * (128 + 64) + 7168 * (512 + 64) + 512 * 64 * (128 + 128)
                      + 64 * 128 * 7168)
# Qwen3-235B-A22B config.json: d_model 4,096, 94 layers all MoE, 128 experts top-8, width 1,536,
# 64 query heads and 4 KV heads of 128, vocabulary 151,936, untied.
QW_D, QW_LAYERS, QW_N, QW_K, QW_FF, QW_VOCAB = 4096, 94, 128, 8, 1536, 151936
QW_ATTENTION = QW_D * 64 * 128 * 2 + QW_D * 4 * 128 * 2
# Spec sheets, per direction: H800 NVLink 400 GB/s both ways and a
# 400 Gb/s NIC; GB300 288 GB HBM3e per GPU, 8 TB/s, 5 PFLOP/s dense FP8, NVLink 5 1.8 TB/s both ways,
# an 800 Gb/s ConnectX-8 per GPU; B200 (HGX) 8 TB/s, 4.5 PFLOP/s dense FP8, NVLink 5 1.8 TB/s both
# ways; TPU v5p ICI 1,200 GB/s both ways; MI355X 288 GB per GPU, 8 per platform.
H800_UP, NIC_400G = 200e9, 400e9 / 8
GB300_HBM = MI355X_HBM = 288e9
GB300_HBM_BW, GB300_FP8, GB300_UP, GB300_NIC = 8e12, 5e15, 900e9, 800e9 / 8
B200_HBM_BW, B200_UP = 8e12, 900e9
V5P_UP = 1200e9 / 2
# DeepSeek-V3 report: 160 GB/s achievable on the H800's 200 GB/s NVLink, the share the measured link
# model applies to every chip; the fixed cost per call is fitted to DeepEP's table (chalk.moe).
ETA_UP = 160 / 200
ALPHA = moe.MEASURED.alpha
# Harter (1961), Biometrika 48, Table 1: expected largest of 32 standard normals.
Z_32 = 2.06967


def expert(d, ff):
    return 3 * d * ff   # a SwiGLU expert: gate, up and down


def kimi_copies_bytes():
    """Kimi K2's weights that are not routed experts, FP8: embeddings, attention, the dense layer,
    the shared experts and the routers."""
    params = (2 * KIMI_VOCAB * KIMI_D + KIMI_LAYERS * KIMI_MLA_ATTENTION + expert(KIMI_D, KIMI_DENSE_FF)
              + (KIMI_LAYERS - 1) * (expert(KIMI_D, KIMI_FF) + KIMI_D * KIMI_N))
    return params * 1


def kimi_sequences_per_gpu():
    """Sequences of KV one GPU's free HBM takes (a fraction: the key rounds it down per GPU)."""
    usable = GB300_HBM * 0.9
    experts = (KIMI_N // 64) * (KIMI_LAYERS - 1) * expert(KIMI_D, KIMI_FF)
    kv_per_sequence = 65536 * KIMI_LAYERS * (512 + 64) * 2   # MLA latent and RoPE key, BF16
    return (usable - experts - kimi_copies_bytes()) / kv_per_sequence


def kimi_decode_layer(tokens_per_gpu=128, gpus=64, weight_bytes=1, activation_bytes=2):
    """(all-to-all, matmuls, weight reads) of one Kimi K2 MoE layer decoding on a GB300 NVL72 with the
    measured link model: two calls' fixed cost plus the bytes at 80% of NVLink; the busiest GPU's
    routed experts (ceil(384 / gpus)) and the shared one, every expert touched at these batches."""
    sent = 2 * tokens_per_gpu * KIMI_K * KIMI_D * activation_bytes * (1 - 1 / gpus)
    a2a = 2 * ALPHA + sent / (ETA_UP * GB300_UP)
    flops = GB300_FP8 / weight_bytes  # BF16 runs at half the FP8 rate
    matmuls = 2 * tokens_per_gpu * (KIMI_K + 1) * expert(KIMI_D, KIMI_FF) / flops
    reads = (math.ceil(KIMI_N / gpus) + 1) * expert(KIMI_D, KIMI_FF) * weight_bytes / GB300_HBM_BW
    return a2a, matmuls, reads


def qwen_hide_tokens():
    """Tokens per GPU where Qwen3's nominal all-to-all on an HGX B200 equals one GPU's weight reads."""
    reads = (QW_N // 8) * expert(QW_D, QW_FF) * 1 / B200_HBM_BW
    per_token = 2 * QW_K * QW_D * 2 * (7 / 8) / B200_UP   # dispatch and combine, BF16, 7/8 leave the GPU
    return reads / per_token


def second_rack_ms_by_hand():
    """DeepSeek-V3 on 64 GPUs of a GB300 NVL72, then of two, 44 tokens per GPU and micro-batch, nominal."""
    tokens = 44
    a2a_one = 2 * tokens * DS_K * DS_D * 2 * (63 / 64) / GB300_UP
    a2a_two = 2 * tokens * DS_K * DS_D * 2 * (1 / 2) / GB300_NIC       # half the choices cross; NIC is slower
    reads_one = (DS_N // 64 + 1) * expert(DS_D, DS_FF) / GB300_HBM_BW   # 4 routed + the shared expert
    reads_two = (DS_N // 128 + 1) * expert(DS_D, DS_FF) / GB300_HBM_BW
    assert a2a_one < reads_one and a2a_two > reads_two   # hides on one rack, not on two
    return 1e3 * 2 * DS_MOE_LAYERS * (a2a_two - reads_one)


def qwen_weights_gb():
    experts = (QW_N // 8) * QW_LAYERS * expert(QW_D, QW_FF)
    copies = 2 * QW_VOCAB * QW_D + QW_LAYERS * (QW_ATTENTION + QW_D * QW_N)
    return (experts + copies) * 2 / 1e9


INDEPENDENT = {
    "alltoall_mb_kimi": (2 * (4096 / 16) * KIMI_K * KIMI_D * 1 * (15 / 16) / 1e6, 1e-9),
    "expert_gb_decode": (math.ceil((DS_N + 32) / 144) * DS_MOE_LAYERS * expert(DS_D, DS_FF) / 1e9, 1e-9),
    "three_box_slowdown": ((H800_UP / NIC_400G) * (2 / 3) / (7 / 8), 1e-9),
    # each GPU holds whole sequences: 64 x floor(50.3) = 3,200. The hand count leaves out norms and
    # the MLA's latent norms, a few parts in ten thousand of the weights, far from moving the floor.
    "max_batch_kimi": (64 * math.floor(kimi_sequences_per_gpu()), 1e-9),
    "weights_gb_qwen": (qwen_weights_gb(), 0.002),
    "imbalance_excess_pct": (100 * Z_32 * math.sqrt(32 * (DS_N - DS_K) / ((DS_N - 1) * 1024 * DS_K)), 1e-4),
    "torus_gbps": (4 / (3 * 12) * V5P_UP / 1e9, 1e-9),
    "hide_tokens_qwen": (qwen_hide_tokens(), 1e-9),
    "second_rack_ms": (second_rack_ms_by_hand(), 1e-9),
}
CHOICE_KEYS = {"hides_kimi_decode", "what_hides_kimi", "prefill_hides_qwen"}


def test_every_exercise_has_an_independent_check():
    assert len(EXERCISES) >= 10 and set(INDEPENDENT) | CHOICE_KEYS == set(EXERCISES)


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    got = EXERCISES[ex_id].expected()
    assert math.isclose(got, by_hand, rel_tol=tol, abs_tol=0.0), (got, by_hand)


def test_typical_mistakes_are_the_slips_they_name():
    # Dispatch only; BF16 activations.
    mb = {m.hint: m.wrong_answer(0) for m in EXERCISES["alltoall_mb_kimi"].mistakes}
    assert min(mb.values()) == pytest.approx(INDEPENDENT["alltoall_mb_kimi"][0] / 2)
    # Sending once per GPU and once per box: per token, one box reaches 8 (1 - C(224, 8)/C(256, 8))
    # GPUs and sends to 7/8 of them over NVLink; three boxes (256/24 experts per GPU, 256/3 per box)
    # reach 24 (1 - C(256 - 256/24, 8)/C(256, 8)) GPUs and 3 (1 - C(256 - 256/3, 8)/C(256, 8)) boxes,
    # 2/3 of the boxes over the network card, the GPUs over NVLink; the slower link sets the time.
    def missed(held):
        return math.prod((DS_N - held - i) / (DS_N - i) for i in range(DS_K))
    one = 8 * (1 - missed(32)) * 7 / 8 / H800_UP
    three = max(24 * (1 - missed(DS_N / 24)) * 7 / 8 / H800_UP, 3 * (1 - missed(DS_N / 3)) * 2 / 3 / NIC_400G)
    boxes = [m.wrong_answer(0) for m in EXERCISES["three_box_slowdown"].mistakes]
    assert boxes[3] == pytest.approx(three / one, rel=1e-9)
    # pooling the 64 GPUs' free HBM: floor(64 x 50.3) = 3,218, within 1% of the key, hence its 0.2%
    fit = [m.wrong_answer(0) for m in EXERCISES["max_batch_kimi"].mistakes]
    assert fit[0] == math.floor(64 * kimi_sequences_per_gpu())
    assert EXERCISES["max_batch_kimi"].rel_tol < (fit[0] / INDEPENDENT["max_batch_kimi"][0] - 1) / 2
    # a second rack: the whole two-rack all-to-all added; each micro-batch's layer in series
    rack = [m.wrong_answer(0) for m in EXERCISES["second_rack_ms"].mistakes]
    a2a_one = 2 * 44 * DS_K * DS_D * 2 * (63 / 64) / GB300_UP
    a2a_two = 2 * 44 * DS_K * DS_D * 2 * (1 / 2) / GB300_NIC
    up_two = 2 * 44 * DS_K * DS_D * 2 * (63 / 128) / GB300_UP       # the choices that stay in the rack
    reads_one, reads_two = (g * expert(DS_D, DS_FF) / GB300_HBM_BW for g in (5, 3))
    assert up_two < a2a_two
    assert rack[0] == pytest.approx(1e3 * 2 * DS_MOE_LAYERS * a2a_two)
    assert rack[1] == pytest.approx(1e3 * 2 * DS_MOE_LAYERS * (a2a_two + reads_two - a2a_one - reads_one))
    # the matmuls as the cover: Qwen3 on an HGX B200 is compute-bound only from n_step*
    qwen = [m.wrong_answer(0) for m in EXERCISES["hide_tokens_qwen"].mistakes]
    n_star_per_gpu = (QW_N // 8) * expert(QW_D, QW_FF) / B200_HBM_BW * 4.5e15 / (2 * QW_K * expert(QW_D, QW_FF))
    assert qwen[2] == pytest.approx(n_star_per_gpu) and qwen[2] > INDEPENDENT["hide_tokens_qwen"][0]


# --- the judgement items: every option's verdict recomputed by hand and by chalk ----------------------
def test_kimi_decode_all_to_all_outlasts_both_covers_but_hides_at_nominal_rates():
    a2a, matmuls, reads = kimi_decode_layer()
    assert a2a > reads > matmuls   # (c): neither the matmuls (a) nor the reads (b) cover it
    nominal = 2 * 128 * KIMI_K * KIMI_D * 2 * (63 / 64) / GB300_UP
    assert nominal < reads          # what option (b)'s feedback says of nominal rates
    t = key._layer(key.HIDE)
    assert (t.communication, t.compute, t.weights) == pytest.approx((a2a, matmuls, reads), rel=1e-9)
    assert EXERCISES["hides_kimi_decode"].answer == "c" and not t.hidden


def test_each_change_hides_exactly_when_the_key_says():
    by_hand = {"a": kimi_decode_layer(tokens_per_gpu=64), "b": kimi_decode_layer(activation_bytes=1),
               "c": kimi_decode_layer(gpus=32), "d": kimi_decode_layer(weight_bytes=2),
               "e": kimi_decode_layer(gpus=72)}
    hides = {x for x, (a2a, matmuls, reads) in by_hand.items() if a2a <= max(matmuls, reads)}
    assert hides == EXERCISES["what_hides_kimi"].answer == {"c", "d"}
    for x, change in key.HIDE_CHANGES.items():
        t = key._layer(key.HIDE, **change)
        assert (t.communication, t.compute, t.weights) == pytest.approx(by_hand[x], rel=1e-9), x
        # no verdict within 3% of the edge: a change of catalog rounding cannot flip it
        assert abs(t.communication / t.work - 1) > 0.03, x


def test_choices_are_judged_both_ways_with_their_feedback():
    one = EXERCISES["hides_kimi_decode"]
    assert judge(one, "c").status == RIGHT and judge(one, " (C) ").status == RIGHT
    assert judge(one, one.options["c"].upper()).status == RIGHT
    for letter, feedback in one.feedback.items():
        result = judge(one, letter)
        assert result.status == WRONG and feedback in result.message, letter
    many = EXERCISES["what_hides_kimi"]
    assert judge(many, "c, d").status == RIGHT and judge(many, "dc").status == RIGHT
    for wrong, misjudged in (("c", "d"), ("a, c, d", "a"), ("b, d", "c"), ("c, d, e", "e")):
        result = judge(many, wrong)
        assert result.status == WRONG and many.feedback[misjudged] in result.message, wrong


def test_qwen_prefill_all_to_all_outlasts_its_matmuls_at_any_prefill_batch():
    # Sent once per GPU: a token reaches 8 (1 - C(112, 8) / C(128, 8)) GPUs (16 experts on each), 7/8
    # of them other than its own; the matmuls are k experts of 3 d d_ff weights, 2 FLOPs each.
    reached = 8 * (1 - math.comb(QW_N - QW_N // 8, QW_K) / math.comb(QW_N, QW_K))
    a2a_per_token = 2 * QW_D * 2 * reached * (7 / 8) / B200_UP
    matmul_per_token = 2 * QW_K * expert(QW_D, QW_FF) / 4.5e15
    reads = (QW_N // 8) * expert(QW_D, QW_FF) / B200_HBM_BW
    assert a2a_per_token / matmul_per_token > 1.2                     # (c), not near the edge
    assert 4096 * matmul_per_token > 5 * reads                        # the matmuls are the cover
    t = moe.layer_times(key.PREFILL["model"], key.PREFILL["system"], key.PREFILL["tokens_per_chip"] * 8,
                        key.PREFILL["dtype"], dedup=key.PREFILL["dedup"])
    assert (t.communication, t.compute, t.weights) == pytest.approx(
        (4096 * a2a_per_token, 4096 * matmul_per_token, reads), rel=1e-9)
    assert EXERCISES["prefill_hides_qwen"].answer == "c"


def test_the_second_rack_and_the_threshold_are_on_the_side_of_the_edge_the_key_says():
    one, two = key._layer(key.RACK2), key._layer(key.RACK2, domains=2)
    assert one.weights > 1.5 * one.communication and two.communication > 2 * two.weights
    t = key.THRESHOLD
    at = moe.layer_times(t["model"], t["system"], EXERCISES["hide_tokens_qwen"].expected() * 8, t["dtype"])
    assert at.communication == pytest.approx(at.weights, rel=1e-9) and at.compute < 0.6 * at.weights


# --- the problem set states the key's scenario ------------------------------------------------------
def _prompts():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_every_exercise_has_a_prompt_and_the_title_is_right():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.cells[0].source.splitlines()[0] == "# Problem set 2: MoE across racks"
    assert set(_prompts()) == set(EXERCISES)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "alltoall_mb_kimi": [f"`{k.ALLTOALL['model']}`", f"{k.ALLTOALL['chips']} GPUs", f"{k.ALLTOALL['tokens']:,} tokens",
                             "FP8"],
        "expert_gb_decode": ["144 GPUs", "32 redundant", "FP8"],
        "three_box_slowdown": [f"`{k.BOXES['system']}`", "three such boxes", "every expert choice is sent on its own"],
        "max_batch_kimi": [f"`{k.FIT['model']}`", f"`{k.FIT['system']}`", f"{k.FIT['chips']} of the 72",
                           f"{k.FIT['context']:,} tokens", "BF16", "10%"],
        "weights_gb_qwen": [f"`{k.WEIGHTS['model']}`", f"`{k.WEIGHTS['system']}`", "BF16"],
        "imbalance_excess_pct": [f"{k.IMBALANCE['chips']} chips", f"{k.IMBALANCE['tokens']:,} tokens"],
        "torus_gbps": ["4 × 4 × 12", "1,200 GB/s"],
        "hides_kimi_decode": [f"`{k.HIDE['model']}`", f"`{k.HIDE['system']}`", f"{k.HIDE['chips']} of the 72",
                              f"{k.HIDE['tokens_per_chip']} tokens per GPU", "FP8", "BF16", 'links="measured"'],
        "what_hides_kimi": [f"{k.HIDE['chips']} GPUs", f"{k.HIDE['tokens_per_chip']} tokens per GPU",
                            "measured links"],
        "hide_tokens_qwen": [f"`{k.THRESHOLD['model']}`", f"`{k.THRESHOLD['system']}`", "FP8", "BF16", "nominal"],
        "prefill_hides_qwen": [f"`{k.PREFILL['model']}`", f"`{k.PREFILL['system']}`", "FP8", "BF16", "nominal",
                               f"{k.PREFILL['tokens_per_chip']:,} tokens per GPU", "`dedup=True`"],
        "second_rack_ms": [f"`{k.RACK2['model']}`", f"`{k.RACK2['system']}`", f"{k.RACK2['chips']} GPUs",
                           f"{k.RACK2['tokens_per_chip']} tokens per GPU", "two micro-batches", "nominal", "BF16"],
    }
    prompts = _prompts()
    assert set(stated) == set(EXERCISES)
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)
    # a choice's prompt lists every option as the key words it, and each change's numbers are the key's
    for ex_id in CHOICE_KEYS:
        for letter, option in EXERCISES[ex_id].options.items():
            assert f"- ({letter}) {option}" in prompts[ex_id], (ex_id, letter)
    changes = {x: ", ".join(f"{name}={value}" for name, value in c.items()) for x, c in k.HIDE_CHANGES.items()}
    assert changes == {"a": "tokens_per_chip=64", "b": "bytes_per_element=1", "c": "chips=32", "d": "dtype=bf16",
                       "e": "chips=72"}


def test_the_published_deployment_is_the_one_the_prompt_names():
    from chalk import moe
    d = next(x for x in moe.deployments() if x.name == key.DECODE["deployment"])
    assert (d.chips, d.nodes, d.redundant) == (144, 18, 32)


# --- the chapter's deck: one lecture-gap card for each of its corrections ------------------------------
def test_every_chapter_two_correction_has_a_lecture_gap_card():
    from chalk.teaching import corrections
    from chalk.teaching.flashcards import load_decks
    deck = {d.chapter: d for d in load_decks()}["02_moe_racks"]
    gaps = {c.id: c for c in deck.cards if "lecture-gap" in c.tags}
    slips = corrections.for_chapter("02_moe_racks")
    assert {"scale-up-out", "rack-taxes-experts", "nvl-counts-dies"} <= {c.id for c in slips}
    assert len(gaps) >= len(slips)
    # the cards on the two-rack claim quote the correction's slowdowns, one each
    rack = corrections.get("rack-taxes-experts").corrected()
    cards = {c.id: " ".join(c.back.split()) for c in deck.cards}
    flat = float(re.search(r"takes (\d+\.\d) times", rack).group(1))
    assert float(re.search(r"takes about (\d+) times", cards["moe_two_racks"]).group(1)) == round(flat)
    dedup = re.search(r", (\d+\.\d) times when a token crosses", rack).group(1)
    assert f"takes {dedup} times" in cards["moe_two_racks_dedup"]


def test_exact_answers_refuse_their_neighbours():
    exact = [ex for ex in EXERCISES.values() if getattr(ex, "exact", False)]
    assert {ex.id for ex in exact} == {"max_batch_kimi"}
    for ex in exact:
        key = ex.expected()
        assert judge(ex, key).status == RIGHT
        for near in (key - 1, key + 1, key + 0.5):
            assert judge(ex, near).status == WRONG, (ex.id, near)
