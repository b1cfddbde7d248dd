"""chalk.reversible against numbers published by others.

Each expected value is the publisher's number as printed, with its source; the tolerance says how
far our computation may sit from it and why. The inputs (model shapes, GPU counts, throughputs)
are the paper's own.
"""
import numpy as np
import pytest
import sympy as sp

from chalk import reversible as rv

HEYS = "Heys 2002, A Tutorial on Linear and Differential Cryptanalysis, Cryptologia 26(3), §4"
NARAYANAN = "Narayanan et al. 2021, arXiv 2104.04473, §5.1 (end-to-end training time)"
KORTHIKANTI = "Korthikanti et al. 2022, arXiv 2205.05198, §4.1-4.2 (activation memory)"
REFORMER = "Kitaev et al. 2020, arXiv 2001.04451, §1 (introduction)"
DAY = 86_400


def rel(a, b):
    return abs(a - b) / abs(b)


# --- differential cryptanalysis --------------------------------------------------------------------
@pytest.mark.parametrize("dx, dy, count", [(0xB, 0x2, 8), (0x4, 0x6, 6), (0x2, 0x5, 6)])
def test_heys_difference_table_entries(dx, dy, count):
    # Heys' S-box difference distribution table, the entries his characteristic uses. Exact.
    assert rv.difference_table(rv.HEYS_SBOX)[dx, dy] == count, HEYS


def test_heys_characteristic_probability_27_over_1024():
    # Heys: dP = [0000 1011 0000 0000] through three rounds reaches dU4 = [0000 0110 0000 0110]
    # with probability 8/16 x 6/16 x (6/16)^2 = 27/1024. Exact.
    probability, trail = rv.greedy_characteristic(0b0000_1011_0000_0000, 3)
    assert trail[-1] == 0b0000_0110_0000_0110, HEYS
    assert probability == 27 / 1024, HEYS


def test_heys_differential_measured_through_three_rounds_of_the_spn():
    # Encrypting real pairs through Heys' SPN with random independent round keys, the difference
    # 0606 follows 0B00 with probability at least the characteristic's 27/1024 (the differential also
    # counts other trails), and not much more (Heys' attack relies on this one trail dominating).
    # 10^6 pairs: one standard error is about 1.6e-4, 0.6% of 27/1024; 4 of them below are allowed.
    measured = rv.spn_differential(0x0B00, 0x0606, rounds=3, samples=1_000_000)
    sigma = (27 / 1024 / 1_000_000) ** 0.5
    assert 27 / 1024 - 4 * sigma < measured < 1.1 * 27 / 1024, HEYS


def test_spn_round_one_follows_the_difference_table():
    # One round: S-box 2 sees input difference B and outputs 2 with probability 8/16 (Heys,
    # Table 4); bit 6 of the block (S-box 2's third bit) goes to bit 9, 0040 after the permutation.
    assert abs(rv.spn_differential(0x0B00, 0x0040, rounds=1, samples=200_000) - 8 / 16) < 0.005, HEYS


def _aes_sbox():
    """FIPS-197 §5.1.1: multiplicative inverse in GF(2^8) mod x^8+x^4+x^3+x+1, then the affine map."""
    def mul(a, b):
        out = 0
        while b:
            if b & 1:
                out ^= a
            a = (a << 1) ^ (0x11B if a & 0x80 else 0)
            b >>= 1
        return out
    inverse = [0] + [next(y for y in range(1, 256) if mul(x, y) == 1) for x in range(1, 256)]
    rot = lambda v, s: ((v << s) | (v >> (8 - s))) & 0xFF  # noqa: E731
    return [b ^ rot(b, 1) ^ rot(b, 2) ^ rot(b, 3) ^ rot(b, 4) ^ 0x63 for b in inverse]


def test_aes_sbox_is_differentially_4_uniform():
    sbox = _aes_sbox()
    # FIPS-197 Figure 7 and the §5.1.1 example: S(00) = 63, S(01) = 7c, S(53) = ed.
    assert (sbox[0x00], sbox[0x01], sbox[0x53]) == (0x63, 0x7C, 0xED)
    ddt = rv.difference_table(sbox)
    # Daemen and Rijmen, The Design of Rijndael (2002) §3.6 / Nyberg, EUROCRYPT 1993: the largest
    # entry is 4, a maximum difference propagation probability of 4/256 = 2^-6. Exact.
    assert ddt[1:].max() == 4
    # Nyberg 1993: inversion in GF(2^n), n even, gives each nonzero row one 4, 126 twos and 129 zeros.
    for row in ddt[1:]:
        assert (np.sum(row == 4), np.sum(row == 2), np.sum(row == 0)) == (1, 126, 129)


