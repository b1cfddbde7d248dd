"""chalk.memory: memory per chip, the cancellation of P, the time per token, training state, the
errors, and the independent check (``memory.layout_bytes``, a NumPy placement of every layer and
every micro-batch's cache on explicit chips) against the SymPy formula over a grid.

Hand calculations type the model shapes from their published configs, not from chalk's catalog."""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import memory as mem
from chalk import models, roofline
from chalk.errors import ChalkError, UnknownName
from chalk.notation import B, C, E, L, N_tot, P, b_kv, b_w, m
from chalk.pipeline import t_hop

# Llama 3 70B config.json: 80 layers, 8 KV heads of 128; parameters counted from its shapes.
LLAMA70_PARAMS = 70.5524e9
LLAMA70_KV = 2 * 8 * 128 * 80 * 2          # bytes per token in BF16: K and V, 8 heads x 128, 80 layers
# Gemma 2 9B config.json: 42 layers alternating local (window 4,096) and global, 8 KV heads of 256.
GEMMA_KV_LAYER = 2 * 8 * 256 * 2          # bytes per token per layer in BF16
GEMMA_LAYERS_EACH = 21
# DeepSeek-V3: 671 B parameters (report), MLA caches 512 + 64 elements per layer, 61 layers.
DS_PARAMS = 671.0e9
DS_KV = (512 + 64) * 61 * 2
# DeepSeek-V3 config: 58 MoE layers of 256 routed experts, each 3 x 7,168 x 2,048, 8 picked per token.
DS_ROUTED = 58 * 256 * 3 * 7168 * 2048
GB200_HBM_BW = 8e12                        # NVL72 576 TB/s / 72
GB200_HBM = 186e9
# nvidia-smi's total per H100, 81,559 MiB (the catalog's reported figure; 80 GB nominal), and its HBM3 rate.
H100_HBM, H100_HBM_BW = 81_559 * 2**20, 3.35e12
NIC = 50e9                                 # one 400 Gb/s ConnectX per GPU
# Llama 3.1 405B config: 126 layers, 8 KV heads of 128; 405.85 B parameters counted from its shapes.
LLAMA405_PARAMS, LLAMA405_KV = 405.85e9, 2 * 8 * 128 * 126 * 2


# --- the formula -------------------------------------------------------------------------------
def test_sympy_shows_p_cancel_from_the_cache():
    assert mem.kv_per_chip_busy == B * L * b_kv / E
    assert sp.diff(mem.kv_per_chip_busy, P) == 0
    assert P not in mem.kv_per_chip_busy.free_symbols
    # Only the weights fall with P; infinitely many stages leave the cache alone on each chip.
    assert sp.simplify(mem.per_chip_busy - (N_tot * b_w / (E * P) + B * L * b_kv / E)) == 0
    assert mem.per_chip_limit == B * L * b_kv / E
    assert sp.simplify(mem.crossover_stages_expr - N_tot * b_w / (B * L * b_kv)) == 0


def test_more_stages_lift_the_batch_that_fits_only_to_a_ceiling():
    assert sp.simplify(mem.max_batch_expr - (C * E * P - N_tot * b_w) / (P * L * b_kv)) == 0
    assert mem.max_batch_limit == C * E / (L * b_kv)


def test_fewer_microbatches_than_stages_lift_the_batch_with_p():
    assert sp.simplify(mem.max_batch_any_m_expr - (C * E * P - N_tot * b_w) / (m * L * b_kv)) == 0
    assert sp.simplify(mem.max_batch_any_m_expr.subs(m, P) - mem.max_batch_expr) == 0


def test_at_the_largest_batch_the_cache_wins_once_the_weights_fill_half_a_chip():
    assert sp.simplify(mem.crossover_capacity_expr - 2 * N_tot * b_w / (C * E)) == 0


def test_p_stages_of_e_chips_hold_what_one_stage_of_ep_chips_holds():
    # P stages of E chips with P micro-batches of B, against one stage of E P chips with P B sequences.
    assert mem.same_chips_expr == 0
    pipelined = mem.per_chip("llama-3-70b", 16, 8192, "bf16", expert_parallel=8, stages=4)
    wide = mem.per_chip("llama-3-70b", 64, 8192, "bf16", expert_parallel=32, stages=1, microbatches=1)
    assert pipelined == pytest.approx(wide, rel=1e-12)


def test_hops_set_the_microbatches_in_flight():
    T = mem.T_read
    # Chapter 3's m >= P (1 + t_hop / t_F) with a stage's share t_F = T_read / P.
    assert sp.simplify(mem.microbatches_busy_expr - P * (1 + P * t_hop / T)) == 0
    assert sp.limit(mem.microbatches_busy_expr, t_hop, 0) == P            # the no-hop limit: m = P
    # The cache per chip then grows linearly with P, at B L b_kv t_hop / (E T_read) a stage.
    assert sp.simplify(mem.kv_per_chip_hops - B * L * b_kv * (1 + P * t_hop / T) / E) == 0
    assert sp.simplify(sp.diff(mem.kv_per_chip_hops, P) - B * L * b_kv * t_hop / (E * T)) == 0


