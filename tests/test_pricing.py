"""Chapter 6's maths (``chalk.pricing``): hand calculations, the independent checks of the issue,
and clear errors for bad input."""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import models, pricing, roofline
from chalk.catalog import systems, tiers
from chalk.errors import ChalkError, UnknownName
from chalk.notation import C, F_att, L_star, N_act, T_hold, W, b_kv, f_att, p_hold, r

# H100 SXM datasheet figures, typed here so the hand calculations do not read the catalog.
# HBM as nvidia-smi reports it per H100: 81,559 MiB = 85.52 GB (80 GB nominal).
H100_BF16, H100_FP8, H100_HBM, H100_W = 989.4e12, 1978.9e12, 81_559 * 2**20, 3.35e12
YEAR = 365.25 * 24 * 3600


# --- the contract ---------------------------------------------------------------------------
def test_kv_from_crossover_lecture_convention_and_constants():
    # N_act / (r L*) = 100e9 / (300 * 200e3) = 1666.7 B; each explicit constant scales it by hand.
    assert pricing.kv_bytes_from_crossover(200e3, 100e9, 300) == pytest.approx(1666.667, rel=1e-6)
    assert pricing.kv_bytes_from_crossover(200e3, 100e9, 300, bytes_per_weight=2) == pytest.approx(3333.333, rel=1e-6)
    assert pricing.kv_bytes_from_crossover(200e3, 100e9, 300, flops_per_param=1) == pytest.approx(833.333, rel=1e-6)
    # attention at the BF16 rate adds f_att / r: 3000 / 300 = 10 B.
    assert pricing.kv_bytes_from_crossover(200e3, 100e9, 300, attention_flops_per_token=3000) == \
        pytest.approx(1676.667, rel=1e-6)


def test_decode_mfu_from_prices_is_input_over_output():
    assert pricing.decode_mfu_from_prices(3.0, 15.0) == pytest.approx(0.2)
    assert pricing.decode_mfu_from_prices(1.25, 10.0) == pytest.approx(0.125)


@pytest.mark.parametrize("call, param", [
    (lambda: pricing.kv_bytes_from_crossover(0, 1e11, 300), "crossover_tokens"),
    (lambda: pricing.kv_bytes_from_crossover(-5, 1e11, 300), "crossover_tokens"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, 0, 300), "active_params"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, 1e11, -1), "intensity"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, 1e11, 300, flops_per_param=0), "flops_per_param"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, 1e11, 300, bytes_per_weight=0), "bytes_per_weight"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, 1e11, 300, attention_flops_per_token=-1),
     "attention_flops_per_token"),
    (lambda: pricing.kv_bytes_from_crossover(float("nan"), 1e11, 300), "crossover_tokens"),
    (lambda: pricing.decode_mfu_from_prices(0, 10), "input_price"),
    (lambda: pricing.decode_mfu_from_prices(1, -10), "output_price"),
    (lambda: pricing.decode_mfu_from_prices(True, 2), "input_price"),
    (lambda: pricing.decode_mfu_from_prices(1, False), "output_price"),
    (lambda: pricing.kv_bytes_from_crossover(2e5, True, 300), "active_params"),
    (lambda: pricing.typed_price(0, 10), "input"),
    (lambda: pricing.typed_price(1, 10, cache_read=-1), "cache_read"),
    (lambda: pricing.typed_price(1, 10, step_context=200_000, step_input=2), "step_output"),
    (lambda: pricing.typed_price(1, 10, step_context=0.5, step_input=2, step_output=1.5), "step_context"),
    (lambda: pricing.implied_kv_bytes_lecture("openai/gpt-5", 1e11), "price"),
    (lambda: pricing.implied_kv_bytes_lecture("google/gemini-2.5-pro", 0), "active_params"),
    (lambda: pricing.implied_decode_mfu("nope"), "price"),
    (lambda: pricing.cheapest_tier(-1), "hold_seconds"),
    (lambda: pricing.hold_costs(10, "nope"), "target"),
    (lambda: pricing.hold_costs(10, usd_per_chip_hour=0), "usd_per_chip_hour"),
    (lambda: pricing.hold_costs(10, lifetime_years=0), "lifetime_years"),
    (lambda: pricing.kv_table(share={"llama-3-70b": 0}), "share"),
    (lambda: pricing.kv_table(share={"nope": 2}), "model"),
    (lambda: pricing.attention_crossover_context("nope"), "model"),
    (lambda: pricing.pass_times("llama-3-8b", "H100-SXM", []), "ns"),
    (lambda: pricing.pass_times("llama-3-8b", "H100-SXM", [0, 4]), "n"),
    (lambda: pricing.pass_times("llama-3-8b", "H100-SXM", [4], cached=-1), "cached"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param)


def test_unknown_price_entry_lists_the_known_ones():
    with pytest.raises(UnknownName) as info:
        pricing.implied_decode_mfu("openai/gpt-6")
    for known in ("anthropic/claude-opus-4.6", "google/gemini-2.5-pro", "openai/gpt-5", "deepseek/deepseek-chat@2025-09"):
        assert known in str(info.value)


