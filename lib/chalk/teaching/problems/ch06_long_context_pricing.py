"""Answer key of problem set 6 (long-context pricing): ``exercises/06_long_context_pricing.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.pricing`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
chips, prices, hold times and contexts), so no answer is printed there. The choice items' keys are
letters; tests/test_problems_ch06.py recomputes the quantity each one turns on and asserts the
letter (for ``hold_tier_wait`` with the reload's waiting GPUs typed by hand there and set against
``pricing.hold_costs(..., wait=True)``).
"""
import numpy as np

from ... import pricing, roofline
from ...catalog import models, systems, tiers
from ..exercises import Choice, Exercise, Mistake

STEP = dict(crossover=128_000, active=40e9, intensity=300, bytes_per_weight=0.5)
"""``kv_from_step_fp4``: a made-up provider's step, read in the lecture's convention with FP4 weights."""
IMPLIED = dict(price="google/gemini-2.5-pro", model="qwen3-235b-a22b", target="hgx-h200", dtype="fp8")
"""``kv_implied_qwen``: a published price step read for Qwen3-235B served in FP8 on H200s."""
STEP_PRICE = dict(input=1.0, output=4.0, step_context=65_536, step_input=2.0, step_output=1.5,
                  model="llama-3.1-405b", target="gb200-nvl72", dtype="fp8", batch=256)
"""``long_step_explained``: a made-up two-tier price (``pricing.typed_price``) set against the mean
cost per token of each tier for a model served on a rack (``pricing.tier_costs``)."""
KV_SEQ = dict(model="gemma-2-9b", context=32_768, bytes_per_element=1)
"""``kv_sequence_gemma``: one sequence's cache in FP8, sliding-window layers holding only their window."""
CROSS = dict(model="llama-3.1-8b", target="H200", dtype="bf16")
"""``attention_crossover_8b``: attention against weight FLOPs, everything in BF16."""
PASS = dict(model="qwen3-235b-a22b", target="hgx-h100", dtype="fp8", prompt=16_384)
"""``prefill_speedup_qwen``: one sequence, decode (n = 1) against a prefill pass of ``prompt`` tokens."""
HOLD = dict(model="qwen3-235b-a22b", target="hgx-h200", usd_per_chip_hour=3.5, hold=6 * 3600.0, prompt=32_768,
            dtype="fp8")
"""``hold_tier_wait``: a prompt's BF16 cache held six hours, each reload charged the server's GPUs
that wait for it as well as the tier's rent."""
STRIPED = dict(HOLD, hold=24 * 3600.0, stripes=2000)
"""``hold_tier_striped``: ``hold_tier_wait``'s server and prompt held a day, each off-GPU tier a pool of
drives the cache is striped over, enough that every reload arrives at the GPUs' links."""
STORAGE = dict(price="google/gemini-2.5-pro", model="qwen3-235b-a22b", target="hgx-h200", usd_per_chip_hour=3.5)
"""``cache_storage_tier``: a published storage price per million tokens per hour read as a tier's rent."""
RACK = "gb200-nvl72"
"""``break_even_rack_flash``: host LPDDR5X against 3FS flash beside a GB200 NVL72."""
REMAT = dict(model="qwen3-235b-a22b", target="gb200-nvl72", prompt=32_768, dtype="fp8", usd_per_chip_hour=4.0)
"""``remat_after_hours``: when recomputing a prompt beats every tier, counting the tiers' rent only
(the prompt says so; ``hold_tier_wait`` charges the GPUs that wait for a reload)."""
PLOT = dict(model="llama-3.1-405b", target="gb200-nvl72", dtype="fp8", batch=1024)
"""The chart of ``kink_read``, drawn in the problem set by ``chalk.figures.long_context.cost_figure``:
up to 1,024 sequences per step, which all fit at the kink."""
KINK_GRID = np.geomspace(100, 1e6, 4001)
"""Contexts the kink is found on: fine enough that the interpolated crossing is exact to well
below the reading's tolerance."""
SPARSE = dict(model="kimi-k2", context=262_144)
"""``sparse_read_ratio``: dense over sparse KV reads per token, both caches stored as DeepSeek-V3.2
stores them (FP8 latent with its scales; ``v32_fp8``), like for like."""
SHORT_SPARSE = dict(model="kimi-k2", context=2_000)
"""``sparse_short_context``: the same comparison below the indexer's top k."""


def _kv_step(**override) -> float:
    s = {**STEP, **override}
    return pricing.kv_bytes_from_crossover(s["crossover"], s["active"], s["intensity"], flops_per_param=s.get("fpp", 2),
                                           bytes_per_weight=s["bytes_per_weight"])


def _implied(attention=True, active=True) -> float:
    d = pricing.implied_kv_bytes_per_token(**IMPLIED)
    n = d.inputs["N_act"] if active else models.get(IMPLIED["model"]).total_params
    f = d.inputs["f_att"] if attention else 0.0
    return 2 * n / (d.inputs["r"] * d.inputs["L*"]) + f * d.inputs["W"] / d.inputs["F_att"]