def test_without_pipelining_the_microbatch_count_is_the_batch():
    # m = 1, P = 1: the whole replica's weights and cache over E chips.
    assert sp.simplify(mem.per_chip_expr.subs({m: 1, P: 1}) - (N_tot * b_w + B * L * b_kv) / E) == 0


# --- per chip, by hand -------------------------------------------------------------------------
def test_per_chip_llama_70b_by_hand():
    by_hand = (LLAMA70_PARAMS * 2 + 32 * 8192 * LLAMA70_KV) / 8
    assert mem.per_chip("llama-3-70b", 32, 8192, "bf16", expert_parallel=8) == pytest.approx(by_hand, rel=1e-4)


def test_microbatches_default_to_stages_and_cancel_stages_from_the_cache():
    weights, kv = mem.per_chip_parts("llama-3-70b", 16, 32768, "bf16", expert_parallel=8, stages=4)
    assert weights == pytest.approx(LLAMA70_PARAMS * 2 / 32, rel=1e-4)
    assert kv == pytest.approx(16 * 32768 * LLAMA70_KV / 8, rel=1e-12)
    for stages in (1, 2, 8, 16):
        assert mem.per_chip_parts("llama-3-70b", 16, 32768, "bf16", 8, stages)[1] == pytest.approx(kv, rel=1e-12)


def test_explicit_microbatches_scale_the_cache():
    one = mem.per_chip_parts("llama-3-70b", 16, 8192, "bf16", 8, stages=4, microbatches=1)[1]
    assert one == pytest.approx(16 * 8192 * LLAMA70_KV / 32, rel=1e-12)
    assert mem.per_chip_parts("llama-3-70b", 16, 8192, "bf16", 8, 4, microbatches=8)[1] == pytest.approx(8 * one)


def test_sliding_windows_are_counted_exactly():
    # At 8,192 tokens the global layers hold 8,192 tokens, the local ones their window of 4,096.
    per_sequence = GEMMA_LAYERS_EACH * GEMMA_KV_LAYER * (8192 + 4096)
    assert mem.kv_per_sequence("gemma-2-9b", 8192) == pytest.approx(per_sequence, rel=1e-12)
    weights, kv = mem.per_chip_parts("gemma-2-9b", 10, 8192, "bf16", expert_parallel=2)
    assert kv == pytest.approx(10 * per_sequence / 2, rel=1e-12)
    # Below the window both kinds hold every token.
    assert mem.kv_per_sequence("gemma-2-9b", 1000) == pytest.approx(42 * GEMMA_KV_LAYER * 1000, rel=1e-12)


def test_arrays_of_contexts_broadcast():
    ctx = np.array([0, 1024, 8192])
    out = mem.per_chip("llama-3-70b", 8, ctx, "bf16", 8, 2)
    assert out.shape == (3,)
    assert out[0] == pytest.approx(LLAMA70_PARAMS * 2 / 16, rel=1e-4)
    assert np.all(np.diff(out) > 0)


def test_crossover_stages_by_hand():
    by_hand = DS_PARAMS * 1 / (2000 * 4096 * DS_KV)
    assert mem.crossover_stages("deepseek-v3", 2000, 4096, "fp8") == pytest.approx(by_hand, rel=0.005)
    assert mem.crossover_stages("deepseek-v3", 2000, 0, "fp8") == math.inf
    # At P* the two terms are equal.
    p_star = mem.crossover_stages("llama-3-70b", 8, 8192, "bf16")
    w_, kv_ = mem.per_chip_parts("llama-3-70b", 8, 8192, "bf16", 1, 1, microbatches=1)
    assert w_ / p_star == pytest.approx(kv_, rel=1e-9)


def test_explicit_microbatches_may_be_a_real_number():
    # 4.5 micro-batches' worth of sequences in flight: the cache of 4.5 x 16 sequences over 8 x 4 GPUs.
    kv = mem.per_chip_parts("llama-3-70b", 16, 8192, "bf16", 8, stages=4, microbatches=4.5)[1]
    assert kv == pytest.approx(4.5 * 16 * 8192 * LLAMA70_KV / 32, rel=1e-12)