# --- KV bytes per token from a step, with Chapter 1's attention FLOPs --------------------------
def test_kv_from_step_is_balance_context_solved_with_attention():
    # L* = 2 N_act F_att / (r (F_att b_kv - W f_att)) solved for b_kv, and back again.
    assert sp.simplify(pricing.kv_bytes_from_step - (2 * N_act / (r * L_star) + W * f_att / F_att)) == 0
    back = roofline.balance_context.subs(b_kv, pricing.kv_bytes_from_step)
    assert sp.simplify(back - L_star) == 0


@pytest.mark.parametrize("model, target, dtype", [
    ("deepseek-v3", "H800", "fp8"), ("llama-3-70b", "H100-SXM", "fp8"), ("kimi-k2", "gb200-nvl72", "fp4"),
    ("qwen3-235b-a22b", "hgx-h100", "bf16")])
def test_deduced_kv_fed_back_reproduces_the_crossover(model, target, dtype):
    # Independent of the solve: at L = step, one sequence's KV read time equals its compute time
    # (matmuls + attention) in Chapter 1's numeric step formulas.
    d = pricing.implied_kv_bytes_per_token("google/gemini-2.5-pro", model, target, dtype)
    step = d.inputs["L*"]
    n_act, n_tot, bw_, _, flops, bw, f, f_rate, n_rout, k, n_exp = _params(model, target, dtype)
    t_kv = roofline.numeric["t_kv"](1, step, n_act, n_tot, bw_, d.value, flops, bw, f, f_rate, n_rout, k, n_exp)
    t_compute = roofline.numeric["t_compute"](1, step, n_act, n_tot, bw_, d.value, flops, bw, f, f_rate, n_rout, k, n_exp)
    assert t_kv == pytest.approx(t_compute, rel=1e-9)


def _params(model, target, dtype):
    hw = systems.system_or_chip(target)
    chip, count = (hw.chip, hw.count) if isinstance(hw, systems.System) else (hw, 1)
    return roofline.replica(chip, model, dtype, count).params()


def test_mla_step_reads_more_bytes_than_its_matmuls_alone_imply():
    # DeepSeek-V3 on an H800 in FP8: the f_att term is f_att W / F_att = f_att / (989.4e12 / 3.35e12).
    d = pricing.implied_kv_bytes_per_token("google/gemini-2.5-pro", "deepseek-v3", "H800", "fp8")
    f = models.get("deepseek-v3").attention_flops_per_cached_token()
    matmul_only = 2 * d.inputs["N_act"] / (H100_FP8 / H100_W * 200_000)
    assert d.value - matmul_only == pytest.approx(f * H100_W / H100_BF16, rel=1e-3)
    assert d.value - matmul_only > 0.8 * models.get("deepseek-v3").kv_bytes_per_token()


# --- the KV table ---------------------------------------------------------------------------
def test_kv_table_covers_catalog_and_sharing_variant():
    rows = pricing.kv_table(share={"llama-3-70b": 2})
    names = {row.model for row in rows}
    # Every architecture once: a published checkpoint of one (checkpoint_of) shares its cache.
    assert {n for n, m in models.catalog_models().items() if m.checkpoint_of is None} <= names
    assert "llama-3.1-405b-fp8" not in names
    by = {row.model: row for row in rows}
    # Llama 3 70B: 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B; sharing by 2 halves it.
    assert by["llama-3-70b"].kv_bytes_per_token == 2 * 80 * 8 * 128 * 2
    assert by["llama-3-70b with KV shared by 2 layers"].kv_bytes_per_token == 2 * 80 * 8 * 128
    designs = " ".join(row.design for row in rows)
    for design in ("MHA", "GQA", "MQA", "MLA", "local", "SSM", "shared"):
        assert design in designs
    assert [row.kv_bytes_per_token for row in rows] == sorted(row.kv_bytes_per_token for row in rows)


def test_attention_crossover_hand_calculation():
    # Llama 3 70B, FP8 matmuls at twice the BF16 attention rate: L = 2 N_act F_att / (f_att F) =
    # N_act / f_att, with f_att = 2 (scores and sum) x 2 FLOPs x 64 heads x 128 x 80 layers.
    m = models.get("llama-3-70b")
    assert pricing.attention_crossover_context("llama-3-70b", "H100-SXM", "fp8") == \
        pytest.approx(m.active_params / (4 * 64 * 128 * 80) * (2 * H100_BF16 / H100_FP8), rel=1e-9)
    assert pricing.attention_crossover_context("jamba-v0.1") > pricing.attention_crossover_context("llama-3-70b")