def _crossing(**override) -> float:
    c = {**CROSS, **override}
    return pricing.attention_crossover_context(c["model"], c["target"], c["dtype"])


def _heads_per_kv_head() -> float:
    m = models.get(CROSS["model"])
    return m.n_heads / m.n_kv_heads


def _passes():
    return pricing.pass_times(PASS["model"], PASS["target"], [1, PASS["prompt"]], dtype=PASS["dtype"])


def _rack_break_even() -> float:
    _, switches = pricing.tier_envelope(RACK)
    return next(s.hold_seconds for s in switches if s.faster.system == RACK)


def _rack_tier(kind: str):
    """The rack's host memory, or the 3FS flash node."""
    if kind == "host":
        return next(t for t in tiers.host_tiers(RACK))
    return tiers.catalog_tiers()["3fs-storage-node"]


def _remat_hours(usd=REMAT["usd_per_chip_hour"], against=None) -> float:
    """Hours of hold past which recomputing beats the rent-only envelope, or (``against``, a tier's
    name) beats that one tier."""
    r = REMAT
    if against is None:
        return pricing.rematerialise_after(r["model"], r["target"], r["prompt"], r["dtype"], usd) / 3600
    rebuild = pricing.recompute_usd_per_byte(r["model"], r["target"], r["prompt"], r["dtype"], usd)
    tier = next(t for t in tiers.tiers_with_hbm(r["target"], usd) if t.name == against)
    return (rebuild / tier.usd_per_byte_second - tier.drain_time) / 3600


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


def _sparse_ratio(indexer=True, like_for_like=True) -> float:
    """Dense over DSA's KV bytes per decode token; without ``like_for_like`` a BF16 cache is set
    against FP8 indexer keys."""
    s = SPARSE
    if not indexer:
        return s["context"] / pricing.sparse_attention_config()["index_top_k"]
    dense, sparse = (pricing.decode_attention_work(s["model"], s["context"], sparse=x, v32_fp8=like_for_like).kv_bytes
                     for x in (False, True))
    return dense / sparse