def test_busy_microbatches_by_hand():
    # DeepSeek-V3 in FP8 on NVL72 stages, 2,000 sequences of 4,096 tokens: every expert touched
    # ((31/32)^2000 ~ 1e-28), so T_read = (N_tot + B L b_kv) / (72 x 8 TB/s), about 2.16 ms.
    T = (DS_PARAMS + 2000 * 4096 * DS_KV) / (72 * GB200_HBM_BW)
    assert mem.read_time("deepseek-v3", "gb200-nvl72", 2000, 4096, "fp8") == pytest.approx(T, rel=0.002)
    got = mem.busy_microbatches("deepseek-v3", "gb200-nvl72", 2000, 4096, 4, hop=2.5e-3, dtype="fp8")
    assert got == pytest.approx(4 * (1 + 4 * 2.5e-3 / T), rel=0.002)      # about 22.5, 5.6 P
    # No hop: m = P; one stage has no hop whatever its latency; an array of depths gives an array.
    depths = np.array([1, 2, 4, 8])
    np.testing.assert_allclose(mem.busy_microbatches("deepseek-v3", "gb200-nvl72", 2000, 4096, depths, 0.0, "fp8"),
                               depths, rtol=1e-12)
    assert mem.busy_microbatches("deepseek-v3", "gb200-nvl72", 2000, 4096, 1, 1.0, "fp8") == 1


def test_crossover_at_balance_by_hand():
    # Llama 3.1 405B in BF16 on HGX H100 stages (77 GB usable each): its balance batch never fits, so
    # P* = 2 N b_w / (C E) at every context, with half the ceiling's sequences, C E / (2 L b_kv).
    for context in (4096, 32768):
        got = mem.crossover_at_balance("llama-3.1-405b", "hgx-h100", context, "bf16")
        assert got.capacity_bound
        assert got.stages == pytest.approx(2 * 2 * LLAMA405_PARAMS / (0.9 * H100_HBM * 8), rel=0.002)
        assert got.batch == pytest.approx(0.9 * H100_HBM * 8 / (2 * context * LLAMA405_KV), rel=0.002)
    # DeepSeek-V3 in FP8 on NVL72 stages past L* (32K): capacity, 2 x 671 GB / (0.9 x 186 GB x 72).
    got = mem.crossover_at_balance("deepseek-v3", "gb200-nvl72", 32768, "fp8")
    assert got.capacity_bound and got.stages == pytest.approx(2 * DS_PARAMS / (0.9 * GB200_HBM * 72), rel=0.002)
    # At 4K its balance batch fits: P* is N b_w / (B* L b_kv), larger than the capacity figure.
    got = mem.crossover_at_balance("deepseek-v3", "gb200-nvl72", 4096, "fp8")
    b_star = roofline.balance_batch("GB200", "deepseek-v3", "fp8", 4096)
    assert not got.capacity_bound and got.batch == b_star
    assert got.stages == pytest.approx(DS_PARAMS / (b_star * 4096 * DS_KV), rel=0.002)
    assert got.stages > 2 * DS_PARAMS / (0.9 * GB200_HBM * 72)


def test_max_batch_with_one_microbatch_on_eight_stages_by_hand():
    # Stages idle (m = 1 < P = 8): (C E P - N b_w) / (m L b_kv) sequences of 32K, against 30 with m = P.
    by_hand = math.floor((0.9 * H100_HBM * 8 * 8 - 2 * LLAMA405_PARAMS) / (32768 * LLAMA405_KV))
    assert mem.max_batch("llama-3.1-405b", "hgx-h100", 32768, "bf16", 8, microbatches=1) == by_hand
    assert mem.max_batch("llama-3.1-405b", "hgx-h100", 32768, "bf16", 8) == math.floor(
        (0.9 * H100_HBM * 8 * 8 - 2 * LLAMA405_PARAMS) / (8 * 32768 * LLAMA405_KV))


def test_max_batch_by_hand():
    usable = GB200_HBM * 0.9
    for stages in (1, 4):
        free = usable - DS_PARAMS / (72 * stages)
        by_hand = math.floor(free * 72 / (4096 * DS_KV))
        assert mem.max_batch("deepseek-v3", "gb200-nvl72", 4096, "fp8", stages) == pytest.approx(by_hand, rel=0.002)
    assert mem.max_batch("deepseek-v3", "gb200-nvl72", 0, "fp8") == math.inf
    # Llama 3.1 405B in BF16 (812 GB) does not fit 8 H100s (576 GB usable) whatever the context.
    assert mem.max_batch("llama-3.1-405b", "hgx-h100", 4096, "bf16") == 0


# --- time per token ----------------------------------------------------------------------------
def test_weight_floor_by_hand():
    assert mem.weight_floor("deepseek-v3", "gb200-nvl72", "fp8") == pytest.approx(DS_PARAMS / (72 * GB200_HBM_BW), rel=0.002)
    # Scale-up size, not pipelining, moves it: 8 H100s read 9 times slower than 72 GB200s at 3.35 TB/s.
    assert mem.weight_floor("deepseek-v3", "hgx-h100", "fp8") == pytest.approx(DS_PARAMS / (8 * 3.35e12), rel=0.002)