# --- passes of n tokens (graph D) -------------------------------------------------------------
def test_pass_times_hand_calculation():
    # Llama 3 70B in FP8 on 8 H100s, one sequence: n = 1 reads the weights (70.55e9 B at 8 x 3.35 TB/s);
    # n = 4096 computes 2 N_act n / F plus attention over 4096 - 4095/2 tokens on average.
    m = models.get("llama-3-70b")
    pt = pricing.pass_times("llama-3-70b", "hgx-h100", [1, 16, 4096], dtype="fp8")
    assert pt.memory[0] == pytest.approx((m.total_params + m.kv_bytes_per_token()) / (8 * H100_W), rel=1e-6)
    matmul = 2 * m.active_params * 4096 / (8 * H100_FP8)
    attention = 4 * 64 * 128 * 80 * (4096 - 4095 / 2) * 4096 / (8 * H100_BF16)
    assert pt.compute[-1] == pytest.approx(matmul + attention, rel=1e-6)
    assert pt.step[0] == pytest.approx(pt.step[1], rel=1e-3)  # memory-bound: 16 tokens cost what 1 does
    assert pt.per_token[-1] < pt.per_token[0] / 100


# --- prompt caching: the tier rule ----------------------------------------------------------
def test_hold_cost_and_break_even_hand_calculation():
    # 8 H100s at $2/h hold 684 GB as reported; host DDR5 $10,000/TB over 5 years; drains from the datasheets.
    p_hbm, d_hbm = 8 * 2.0 / 3600 / (8 * H100_HBM), H100_HBM / H100_W
    p_ddr, d_ddr = 10_000 / 1e12 / (5 * YEAR), 2e12 / 614.4e9
    costs = pricing.hold_costs(60.0, "hgx-h100")
    assert costs["hbm-hgx-h100"] == pytest.approx(p_hbm * (60 + d_hbm), rel=1e-6)
    assert costs["ddr5-hgx-h100"] == pytest.approx(p_ddr * (60 + d_ddr), rel=1e-6)
    first, switches = pricing.tier_envelope("hgx-h100")
    assert first.name == "hbm-hgx-h100" and switches[0].slower.name == "ddr5-hgx-h100"
    assert switches[0].hold_seconds == pytest.approx((p_ddr * d_ddr - p_hbm * d_hbm) / (p_hbm - p_ddr), rel=1e-6)


@pytest.mark.parametrize("target", ["H100-SXM", "hgx-h100", "gb200-nvl72", "gb300-nvl72", "H800", "TPU-v5e"])
@pytest.mark.parametrize("usd, years", [(2.0, 5.0), (0.5, 3.0), (10.0, 8.0)])
def test_tier_rule_matches_exhaustive_comparison(target, usd, years):
    # The rule walks break-even hold times; the check prices every tier at every hold time.
    first, switches = pricing.tier_envelope(target, usd, years)
    edges = [s.hold_seconds for s in switches]
    for hold in np.logspace(-5, 8, 400):
        if any(abs(hold - e) <= 1e-9 * e for e in edges):
            continue
        costs = pricing.hold_costs(hold, target, usd, years)
        brute = min(costs, key=costs.get)
        chosen = pricing.cheapest_tier(hold, target, usd, years).name
        assert costs[chosen] == pytest.approx(costs[brute], rel=1e-12), (hold, chosen, brute)


def test_switches_move_to_cheaper_tiers_at_later_holds():
    _, switches = pricing.tier_envelope("hgx-h100")
    holds = [s.hold_seconds for s in switches]
    assert holds == sorted(holds)
    assert all(s.slower.usd_per_byte_second < s.faster.usd_per_byte_second for s in switches)


def test_lecture_rule_of_thumb_and_cost_rule_can_differ():
    # A one-minute hold: the drain time nearest 60 s is host DDR (3.3 s), but flash is already cheaper.
    assert pricing.tier_for_hold(60, "hgx-h100").name == "ddr5-hgx-h100"
    assert pricing.cheapest_tier(60, "hgx-h100").name == "3fs-storage-node"


def test_recompute_cost_hand_calculation():
    # Llama 3 70B FP8 on 8 H100s at $2/h, 8,192-token prompt, compute-bound at batch 1.
    m = models.get("llama-3-70b")
    n = 8192
    t = (2 * m.active_params * n / (8 * H100_FP8)
         + 4 * 64 * 128 * 80 * (n - (n - 1) / 2) * n / (8 * H100_BF16))
    usd_per_byte = t * 8 * 2.0 / 3600 / (n * 327_680)
    assert pricing.recompute_usd_per_byte("llama-3-70b", "hgx-h100", n, "fp8") == pytest.approx(usd_per_byte, rel=1e-6)


def test_rematerialise_after_balances_envelope_and_rebuild():
    when = pricing.rematerialise_after("llama-3-70b", "hgx-h100", 8192, "fp8")
    rebuild = pricing.recompute_usd_per_byte("llama-3-70b", "hgx-h100", 8192, "fp8")
    assert min(pricing.hold_costs(when, "hgx-h100").values()) == pytest.approx(rebuild, rel=1e-9)
    assert min(pricing.hold_costs(0.5 * when, "hgx-h100").values()) < rebuild