EXERCISES = (
    Exercise(
        id="kv_from_step_fp4",
        topic="reading a price step as L*",
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
        topic="reading a price step as L*",
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
    Choice(
        id="long_step_explained",
        topic="graph C: price steps against cost",
        options={
            "a": "both steps track cost: prefill's mean cost per token about doubles above the step and "
                 "decode's rises by about half",
            "b": "the input step covers prefill's cost rise, but the output step falls short of decode's",
            "c": "the output step covers decode's cost rise, but the input step falls short of prefill's",
            "d": "neither step covers its pass's cost rise",
        },
        answer="b",
        feedback={
            "a": "compute each tier's mean cost (pricing.tier_costs): a 405 B model's matmuls outweigh its "
                 "attention for most prompts of the upper tier, so prefill's mean rises by less than 2x, while "
                 "decode's KV reads make its mean rise by far more than half.",
            "c": "the other way round: decode's cost per output token grows with the KV reads past the kink, "
                 "prefill's only through attention, which a 405 B model's matmuls outweigh until long prompts.",
            "d": "prefill's attention catches up with a 405 B model's matmuls only near the top of the upper "
                 "tier, so its mean rises by less than the 2x input step.",
        },
        hint="pricing.tier_costs(price, model, target, batch, dtype) gives each tier's mean cost per input and per "
             "output token; set their ratios against the price's multipliers."),
    Exercise(
        id="kv_sequence_gemma",
        topic="KV bytes by attention design",
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
        topic="attention against the matmuls",
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
        topic="graph D: passes of n tokens",
        judgement=True,
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
    Choice(
        id="hold_tier_wait",
        topic="prompt caching: where to hold a cache",
        options={
            "a": "the server's HBM",
            "b": "the server's host DDR5",
            "c": "a 3FS flash node",
            "d": "a nearline hard disk",
            "e": "none: recompute the prefill",
        },
        answer="c",
        feedback={
            "a": "HBM needs no reload, but six hours of its rent (the GPUs' rental) is worth hundreds of prefills: "
                 "it wins only for holds of about a second.",
            "b": "host memory's rent is a hundred times flash's; over six hours it costs more than the GPUs "
                 "waiting for a flash reload. It wins for holds of seconds to tens of minutes.",
            "d": "that is the rent-only rule: reading gigabytes from one disk keeps the eight GPUs idle for "
                 "tens of seconds, dozens of prefills' worth; once they are charged, recomputing beats one disk "
                 "at any hold.",
            "e": "a reload from a flash node, its waiting GPUs included, costs well under one prefill; "
                 "recomputing wins only after holds of days.",
        },
        hint="per byte: rent p_hold (T + C/W), plus the wait: the server's GPUs' price per second times the "
             "reload's time per byte, 1 / min(tier bandwidth, the GPUs' links) (pricing.hold_costs(..., wait=True)); "
             "compare with pricing.recompute_usd_per_byte."),
    Choice(
        id="hold_tier_striped",
        topic="prompt caching: where to hold a cache",
        options={
            "a": "the server's HBM",
            "b": "the server's host DDR5",
            "c": "a pool of 3FS flash nodes",
            "d": "a pool of nearline hard disks",
            "e": "none: recompute the prefill",
        },
        answer="d",
        feedback={
            "a": "a day of HBM's rent is worth a thousand prefills or more.",
            "b": "host memory's rent over a day is worth more than a dozen prefills; striping changes no tier's rent.",
            "c": "that was one flash node's edge: its reload was ten times faster than one disk's. Striped to the "
                 "GPUs' links, every tier reloads alike, and over a day the disk's lower rent wins.",
            "e": "with the reload at the links' speed a disk's costs a small fraction of a prefill; recomputing "
                 "wins only after weeks.",
        },
        hint="striping changes only the wait: every off-GPU tier now reloads at min(stripes x W, the GPUs' links), "
             "the same for all; compare rents p_hold (T + C/W) (pricing.hold_costs(..., wait=True, stripes=...))."),
    Choice(
        id="cache_storage_tier",
        topic="prompt caching: what a storage price implies",
        options={
            "a": "the server's HBM",
            "b": "the server's host DDR5",
            "c": "a 3FS flash node",
            "d": "a nearline hard disk",
            "e": "none: no tier's rent comes within a factor of two of the price",
        },
        answer="a",
        feedback={
            "b": "host memory's rent for this cache is about a hundredth of the price: a price that high pays for "
                 "far faster memory.",
            "c": "flash rents for thousands of times less than this price.",
            "d": "a disk's rent for an hour is thousands of times below this price.",
            "e": "compute the rent of one hour in each tier for a million tokens of this cache "
                 "(pricing.hold_costs): one of them is within a factor of two of the price.",
        },
        hint="rent per million tokens per hour = 10^6 b_kv x pricing.hold_costs(3600, target, usd)[tier]; "
             "compare each tier with the price."),
    Exercise(
        id="break_even_rack_flash",
        topic="prompt caching: the tier rule",
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
        topic="prompt caching: recompute or hold",
        expected=lambda: _remat_hours(),
        unit="hours", rel_tol=0.02,
        hint="pricing.recompute_usd_per_byte gives the rebuild; walk the tier envelope to where its cost reaches "
             "it (pricing.rematerialise_after).",
        mistakes=(
            Mistake("the scenario rents the GPUs at 4 USD per hour, not the lecture's 2.",
                    value=lambda: _remat_hours(usd=2.0)),
            Mistake("that is where recomputing beats the flash node; the envelope moves on to the hard disk, whose "
                    "rent is lower still, long before.", value=lambda: _remat_hours(against="3fs-storage-node")),
            Mistake("that compares recomputing with HBM; the rule holds the cache in the cheapest tier for the hold.",
                    value=lambda: _remat_hours(against=f"hbm-{REMAT['target']}")),
        )),
    Exercise(
        id="kink_read",
        topic="graph C: the kink",
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
        topic="sparse attention like for like",
        expected=lambda: _sparse_ratio(),
        unit="dimensionless ratio", rel_tol=0.02,
        hint="dense: b_kv L; sparse: the indexer's keys for all L tokens plus b_kv for the top k, both in V3.2's "
             "FP8 format (pricing.decode_attention_work(..., v32_fp8=True)).",
        mistakes=(
            Mistake("the indexer still reads a key for every cached token in every layer.",
                    value=lambda: _sparse_ratio(indexer=False)),
            Mistake("that sets a BF16 cache against FP8 indexer keys; like for like, the dense cache is FP8 too "
                    "(v32_fp8=True), and the saving shrinks.", value=lambda: _sparse_ratio(like_for_like=False)),
        )),
    Choice(
        id="sparse_short_context",
        topic="sparse attention like for like",
        options={
            "a": "yes: it reads the cache of the top 2,048 tokens only, instead of every token's",
            "b": "no: it reads more, the indexer's keys on top of a cache it still reads whole",
            "c": "no: it reads exactly as many bytes as full attention",
            "d": "yes: the indexer's small FP8 keys stand in for the cache reads",
        },
        answer="b",
        feedback={
            "a": "below the top k every cached token is selected: the sparse step reads the whole cache anyway.",
            "c": "the indexer reads a key for every cached token in every layer, on top of the cache.",
            "d": "the indexer's keys only choose the tokens; the attention still reads the chosen tokens' cache, "
                 "here all of them.",
        },
        hint="pricing.decode_attention_work(model, context, sparse=..., v32_fp8=True).kv_bytes, dense against "
             "sparse, at this context."),
)