# --- training compute with recomputation -------------------------------------------------------------
@pytest.mark.parametrize("params, tokens, gpus, tflops, days", [
    # GPT-3: P = 175B, T = 300B tokens, n = 1024 A100s at X = 140 TFLOP/s each -> "34 days".
    (175e9, 300e9, 1024, 140e12, 34),
    # 1T model: T = 450B, n = 3072 at X = 163 TFLOP/s -> "84 days".
    (1e12, 450e9, 3072, 163e12, 84),
])
def test_narayanan_training_time_uses_8nd(params, tokens, gpus, tflops, days):
    # The paper estimates time = 8 T P / (n X): 6ND plus one recomputed forward. It prints whole
    # days, and its 1T model has 1.008e12 parameters, so 1.5% tolerance.
    seconds = rv.training_flops(params, tokens, "block") / (gpus * tflops)
    assert rel(seconds / DAY, days) <= 0.015, NARAYANAN


def test_narayanan_flops_coefficients_96_over_72():
    # Narayanan et al. §5.1: 96 B s l h^2 (...) FLOPs per iteration with recomputation, where a
    # forward pass is 24 B s l h^2 and forward + backward is 72 B s l h^2 (3 forwards). Exact.
    assert 1 + rv.recompute_overhead("block") == pytest.approx(96 / 72), NARAYANAN


# --- activation memory -----------------------------------------------------------------------------
def _per_layer_per_token_over_h(h, heads, seq_len, policy="full"):
    """Bytes per layer per token divided by h, the unit Korthikanti et al. write s b h in."""
    tokens, layers = 2048, 4
    return rv.activation_bytes(tokens, h, layers, policy, 2, heads=heads, seq_len=seq_len) / (tokens * h * layers)


def test_korthikanti_34_sbh_without_stored_scores():
    # "34 s b h" bytes per layer for everything but the attention-score matrices (16-bit). Exact.
    assert _per_layer_per_token_over_h(12288, 0, 0) == pytest.approx(34), KORTHIKANTI


def test_korthikanti_5as_over_h_is_80_for_gpt3():
    # GPT-3 175B: a = 96 heads, s = 2048, h = 12288 -> 5 a s / h = 80. Exact.
    total = _per_layer_per_token_over_h(12288, 96, 2048)
    assert total - _per_layer_per_token_over_h(12288, 0, 0) == pytest.approx(80), KORTHIKANTI


@pytest.mark.parametrize("h, heads, saving", [
    (12288, 96, 0.70),   # GPT-3 175B
    (20480, 128, 0.65),  # MT-NLG 530B (a = 128, h = 20480)
])
def test_korthikanti_selective_recomputation_saving(h, heads, saving):
    # Recomputing only the attention scores removes 70% (GPT-3) and 65% (MT-NLG) of the activation
    # memory at s = 2048. Printed to whole percents: 0.5 point tolerance.
    kept = _per_layer_per_token_over_h(h, 0, 0) / _per_layer_per_token_over_h(h, heads, 2048)
    assert abs((1 - kept) - saving) <= 0.005, KORTHIKANTI


def test_korthikanti_selective_recomputation_flops_s_over_18h_plus_3s():
    # Korthikanti et al. count per layer 72 b s h^2 (1 + s / 6h) model FLOPs and 4 b s^2 h for the
    # recomputed attention core (full score matrix), so the overhead is s / (18 h + 3 s). With a GPT
    # layer's 12 h^2 weights per layer and h = n_heads d_head, chalk's formula must reduce to it.
    h, s_ = sp.symbols("h s", positive=True)
    gpt = rv.SELECTIVE_RECOMPUTE_OVERHEAD.subs({rv.N_act: 12 * rv.n_layers * h ** 2, rv.d_head: h / rv.n_heads,
                                                rv.L: s_})
    assert sp.simplify(gpt - s_ / (18 * h + 3 * s_)) == 0, KORTHIKANTI


def test_korthikanti_full_recomputation_keeps_2_sbh_per_layer():
    # With full recomputation only each layer's input is kept: 2 s b h bytes per layer. Exact.
    assert _per_layer_per_token_over_h(12288, 96, 2048, "block") == pytest.approx(2), KORTHIKANTI


def test_reformer_activations_of_64k_tokens():
    # "64K tokens with embedding size 1024 and batch size 8 ... 0.5B floats, requiring another
    # 2GB of memory" (one layer's activations, 32-bit). 2 GB read as 2 GiB: 3% tolerance covers
    # the paper's rounding of 0.54B floats to "0.5B".
    one_layer = rv.activation_bytes(64 * 1024 * 8, 1024, 1, "block", 4)
    assert rel(one_layer, 2 * 2 ** 30) <= 0.03, REFORMER


def test_reformer_attention_matrix_of_64k_tokens():
    # "attention on sequences of length 64K ... the 64K x 64K attention matrix ... 16GB in 32-bit
    # floats" (batch 1, one head). GB read as GiB: 3% tolerance.
    scores = rv.numeric["score_elements"](64 * 1024, 1, 64 * 1024) * 4
    assert rel(scores, 16 * 2 ** 30) <= 0.03, REFORMER