def test_break_even_symbolic_form():
    p2, c2, w2 = (sp.Symbol(s, positive=True) for s in ("p'", "C'", "W'"))
    expected = (p2 * c2 / w2 - p_hold * C / W) / (p_hold - p2)
    assert sp.simplify(pricing.break_even_hold - expected) == 0
    assert sp.simplify(pricing.hold_cost - p_hold * (T_hold + C / W)) == 0


def test_host_tier_is_per_system_and_shared_per_chip():
    held = {t.name: t for t in tiers.tiers_with_hbm("H100-SXM")}
    share = held["ddr5-hgx-h100/gpu"]
    assert share.capacity == pytest.approx(2e12 / 8) and share.bandwidth == pytest.approx(614.4e9 / 8)
    assert "lpddr5x-gb200-nvl72" in {t.name for t in tiers.tiers_with_hbm("gb200-nvl72")}
    assert "ddr5-hgx-h100" not in {t.name for t in tiers.tiers_with_hbm("gb200-nvl72")}
    # GB200 NVL72: 17 TB at 18.4 TB/s drains in under a second.
    assert tiers.catalog_tiers()["lpddr5x-gb200-nvl72"].drain_time == pytest.approx(17 / 18.4)


def test_cache_multipliers_recomputed_from_catalog_prices():
    # Sonnet 4.5: $0.30 hit, $3.75 5-minute write, $6 1-hour write over $3 input.
    assert pricing.cache_multipliers("anthropic/claude-sonnet-4.5") == pytest.approx(
        {"cache_read": 0.1, "cache_write_5m": 1.25, "cache_write_1h": 2.0})
    assert set(pricing.cache_multipliers("openai/gpt-5")) == {"cache_read"}
    assert math.isclose(pricing.cache_multipliers("deepseek/deepseek-chat@2025-09")["cache_read"], 0.1)


# --- sparse attention ----------------------------------------------------------------------
def test_sparse_attention_hand_calculation():
    # DeepSeek-V3 shapes, 61 layers: the FP8 indexer reads 128 B per layer per cached token and
    # MLA reads 70,272 B for each of the top 2,048 tokens; dense MLA reads 70,272 B per token.
    L = 131072
    dense = pricing.decode_attention_work("deepseek-v3", L)
    sparse = pricing.decode_attention_work("deepseek-v3", L, sparse=True)
    assert dense.kv_bytes == pytest.approx(70_272 * L, rel=1e-12)
    assert sparse.kv_bytes == pytest.approx(128 * 61 * L + 70_272 * 2048, rel=1e-12)
    f = models.get("deepseek-v3").attention_flops_per_cached_token()
    assert sparse.flops == pytest.approx(2 * 64 * 128 * 61 * L + f * 2048, rel=1e-12)
    # Below k the top-k is everything: sparse reads dense's bytes plus the indexer's.
    small = pricing.decode_attention_work("deepseek-v3", 1000, sparse=True)
    assert small.kv_bytes == pytest.approx(70_272 * 1000 + 128 * 61 * 1000, rel=1e-12)


def test_growth_exponents():
    assert pricing.growth_exponent("llama-3-70b", 50_000) == pytest.approx(1.0, rel=1e-12)
    sparse = [pricing.growth_exponent("deepseek-v3", L, sparse=True) for L in (4096, 65536, 2**20)]
    assert sparse == sorted(sparse) and sparse[-1] > 0.95  # tends to linear, not 0.5
    # Sliding windows: the windowed layers' reads stop growing, so the exponent is below 1.
    assert pricing.growth_exponent("gemma-2-9b", 8192) < 1


@pytest.mark.parametrize("call, param", [
    (lambda: pricing.decode_attention_work("gemma-2-9b", 8192, sparse=True), "model"),
    (lambda: pricing.decode_attention_work("deepseek-v3", -1), "context"),
    (lambda: pricing.growth_exponent("deepseek-v3", 0), "context"),
    (lambda: pricing.growth_exponent("deepseek-v3", 10, quantity="time"), "quantity"),
])
def test_sparse_attention_bad_input(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param)


# --- cost per token against context (graph C) -------------------------------------------------
def test_cost_against_context_hand_calculation():
    # Llama 3 70B in FP8 on 8 H100s, 64 sequences at 10,000 tokens (all fit: 64 x 3.28 GB beside 70.6 GB
    # of weights in 576 GB): per token, compute is 2 N_act / F + f_att L / F_att and memory
    # N_tot b_w / (B W) + L b_kv / W, with F, F_att and W eight GPUs'.
    m = models.get("llama-3-70b")
    c = pricing.cost_against_context("llama-3-70b", "hgx-h100", [10_000], 64, "fp8", usd_per_chip_hour=3.0)
    compute = 2 * m.active_params / (8 * H100_FP8) + 4 * 64 * 128 * 80 * 10_000 / (8 * H100_BF16)
    memory = m.total_params / (64 * 8 * H100_W) + 10_000 * 327_680 / (8 * H100_W)
    assert c.batch[0] == 64
    assert c.compute[0] == pytest.approx(compute, rel=1e-9) and c.memory[0] == pytest.approx(memory, rel=1e-9)
    assert c.usd_per_million_tokens[0] == pytest.approx(1e6 * max(compute, memory) * 8 * 3.0 / 3600, rel=1e-9)