def test_weight_floor_reads_only_the_experts_a_batch_touches():
    # One sequence reads everything but the routed experts, and 8 of 256 of those: N_act.
    dense_part = DS_PARAMS - DS_ROUTED
    for batch in (1, 16):
        touched = dense_part + DS_ROUTED * (1 - (1 - 8 / 256) ** batch)
        got = mem.weight_floor("deepseek-v3", "hgx-h100", "fp8", batch=batch)
        assert got == pytest.approx(touched / (8 * H100_HBM_BW), rel=0.003)
    assert mem.weight_floor("deepseek-v3", "hgx-h100", "fp8", batch=1) == pytest.approx(37e9 / (8 * H100_HBM_BW),
                                                                                          rel=0.02)  # "37B activated"
    # A large batch touches every expert: the N_tot floor.
    assert mem.weight_floor("deepseek-v3", "hgx-h100", "fp8", batch=10**6) == pytest.approx(
        mem.weight_floor("deepseek-v3", "hgx-h100", "fp8"), rel=1e-9)
    # A dense model has no experts to skip.
    assert mem.weight_floor("llama-3-70b", "hgx-h100", "bf16", batch=1) == pytest.approx(
        2 * LLAMA70_PARAMS / (8 * H100_HBM_BW), rel=1e-4)


def test_weight_floor_falls_with_the_chips_reading_not_the_domain():
    # DeepSeek's decode: 320 H800s (3.35 TB/s each) reading, over 40 nodes of 8.
    assert mem.weight_floor("deepseek-v3", "hgx-h800", "fp8", expert_parallel=320) == pytest.approx(
        DS_PARAMS / (320 * H100_HBM_BW), rel=0.002)


def test_token_time_adds_an_alltoall_per_moe_layer():
    base = mem.token_time("deepseek-v3", "gb200-nvl72", 256, 8192, stages=2, hop=1e-4, dtype="fp8")
    more = mem.token_time("deepseek-v3", "gb200-nvl72", 256, 8192, stages=2, hop=1e-4, dtype="fp8", alltoall=5e-4)
    assert more - base == pytest.approx(58 * 5e-4, rel=1e-9)          # 58 MoE layers
    dense = mem.token_time("llama-3-70b", "hgx-h100", 8, 8192, dtype="bf16")
    assert mem.token_time("llama-3-70b", "hgx-h100", 8, 8192, dtype="bf16", alltoall=1e-3) == dense


def test_token_time_keeps_reads_and_adds_a_hop_per_stage():
    one = mem.token_time("deepseek-v3", "gb200-nvl72", 256, 8192, stages=1, hop=1e-3, dtype="fp8")
    by_hand = (DS_PARAMS + 256 * 8192 * DS_KV) / (72 * GB200_HBM_BW)
    assert one == pytest.approx(by_hand, rel=0.002)          # one stage: no hop
    for stages in (2, 4, 8):
        t = mem.token_time("deepseek-v3", "gb200-nvl72", 256, 8192, stages=stages, hop=1e-3, dtype="fp8")
        assert t - one == pytest.approx(stages * 1e-3, rel=1e-9)


def test_hop_time_by_hand():
    # 2,048 sequences x 7,168 x 2 bytes leave a stage of 72 GPUs, each over its own 50 GB/s link.
    t = mem.hop_time("deepseek-v3", "gb200-nvl72", 2048, latency=10e-6)
    assert t == pytest.approx(10e-6 + 2048 * 7168 * 2 / (72 * NIC), rel=1e-9)


# --- training memory ---------------------------------------------------------------------------
@pytest.mark.parametrize("stage, by_hand", [(0, 16), (1, 4 + 12 / 64), (2, 2 + 14 / 64), (3, 16 / 64)])
def test_zero_stages_by_hand(stage, by_hand):
    n = models.get("llama-3-70b").total_params
    got = mem.training_state_bytes("llama-3-70b", "zero-mixed-adam", chips=64, zero_stage=stage)
    assert got == pytest.approx(by_hand * n, rel=1e-12)


def test_fewest_chips_to_train_by_hand():
    # 16 bytes x 70.55 B parameters over 77 GB usable per H100 (90% of 85.52 GB as reported): 15 GPUs, 11 with
    # 8-bit Adam's 12 bytes.
    assert mem.fewest_chips_to_train("llama-3-70b", "H100-SXM") == math.ceil(16 * LLAMA70_PARAMS / (0.9 * H100_HBM)) == 15
    assert mem.fewest_chips_to_train("llama-3-70b", "H100-SXM", "8bit-adam") == math.ceil(12 * LLAMA70_PARAMS / (0.9 * H100_HBM)) == 11


