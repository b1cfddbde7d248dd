"""Chapter 1 (batching): the numbers its flashcards quote and the figures they show.

Every number is computed from chalk. None is an answer of the problem set: its scenarios are
other models, chips and contexts (``tests/test_student_edition.py`` searches the cards for every
answer); the figures are drawn from the roofline formulas, as the chapter's are.
"""
from collections.abc import Callable
import numpy as np

from ... import moe, operator, roofline
from ...catalog import hardware, models
from ...catalog.quoted import LECTURE, USD_PER_CHIP_HOUR
from ...figures.canvas import describe
from ...notation import F, W, b_w
from ..problems import ch01_batching as ch01

V3, LLAMA_70B = "deepseek-v3", "llama-3-70b"
NVL72 = dict(chip="GB200", dtype="fp8", chips=hardware.get("GB200").scale_up_domain)
"""The lecture's own system: a GB200 NVL72 rack serving in FP8."""
LECTURE_S = LECTURE["deepseek_experts"] / LECTURE["deepseek_active_experts"]
"""The lecture's reading of DeepSeek-V3: "32 of 256 experts" active."""


def _v3_moe(key: str) -> int:
    """One of DeepSeek-V3's expert counts, from its config in the catalog."""
    return models.get(V3).moe[key]


def _r(chip: str) -> float:
    return hardware.get(chip).intensity("bf16")


def _lecture_ratio(chip: str, dtype: str) -> float:
    """F b_w / (2W) of ``chip`` in ``dtype``: the lecture's "about 300" (``roofline.lecture_ratio``)."""
    c = hardware.get(chip)
    return float(roofline.lecture_ratio.subs({F: c.flops(dtype), b_w: hardware.bytes_per_weight(dtype),
                                              W: c.hbm_bandwidth}))


def _flops_per_kv_byte(model: str) -> float:
    m = models.get(model)
    return m.attention_flops_per_cached_token() / m.kv_bytes_per_token(2)


def _gb200_lstar(attention: str, cache: str) -> float:
    """DeepSeek-V3's L* on a GB200 serving FP8 weights, attention and cache in the given formats."""
    return roofline.balance_context_sensitivity(NVL72["chip"], V3, NVL72["dtype"])[(attention, cache)]


def _nvl72_ms(batch: int, name: str = "t_step") -> float:
    """One DeepSeek-V3 step on the NVL72 at short context, in ms."""
    p = roofline.replica_params(NVL72["chip"], V3, NVL72["dtype"], NVL72["chips"])
    return 1e3 * float(roofline.numeric[name](batch, 0, *p))


def _nvl72_alltoall_calls_ms() -> float:
    """The fixed cost of a step's dispatch and combine calls on the NVL72, every MoE layer, in ms:
    what a lone token's step waits for whatever its bytes (``chalk.moe``'s measured link model)."""
    m = models.get(V3)
    return 1e3 * m.n_moe_layers * moe.layer_times(m, "gb200-nvl72", 1, NVL72["dtype"], links="measured").fixed


def _deepseek_input_per_output() -> float:
    """Input tokens per output token over DeepSeek's published day: the mix a count of all tokens
    processed (Google's) holds."""
    out = operator.fleet_output_tokens_per_second()
    return (operator.fleet_tokens_per_second() - out) / out


def _sig2(x: float, digits: int = 2) -> str:
    """Two significant digits, grouped: all an L* that subtracts two close numbers can claim (three
    where the chapter prints three)."""
    from ..corrections import sig  # imported here: the corrections import the decks, which import this module
    return sig(x, digits)