def test_cost_against_context_cuts_the_batch_to_what_fits():
    # 90% of HBM usable (76.97 GB of the 85.52 GB an H100 reports). 8 H100s: (615.7e9 - 70.55e9) /
    # (200,000 x 327,680 B) = 8.3 sequences at 200K. One H100: (76.97e9 - 70.55e9) / (100 x 327,680) = 195.8
    # at 100 tokens, none at 200K (0.098).
    m = models.get("llama-3.1-70b")
    server = pricing.cost_against_context("llama-3.1-70b", "hgx-h100", [200_000], 4096)
    assert server.batch[0] == math.floor((8 * 0.9 * H100_HBM - m.total_params) / (200_000 * 327_680)) == 8
    one = pricing.cost_against_context("llama-3.1-70b", "H100-SXM", [100, 200_000], 4096)
    assert one.batch[0] == math.floor((0.9 * H100_HBM - m.total_params) / (100 * 327_680)) == 195
    assert np.isnan(one.batch[1]) and np.isnan(one.usd_per_million_tokens[1])
    # Past the cut the weights' time per token grows with L as the KV's does: memory per token is
    # L b_kv (1 + weights / free HBM) / W, up to the floor on the batch.
    free = 8 * 0.9 * H100_HBM - m.total_params
    assert server.memory[0] == pytest.approx(m.total_params / (server.batch[0] * 8 * H100_W)
                                             + 200_000 * 327_680 / (8 * H100_W), rel=1e-9)
    assert server.memory[0] > 200_000 * 327_680 * (1 + m.total_params / free) / (8 * H100_W)
    with pytest.raises(ChalkError) as info:
        pricing.cost_against_context("deepseek-v3", "H100-SXM", [100], 1)
    assert "does not fit" in str(info.value)


def test_cost_kink_tends_to_balance_context():
    # The bandwidth bound (capacity ignored): as the batch grows the kink tends to L*.
    contexts = np.linspace(1, 3000, 30_000)
    star = roofline.balance_context_for("H100-SXM", "llama-3-70b", "fp8")
    kinks = [pricing.cost_against_context("llama-3-70b", "H100-SXM", contexts, b, fit=False).kink
             for b in (1e3, 1e5, 1e8)]
    assert kinks[0] < kinks[1] < kinks[2] and kinks[-1] == pytest.approx(star, rel=1e-3)
    flat = pricing.cost_against_context("llama-3-70b", "H100-SXM", [100, 200], 1e8, fit=False)
    assert flat.relative[-1] == pytest.approx(1.0, rel=0.02)  # compute-bound: flat in L


def test_kink_is_interpolated_between_grid_points():
    # On a grid of ten points a decade the crossing still lands within 2% of the one a fine grid finds.
    coarse = pricing.cost_against_context("llama-3-70b", "H100-SXM", np.logspace(2, 4, 21), 1e8, fit=False)
    fine = pricing.cost_against_context("llama-3-70b", "H100-SXM", np.linspace(100, 2000, 19_001), 1e8, fit=False)
    assert coarse.kink == pytest.approx(fine.kink, rel=0.02)
    assert coarse.kink not in coarse.context


def test_prefill_cost_hand_calculation():
    # Llama 3 70B FP8 on 8 H100s. An 8,192-token prompt shares a 16,384-token pass with one other: per
    # token 2 N_act / F plus attention over 8192 - 8191/2 tokens on average. A 100-token prompt shares
    # its pass with 163 others.
    m = models.get("llama-3-70b")
    c = pricing.prefill_cost_against_context("llama-3-70b", "hgx-h100", [100, 8192])
    assert list(c.batch) == [164, 2]
    per_token = 2 * m.active_params / (8 * H100_FP8) + 4 * 64 * 128 * 80 * (8192 - 8191 / 2) / (8 * H100_BF16)
    assert c.compute[1] == pytest.approx(per_token, rel=1e-9)
    assert c.compute[1] > c.memory[1] and c.compute[0] > c.memory[0]  # both compute-bound


def test_tier_costs_are_means_over_each_tier():
    # Jamba, the one catalog model published past Gemini's 200K step: the midpoint means agree with a
    # trapezoid over a grid ten times finer, and both costs rise from one tier to the next.
    tc = pricing.tier_costs("google/gemini-3.1-pro-preview", "jamba-v0.1", "hgx-h100", 4096)
    assert (tc.step, tc.top) == (200_000, 262_144) and tc.price_steps == (2.0, 1.5)
    grid = np.linspace(1, 200_000, 2001)
    dec = pricing.cost_against_context("jamba-v0.1", "hgx-h100", grid, 4096).usd_per_million_tokens
    assert tc.decode[0] == pytest.approx(np.trapezoid(dec, grid) / (grid[-1] - grid[0]), rel=0.01)
    assert tc.decode_ratio > 1 and tc.prefill_ratio > 1


