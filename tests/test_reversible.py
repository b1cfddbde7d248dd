"""Chapter 7's maths (chalk.reversible) against independent checks: hand-worked rounds, exhaustive
random permutations, Monte Carlo differentials, round trips, and byte counts by hand from published
configurations."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalk import ChalkError, UnknownName, models
from chalk import reversible as rv
from chalk.notation import n_bits


# --- Feistel ---------------------------------------------------------------------------------------
def _rf_identity(r, k, half):
    return r


def test_feistel_rounds_worked_by_hand():
    # F(R) = R ignores the key. Block 0xA5: L = A, R = 5. Round 1: (5, A^5 = F) = 0x5F;
    # round 2: (F, 5^F = A) = 0xFA.
    assert rv.feistel_encrypt(0xA5, 0, rounds=1, width=8, round_function=_rf_identity) == 0x5F
    assert rv.feistel_encrypt(0xA5, 0, rounds=2, width=8, round_function=_rf_identity) == 0xFA


@given(st.integers(1, 32).map(lambda h: 2 * h), st.integers(1, 12), st.sampled_from(list(rv.ROUND_FUNCTIONS)),
       st.integers(0, 2 ** 64 - 1), st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=20))
def test_feistel_round_trip_is_exact(width, rounds, rf, key, raw):
    if rf == "sbox" and width % 8:
        width = 8
    blocks = np.array(raw, dtype=np.uint64) & np.uint64((1 << width) - 1 if width < 64 else 2 ** 64 - 1)
    c = rv.feistel_encrypt(blocks, key, rounds, width, rf)
    assert np.array_equal(rv.feistel_decrypt(c, key, rounds, width, rf), blocks)


def test_feistel_is_a_permutation_although_its_round_function_is_not():
    half = 6
    r = np.arange(2 ** half, dtype=np.uint64)
    images = rv.ROUND_FUNCTIONS["middle-square"](r, np.uint64(0), half)
    assert len(np.unique(images)) < 2 ** half  # F has collisions: not invertible
    blocks = np.arange(2 ** (2 * half), dtype=np.uint64)
    assert len(np.unique(rv.feistel_encrypt(blocks, 99, 4, 2 * half))) == 2 ** (2 * half)


def test_key_changes_the_ciphertext_and_arrays_of_keys_broadcast():
    blocks = np.arange(100, dtype=np.uint64)
    a, b = rv.feistel_encrypt(blocks, 1), rv.feistel_encrypt(blocks, 2)
    assert np.mean(a == b) < 0.05
    keys = np.array([1, 2], dtype=np.uint64)[:, None]
    assert np.array_equal(rv.feistel_encrypt(blocks[None, :], keys), np.stack([a, b]))


# --- avalanche -------------------------------------------------------------------------------------
def test_avalanche_of_the_identity_is_one_bit():
    assert rv.avalanche(lambda x: x, 16) == pytest.approx(1 / 16)


def test_random_permutations_match_the_closed_form_not_one_half():
    # n = 4: the closed form is 8/15 = 0.533, distinguishable from the binomial 1/2 by many sigma.
    bits, trials, samples = 4, 300, 64
    rng = np.random.default_rng(7)
    scores = []
    for i in range(trials):
        table = rng.permutation(2 ** bits).astype(np.uint64)
        scores.append(rv.avalanche(lambda x, t=table: t[x.astype(np.intp)], bits, samples, seed=i))
    expected = float(rv.RANDOM_PERMUTATION_FLIP.subs(n_bits, bits))
    assert expected == pytest.approx(8 / 15)
    sigma = np.std(scores) / math.sqrt(trials)
    assert abs(np.mean(scores) - expected) < 4 * sigma
    assert abs(np.mean(scores) - 0.5) > 8 * sigma


def test_flip_count_distribution_of_a_random_permutation():
    bits = 8
    rng = np.random.default_rng(3)
    counts = np.zeros(bits + 1)
    for _ in range(40):
        table = rng.permutation(2 ** bits)
        x = np.arange(2 ** bits)
        for j in range(bits):
            counts += np.bincount(np.bitwise_count(table ^ table[x ^ (1 << j)]), minlength=bits + 1)
    observed = counts / counts.sum()
    pmf = rv.random_permutation_flip_pmf(bits)
    assert pmf.sum() == pytest.approx(1) and pmf[0] == 0
    # 40 x 8 x 256 / 2 = 40,960 independent-ish pairs; every bin within 0.01 of its probability.
    assert np.max(np.abs(observed - pmf)) < 0.01


def test_enough_feistel_rounds_reach_the_random_permutation_and_one_round_does_not():
    width, samples = 32, 4000
    expected = float(rv.RANDOM_PERMUTATION_FLIP.subs(n_bits, width))
    sigma = math.sqrt(width / 4) / width / math.sqrt(samples)
    full = rv.avalanche(lambda x: rv.feistel_encrypt(x, 5, 8, width), width, samples)
    assert abs(full - expected) < 4 * sigma
    assert rv.avalanche(lambda x: rv.feistel_encrypt(x, 5, 1, width), width, samples) < 0.3


def test_one_feistel_round_moves_the_left_half_bit_for_bit():
    # (L, R) -> (R, L ^ F(R)): a flipped bit i of L flips exactly bit i of the new right half.
    width, half = 16, 8
    m = rv.avalanche_matrix(lambda x: rv.feistel_encrypt(x, 3, 1, width), width, samples=200)
    for i in range(half, width):
        expected = np.zeros(width)
        expected[i - half] = 1
        assert np.array_equal(m[i], expected)
    for i in range(half):  # a flipped bit of R reaches the left half unchanged
        assert m[i, i + half] == 1


def test_linear_round_function_flips_fixed_bits_and_a_good_one_flips_half():
    lin = rv.avalanche_matrix(lambda x: rv.feistel_encrypt(x, 11, 8, 16, "linear"), 16, samples=300)
    assert set(np.unique(lin)) <= {0.0, 1.0}
    good = rv.avalanche_matrix(lambda x: rv.feistel_encrypt(x, 11, 8, 16), 16, samples=2000)
    assert np.max(np.abs(good - 0.5)) < 5 * math.sqrt(0.25 / 2000)


def test_avalanche_by_round_rises_towards_one_half():
    by_round = rv.feistel_avalanche_by_round(6, 32, samples=2000)
    assert by_round[0] < by_round[1] < by_round[2] and abs(by_round[-1] - 0.5) < 0.01


# --- differences -----------------------------------------------------------------------------------
def test_difference_table_rows_sum_to_the_table_size():
    ddt = rv.difference_table(rv.HEYS_SBOX)
    assert np.all(ddt.sum(axis=1) == 16) and ddt[0, 0] == 16 and np.all(ddt % 2 == 0)


def test_feistel_differential_matches_the_difference_table_product():
    # (a, 0) -> (0, a) with probability 1, then -> (a, b) with p = DDT[a, b]/16, then
    # -> (b, a ^ c) with DDT[b, c]/16: over random blocks and keys the 3-round probability is the
    # product. a = B, b = 2, c = 5 (Heys' S-box).
    ddt = rv.difference_table(rv.HEYS_SBOX)
    a, b, c = 0xB, 0x2, 0x5
    expected = ddt[a, b] / 16 * ddt[b, c] / 16
    measured = rv.feistel_differential(a << 4, (b << 4) | (a ^ c), rounds=3, width=8, samples=100_000)
    assert abs(measured - expected) < 5 * math.sqrt(expected * (1 - expected) / 100_000)


# --- couplings -------------------------------------------------------------------------------------
def test_coupling_inverts_non_invertible_functions_exactly_on_integers():
    c = rv.Coupling(lambda x: x ** 2 % 7, lambda y: np.sign(y) * 3)
    x1, x2 = np.arange(-5, 5), np.arange(10)[::-1].copy()
    y1, y2 = c.forward(x1, x2)
    assert np.array_equal(y1, x1 + x2 ** 2 % 7)
    back = c.inverse(y1, y2)
    assert np.array_equal(back[0], x1) and np.array_equal(back[1], x2)


@given(st.integers(0, 1000), st.integers(1, 6))
def test_coupling_round_trip_float64(seed, depth):
    stack = rv.reversible_stack(depth, 8, seed=seed)
    rng = np.random.default_rng(seed)
    x1, x2 = rng.standard_normal((2, 3, 8))
    y = (x1, x2)
    for c in stack:
        y = c.forward(*y)
    for c in reversed(stack):
        y = c.inverse(*y)
    assert np.allclose(y[0], x1, atol=1e-12) and np.allclose(y[1], x2, atol=1e-12)


def test_round_trip_error_grows_with_depth_and_shrinks_with_precision():
    e16 = rv.round_trip_error(16, dtype="float16")
    e32 = rv.round_trip_error(16, dtype="float32")
    e64 = rv.round_trip_error(16, dtype="float64")
    assert e64.max() < 1e-13 < e32[0]
    assert e32.max() < 1e-4 < e16[-1]
    assert e32[-4:].mean() > 3 * e32[:4].mean()
    assert rv.round_trip_error(16, scale=4.0)[-1] > e32[-1]


def test_residual_network_has_a_derivative_the_cipher_does_not():
    coarse = rv.residual_sensitivity(8, epsilon=1e-5)
    fine = rv.residual_sensitivity(8, epsilon=1e-7)
    assert np.allclose(coarse, fine, rtol=1e-3)  # the ratio converges: a derivative exists
    assert 0.2 < coarse.min() and coarse.max() < 10


def test_gain_and_architecture_decide_whether_a_random_network_amplifies():
    seeds = range(10)
    gentle = rv.sensitivity_sweep([1.0], 12, seeds=seeds)[0]
    assert gentle.max() < 10  # a trainable initialisation: proportional
    residual = rv.sensitivity_sweep([2.0, 4.0], 12, seeds=seeds)
    assert residual[0].min() > 10 and residual[1].min() > residual[0].min()
    plain = rv.sensitivity_sweep([0.5, 4.0], 24, residual=False, seeds=seeds)
    assert plain[0].max() < 1e-6  # ordered: the change dies out
    assert plain[1].min() > 100  # chaotic: it grows by orders of magnitude
    # Still a derivative, however large: the ratio does not depend on the step.
    coarse = rv.residual_sensitivity(24, scale=4.0, epsilon=1e-7, residual=False)
    fine = rv.residual_sensitivity(24, scale=4.0, epsilon=1e-9, residual=False)
    assert np.allclose(coarse, fine, rtol=1e-2)


# --- strict avalanche and Luby-Rackoff -----------------------------------------------------------------
def test_strict_avalanche_of_the_identity_and_of_a_random_permutation():
    # 16 bits: a fixed permutation's own cells sit within 0.5 / sqrt(2^15) of 1/2, under the sampling noise.
    bits, samples = 16, 4000
    identity = rv.avalanche_matrix(lambda x: x, bits, samples)
    stats = rv.strict_avalanche(identity, samples)
    assert stats == {"worst": 0.5, "beyond": bits * bits, "binary": 1.0, "sigma": 0.5 / math.sqrt(samples)}
    table = np.random.default_rng(3).permutation(2 ** bits).astype(np.uint64)
    perm = rv.avalanche_matrix(lambda x: table[x.astype(np.intp)], bits, samples)
    stats = rv.strict_avalanche(perm, samples)
    assert stats["beyond"] == 0 and stats["binary"] == 0 and stats["worst"] < 5 * stats["sigma"]


@pytest.mark.parametrize("bits", [3, 4, 6])
def test_output_bits_of_a_random_permutation_flip_slightly_against_each_other(bits):
    # Every nonzero output difference equally likely: count, over all of them, how often bits 0 and 1 flip.
    diffs = np.arange(1, 2 ** bits)
    a, b = diffs & 1, diffs >> 1 & 1
    corr = np.corrcoef(a, b)[0, 1]
    assert corr < 0
    assert float(rv.RANDOM_PERMUTATION_FLIP_CORRELATION.subs(n_bits, bits)) == pytest.approx(corr, rel=1e-12)


def test_a_cells_mean_can_pass_while_cells_fail():
    # Half the cells always flip, half never: the mean is exactly 1/2, every cell fails.
    m = np.tile([0.0, 1.0], (4, 2))
    assert m.mean() == 0.5
    assert rv.strict_avalanche(m, 100)["beyond"] == 16


def test_two_feistel_rounds_are_told_apart_and_four_are_not():
    assert rv.feistel_distinguisher(1) == 0  # one round leaves R as the left half: another test catches it
    assert rv.feistel_distinguisher(2) == 1
    assert rv.feistel_distinguisher(2, width=16, round_function="sbox") == 1
    # A random permutation matches with probability 2^-16 for 32-bit blocks.
    assert rv.feistel_distinguisher(3) < 1e-3 and rv.feistel_distinguisher(4) < 1e-3


def test_sbox_feistel_is_caught_at_five_rounds_as_four_8_bit_ciphers():
    # The S-box round never mixes nibble positions, so the 32-bit cipher is four 8-bit Feistel ciphers
    # side by side. A nibble whose left halves agree meets the pattern for free, one that differs about
    # 1/16 of the time: (1/16 + 15/16 * 1/16)^4 = (31/256)^4, about 14 times a random permutation's 2^-16.
    pairs, chance = 200_000, 2.0 ** -16
    sbox = rv.feistel_distinguisher(5, 32, "sbox", pairs)
    assert 5 * chance < sbox < 3 * (31 / 256) ** 4
    assert rv.feistel_distinguisher(3, 32, "middle-square", pairs) < 5 * chance


# --- activation memory -----------------------------------------------------------------------------
def test_block_and_reversible_formulas_by_hand():
    assert rv.activation_bytes(4096, 1024, 24, "block", 2) == 4096 * 1024 * 24 * 2
    assert rv.activation_bytes(4096, 1024, 24, "reversible", 2) == 2 * 4096 * 1024 * 2
    assert rv.activation_bytes(4096, 1024, 96, "reversible") == rv.activation_bytes(4096, 1024, 3, "reversible")
    depth = np.array([1, 10, 100])
    assert np.array_equal(rv.activation_bytes(10, 8, depth, "block", 1), 80 * depth)


def test_peak_adds_the_running_layer_the_gradients_the_head_and_the_logits_by_hand():
    t, d, layers, vocab = 4096, 1024, 24, 32000
    layer = t * d * 2                       # one BF16 layer-sized array
    running = 34 * t * d                    # Korthikanti's full layer, no stored scores
    shared = layer + t * vocab * 4          # head input, FP32 logits
    peak = {p: rv.activation_bytes(t, d, layers, p, peak=True, vocab=vocab) for p in rv.POLICIES}
    # Gradients in and out of the running layer: one stream for a plain stack, two for couplings.
    assert peak["full"] == layers * running + 2 * layer + shared
    assert peak["block"] == layers * layer + running + 2 * layer + shared
    # Kept (y1, y2), recovered (x1, x2), gradients dy1, dy2, dx1, dx2.
    assert peak["reversible"] == (2 + 2 + 4) * layer + running + shared
    assert rv.activation_bytes(t, d, layers, "block", peak=True, vocab=vocab, logit_bytes=2) == (
        peak["block"] - t * vocab * 2)
    assert rv.activation_bytes(t, d, layers, "block", peak=True, vocab=vocab, logit_bytes=0) == (
        peak["block"] - t * vocab * 4)
    # Another layer's count replaces the 34 everywhere it enters.
    assert rv.activation_bytes(t, d, layers, "block", peak=True, vocab=vocab, kept_per_width=40.5) == (
        peak["block"] + 6.5 * t * d)


def test_peak_ratio_depends_on_the_logits_for_llama_3_70b():
    # Llama 3 70B (Meta's config.json): d 8192, 80 layers, vocabulary 128,256, a 40.5-byte layer.
    t, d, layers, vocab = 65536, 8192, 80, 128256
    layer, running, logits = t * d * 2, 40.5 * t * d, t * vocab * 4
    block = layers * layer + running + 2 * layer + layer
    rev = 8 * layer + running + layer
    kept, peak, fused = ({p: rv.activation_memory("llama-3-70b", t, p, peak=pk, logit_bytes=lb)
                          for p in ("block", "reversible")} for pk, lb in ((False, 4), (True, 4), (True, 0)))
    assert kept["block"] / kept["reversible"] == pytest.approx(40)
    assert peak["block"] / peak["reversible"] == pytest.approx((block + logits) / (rev + logits))
    assert fused["block"] / fused["reversible"] == pytest.approx(block / rev)
    # The FP32 logits are over half of the reversible peak; without them the ratio is 3.5, not 2.2.
    assert logits / peak["reversible"] > 0.5
    assert 2 < peak["block"] / peak["reversible"] < 2.5 < 3.4 < block / rev < 3.7


def test_peak_needs_a_vocabulary():
    with pytest.raises(ChalkError, match="vocab"):
        rv.activation_bytes(10, 8, 2, "block", peak=True)


def test_gated_layer_keeps_more_than_a_gpt_layer():
    # Llama 3 70B: 6 d + 2 (8 x 128) + 4 x 28672 elements over d = 8192, 2 bytes each: 40.5.
    assert rv.gated_kept_per_token("llama-3-70b") == pytest.approx(2 * (6 + 2 * 8 * 128 / 8192 + 4 * 28672 / 8192))
    assert rv.gated_kept_per_token("llama-3-70b") == 40.5
    # A fused SwiGLU recomputes the SiLU output: one 28,672-wide array fewer, 33.5, near the GPT layer's 34.
    assert rv.gated_kept_per_token("llama-3-70b", fused=True) == 40.5 - 2 * 28672 / 8192
    assert rv.layer_kept_per_width("llama-3-70b") == 40.5
    assert rv.layer_kept_per_width("gpt-3-175b") == 34
    assert rv.activation_memory("llama-3-70b", 1000, "full") == 80 * 1000 * 40.5 * 8192
    with pytest.raises(ChalkError, match="gated"):
        rv.gated_kept_per_token("gpt-3-175b")


def test_selective_recompute_grows_with_context_and_halves_for_causal_at_short_context():
    short = rv.selective_recompute_overhead("llama-3-70b", 2048)
    long = rv.selective_recompute_overhead("llama-3-70b", 32768)
    assert 0 < short < long < 1 / 3
    # Where attention is small against 2N, skipping the masked half almost halves the overhead.
    assert rv.selective_recompute_overhead("llama-3-70b", 2048, causal=False) == pytest.approx(2 * short, rel=0.02)


def test_flash_attention_recomputes_the_scores_half_of_selective():
    # Llama 3 70B: 70.55e9 parameters, 80 layers of 64 query heads of 128; causal 8k: 4,096 attended.
    n, layers, heads, dh = models.get("llama-3-70b").active_params, 80, 64, 128
    attn = layers * 4 * heads * dh * 4096
    step = 3 * (2 * n + attn)
    # FlashAttention-2's backward recomputes q.k and the softmax (2 of the core's 4 heads x d_head FLOPs).
    assert rv.step_overhead("llama-3-70b", "full", 8192) == pytest.approx(attn / 2 / step)
    assert rv.step_overhead("llama-3-70b", "full", 8192) == pytest.approx(
        rv.selective_recompute_overhead("llama-3-70b", 8192) / 2)
    assert rv.step_overhead("llama-3-70b", "block", 8192) == pytest.approx((2 * n + 1.5 * attn) / step)
    assert rv.step_overhead("llama-3-70b", "reversible", 8192) == rv.step_overhead("llama-3-70b", "block", 8192)
    # The figures: +0.31%, +1.18%, +3.89% at 2k, 8k, 32k.
    assert [round(100 * rv.step_overhead("llama-3-70b", "full", s), 2) for s in (2048, 8192, 32768)] == [
        0.31, 1.18, 3.89]


def test_keeping_beats_recomputing_on_the_time_axis_on_an_h100():
    # H100 SXM: 989.4 TFLOP/s dense BF16, 3.35 TB/s (NVIDIA); Llama 3 70B: 80 layers, 8 KV heads of 128.
    times = rv.store_or_recompute("llama-3-70b", "H100-SXM")
    recompute = 2 * models.get("llama-3-70b").active_params / 989.4e12
    assert times["kv cache"]["recompute"] == pytest.approx(recompute, rel=1e-3)
    assert times["kv cache"]["store"] == pytest.approx(80 * 2 * 8 * 128 * 2 / 3.35e12)
    assert times["activations"]["store"] == pytest.approx(2 * 40.5 * 8192 * 80 / 3.35e12)
    assert times["kv cache"]["recompute"] / times["kv cache"]["store"] > 1000
    assert 5 < times["activations"]["recompute"] / times["activations"]["store"] < 20


def test_recompute_costs_one_forward():
    assert rv.recompute_overhead("full") == 0
    assert rv.recompute_overhead("block") == pytest.approx(1 / 3)
    assert rv.recompute_overhead("reversible") == pytest.approx(1 / 3)
    assert rv.training_flops(1e9, 1e12, "block") == pytest.approx(8e21)
    assert rv.training_flops(1e9, 1e12) == pytest.approx(6e21)


def test_catalog_model_uses_its_own_shape():
    m = models.get("llama-3.1-70b")
    tokens = 8 * 8192
    assert rv.activation_memory("llama-3.1-70b", tokens) == tokens * m.d_model * m.n_layers * 2
    assert rv.activation_memory("llama-3.1-70b", tokens, "reversible") * 40 == pytest.approx(
        rv.activation_memory("llama-3.1-70b", tokens, "block"))
    with_scores = rv.activation_memory("llama-3.1-70b", tokens, "full", seq_len=8192)
    assert with_scores > rv.activation_memory("llama-3.1-70b", tokens, "full")


# --- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, words", [
    (lambda: rv.feistel_encrypt(1, 1, width=7), ["width", "even"]),
    (lambda: rv.feistel_encrypt(1, 1, width=66), ["width", "64"]),
    (lambda: rv.feistel_encrypt(1, 1, width=0), ["width", ">= 1"]),
    (lambda: rv.feistel_decrypt(1, 1, rounds=0), ["rounds", ">= 1"]),
    (lambda: rv.feistel_encrypt(256, 1, width=8), ["block", "2^8 - 1"]),
    (lambda: rv.feistel_encrypt(-1, 1), ["block", "between 0"]),
    (lambda: rv.feistel_encrypt(1.5, 1), ["block", "whole numbers"]),
    (lambda: rv.feistel_encrypt(1, -3), ["key", "between 0"]),
    (lambda: rv.feistel_encrypt(1, 1, round_function="aes"), ["round_function", "aes", "middle-square"]),
    (lambda: rv.feistel_encrypt(1, 1, width=12, round_function="sbox"), ["sbox", "multiple of 8"]),
    (lambda: rv.avalanche(lambda x: x, 0), ["n_bits", ">= 1"]),
    (lambda: rv.avalanche(lambda x: x, 65), ["n_bits", "64"]),
    (lambda: rv.avalanche(lambda x: x, 8, samples=0), ["samples", ">= 1"]),
    (lambda: rv.avalanche(lambda x: x[:1], 8), ["function", "shape"]),
    (lambda: rv.avalanche_matrix(lambda x: x, -2), ["n_bits", ">= 1"]),
    (lambda: rv.feistel_avalanche_by_round(0), ["rounds", ">= 1"]),
    (lambda: rv.random_permutation_flip_pmf(0), ["bits", ">= 1"]),
    (lambda: rv.difference_table([1, 2, 3]), ["sbox", "power of 2"]),
    (lambda: rv.greedy_characteristic(1, 0), ["rounds", ">= 1"]),
    (lambda: rv.greedy_characteristic(1, 1, pbox=(0, 1, 1)), ["pbox", "permutation"]),
    (lambda: rv.greedy_characteristic(2 ** 16, 1), ["input_difference", "2^16 - 1"]),
    (lambda: rv.feistel_differential(1, 1, 2, width=9), ["width", "even"]),
    (lambda: rv.Coupling(1, lambda x: x), ["f", "callable"]),
    (lambda: rv.Coupling(lambda x: x, None), ["g", "callable"]),
    (lambda: rv.Coupling(lambda x: x[:1], lambda x: x).forward(np.ones(3), np.ones(3)), ["f", "shaped like"]),
    (lambda: rv.Coupling(lambda x: x, lambda x: x.sum()).inverse(np.ones(3), np.ones(3)), ["g", "shaped like"]),
    (lambda: rv.mlp(0), ["width", ">= 1"]),
    (lambda: rv.mlp(4, dtype="int32"), ["dtype", "float"]),
    (lambda: rv.mlp(4, scale=-1), ["scale", "> 0"]),
    (lambda: rv.reversible_stack(0, 4), ["depth", ">= 1"]),
    (lambda: rv.round_trip_error(4, tokens=0), ["tokens", ">= 1"]),
    (lambda: rv.residual_sensitivity(4, epsilon=0), ["epsilon", "> 0"]),
    (lambda: rv.activation_bytes(0, 1024, 24), ["tokens", "> 0"]),
    (lambda: rv.activation_bytes(10, -1, 24), ["d_model", "> 0"]),
    (lambda: rv.activation_bytes(10, 1024, 0), ["layers", "> 0"]),
    (lambda: rv.activation_bytes(10, 1024, 2, bytes_per_element=0), ["bytes_per_element", "> 0"]),
    (lambda: rv.activation_bytes(10, 1024, 2, heads=-1), ["heads", ">= 0"]),
    (lambda: rv.activation_bytes(10, 1024, 2, "remat"), ["policy", "remat", "block", "full", "reversible"]),
    (lambda: rv.activation_bytes(10, 1024, 2, None), ["policy", "block"]),
    (lambda: rv.activation_memory("gpt-9", 100), ["model", "gpt-9", "llama-3.1-70b"]),
    (lambda: rv.recompute_overhead("checkpoint"), ["policy", "checkpoint", "block"]),
    (lambda: rv.training_flops(0, 1), ["params", "> 0"]),
    (lambda: rv.training_flops(1, -1), ["tokens", "> 0"]),
    (lambda: rv.activation_bytes(10, 1024, 2, kept_per_width=0), ["kept_per_width", "> 0"]),
    (lambda: rv.activation_bytes(10, 1024, 2, peak=True, vocab=10, logit_bytes=-1), ["logit_bytes", ">= 0"]),
    (lambda: rv.step_overhead("llama-3-70b", "remat", 8192), ["policy", "remat"]),
    (lambda: rv.step_overhead("llama-3-70b", "block", 0), ["seq_len", "> 0"]),
    (lambda: rv.residual_sensitivity(4, scale=0), ["scale", "> 0"]),
    (lambda: rv.sensitivity_sweep([1.0], 4, seeds=[]), ["seeds"]),
    (lambda: rv.strict_avalanche(np.full((4, 4), 1.5), 100), ["matrix", "[0, 1]"]),
    (lambda: rv.strict_avalanche(np.full((4, 4), 0.5), 0), ["samples", ">= 1"]),
    (lambda: rv.feistel_distinguisher(2, width=7), ["width", "even"]),
])
def test_bad_input_names_the_parameter(call, words):
    with pytest.raises(ChalkError) as err:
        call()
    for word in words:
        assert word in str(err.value)


def test_unknown_policy_is_an_unknown_name():
    with pytest.raises(UnknownName):
        rv.recompute_overhead("offload")