# --- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, value", [("expert_parallel", 0), ("stages", -1), ("stages", 1.5),
                                         ("expert_parallel", True)])
def test_non_positive_or_fractional_degrees_are_refused(name, value):
    with pytest.raises(ChalkError, match=f"{name} must be a whole number >= 1"):
        mem.per_chip("llama-3-70b", 8, 1024, **{name: value})


@pytest.mark.parametrize("value", [0, 0.5, True, -2, float("nan"), "two"])
def test_fewer_than_one_microbatch_is_refused_with_the_valid_range(value):
    with pytest.raises(ChalkError, match="microbatches must be a number >= 1"):
        mem.per_chip("llama-3-70b", 8, 1024, stages=2, microbatches=value)
    with pytest.raises(ChalkError, match="microbatches must be a number >= 1"):
        mem.max_batch("llama-3-70b", "hgx-h100", 1024, stages=2, microbatches=value)


@pytest.mark.parametrize("name, value", [("batch", -1), ("context", -5)])
def test_negative_batch_or_context_is_refused(name, value):
    args = {"batch": 8, "context": 1024, name: value}
    for fn in (mem.per_chip, mem.per_chip_parts):
        with pytest.raises(ChalkError, match=f"{name} must be >= 0"):
            fn("llama-3-70b", **args)
    with pytest.raises(ChalkError, match=name):
        mem.token_time("llama-3-70b", "hgx-h100", **args)


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(UnknownName, match="model: unknown model 'llama-9'"):
        mem.per_chip("llama-9", 8, 1024)
    with pytest.raises(UnknownName, match="system: unknown system 'nvl-999'.*known systems"):
        mem.weight_floor("deepseek-v3", "nvl-999")
    with pytest.raises(UnknownName, match="dtype"):
        mem.per_chip("llama-3-70b", 8, 1024, dtype="fp6")
    with pytest.raises(UnknownName, match="recipe: unknown training recipe"):
        mem.training_state_bytes("llama-3-70b", "adam-9000")


def test_other_bad_inputs_name_their_parameter():
    with pytest.raises(ChalkError, match="zero_stage must be 0, 1, 2 or 3"):
        mem.training_state_bytes("llama-3-70b", zero_stage=4)
    with pytest.raises(ChalkError, match="headroom must be between 0 and 0.99"):
        mem.max_batch("llama-3-70b", "hgx-h100", 1024, headroom=1.5)
    with pytest.raises(ChalkError, match="hop must be >= 0"):
        mem.token_time("llama-3-70b", "hgx-h100", 8, 1024, stages=2, hop=-1)
    with pytest.raises(ChalkError, match="latency must be finite"):
        mem.hop_time("llama-3-70b", "hgx-h100", 8, latency=float("nan"))
    with pytest.raises(ChalkError, match="batch must be > 0"):
        mem.crossover_stages("llama-3-70b", 0, 1024)
    with pytest.raises(ChalkError, match="hop must be >= 0"):
        mem.busy_microbatches("llama-3-70b", "hgx-h100", 8, 1024, 4, hop=-1e-3)
    with pytest.raises(ChalkError, match="expert_parallel must be a whole number >= 1"):
        mem.weight_floor("deepseek-v3", "hgx-h100", expert_parallel=0)
    with pytest.raises(ChalkError, match="batch must be >= 0"):
        mem.weight_floor("deepseek-v3", "hgx-h100", batch=-1)
    with pytest.raises(ChalkError, match="alltoall must be >= 0"):
        mem.token_time("deepseek-v3", "hgx-h100", 8, 1024, alltoall=-1)
    with pytest.raises(ChalkError, match="context must be > 0"):
        mem.crossover_at_balance("deepseek-v3", "gb200-nvl72", 0)
    with pytest.raises(ChalkError, match="stages must be at most the model's 80 layers"):
        mem.layout_bytes("llama-3-70b", 8, 1024, stages=81)


@pytest.mark.parametrize("call", [
    lambda b: mem.per_chip("llama-3-70b", b, 1024),
    lambda b: mem.per_chip_parts("llama-3-70b", b, 1024),
    lambda b: mem.crossover_stages("llama-3-70b", b, 1024),
    lambda b: mem.layout_bytes("llama-3-70b", b, 1024),
    lambda b: mem.weight_floor("deepseek-v3", "hgx-h100", batch=b),
    lambda b: mem.read_time("llama-3-70b", "hgx-h100", b, 1024),
    lambda b: mem.hop_time("llama-3-70b", "hgx-h100", b, 10e-6),
    lambda b: mem.token_time("llama-3-70b", "hgx-h100", b, 1024),
])
@pytest.mark.parametrize("flag", [True, False, np.array([True, False])])
def test_a_bool_is_not_a_batch(call, flag):
    # True would count as one sequence and False as none, silently.
    with pytest.raises(ChalkError, match="batch must be a number of sequences"):
        call(flag)


