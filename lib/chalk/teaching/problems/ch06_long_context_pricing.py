"""Answer key of problem set 6 (long-context pricing): ``exercises/06_long_context_pricing.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.pricing`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
chips, prices, hold times and contexts), so no answer is printed there.
"""
import numpy as np

from ... import pricing, roofline
from ...catalog import models, prices, systems, tiers
from ..exercises import Exercise, Mistake

STEP = dict(crossover=128_000, active=40e9, intensity=300, bytes_per_weight=0.5)
"""``kv_from_step_fp4``: a made-up provider's step, read in the lecture's convention with FP4 weights."""
IMPLIED = dict(price="google/gemini-2.5-pro", model="qwen3-235b-a22b", target="hgx-h200", dtype="fp8")
"""``kv_implied_qwen``: a published price step read for Qwen3-235B served in FP8 on H200s."""
LONG_PRICE = "anthropic/claude-sonnet-4.5"
"""``decode_mfu_long``: the prices above this entry's long-context step."""
KV_SEQ = dict(model="gemma-2-9b", context=32_768, bytes_per_element=1)
"""``kv_sequence_gemma``: one sequence's cache in FP8, sliding-window layers holding only their window."""
CROSS = dict(model="llama-3.1-8b", target="H200", dtype="bf16")
"""``attention_crossover_8b``: attention against weight FLOPs, everything in BF16."""
PASS = dict(model="qwen3-235b-a22b", target="hgx-h100", dtype="fp8", prompt=16_384)
"""``prefill_speedup_qwen``: one sequence, decode (n = 1) against a prefill pass of ``prompt`` tokens."""
HOLD = dict(model="qwen3-235b-a22b", target="hgx-h200", usd_per_chip_hour=3.5, hold=6 * 3600.0, bytes_per_element=1)
"""``hold_cost_hbm``: an FP8 cache of a million tokens held six hours in HBM."""
RACK = "gb200-nvl72"
"""``break_even_rack_flash``: host LPDDR5X against 3FS flash beside a GB200 NVL72."""
REMAT = dict(model="qwen3-235b-a22b", target="gb200-nvl72", prompt=32_768, dtype="fp8", usd_per_chip_hour=4.0)
"""``remat_after_hours``: when recomputing a prompt beats every tier."""
PLOT = dict(model="llama-3.1-405b", target="gb200-nvl72", dtype="fp8", batch=1024)
"""The chart of ``kink_read``, drawn in the problem set by ``chalk.figures.long_context.cost_figure``:
up to 1,024 sequences per step, which all fit at the kink."""
KINK_GRID = np.geomspace(100, 1e6, 4001)
"""Contexts the kink is found on: fine enough that the interpolated crossing is exact to well
below the reading's tolerance."""
SPARSE = dict(model="kimi-k2", context=262_144)
"""``sparse_read_ratio``: dense over sparse KV reads per token."""


def _kv_step(**override) -> float:
    s = {**STEP, **override}
    return pricing.kv_bytes_from_crossover(s["crossover"], s["active"], s["intensity"], flops_per_param=s.get("fpp", 2),
                                           bytes_per_weight=s["bytes_per_weight"])


def _implied(attention=True, active=True) -> float:
    d = pricing.implied_kv_bytes_per_token(**IMPLIED)
    n = d.inputs["N_act"] if active else models.get(IMPLIED["model"]).total_params
    f = d.inputs["f_att"] if attention else 0.0
    return 2 * n / (d.inputs["r"] * d.inputs["L*"]) + f * d.inputs["W"] / d.inputs["F_att"]


def _long_prices():
    p = prices.get(LONG_PRICE)
    return p.long_context["input"], p.long_context["output"], p


def _crossing(**override) -> float:
    c = {**CROSS, **override}
    return pricing.attention_crossover_context(c["model"], c["target"], c["dtype"])


def _heads_per_kv_head() -> float:
    m = models.get(CROSS["model"])
    return m.n_heads / m.n_kv_heads


def _passes():
    return pricing.pass_times(PASS["model"], PASS["target"], [1, PASS["prompt"]], dtype=PASS["dtype"])


def _hold_cost(usd=HOLD["usd_per_chip_hour"], hold=HOLD["hold"], bytes_per_element=HOLD["bytes_per_element"]) -> float:
    """Dollars to hold a million tokens' cache for ``hold`` seconds in HBM and read it back once."""
    hbm = tiers.hbm_tier(HOLD["target"], usd).name
    b = models.get(HOLD["model"]).kv_bytes_per_token(bytes_per_element)
    return 1e6 * b * pricing.hold_costs(hold, HOLD["target"], usd)[hbm]