@pytest.mark.parametrize("call, param", [
    (lambda: pricing.tier_costs("google/gemini-2.5-pro", "llama-3.1-70b", "hgx-h100", 64), "model"),
    (lambda: pricing.tier_costs("openai/gpt-5", "jamba-v0.1", "hgx-h100", 64), "price"),
    (lambda: pricing.prefill_cost_against_context("llama-3-70b", "hgx-h100", [0.5]), "prompts"),
    (lambda: pricing.prefill_cost_against_context("llama-3-70b", "hgx-h100", [100], tokens_per_pass=0),
     "tokens_per_pass"),
    (lambda: pricing.cost_against_context("llama-3-70b", "H100-SXM", [], 64), "contexts"),
    (lambda: pricing.cost_against_context("llama-3-70b", "H100-SXM", [-1], 64), "contexts"),
    (lambda: pricing.cost_against_context("llama-3-70b", "H100-SXM", [10], 0), "batch"),
    (lambda: pricing.cost_against_context("llama-3-70b", "nope", [10], 1), "target"),
    (lambda: pricing.cost_against_context("llama-3-70b", "H100-SXM", [10], 1, usd_per_chip_hour=-1),
     "usd_per_chip_hour"),
    (lambda: pricing.cost_against_context("llama-3-70b", "H100-SXM", [10], 1, fit="yes"), "fit"),
])
def test_cost_against_context_bad_input(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param)


# --- a storage price read as a tier's rent ----------------------------------------------------
def test_implied_cache_bytes_hand_calculation():
    # $4.50 per million tokens per hour in the HBM of 8 H100s at $2 per GPU-hour: p_hbm = 16 / 3600 / 684.2e9
    # USD per byte-second, held 3,600 s plus one read (684.2e9 / 26.8e12 s): about 192 KB per token.
    p_hbm = 8 * 2.0 / 3600 / (8 * H100_HBM)
    by_hand = 4.50 / 1e6 / (p_hbm * (3600 + H100_HBM / H100_W))
    assert pricing.implied_cache_bytes_per_token(4.50, "hbm-hgx-h100", "hgx-h100") == pytest.approx(by_hand, rel=1e-9)
    with pytest.raises(ChalkError) as info:
        pricing.implied_cache_bytes_per_token(4.50, "hbm-h100", "hgx-h100")
    assert str(info.value).startswith("tier")


# --- attention in decode form and prefill form --------------------------------------------------
def test_attention_crossover_prefill_form():
    # DeepSeek-V3 prefill runs MLA un-absorbed: 2 x 128 heads x (128 + 64 + 128) FLOPs per cached token
    # and layer, 61 layers, against 2 x 128 x (2 x 512 + 64) absorbed in decode. FP8 matmuls at twice
    # the BF16 attention rate: L = N_act / f_att.
    m = models.get("deepseek-v3")
    f_prefill = 2 * 128 * (128 + 64 + 128) * 61
    assert pricing.prefill_attention_flops_per_cached_token("deepseek-v3") == f_prefill
    assert m.attention_flops_per_cached_token() == 2 * 128 * (2 * 512 + 64) * 61
    assert pricing.attention_crossover_context("deepseek-v3", "H800", "fp8", form="prefill") == \
        pytest.approx(m.active_params / f_prefill * (2 * H100_BF16 / H100_FP8), rel=1e-9)
    # For GQA the two forms are one.
    assert pricing.attention_crossover_context("llama-3-70b", form="prefill") == \
        pytest.approx(pricing.attention_crossover_context("llama-3-70b"), rel=1e-12)
    with pytest.raises(ChalkError) as info:
        pricing.attention_crossover_context("llama-3-70b", form="training")
    assert str(info.value).startswith("form")


def test_typed_in_prices_read_like_a_catalog_entry():
    # $3 / $15, hit $0.30, step at 128,000 tokens x2 / x1.5: MFU 3 / 15 = 0.2, hit 0.1x, and above the
    # step $6 / $22.50. Lecture's form on an H100 SXM (r = 989.4e12 / 3.35e12 = 295.34 at BF16), 37e9
    # active parameters in BF16 (b_w = 2): 37e9 x 2 / (295.34 x 128,000) = 1,957.4 bytes per token.
    p = pricing.typed_price(3, 15, cache_read=0.3, step_context=128_000, step_input=2, step_output=1.5)
    assert (p.long_context["input"], p.long_context["output"]) == (6.0, 22.5)
    kinds = {d.quantity: d.value for d in pricing.deduce(p, target="H100-SXM", dtype="bf16", active_params=37e9)}
    assert kinds["decode MFU relative to prefill"] == pytest.approx(0.2, rel=1e-12)
    assert kinds["KV bytes per token, lecture's form"] == pytest.approx(37e9 * 2 / (989.4e12 / 3.35e12 * 128_000), rel=1e-9)
    assert pricing.cache_multipliers(p) == {"cache_read": pytest.approx(0.1)}