@pytest.mark.parametrize("name, call", [
    ("model", lambda x: mem.per_chip(x, 8, 1024)),
    ("model", lambda x: mem.kv_per_sequence(x, 1024)),
    ("model", lambda x: mem.training_state_bytes(x)),
    ("system", lambda x: mem.weight_floor("deepseek-v3", x)),
    ("system", lambda x: mem.max_batch("llama-3-70b", x, 1024)),
    ("system", lambda x: mem.hop_time("llama-3-70b", x, 8, 10e-6)),
    ("chip", lambda x: mem.fewest_chips_to_train("llama-3-70b", x)),
])
@pytest.mark.parametrize("value", [42, None, 3.5, ["llama-3-70b"]])
def test_a_model_system_or_chip_that_is_neither_a_name_nor_an_entry_names_the_parameter(name, call, value):
    with pytest.raises(ChalkError, match=f"{name} must be a catalog {name} name or a chalk"):
        call(value)


def test_per_chip_refuses_more_stages_than_layers():
    # Llama 3 70B has 80 layers (config.json): 80 stages of one layer each are the most.
    assert mem.per_chip("llama-3-70b", 8, 1024, stages=80) > 0
    for fn in (mem.per_chip, mem.per_chip_parts):
        with pytest.raises(ChalkError, match="stages must be at most the model's 80 layers, got 81"):
            fn("llama-3-70b", 8, 1024, stages=81)
        with pytest.raises(ChalkError, match="stages must be at most the model's 80 layers"):
            fn("llama-3-70b", 8, 1024, stages=np.array([1, 40, 96]))


# --- the independent check: explicit placement against the formula -----------------------------
UNIFORM = models.from_config("uniform-24", {
    "display": "24 equal layers", "attention": "gqa", "n_layers": 24, "d_model": 1024, "n_heads": 16,
    "n_kv_heads": 4, "d_head": 64, "d_ff": 4096, "ffn_gated": True, "vocab": 32000, "tied_embeddings": True,
    "moe": {"n_routed_experts": 16, "experts_per_token": 2, "d_ff_expert": 1024}})
"""A model whose layers are all alike, so every placement of the grid divides evenly except the
one tied embedding table, which the check keeps apart."""


def _grid():
    for E_ in (1, 2, 4, 8, 16):
        for P_ in (1, 2, 3, 4, 6, 8, 12):
            for m_ in (1, P_, 2 * P_):
                for batch in (E_, 4 * E_):
                    for context in (0, 100, 4096):
                        yield E_, P_, m_, batch, context


def test_layout_matches_the_formula_on_every_chip_over_a_grid():
    embeddings = UNIFORM.embedding_params * 2
    cases = 0
    for E_, P_, m_, batch, context in _grid():
        chips = mem.layout_bytes(UNIFORM, batch, context, "bf16", E_, P_, m_)
        chips[0] -= embeddings / E_           # the one table the formula spreads over every stage
        formula = mem.per_chip(UNIFORM, batch, context, "bf16", E_, P_, m_) - embeddings / (E_ * P_)
        np.testing.assert_allclose(chips, formula, rtol=1e-12)
        cases += 1
    assert cases >= 600


def test_layout_shows_the_cancellation_of_p():
    # With m = P the cache on any one chip is the same at every depth of pipeline.
    caches = []
    for P_ in (1, 2, 3, 4, 6, 8, 12, 24):
        full = mem.layout_bytes(UNIFORM, 32, 4096, "bf16", 4, P_)
        empty = mem.layout_bytes(UNIFORM, 32, 0, "bf16", 4, P_)
        caches.append(full - empty)
    for c in caches:
        np.testing.assert_allclose(c, caches[0][0, 0], rtol=1e-12)
    assert caches[0][0, 0] == pytest.approx(32 / 4 * UNIFORM.kv_bytes(4096), rel=1e-12)


@pytest.mark.parametrize("name", ["llama-3-70b", "deepseek-v3", "gemma-2-9b", "mixtral-8x7b", "jamba-v0.1",
                                  "palm-540b", "chinchilla-70b"])
def test_layout_mean_is_the_formula_and_the_fullest_chip_is_no_lighter(name):
    for E_, P_ in ((8, 1), (8, 4), (64, 2), (16, 8)):
        chips = mem.layout_bytes(name, 4 * E_, 8192, "bf16", E_, P_)
        formula = mem.per_chip(name, 4 * E_, 8192, "bf16", E_, P_)
        assert chips.mean() == pytest.approx(formula, rel=1e-9)
        assert chips.max() >= formula * (1 - 1e-12)