def _rack_break_even() -> float:
    _, switches = pricing.tier_envelope(RACK)
    return next(s.hold_seconds for s in switches if s.faster.system == RACK)


def _rack_tier(kind: str):
    """The rack's host memory, or the 3FS flash node."""
    if kind == "host":
        return next(t for t in tiers.host_tiers(RACK))
    return tiers.catalog_tiers()["3fs-storage-node"]


def _remat_hours(usd=REMAT["usd_per_chip_hour"], drain=True) -> float:
    r = REMAT
    if drain:
        return pricing.rematerialise_after(r["model"], r["target"], r["prompt"], r["dtype"], usd) / 3600
    rebuild = pricing.recompute_usd_per_byte(r["model"], r["target"], r["prompt"], r["dtype"], usd)
    cheapest = min(tiers.tiers_with_hbm(r["target"], usd), key=lambda t: t.usd_per_byte_second)
    return rebuild / cheapest.usd_per_byte_second / 3600


def _kink() -> float:
    return pricing.cost_against_context(PLOT["model"], PLOT["target"], KINK_GRID, PLOT["batch"], PLOT["dtype"]).kink


def _balance_context() -> float:
    hw = systems.get(PLOT["target"])
    return roofline.replica(hw.chip, PLOT["model"], PLOT["dtype"], hw.count).balance_context()


def _kv_sequence(windows=True, globals_only=False) -> float:
    """GB of one sequence's cache: sliding-window layers holding their window, or (without
    ``windows``) every layer holding the whole context, or (``globals_only``) the global layers alone."""
    m, context, e = models.get(KV_SEQ["model"]), KV_SEQ["context"], KV_SEQ["bytes_per_element"]
    if globals_only:
        return m.kv_bytes_per_token(e) * context / 1e9
    if windows:
        return m.kv_bytes(context, e) / 1e9
    return 2 * m.n_layers * m.n_kv_heads * m.d_head * e * context / 1e9


def _sparse_ratio(indexer=True) -> float:
    s = SPARSE
    dense = pricing.decode_attention_work(s["model"], s["context"]).kv_bytes
    if not indexer:
        return s["context"] / pricing.sparse_attention_config()["index_top_k"]
    return dense / pricing.decode_attention_work(s["model"], s["context"], sparse=True).kv_bytes


