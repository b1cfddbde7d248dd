"""Chapter 1 (batching): the numbers its flashcards quote and the figures they show.

Numbers the problem set also asks for are read from its answer key, so a card and the key cannot
disagree; the figures are drawn from the roofline formulas, as the chapter's are.
"""
from collections.abc import Callable

import numpy as np

from ... import roofline
from ...catalog import hardware, models
from ...catalog.quoted import LECTURE, USD_PER_CHIP_HOUR
from ..exercises import problem_set
from ..problems import ch01_batching as ch01


def _key(exercise_id: str) -> float:
    """A number the chapter's problem set also asks for: the card quotes the answer key."""
    return problem_set("01_batching")[exercise_id].expected()


def _v3_moe(key: str) -> int:
    """One of DeepSeek-V3's expert counts, from its config in the catalog."""
    return models.get("deepseek-v3").moe[key]


def _v3_expert_ratio() -> float:
    return _v3_moe("n_routed_experts") / _v3_moe("experts_per_token")


VALUES: dict[str, Callable[[], str]] = {
    "s_v3": lambda: f"{_key('sparsity_v3'):.0f}",
    "experts_ratio_v3": lambda: f"{_v3_expert_ratio():.0f}",
    "r_a100": lambda: f"{hardware.get('A100-80GB').intensity('bf16'):.0f}",
    "r_h100": lambda: f"{hardware.get('H100-SXM').intensity('bf16'):.0f}",
    "r_gb200": lambda: f"{hardware.get('GB200').intensity('bf16'):.0f}",
    "balance_v3_h100": lambda: f"{_key('balance_h100'):,.0f}",
    "balance_v3_lecture_s": lambda: f"{hardware.get('H100-SXM').intensity('bf16') * ch01.LECTURE_SPARSITY:,.0f}",
    "lstar_v3_h100": lambda: f"{_key('lstar_h100'):,.0f}",
    "kv_v3_kib": lambda: f"{models.get('deepseek-v3').kv_bytes_per_token(2) / 1024:.0f}",
    "drain_h100_ms": lambda: f"{hardware.get('H100-SXM').drain_time * 1e3:.0f}",
    "drain_a100_ms": lambda: f"{hardware.get('A100-80GB').drain_time * 1e3:.0f}",
    "drain_gb200_ms": lambda: f"{hardware.get('GB200').drain_time * 1e3:.0f}",
    "floor_v3_nvl72_ms": lambda: f"{_key('latency_floor_ms'):.1f}",
    "fast_shrink": lambda: f"{_key('fast_batch_shrink'):.0f}",
    "fast_price": lambda: f"{ch01.FAST_PRICE:g}",
    "fast_speed": lambda: f"{ch01.FAST_SPEED:g}",
    "v3_routed": lambda: f"{_v3_moe('experts_per_token')}",
    "v3_experts": lambda: f"{_v3_moe('n_routed_experts')}",
    "v3_shared": lambda: f"{_v3_moe('n_shared_experts')}",
    "lecture_v3_active": lambda: f"{LECTURE['deepseek_active_experts']:.0f}",
    "lecture_v3_experts": lambda: f"{LECTURE['deepseek_experts']:.0f}",
    "lecture_s": lambda: f"{ch01.LECTURE_SPARSITY:g}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""


# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
_BLUE, _ORANGE, _GREY = "#0072B2", "#D55E00", "#999999"
_FIG_SYSTEM = dict(chip="GB200", model="deepseek-v3", context=1024, dtype="fp8", usd_per_chip_hour=USD_PER_CHIP_HOUR)
"""What the card figures draw: DeepSeek-V3 in FP8 on a GB200 NVL72 rack, 1k tokens of context."""


def _fig_curves():
    """Batch, B*, and the per-step times (ms) of compute, weight reads and KV reads on the rack."""
    chip, model = hardware.get(_FIG_SYSTEM["chip"]), models.get(_FIG_SYSTEM["model"])
    dtype, chips = _FIG_SYSTEM["dtype"], chip.scale_up_domain
    args = (_FIG_SYSTEM["context"], model.active_params, model.total_params,
            hardware.bytes_per_weight(dtype), model.kv_bytes_per_token(2),
            chips * chip.flops(dtype), chips * chip.hbm_bandwidth)
    b_star = float(roofline.numeric["balance_batch"](0, *args))
    batch = np.linspace(1, 3 * b_star, 600)
    times = {n: 1e3 * np.broadcast_to(roofline.numeric[n](batch, *args), batch.shape)
             for n in ("t_compute", "t_weights", "t_kv")}
    return batch, b_star, times


def _new_axes(b_star: float):
    from matplotlib.figure import Figure  # Figure without pyplot: no global state, no GUI backend
    fig = Figure(figsize=(3.6, 2.5), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.axvline(b_star, color=_GREY, lw=0.8)
    ax.annotate(r"$B^\star$", (b_star, 1), xycoords=("data", "axes fraction"), xytext=(3, -10),
                textcoords="offset points", fontsize=8)
    ax.set_title("DeepSeek-V3, FP8, GB200 NVL72, 1k context", fontsize=7)
    ax.tick_params(labelsize=7)
    return fig, ax


def _graph_a():
    """Graph A: step time against batch, the max of the memory line and the compute line."""
    batch, b_star, t = _fig_curves()
    memory = t["t_weights"] + t["t_kv"]
    fig, ax = _new_axes(b_star)
    ax.plot(batch, t["t_weights"], ":", color=_GREY, label="weight read")
    ax.plot(batch, memory, "--", color=_BLUE, label="memory (weights + KV)")
    ax.plot(batch, t["t_compute"], "--", color=_ORANGE, label="compute")
    ax.plot(batch, np.maximum(t["t_compute"], memory), color="black", lw=2, label="step time")
    ax.set(xlabel="batch B (sequences)", ylabel="step time (ms)", ylim=(0, None), xlim=(0, batch[-1]))
    ax.legend(fontsize=6.5, loc="lower right")
    return fig


def _graph_b():
    """Graph B: cost per token against batch, a hyperbola falling onto a floor (log-log)."""
    batch, b_star, t = _fig_curves()
    chips = hardware.get(_FIG_SYSTEM["chip"]).scale_up_domain
    usd_per_mtok_per_ms = 1e-3 * chips * _FIG_SYSTEM["usd_per_chip_hour"] / 3600 * 1e6
    per_token = {n: usd_per_mtok_per_ms * v / batch for n, v in t.items()}
    fig, ax = _new_axes(b_star)
    ax.loglog(batch, per_token["t_weights"], ":", color=_GREY, label="weight read / B")
    ax.loglog(batch, per_token["t_kv"], "-.", color=_BLUE, label="KV read / B")
    ax.loglog(batch, per_token["t_compute"], "--", color=_ORANGE, label="compute / B")
    step = np.maximum(per_token["t_compute"], per_token["t_weights"] + per_token["t_kv"])
    ax.loglog(batch, step, color="black", lw=2, label="cost per token")
    ax.set(xlabel="batch B (sequences)", ylabel="$ per million tokens")
    ax.legend(fontsize=6.5, loc="lower left")
    return fig


FIGURES: dict[str, Callable] = {"graph_a": _graph_a, "graph_b": _graph_b}
"""Figures a card may name; each returns a small matplotlib Figure drawn from chalk formulas."""