def test_layout_counts_a_batch_that_does_not_divide_the_shards():
    # 10 sequences on 4 shards: two shards hold 3, so they carry 3/2.5 of the mean cache.
    full = mem.layout_bytes("llama-3-70b", 10, 8192, "bf16", 4, 1)
    empty = mem.layout_bytes("llama-3-70b", 10, 0, "bf16", 4, 1)
    kv = (full - empty)[0]
    assert sorted(kv / kv.min()) == pytest.approx([1, 1, 1.5, 1.5])


# --- the chapter's "where the lecture is loose" boxes --------------------------------------------
def test_chapter_four_boxes_are_computed_not_to_come():
    from chalk.teaching import corrections
    ids = {c.id for c in corrections.for_chapter("04_memory_capacity")}
    assert {"hop-latency", "kv-after-two-stages", "memory-capex-share"} <= ids
    for i in ids:
        assert not corrections.get(i).pending, i
        text = corrections.get(i).corrected()
        assert "Chapter to come" not in text and any(ch.isdigit() for ch in text), i
        assert "Chapter to come" not in corrections.box(i), i


def test_chapter_four_boxes_print_numbers_worked_by_hand():
    from chalk.teaching import corrections
    # NCCL's tuning.cc: base + network-step latency, 6.6 + 2.7 us (LL) and 8.4 + 14 us (Simple).
    hop = corrections.get("hop-latency").corrected()
    assert f"charges {6.6 + 2.7:.0f} to {8.4 + 14:.0f} µs per network step" in hop
    # DeepEP's first README (2025-02-24), low-latency kernels with pure RDMA: dispatch 163 us at EP 8 to
    # 194 us at EP 256; not its later table, whose small degrees also use NVLink (77 us at EP 8).
    assert "163 to 194 µs" in hop and "77" not in hop
    # Llama 3.1 405B in BF16 on 8-GPU H100 boards, capacity-bound: P* = 2 N_tot b_w / (C E) with C the
    # 90% of the 85.52 GB an H100 reports that the course counts usable.
    p_star = 2 * LLAMA405_PARAMS * 2 / (0.9 * H100_HBM * 8)
    assert f"capacity sets $P^\\star$ = {p_star:.1f}," in corrections.get("kv-after-two-stages").corrected()


# --- issue 25: collectives, the context ceiling in closed form, FP8 attention ------------------------
# Llama 3.1 405B config.json: 126 layers, d_model 16,384, 8 KV heads of 128.
L405_LAYERS, L405_D = 126, 16384
H100_ALLREDUCE_FIXED = 5.9e-6               # SGLang's custom all-reduce, 8 H100s, 512 B (PR 2904)
H100_NVLINK = 450e9                         # NVLink 4 per direction


def test_token_time_counts_a_dense_models_allreduces_by_hand():
    # Two all-reduces per layer over the 8 GPUs of a board, each 5.9 us plus a ring's 2 (8-1)/8 of the
    # micro-batch's BF16 activations, 16 x 16,384 x 2 bytes, at 450 GB/s.
    per = H100_ALLREDUCE_FIXED + 2 * 7 / 8 * 16 * L405_D * 2 / H100_NVLINK
    with_ar = mem.token_time("llama-3.1-405b", "hgx-h100", 16, 32768, dtype="bf16")
    without = mem.token_time("llama-3.1-405b", "hgx-h100", 16, 32768, dtype="bf16", allreduce=0.0)
    assert with_ar - without == pytest.approx(2 * L405_LAYERS * per, rel=1e-6)
    assert mem.tp_allreduces("llama-3.1-405b", "hgx-h100", 16) == pytest.approx(2 * L405_LAYERS * per, rel=1e-6)
    # Whatever the stages: each stage runs its own layers' collectives.
    four = mem.token_time("llama-3.1-405b", "hgx-h100", 16, 32768, stages=4, hop=1e-4, dtype="bf16")
    assert four - with_ar == pytest.approx(4 * 1e-4, rel=1e-6)
    # An expert-parallel MoE pays its all-to-all instead, none here; one chip pays nothing.
    assert mem.tp_allreduces("deepseek-v3", "gb200-nvl72", 256, "fp8") == 0.0
    assert mem.tp_allreduces("llama-3.1-405b", "hgx-h100", 16, expert_parallel=1) == 0.0
    with pytest.raises(ChalkError, match="allreduce"):
        mem.token_time("llama-3.1-405b", "hgx-h100", 16, 1024, allreduce=-1.0)