EXERCISES = (
    Exercise(
        id="kv_from_step_fp4",
        expected=lambda: _kv_step(),
        unit="bytes per token", rel_tol=0.01,
        hint="b_kv = N_act b_w / (r L*) + f_att / r with r the BF16 intensity; FP4 matmuls run 4x the BF16 rate.",
        mistakes=(
            Mistake("that is the lecture's FP8 reading (b_w = 1); FP4 weights run the matmuls twice as fast again, "
                    "so the same step needs half the bytes.", value=lambda: _kv_step(bytes_per_weight=1)),
            Mistake("a parameter costs 2 FLOPs per token (a multiply and an add), not 1.",
                    value=lambda: _kv_step(fpp=1)),
        )),
    Exercise(
        id="kv_implied_qwen",
        expected=lambda: _implied(),
        unit="bytes per token", rel_tol=0.02,
        hint="read L* off the price entry; b_kv = 2 N_act / (r L*) + f_att W / F_att with r = F/W in FP8 and "
             "F_att the BF16 rate (pricing.implied_kv_bytes_per_token).",
        mistakes=(
            Mistake("attention also computes: f_att W / F_att bytes per token come on top of the matmuls' share "
                    "(Chapter 1's second edition).", value=lambda: _implied(attention=False)),
            Mistake("only the active parameters are multiplied per token: use N_act, not N_tot.",
                    value=lambda: _implied(active=False)),
        )),
    Exercise(
        id="decode_mfu_long",
        expected=lambda: _long_prices()[0] / _long_prices()[1],
        unit="fraction (0 to 1)", rel_tol=0.01,
        hint="eta = p_in / p_out, with both prices above the long-context step.",
        mistakes=(
            Mistake("those are the prices below the step; the question is about prompts above it.",
                    value=lambda: _long_prices()[2].input / _long_prices()[2].output),
            Mistake("that is p_out / p_in: output costs more because decode uses the chips less.",
                    value=lambda: _long_prices()[1] / _long_prices()[0]),
        )),
    Exercise(
        id="kv_sequence_gemma",
        expected=lambda: _kv_sequence(),
        unit="GB", rel_tol=0.005,
        hint="global layers hold every token, sliding-window layers at most their window; each holds "
             "2 (K and V) x KV heads x head width x bytes per element per token.",
        mistakes=(
            Mistake("the sliding-window layers keep only their last 4,096 tokens, not the whole context.",
                    value=lambda: _kv_sequence(windows=False)),
            Mistake("the sliding-window layers keep a cache too: their window's tokens.",
                    value=lambda: _kv_sequence(globals_only=True)),
            Mistake("the cache is FP8: one byte per element.", factor=2.0),
            Mistake("each layer keeps a key and a value: the factor 2.", factor=0.5),
        )),
    Exercise(
        id="attention_crossover_8b",
        expected=lambda: _crossing(),
        unit="tokens", rel_tol=0.01,
        hint="2 N_act / F = f_att L / F_att; with everything in BF16 the rates cancel: L = 2 N_act / f_att.",
        mistakes=(
            Mistake("that uses FP8 matmuls, twice the BF16 rate; the scenario runs everything in BF16.",
                    value=lambda: _crossing(dtype="fp8")),
            Mistake("attention scores every query head against the cache: f_att counts query heads, not KV heads.",
                    value=lambda: _crossing() * _heads_per_kv_head()),
            Mistake("that is the prompt length at which prefill crosses (its tokens see L/2 on average); "
                    "the question is about one decode token.", factor=2.0),
        )),
    Exercise(
        id="prefill_speedup_qwen",
        expected=lambda: _passes().per_token[0] / _passes().per_token[1],
        unit="dimensionless ratio (decode time per token / prefill time per token)", rel_tol=0.02,
        hint="pricing.pass_times(model, target, [1, n], dtype=...): compare .per_token; each pass takes the "
             "larger of its compute and its reads.",
        mistakes=(
            Mistake("per-token time falls as 1/n only while the pass is memory-bound; the prefill is compute-bound.",
                    value=lambda: float(PASS["prompt"])),
            Mistake("that compares the reads alone; the prefill's time is its compute, which is larger.",
                    value=lambda: _passes().memory[0] / _passes().memory[1] * PASS["prompt"]),
        )),
    Exercise(
        id="hold_cost_hbm",
        expected=lambda: _hold_cost(),
        unit="USD per million tokens", rel_tol=0.02,
        hint="p_hold = chips x USD per hour / 3600 / HBM bytes; cost = p_hold (T + C/W) b_kv x 10^6.",
        mistakes=(
            Mistake("the rental in the scenario is not the lecture's 2 USD per hour.",
                    value=lambda: _hold_cost(usd=2.0)),
            Mistake("the cache is FP8: 1 byte per element.", value=lambda: _hold_cost(bytes_per_element=2)),
            Mistake("the hold is six hours, 21,600 s.", value=lambda: _hold_cost(hold=3600.0)),
        )),
    Exercise(
        id="break_even_rack_flash",
        expected=_rack_break_even,
        unit="seconds", rel_tol=0.02,
        hint="equal costs p_a (T + D_a) = p_b (T + D_b): T = (p_b D_b - p_a D_a) / (p_a - p_b); the lifetime cancels.",
        mistakes=(
            Mistake("that is the host memory's drain time: the rule of thumb, not where the costs cross.",
                    value=lambda: _rack_tier("host").drain_time),
            Mistake("that is the flash's drain time: the rule of thumb, not where the costs cross.",
                    value=lambda: _rack_tier("flash").drain_time),
        )),
    Exercise(
        id="remat_after_hours",
        expected=lambda: _remat_hours(),
        unit="hours", rel_tol=0.02,
        hint="pricing.recompute_usd_per_byte gives the rebuild; walk the tier envelope to where its cost reaches "
             "it (pricing.rematerialise_after).",
        mistakes=(
            Mistake("the scenario rents the GPUs at 4 USD per hour, not the lecture's 2.",
                    value=lambda: _remat_hours(usd=2.0)),
            Mistake("reading the cache back costs the tier's drain time too: p (T + C/W).",
                    value=lambda: _remat_hours(drain=False)),
        )),
    Exercise(
        id="kink_read",
        expected=_kink,
        unit="tokens", rel_tol=0.10,
        hint="read the context where the bold black line (decode's cost per output token) leaves its flat "
             "level, on the log axis.",
        mistakes=(
            Mistake("that is L*, the kink of an unbounded batch; at 1,024 sequences the weights' share of the "
                    "memory time brings the kink in.", value=_balance_context),
        )),
    Exercise(
        id="sparse_read_ratio",
        expected=lambda: _sparse_ratio(),
        unit="dimensionless ratio", rel_tol=0.02,
        hint="dense: b_kv L; sparse: the indexer's keys for all L tokens plus b_kv for the top k "
             "(pricing.decode_attention_work).",
        mistakes=(
            Mistake("the indexer still reads a key for every cached token in every layer.",
                    value=lambda: _sparse_ratio(indexer=False)),
        )),
)