def test_sparse_designs_like_for_like_hand_calculation():
    # DeepSeek-V3 shapes, 61 layers, L = 131,072. V3.2's FP8 cache: 656 B a layer; indexer keys
    # 128 FP8 + one FP32 scale = 132 B a layer. Dense 656 x 131,072 = 85,983,232 B a layer; DSA
    # 132 x 131,072 + 656 x 2,048 = 17,301,504 + 1,343,488 = 18,644,992: 4.6116x. NSA (BF16 cache,
    # 1,152 B a layer) reads floor((131,072 - 32) / 16) + 1,024 + 512 = 9,726 tokens: 131,072 / 9,726.
    L = 131_072
    dense, dsa = (pricing.decode_attention_work("deepseek-v3", L, s, v32_fp8=True) for s in (False, "dsa"))
    assert dense.kv_bytes == pytest.approx(61 * 656 * L, rel=1e-12)
    assert dense.kv_bytes / dsa.kv_bytes == pytest.approx(85_983_232 / 18_644_992, rel=1e-12)
    nsa = pricing.decode_attention_work("deepseek-v3", L, "nsa")
    assert nsa.kv_bytes == pytest.approx(61 * 1152 * 9_726, rel=1e-12)
    assert pricing.nsa_tokens_read(100) == 100 + 100 + 4  # capped by the context: floor(68 / 16) = 4
    # NSA is a constant plus a term of slope 1/16: its exponent rises from 0 towards 1 through 0.5.
    exps = [pricing.growth_exponent("deepseek-v3", x, "nsa") for x in (4096, 65536, 2**22)]
    assert exps[0] < 0.5 < exps[1] < exps[2] < 1


@pytest.mark.parametrize("call, param", [
    (lambda: pricing.decode_attention_work("deepseek-v3", 10, sparse="bsa"), "sparse"),
    (lambda: pricing.decode_attention_work("llama-3-70b", 10, v32_fp8=True), "model"),
    (lambda: pricing.nsa_tokens_read(-1), "context"),
])
def test_sparse_design_bad_input(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param)


# --- the GPUs that wait for a reload (issue #26, Chapter 6 finding 1) ---------------------------
def test_reload_wait_hand_calculation_and_hbm_break_even():
    # 8 H100s at $2/h wait while a cache comes back over the slower of the tier and their 8 x 50 GB/s
    # NICs: host DDR5 (614.4 GB/s) through the NICs' 400 GB/s, one 3FS node at its own 40.3 GB/s.
    gpus = 8 * 2.0 / 3600
    held = {t.name: t for t in tiers.tiers_with_hbm("hgx-h100")}
    assert pricing.reload_wait_usd_per_byte(held["ddr5-hgx-h100"], "hgx-h100") == pytest.approx(gpus / 400e9, rel=1e-9)
    assert pricing.reload_wait_usd_per_byte(held["3fs-storage-node"], "hgx-h100") == pytest.approx(gpus / 40.3e9, rel=1e-9)
    assert pricing.reload_wait_usd_per_byte(held["hbm-hgx-h100"], "hgx-h100") == 0.0
    costs = pricing.hold_costs(60.0, "hgx-h100", wait=True)
    rent = pricing.hold_costs(60.0, "hgx-h100")
    assert costs["hdd-exos-x24"] - rent["hdd-exos-x24"] == pytest.approx(gpus / 0.285e9, rel=1e-9)
    # HBM against host memory: rent alone gives ~6 ms, the wait ~1.7 s (the 1.6 s was at 80 GB a GPU).
    p_hbm, d_hbm = gpus / (8 * H100_HBM), H100_HBM / H100_W
    p_ddr, d_ddr = 10_000 / 1e12 / (5 * YEAR), 2e12 / 614.4e9
    by_hand = (p_ddr * d_ddr + gpus / 400e9 - p_hbm * d_hbm) / (p_hbm - p_ddr)
    _, switches = pricing.tier_envelope("hgx-h100", wait=True)
    assert switches[0].slower.name == "ddr5-hgx-h100"
    assert switches[0].hold_seconds == pytest.approx(by_hand, rel=1e-6)
    assert 1.4 < by_hand < 1.8
    assert pricing.tier_envelope("hgx-h100")[1][0].hold_seconds < 0.01


def test_a_disk_reload_costs_more_than_recomputing():
    # Llama 3.1 70B's BF16 cache (327,680 bytes per token) over one disk's 0.285 GB/s keeps 8 GPUs
    # waiting; a 32,768-token prefill in FP8 at the roofline costs tens of times less.
    rebuild = pricing.recompute_usd_per_byte("llama-3.1-70b", "hgx-h100", 32_768, "fp8")
    disk = pricing.hold_costs(0.0, "hgx-h100", wait=True)["hdd-exos-x24"]
    assert disk > 10 * rebuild
    assert 8 * 2.0 / 3600 / 0.285e9 > 10 * rebuild
    # so with the wait recomputing wins before the envelope reaches the disk, and far sooner than on rent alone
    when = pricing.rematerialise_after("llama-3.1-70b", "hgx-h100", 32_768, "fp8", wait=True)
    _, switches = pricing.tier_envelope("hgx-h100", wait=True)
    assert when < next(s.hold_seconds for s in switches if s.slower.name == "hdd-exos-x24")
    assert when < pricing.rematerialise_after("llama-3.1-70b", "hgx-h100", 32_768, "fp8") / 3
    assert min(pricing.hold_costs(when, "hgx-h100", wait=True).values()) == pytest.approx(rebuild, rel=1e-9)