def test_max_context_is_the_closed_form_of_the_issue_review():
    # Issue 25's review worked the longest context for 16 sequences of Llama 3.1 405B (BF16) on HGX H100
    # stages at 80 GB a GPU: 20,605 tokens at P = 2, 57,467 at P = 8, 69,754 as P grows. At the 85.52 GB an
    # H100 reports (76.97 GB usable): (0.9 C E P - 2 N) / (P B b_kv) = (76.97e9 x 16 - 811.7e9) / (2 x 16 x
    # 516,096) = 25,419 at P = 2, (76.97e9 x 64 - 811.7e9) / (8 x 16 x 516,096) = 62,281 at P = 8, and
    # C E / (B b_kv) = 76.97e9 x 8 / (16 x 516,096) = 74,568 as P grows.
    usable = H100_HBM * (1 - roofline.HEADROOM)
    weights = LLAMA405_PARAMS * 2
    for stages, by_hand in ((2, 25419), (8, 62281)):
        got = mem.max_context("llama-3.1-405b", "hgx-h100", 16, "bf16", stages)
        assert got == pytest.approx((usable * 8 * stages - weights) / (stages * 16 * LLAMA405_KV), rel=0.002)
        assert got == pytest.approx(by_hand, abs=1)
    assert mem.max_context("llama-3.1-405b", "hgx-h100", 16, "bf16", 10**9) == pytest.approx(
        usable * 8 / (16 * LLAMA405_KV), rel=1e-6)
    assert mem.max_context("llama-3.1-405b", "hgx-h100", 16, "bf16", 10**9) == pytest.approx(74568, abs=1)
    assert mem.max_context("llama-3.1-405b", "hgx-h100", 16, "bf16", 1) == 0.0      # the weights alone overflow
    sym = mem.max_context_limit
    assert sp.simplify(sym - C * E / (B * b_kv)) == 0


def test_max_context_with_windowed_layers_fits_exactly():
    # Gemma 2's local layers hold at most 4,096 tokens: the bisection's root fills the chip to the byte.
    ctx = mem.max_context("gemma-2-9b", "hgx-h100", 64, "bf16", 1)
    usable = H100_HBM * (1 - roofline.HEADROOM)
    assert mem.per_chip("gemma-2-9b", 64, ctx, "bf16", 8, 1) == pytest.approx(usable, rel=1e-6)
    assert ctx > mem.max_context("llama-3-70b", "hgx-h100", 64, "bf16", 1)


def test_fp8_attention_makes_deepseeks_batch_capacity_bound_and_keeps_p_star_below_one():
    # Issue 25: L* = 7,556 with BF16 attention, about 2,789 with FP8, below the 4,096 tokens served.
    bf16 = mem.crossover_at_balance("deepseek-v3", "gb200-nvl72", 4096, "fp8")
    fp8 = mem.crossover_at_balance("deepseek-v3", "gb200-nvl72", 4096, "fp8", attention_dtype="fp8")
    assert roofline.balance_context_for("GB200", "deepseek-v3", "fp8", attention_dtype="fp8") == pytest.approx(2789, abs=1)
    assert not bf16.capacity_bound and bf16.batch == pytest.approx(12195, abs=1)
    assert fp8.capacity_bound and fp8.stages < bf16.stages < 1
    # Capacity-bound P* = 2 N_tot b_w / (C E): 671 GB of FP8 weights over 72 GPUs' usable HBM, twice.
    usable = GB200_HBM * (1 - roofline.HEADROOM)
    assert fp8.stages == pytest.approx(2 * models.get("deepseek-v3").total_params / (usable * 72), rel=1e-9)


def test_deepep_rdma_table_is_self_consistent_and_network_bound():
    # The pure-RDMA table: 128 tokens x 8 choices x (7,168 + 7,168/128 x 4) B = 7.569 MB dispatched in 163 us
    # at EP 8 = 46 GB/s, under a ConnectX-7's 50 GB/s at every degree (the later table's EP 8 row: 98 GB/s).
    from chalk.catalog import memory_data
    rdma = memory_data.latency("deepep-low-latency-rdma")
    for us, gbps in zip(rdma["dispatch_us"], rdma["dispatch_GBps"]):
        assert 128 * 8 * (7168 + 7168 / 128 * 4) / (us * 1e-6) / 1e9 == pytest.approx(gbps, rel=0.03)
        assert gbps < 50
    assert max(memory_data.latency("deepep-low-latency")["dispatch_GBps"]) > 50


def test_floor_table_leaves_out_systems_wider_than_a_layers_experts():
    from chalk.figures import memory_capacity as mc
    rows = mc.catalog_floors("deepseek-v3", "fp8")
    assert max(count for _, count, _ in rows) == 256            # DeepSeek-V3: 256 routed experts per layer
    assert "tpu-v7-9216" not in {name for name, _, _ in rows}
    assert mc.widest_reading("llama-3.1-405b") == math.inf