VALUES: dict[str, Callable[[], str]] = {
    "s_v3": lambda: f"{models.get(V3).sparsity:.0f}",
    "experts_ratio_v3": lambda: f"{_v3_moe('n_routed_experts') / _v3_moe('experts_per_token'):.0f}",
    "r_a100": lambda: f"{_r('A100-80GB'):.0f}",
    "r_h100": lambda: f"{_r('H100-SXM'):.0f}",
    "r_h200": lambda: f"{_r('H200'):.0f}",
    "r_gb200": lambda: f"{_r('GB200'):.0f}",
    "lecture_r_gb300_fp4": lambda: f"{_lecture_ratio('GB300', 'fp4'):.0f}",
    "lstar_llama70_h100": lambda: _sig2(roofline.balance_context_for("H100-SXM", LLAMA_70B, "bf16"), 3),
    "mla_flops_per_byte_v3": lambda: f"{_flops_per_kv_byte(V3):.0f}",
    "lstar_v3_gb200_bf16_att": lambda: _sig2(_gb200_lstar("bf16", "bf16"), 3),
    "lstar_v3_gb200_fp8_att": lambda: _sig2(_gb200_lstar("fp8", "bf16"), 3),
    "lstar_v3_gb200_fp8_both": lambda: _sig2(_gb200_lstar("fp8", "fp8"), 3),
    "gqa_flops_per_byte_llama70": lambda: f"{_flops_per_kv_byte(LLAMA_70B):.0f}",
    "drain_h100_ms": lambda: f"{hardware.get('H100-SXM').drain_time * 1e3:.0f}",
    "drain_a100_ms": lambda: f"{hardware.get('A100-80GB').drain_time * 1e3:.0f}",
    "drain_gb200_ms": lambda: f"{hardware.get('GB200').drain_time * 1e3:.0f}",
    "floor_v3_nvl72_ms": lambda: f"{_nvl72_ms(1):.3f}",
    "alltoall_calls_v3_nvl72_ms": lambda: f"{_nvl72_alltoall_calls_ms():.1f}",
    "lone_token_v3_nvl72": lambda: _sig2((_nvl72_ms(1, "t_weights") + _nvl72_alltoall_calls_ms())
                                         / _nvl72_ms(1, "t_compute")),
    "v3_moe_layers": lambda: f"{models.get(V3).n_moe_layers}",
    "fast_shrink": lambda: f"{(lambda normal, fast: normal / fast)(*roofline.fast_mode(ch01.FAST_SPEED, ch01.FAST_PRICE)):.0f}",
    "fast_price": lambda: f"{ch01.FAST_PRICE:g}",
    "fast_speed": lambda: f"{ch01.FAST_SPEED:g}",
    "v3_routed": lambda: f"{_v3_moe('experts_per_token')}",
    "v3_experts": lambda: f"{_v3_moe('n_routed_experts')}",
    "v3_shared": lambda: f"{_v3_moe('n_shared_experts')}",
    "lecture_v3_active": lambda: f"{LECTURE['deepseek_active_experts']:.0f}",
    "lecture_v3_experts": lambda: f"{LECTURE['deepseek_experts']:.0f}",
    "lecture_s": lambda: f"{LECTURE_S:g}",
    "lecture_replica_tps": lambda: f"{LECTURE['replica_tokens_per_second']:,.0f}",
    "lecture_gemini_replicas": lambda: f"{LECTURE['gemini_over_replica']:,.0f}",
    "ds_input_per_output": lambda: f"{_deepseek_input_per_output():.1f}",
    "gemini_like_for_like": lambda: f"{LECTURE['gemini_over_replica'] / (1 + _deepseek_input_per_output()):.0f}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""


# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
_BLUE, _ORANGE, _GREY = "#0072B2", "#D55E00", "#999999"
_FIG_SYSTEM = dict(**NVL72, model=V3, context=4096, usd_per_chip_hour=USD_PER_CHIP_HOUR)
"""What the card figures draw: DeepSeek-V3 in FP8 (attention in BF16) on a GB200 NVL72 rack, 4k context."""


def _fig_times(batch) -> dict[str, np.ndarray]:
    """The per-step times (ms) of compute, weight reads and KV reads on the figures' rack."""
    s = _FIG_SYSTEM
    params = roofline.replica_params(s["chip"], s["model"], s["dtype"], s["chips"], context=s["context"])
    batch = np.asarray(batch, dtype=float)
    return {n: 1e3 * np.broadcast_to(roofline.numeric[n](batch, s["context"], *params), batch.shape)
            for n in ("t_compute", "t_weights", "t_kv")}


def _fig_curves():
    """Batch, B*, and the per-step times (ms) of compute, weight reads and KV reads on the rack."""
    s = _FIG_SYSTEM
    b_star = roofline.balance_batch(s["chip"], s["model"], s["dtype"], s["context"])
    batch = np.geomspace(1, 3 * b_star, 600)
    return batch, b_star, _fig_times(batch)


def _fig_said(b_star: float) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    """What both figures draw, in words, and the step times (ms) at the batches the words name:
    1, a batch of 100 (nearly every expert read), B* and the right edge of the plot."""
    s = _FIG_SYSTEM
    marks = np.array([1.0, 100.0, b_star, 3 * b_star])
    t = _fig_times(marks)
    step = np.maximum(t["t_compute"], t["t_weights"] + t["t_kv"])
    what = (f"{models.get(s['model']).display} in {s['dtype'].upper()} on {s['chips']} {s['chip']}s at "
            f"{s['context']:,} tokens of context, log-log")
    return what, t, step


def _new_axes(b_star: float):
    from matplotlib.figure import Figure  # Figure without pyplot: no global state, no GUI backend
    fig = Figure(figsize=(3.6, 2.5), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.axvline(b_star, color=_GREY, lw=0.8)
    ax.annotate(r"$B^\star$", (b_star, 1), xycoords=("data", "axes fraction"), xytext=(3, -10),
                textcoords="offset points", fontsize=8)
    ax.set_title("DeepSeek-V3, FP8, GB200 NVL72, 4k context", fontsize=7)
    ax.tick_params(labelsize=7)
    return fig, ax


def _graph_a():
    """Graph A: step time against batch, the max of the memory line and the compute line (log-log,
    so the weight read's rise at small batch, as more experts are touched, shows)."""
    batch, b_star, t = _fig_curves()
    memory = t["t_weights"] + t["t_kv"]
    fig, ax = _new_axes(b_star)
    ax.loglog(batch, t["t_weights"], ":", color=_GREY, label="weight read (experts touched)")
    ax.loglog(batch, memory, "--", color=_BLUE, label="memory (weights + KV)")
    ax.loglog(batch, t["t_compute"], "-.", color=_ORANGE, label="compute (matmuls + attention)")
    ax.loglog(batch, np.maximum(t["t_compute"], memory), color="black", lw=2, label="step time")
    ax.set(xlabel="batch B (sequences)", ylabel="step time (ms)")
    ax.legend(fontsize=6, loc="lower right")
    what, at, step = _fig_said(b_star)
    return describe(fig, f"{what}. The step lasts {_sig2(step[0])} ms at B = 1, where the token reads only "
                    f"its own experts, and {_sig2(step[1])} ms at B = 100, where the weight read has risen from "
                    f"{_sig2(at['t_weights'][0])} ms to {_sig2(at['t_weights'][1])} ms as the batch touches nearly "
                    f"every expert. It stays on the memory line up to the balance batch B* = {_sig2(b_star)} "
                    f"({_sig2(step[2])} ms), where compute takes over, then rises in proportion to the batch, to "
                    f"{_sig2(step[3])} ms at {_sig2(3 * b_star)} sequences.")


def _graph_b():
    """Graph B: cost per token against batch, falling onto a floor (log-log)."""
    batch, b_star, t = _fig_curves()
    s = _FIG_SYSTEM
    usd_per_mtok_per_ms = 1e-3 * s["chips"] * s["usd_per_chip_hour"] / 3600 * 1e6
    per_token = {n: usd_per_mtok_per_ms * v / batch for n, v in t.items()}
    fig, ax = _new_axes(b_star)
    ax.loglog(batch, per_token["t_weights"], ":", color=_GREY, label="weight read / B")
    ax.loglog(batch, per_token["t_kv"], "-.", color=_BLUE, label="KV read / B")
    ax.loglog(batch, per_token["t_compute"], "--", color=_ORANGE, label="compute / B")
    step = np.maximum(per_token["t_compute"], per_token["t_weights"] + per_token["t_kv"])
    ax.loglog(batch, step, color="black", lw=2, label="cost per token")
    ax.set(xlabel="batch B (sequences)", ylabel="$ per million tokens")
    ax.legend(fontsize=6.5, loc="lower left")
    what, _, step_ms = _fig_said(b_star)
    cost = usd_per_mtok_per_ms * step_ms / np.array([1.0, 100.0, b_star, 3 * b_star])
    return describe(fig, f"{what}, at ${s['usd_per_chip_hour']:g} per GPU-hour. A token costs "
                    f"${_sig2(cost[0])} per million at B = 1 and ${_sig2(cost[1])} at B = 100, falling as the "
                    f"shared weight read is split over more sequences, to ${_sig2(cost[2])} at the balance batch "
                    f"B* = {_sig2(b_star)}, {_sig2(cost[0] / cost[2])} times less than alone; past B* it stays "
                    f"flat (${_sig2(cost[3])} at {_sig2(3 * b_star)}), each token paying its own compute.")


FIGURES: dict[str, Callable] = {"graph_a": _graph_a, "graph_b": _graph_b}
"""Figures a card may name; each returns a small matplotlib Figure drawn from chalk formulas."""