def test_striping_shortens_the_wait_only():
    # A cache spread over k drives comes back at k times one drive's bandwidth, up to the 8 GPUs'
    # 400 GB/s of NICs; rent and drain time per byte do not change.
    gpus = 8 * 2.0 / 3600
    held = {t.name: t for t in tiers.tiers_with_hbm("hgx-h100")}
    disk = held["hdd-exos-x24"]
    assert pricing.reload_wait_usd_per_byte(disk, "hgx-h100", stripes=100) == pytest.approx(gpus / 28.5e9, rel=1e-9)
    assert pricing.reload_wait_usd_per_byte(disk, "hgx-h100", stripes=2000) == pytest.approx(gpus / 400e9, rel=1e-9)
    assert pricing.reload_wait_usd_per_byte(held["3fs-storage-node"], "hgx-h100", stripes=10) == pytest.approx(gpus / 400e9, rel=1e-9)
    rent = pricing.hold_costs(3600.0, "hgx-h100")
    striped = pricing.hold_costs(3600.0, "hgx-h100", wait=True, stripes=2000)
    assert striped["hdd-exos-x24"] - rent["hdd-exos-x24"] == pytest.approx(gpus / 400e9, rel=1e-9)
    # With every tier's reload at the NICs' speed, the wait is one constant for all off-GPU tiers, so
    # past host memory the envelope is rent's: flash from the rent break-even against host memory, by hand.
    p_ddr, d_ddr = 10_000 / 1e12 / (5 * YEAR), 2e12 / 614.4e9
    flash = held["3fs-storage-node"]
    p_fl, d_fl = flash.usd_per_byte_second, flash.drain_time
    by_hand = (p_fl * d_fl - p_ddr * d_ddr) / (p_ddr - p_fl)
    _, switches = pricing.tier_envelope("hgx-h100", wait=True, stripes=2000)
    assert [s.slower.name for s in switches] == ["ddr5-hgx-h100", "3fs-storage-node", "hdd-exos-x24"]
    assert switches[1].hold_seconds == pytest.approx(by_hand, rel=1e-6)
    # and a disk store striped wide enough beats recomputing for long holds, where one disk never does
    rebuild = pricing.recompute_usd_per_byte("llama-3.1-70b", "hgx-h100", 32_768, "fp8")
    assert pricing.hold_costs(0.0, "hgx-h100", wait=True, stripes=2000)["hdd-exos-x24"] < rebuild
    with pytest.raises(ChalkError, match="^stripes"):
        pricing.hold_costs(0.0, "hgx-h100", wait=True, stripes=0)


@pytest.mark.parametrize("target", ["H100-SXM", "hgx-h100", "gb200-nvl72", "H800"])
def test_tier_rule_with_the_wait_matches_exhaustive_comparison(target):
    first, switches = pricing.tier_envelope(target, wait=True)
    edges = [s.hold_seconds for s in switches]
    for hold in np.logspace(-5, 9, 300):
        if any(abs(hold - e) <= 1e-9 * e for e in edges):
            continue
        costs = pricing.hold_costs(hold, target, wait=True)
        chosen = pricing.cheapest_tier(hold, target, wait=True).name
        assert costs[chosen] == pytest.approx(min(costs.values()), rel=1e-12), (hold, chosen)


def test_reload_wait_symbolic_form():
    from chalk.notation import W_out, n_chips, p_chip
    assert sp.simplify(pricing.hold_cost_waiting - pricing.hold_cost
                       - n_chips * p_chip / (3600 * sp.Min(W, n_chips * W_out))) == 0


def test_graph_d_crossover_is_solved_not_read_off_a_grid():
    # Issue #26 finding 4: Llama 3.1 70B in FP8 on 8 H100s turns compute-bound at n = F / (2 W) per
    # chip, 1,978.9 / (2 x 3.35) = 295.4 with the cache's small terms, not at the grid's 512.
    n = pricing.compute_bound_from("llama-3.1-70b", "hgx-h100", dtype="fp8")
    assert abs(n - H100_FP8 / (2 * H100_W)) <= 2
    assert not _compute_bound(n - 1) and _compute_bound(n)


def _compute_bound(n):
    from chalk import calculator
    p = calculator.run_pass("llama-3.1-70b", "hgx-h100", 1, n, n=n, dtype="fp8")
    return p.t_compute >= p.t_weights + p.t_kv
