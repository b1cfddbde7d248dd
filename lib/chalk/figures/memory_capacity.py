"""Chapter 4's figures, live explorer and static twin: memory per chip against pipeline stages and
context, and the time to read a token's bytes against the chips reading.

The chapter's static figures hold m = P micro-batches in flight (hops short against a stage); the
explorer and the twin hold the micro-batches that keep the stages busy with the hop the reader
picks (``memory.busy_microbatches``), so slow hops show their cost in memory as well as in time.
Every number drawn or printed comes from ``chalk.memory`` (``per_chip_parts``, ``max_batch``,
``busy_microbatches``, ``weight_floor``, ``token_time``, ``hop_time``, ``layout_bytes``) and the
catalog; nothing here computes a byte itself. Each static figure says what it shows (``canvas.describe``) with its
``*_alt`` function, from the same numbers.
"""
import dataclasses
import html
import math
from functools import lru_cache

import numpy as np
from matplotlib.collections import PolyCollection

from .. import memory as mem
from .. import moe, roofline
from ..catalog import hardware, memory_data, models, systems
from ..errors import ChalkError
from . import explorer, twin
from .canvas import Layers, describe, new_figure, style
from .explorer import Dropdown, catalog_options, log_slider, number

# Okabe and Ito's palette; the cache is hatched as well as coloured, the lines dashed or dotted.
COLORS = {"weights": "#0072B2", "kv": "#E69F00", "total": "#000000", "hbm": "#D55E00", "point": "#CC79A7",
          "floor": "#009E73", "hops": "#56B4E9", "lecture": "#999999"}
HATCH = "//"
STAGES = (1, 2, 3, 4, 6, 8, 12, 16)
"""Pipeline depths drawn."""
CONTEXTS = np.logspace(2, 6, 61)
"""Contexts drawn: 100 tokens to 1 M."""
DOMAINS = np.logspace(0, 4, 41)
"""Scale-up domain sizes drawn: 1 to 10,000 chips."""
GB = 1e9


def _usable(system) -> float:
    return systems.get(system).chip.hbm_capacity * (1 - roofline.HEADROOM)


def _nice(x: float) -> float:
    """The next of 1, 2, 5 x 10^k at or above ``x``: axis limits that repeat from view to view."""
    k = math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if step * 10 ** k >= x * (1 - 1e-9):
            return step * 10 ** k
    return 10 ** (k + 1)


def _decades(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return 10 ** math.floor(math.log10(v.min())), 10 ** math.ceil(math.log10(v.max()))


@lru_cache(maxsize=256)
def stage_microbatches(model, system, dtype, batch, context, hop=None) -> np.ndarray:
    """Micro-batches in flight at each of ``STAGES``: P when ``hop`` is None (the no-hop limit),
    else the fewest that keep every stage busy with hops of ``hop`` seconds (``busy_microbatches``)."""
    if hop is None:
        return np.array(STAGES)
    return np.asarray(mem.busy_microbatches(model, system, batch, context, np.array(STAGES), hop, dtype), dtype=float)


@lru_cache(maxsize=256)
def stage_parts(model, system, dtype, batch, context, hop=None) -> tuple[np.ndarray, np.ndarray]:
    """(weights, cache) per chip in bytes at each of ``STAGES``, E = the system's chips, with
    ``stage_microbatches`` in flight (m = P when ``hop`` is None)."""
    return mem.per_chip_parts(model, batch, context, dtype, systems.get(system).count, np.array(STAGES),
                              stage_microbatches(model, system, dtype, batch, context, hop))


@lru_cache(maxsize=256)
def context_parts(model, system, dtype, batch, stages, hop=None) -> tuple[np.ndarray, np.ndarray]:
    """(weights, cache) per chip in bytes over ``CONTEXTS`` at ``stages`` stages, m = P when ``hop``
    is None, else the micro-batches that keep the stages busy at each context."""
    m = None if hop is None else mem.busy_microbatches(model, system, batch, CONTEXTS, stages, hop, dtype)
    w, k = mem.per_chip_parts(model, batch, CONTEXTS, dtype, systems.get(system).count, stages, m)
    return np.broadcast_to(w, CONTEXTS.shape), k


@lru_cache(maxsize=64)
def floor_line(model, system, dtype, domains=None) -> np.ndarray:
    """Weight-read floor in seconds (batches that touch every expert) over ``domains`` chips of
    ``system``'s chip reading (a tuple; ``DOMAINS`` by default)."""
    sizes = DOMAINS if domains is None else np.asarray(domains, dtype=float)
    return mem.weight_floor(model, system, dtype, expert_parallel=1) / sizes


def widest_reading(model) -> float:
    """The most chips that can read one MoE layer's weights at once with every routed expert whole:
    its routed experts (past that, splitting an expert adds the collectives a dense layer pays).
    inf for a dense model, whose reads spread only by tensor parallelism and its all-reduces."""
    mdl = models.get(model) if isinstance(model, str) else model
    return float(mdl.moe["n_routed_experts"]) if mdl.moe else math.inf


@lru_cache(maxsize=64)
def catalog_floors(model, dtype) -> list[tuple[str, int, float]]:
    """(system, S, weight floor s) for every catalog system with all its S chips reading (E = S),
    at batches that touch every expert, sorted by S; systems larger than ``widest_reading`` are left
    out (a 9,216-chip pod cannot read a 256-expert layer on every chip without splitting experts)."""
    rows = [(s.name, s.count, mem.weight_floor(model, s, dtype)) for s in systems.catalog_systems().values()
            if s.count <= widest_reading(model)]
    return sorted(rows, key=lambda r: (r[1], r[2]))


def nccl_fixed() -> tuple[float, float]:
    """A network step's fixed latency in NCCL's cost model, seconds: (LL protocol, Simple protocol)."""
    nccl = memory_data.latency("nccl-net-step")
    return (1e-6 * (nccl["base_us_ll"] + nccl["hop_us_ll"]), 1e-6 * (nccl["base_us_simple"] + nccl["hop_us_simple"]))


HOP_EXAMPLE = dict(model="deepseek-v3", system="gb200-nvl72", context=4096, dtype="fp8")
"""The hop's worked example: DeepSeek-V3 in FP8 on GB200 NVL72 stages at 4,096 tokens."""


def hop_example_batch(attention_dtype=None) -> int:
    """The hop example's micro-batch: the batch a stage would run (``memory.crossover_at_balance``),
    the balance batch B*(L) with attention at BF16 peak, or with ``attention_dtype`` attention."""
    e = HOP_EXAMPLE
    return round(mem.crossover_at_balance(e["model"], e["system"], e["context"], e["dtype"],
                                          attention_dtype=attention_dtype).batch)


A2A_BYTES = 1.5
"""Bytes a value in an MoE layer's all-to-all: FP8 dispatch and BF16 combine, as DeepEP sends them."""


def hop_example_alltoall() -> float:
    """Seconds of one MoE layer's all-to-all (dispatch and combine) for the hop example's micro-batch
    among one stage's chips, on Chapter 2's measured link model (fitted to DeepEP's timings)."""
    e = HOP_EXAMPLE
    return moe.layer_times(e["model"], e["system"], hop_example_batch(), e["dtype"], bytes_per_element=A2A_BYTES,
                           links="measured").communication


def decode_layout_read(system, chips, expert_slots=1, dtype="fp8") -> tuple[float, float]:
    """(seconds for one GPU to read its weights, seconds for its copies alone) when DeepSeek-V3 is
    served on ``chips`` chips of ``system``'s kind in DeepSeek's decode layout
    (``memory_data.deployment("deepseek-v3-decode")``): attention split over its tensor-parallel
    ranks, the routed experts spread with ``expert_slots`` more (the shared expert served as one more
    expert, and redundant copies), everything else (dense layers, routers, output layer) copied on
    every GPU (Chapter 2's ``moe.placement``). The input embedding is looked up a row per token, not
    read. Each GPU reads its own copies every step, however many GPUs share the experts."""
    ds, sys_ = models.get("deepseek-v3"), systems.get(system) if isinstance(system, str) else system
    chips = int(chips)
    b = hardware.bytes_per_weight(dtype)
    ranks = memory_data.deployment("deepseek-v3-decode")["attention_tensor"]
    place = moe.placement(ds, dataclasses.replace(sys_, count=chips), chips, 0, dtype, redundant=expert_slots)
    shared = ds.moe["n_shared_experts"] * ds.n_moe_layers * moe.expert_params(ds) * b
    copied = (place.replicated_bytes - ds.attention_params_per_layer * ds.n_layers * b * (1 - 1 / ranks) - shared
              - ds.input_embedding_params * b)
    return (place.expert_bytes + copied) / sys_.chip.hbm_bandwidth, copied / sys_.chip.hbm_bandwidth


# --- the chapter's static figures ----------------------------------------------------------------
def stages_figure(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", batch=256, context=8192, width=6.4,
                  height=3.6):
    """The lecture's board: memory per chip against pipeline stages (m = P), weights solid and the
    cache hatched, against the chip's usable HBM (a Figure)."""
    w, k = stage_parts(model, system, dtype, batch, context)
    fig, (ax,) = new_figure(width, height)
    x = np.arange(len(STAGES))
    with style():
        ax.bar(x, w / GB, color=COLORS["weights"], label="weights, N b_w / (E P)")
        ax.bar(x, k / GB, bottom=w / GB, color=COLORS["kv"], hatch=HATCH, edgecolor="white",
               label="KV cache, B L b_kv / E (m = P)")
        ax.axhline(_usable(system) / GB, color=COLORS["hbm"], ls="--", lw=1.4, label="usable HBM per chip")
        ax.set_xticks(x, [str(p) for p in STAGES])
        ax.set_xlabel("pipeline stages P (m = P micro-batches in flight: hops short against a stage)")
        ax.set_ylabel("GB per chip")
        ax.set_title(f"{models.get(model).display} in {dtype}, {batch:,} sequences per micro-batch, "
                     f"L = {context:,}, E = {systems.get(system).count}", fontsize=8.5)
        ax.legend(loc="upper right", frameon=False, fontsize=7.5)
        ax.set_ylim(0, 1.15 * max((w + k).max(), _usable(system)) / GB)
        fig.tight_layout()
    return describe(fig, stages_alt(model, system, dtype, batch, context))


def stages_alt(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", batch=256, context=8192) -> str:
    w, k = stage_parts(model, system, dtype, batch, context)
    return (f"Bars of memory per chip for {models.get(model).display} at 1 to {STAGES[-1]} pipeline stages: "
            f"the weights fall from {w[0] / GB:.1f} GB to {w[-1] / GB:.2f} GB while the KV cache stays at "
            f"{k[0] / GB:.1f} GB on every bar; usable HBM is {_usable(system) / GB:.0f} GB per chip.")


def context_figure(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", batch=16, stages=(1, 2, 4, 8),
                   width=6.4, height=3.6):
    """Memory per chip against context for several pipeline depths (m = P): the curves meet the
    cache's own line as context grows, and cross usable HBM at nearly the same context (a Figure)."""
    fig, (ax,) = new_figure(width, height)
    styles = ("-", "--", "-.", ":")
    with style():
        for p, ls in zip(stages, styles):
            w, k = context_parts(model, system, dtype, batch, p)
            ax.plot(CONTEXTS, (w + k) / GB, color=COLORS["total"], ls=ls, label=f"P = {p}: weights + cache")
        _, k = context_parts(model, system, dtype, batch, stages[0])
        ax.plot(CONTEXTS, k / GB, color=COLORS["kv"], lw=2.2, marker="o", ms=3, markevery=6, label="cache alone, any P")
        ax.axhline(_usable(system) / GB, color=COLORS["hbm"], ls=(0, (8, 2, 2, 2)), lw=1.2, label="usable HBM per chip")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("context L (tokens)")
        ax.set_ylabel("GB per chip")
        ax.set_title(f"{models.get(model).display} in {dtype} on {systems.get(system).display}, "
                     f"{batch} sequences per micro-batch", fontsize=8.5)
        ax.legend(loc="lower right", frameon=False, fontsize=7.5)
        fig.tight_layout()
    return describe(fig, context_alt(model, system, dtype, batch, stages))


def context_fits(model, system, dtype, batch, stages) -> float:
    """The longest context whose weights and cache fit a chip's usable HBM (0 if the weights alone
    do not): ``memory.max_context``, the closed form the figure's curves cross, in whole tokens."""
    most = mem.max_context(model, system, batch, dtype, stages)
    return float(math.floor(most)) if math.isfinite(most) else most


def context_alt(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", batch=16, stages=(1, 2, 4, 8)) -> str:
    fits = ", ".join(f"P = {p}: {context_fits(model, system, dtype, batch, p):,.0f}" for p in stages)
    return (f"Memory per chip against context, log axes, for {models.get(model).display}: one curve per "
            f"pipeline depth, all joining the cache's line at long context. The longest context that fits, "
            f"by depth: {fits} tokens.")


def floor_figure(model="deepseek-v3", dtype="fp8", width=6.4, height=3.6):
    """The weight-read floor N_tot b_w / (E W_chip) against the chips reading E for two chips, at
    batches that touch every expert, and every catalog system with its S chips reading (a Figure)."""
    rows = catalog_floors(model, dtype)
    fig, (ax,) = new_figure(width, height)
    markers = "osD^v<>ph*XPd8H"  # one shape per catalog system
    with style():
        for name, ls in (("hgx-h100", "--"), ("gb200-nvl72", "-")):
            ax.plot(DOMAINS, 1e3 * floor_line(model, name, dtype), color=COLORS["floor"], ls=ls,
                    label=f"{systems.get(name).chip.name} chips")
        for (name, count, t), marker in zip(rows, markers * 2):  # (repeats only past 15 systems)
            ax.plot([count], [1e3 * t], marker, ms=6, color=COLORS["point"], mec="black", label=name)
        ax.axhline(memory_data.LECTURE["step_ms"], color=COLORS["lecture"], ls=":", label="the lecture's 20 ms step")
        widest = widest_reading(model)
        if math.isfinite(widest):   # past a layer's routed experts, reading wider splits experts: collectives
            ax.axvline(widest, color=COLORS["total"], ls="-.", lw=0.8, label=f"{widest:.0f} routed experts per layer")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chips reading the weights in parallel, E (a catalog system: E = S)")
        ax.set_ylabel("weight-read floor, sharded evenly (ms per token)")
        ax.set_title(f"{models.get(model).display} in {dtype}, every expert read: N_tot b_w / (E W_chip)",
                     fontsize=8.5)
        ax.legend(loc="lower left", frameon=False, fontsize=6.5, ncol=2)
        fig.tight_layout()
    return describe(fig, floor_alt(model, dtype))


def floor_alt(model="deepseek-v3", dtype="fp8") -> str:
    rows = catalog_floors(model, dtype)
    fastest, slowest = min(rows, key=lambda r: r[2]), max(rows, key=lambda r: r[2])
    return (f"Log-log lines of the time to read {models.get(model).display}'s weights once against the number of "
            f"chips reading them, falling as 1/E, at batches that touch every expert; catalog systems as markers, from {1e3 * slowest[2]:.1f} ms on "
            f"{slowest[0]} (S = {slowest[1]}) to {1e3 * fastest[2]:.2f} ms on {fastest[0]} (S = {fastest[1]})"
            + (f"; a vertical line at {widest_reading(model):.0f} chips, the routed experts of one layer, past which "
               "reading wider means splitting experts." if math.isfinite(widest_reading(model)) else "."))


def layout_figure(model="deepseek-v3", batch=64, context=8192, dtype="fp8", expert_parallel=8, stages=4,
                  width=6.4, height=2.8):
    """The independent check's placement: bytes on each (stage, shard) chip as a heat map, against
    ``per_chip`` (a Figure)."""
    chips = mem.layout_bytes(model, batch, context, dtype, expert_parallel, stages)
    formula = mem.per_chip(model, batch, context, dtype, expert_parallel, stages)
    fig, (ax,) = new_figure(width, height)
    with style():
        im = ax.imshow(chips / formula, cmap="cividis", aspect="auto")
        for (s, e), v in np.ndenumerate(chips / formula):
            ax.text(e, s, f"{v:.3f}", ha="center", va="center", fontsize=7,
                    color="white" if v < (chips / formula).mean() else "black")
        ax.set_xticks(range(expert_parallel), [f"shard {e + 1}" for e in range(expert_parallel)], fontsize=7)
        ax.set_yticks(range(stages), [f"stage {s + 1}" for s in range(stages)])
        ax.grid(False)
        ax.set_title(f"{models.get(model).display}: bytes on each chip over the formula's "
                     f"{formula / GB:.2f} GB", fontsize=8.5)
        fig.colorbar(im, ax=ax, label="placed / formula")
        fig.tight_layout()
    return describe(fig, layout_alt(model, batch, context, dtype, expert_parallel, stages))


def layout_alt(model="deepseek-v3", batch=64, context=8192, dtype="fp8", expert_parallel=8, stages=4) -> str:
    chips = mem.layout_bytes(model, batch, context, dtype, expert_parallel, stages)
    formula = mem.per_chip(model, batch, context, dtype, expert_parallel, stages)
    return (f"A grid of {stages} stages by {expert_parallel} shards; each cell is a chip's placed bytes over the "
            f"formula's {formula / GB:.2f} GB, from {chips.min() / formula:.3f} to {chips.max() / formula:.3f}; "
            f"the mean is {chips.mean() / formula:.3f}.")


WALL_CHIPS = ("A100-80GB", "H100-SXM", "H200", "B200", "GB300", "Rubin")
"""NVIDIA's data-centre generations in the catalog, oldest first."""


def wall_rows() -> list[dict]:
    """Each generation's HBM capacity, bandwidth and dense BF16 rate relative to the first (None
    where the catalog has no BF16 rate)."""
    base = hardware.get(WALL_CHIPS[0])
    rows = []
    for name in WALL_CHIPS:
        c = hardware.get(name)
        rows.append({"chip": name, "capacity": c.hbm_capacity / base.hbm_capacity,
                     "bandwidth": c.hbm_bandwidth / base.hbm_bandwidth,
                     "compute": c.flops("bf16") / base.flops("bf16") if "bf16" in c.dtypes else None})
    return rows


def wall_figure(width=8.0, height=3.4):
    """The memory wall: capacity, bandwidth and BF16 compute per chip across NVIDIA generations,
    relative to the A100; and memory's share of accelerator component spending (a Figure)."""
    rows = wall_rows()
    fig, (ax, bx) = new_figure(width, height, 2)
    x = np.arange(len(rows))
    with style():
        for key, marker, ls in (("capacity", "o", "-"), ("bandwidth", "s", "--"), ("compute", "^", ":")):
            ys = [np.nan if r[key] is None else r[key] for r in rows]
            ax.plot(x, ys, marker=marker, ls=ls, color={"capacity": COLORS["weights"], "bandwidth": COLORS["kv"],
                                                          "compute": COLORS["total"]}[key],
                    label={"capacity": "HBM capacity", "bandwidth": "HBM bandwidth", "compute": "BF16 FLOP/s"}[key])
        ax.set_yscale("log")
        ax.set_xticks(x, [r["chip"] for r in rows], rotation=30, fontsize=7)
        ax.set_ylabel(f"per chip, relative to {WALL_CHIPS[0]}")
        ax.set_title("one chip across generations", fontsize=8.5)
        ax.legend(frameon=False, fontsize=7)
        shares = list(memory_data.COST_SHARES.values())
        bottom = np.zeros(len(shares))
        # Lightness steps of at least 20 L* between the four fills, so that greyscale keeps them apart.
        hatches = {"hbm": "", "packaging": "//", "logic": "..", "auxiliary": "xx"}
        colours = {"hbm": COLORS["kv"], "packaging": COLORS["weights"], "logic": "#222222", "auxiliary": "#E8E8E8"}
        for part in ("hbm", "packaging", "logic", "auxiliary"):
            v = np.array([s.shares[part] for s in shares])
            bx.bar(range(len(shares)), 100 * v, bottom=100 * bottom, color=colours[part], hatch=hatches[part],
                   edgecolor="#777777" if part == "auxiliary" else "white", label=part)
            bottom += v
        bx.set_xticks(range(len(shares)), [s.period for s in shares])
        bx.set_ylabel("% of component spending")
        bx.set_title("component spending (Epoch AI estimates)", fontsize=8.5)
        bx.legend(frameon=False, fontsize=7, loc="lower right")
        fig.tight_layout()
    return describe(fig, wall_alt())


def wall_alt() -> str:
    rows = wall_rows()
    last = next(r for r in reversed(rows) if r["compute"] is not None)
    shares = list(memory_data.COST_SHARES.values())
    return (f"Left: from {rows[0]['chip']} to {last['chip']}, HBM capacity grew {last['capacity']:.1f} times, bandwidth "
            f"{last['bandwidth']:.1f} times and BF16 compute {last['compute']:.1f} times. Right: memory's share of AI "
            f"accelerator component spending, {100 * shares[0].shares['hbm']:.0f}% in {shares[0].period} and "
            f"{100 * shares[-1].shares['hbm']:.0f}% in {shares[-1].period}.")


def training_figure(model="llama-3-70b", chip="H100-SXM", recipe="zero-mixed-adam", tokens=8192,
                    chips=(1, 8, 64, 512, 4096), width=6.4, height=3.6):
    """Model state per chip against data-parallel chips under each ZeRO stage, beside one micro-batch's
    activations (Chapter 7, block rematerialisation), which no stage divides (a Figure)."""
    from .. import reversible  # imported on use: the cipher module is Chapter 7's and heavier
    fig, (ax,) = new_figure(width, height)
    n = np.asarray(chips)
    with style():
        for stage, ls in zip(range(4), ("-", "--", "-.", ":")):
            ys = [mem.training_state_bytes(model, recipe, int(c), stage) / GB for c in n]
            ax.plot(n, ys, ls=ls, marker="o", ms=3, color=COLORS["weights"], label=f"ZeRO stage {stage}")
        act = reversible.activation_memory(model, tokens, "block") / GB
        ax.axhline(act, color=COLORS["kv"], lw=2, label=f"activations of {tokens:,} tokens (kept layer inputs)")
        ax.axhline(hardware.get(chip).hbm_capacity * (1 - roofline.HEADROOM) / GB, color=COLORS["hbm"], ls="--",
                   label=f"usable HBM of one {chip}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("data-parallel chips n_DP")
        ax.set_ylabel("GB per chip")
        ax.set_title(f"{models.get(model).display}, {memory_data.recipe(recipe).bytes_per_param:g} bytes per "
                     "parameter of model state", fontsize=8.5)
        ax.legend(frameon=False, fontsize=7, loc="lower left")
        fig.tight_layout()
    return describe(fig, training_alt(model, chip, recipe, tokens))


def training_alt(model="llama-3-70b", chip="H100-SXM", recipe="zero-mixed-adam", tokens=8192) -> str:
    from .. import reversible
    full = mem.training_state_bytes(model, recipe) / GB
    act = reversible.activation_memory(model, tokens, "block") / GB
    return (f"Log-log lines of model state per chip against data-parallel chips: stage 0 stays at {full:,.0f} GB, "
            f"stage 3 falls as 1/n; a flat line at {act:.1f} GB for one micro-batch's activations, which no "
            f"ZeRO stage divides, and the usable HBM of one {chip}.")


# --- the live explorer ---------------------------------------------------------------------------
def lecture_hop() -> float:
    """The lecture's hop: the milliseconds it adds to a token over its stages (``memory_data.LECTURE``)."""
    return memory_data.LECTURE["added_ms"] * 1e-3 / memory_data.LECTURE["stages"]


def lecture_hop_text() -> str:
    """The lecture's hop as the figures label it: '2.5 ms'."""
    return f"{1e3 * lecture_hop():g} ms"


HOPS = (("none", 0.0), ("10 µs (NCCL's model)", 10e-6), ("100 µs", 100e-6), ("1 ms", 1e-3),
        (f"{lecture_hop_text()} (the lecture's)", lecture_hop()))
"""A hop's fixed latency; ``memory.hop_time`` adds the micro-batch's activations on top."""


PERCENT_TOP = 200.0
"""The stages panel's axis, in % of usable HBM: bars past it are cut and labelled with their value."""
RATIO_LIMITS = (1e-3, 1e3)
"""The context panel's axis, in multiples of usable HBM."""
MS_LIMITS = (1e-3, 1e5)
"""The domain panel's axis, ms per token. Every axis is fixed, so only the data is redrawn."""


def _bar(i: int, bottom: float, top: float, width: float = 0.8) -> list:
    """The corners of bar ``i`` from ``bottom`` to ``top``."""
    return [(i - width / 2, bottom), (i + width / 2, bottom), (i + width / 2, top), (i - width / 2, top)]


class MemoryFigure:
    """Three panels: memory per chip against stages (stacked bars, m = P) and against context
    (lines) at the chosen depth, both as a share of the chip's usable HBM, so that the fit line is
    always at 100%; and the weight-read floor against domain size with the token's own time.

    The artists are made once; ``draw`` moves them and ``render`` redraws in layers
    (``canvas.Layers``): the axes once (they never move), the data per view, the markers each time."""

    def __init__(self, width=9.2, height=3.4):
        self.fig, (self.ax_p, self.ax_l, self.ax_s) = new_figure(width, height, 3)
        self.fig.subplots_adjust(left=0.06, right=0.975, bottom=0.3, top=0.86, wspace=0.34)
        a, b, c = self.ax_p, self.ax_l, self.ax_s
        x = np.arange(len(STAGES))
        with style():
            # One collection per part: a single draw call each, whatever the number of bars.
            self.w_bars = a.add_collection(PolyCollection([], facecolors=COLORS["weights"], edgecolors="white",
                                                          label="weights"))
            # No hatch here (it costs a redraw a few ms): the two fills differ by 25 L* in lightness and the
            # cache always sits on top of the weights.
            self.k_bars = a.add_collection(PolyCollection([], facecolors=COLORS["kv"], edgecolors="white",
                                                          label="KV cache"))
            a.set_xlim(-0.6, len(x) - 0.4)
            self.over = [a.text(i, 0.97 * PERCENT_TOP, "", ha="center", va="top", fontsize=7, color="white",
                                rotation=90, fontweight="bold") for i in x]
            hbm = a.axhline(100, color=COLORS["hbm"], ls="--", lw=1.3, label="usable HBM (the fit line)")
            self.pick = a.plot([], [], "v", ms=8, color=COLORS["point"], mec="black", clip_on=False)[0]
            a.set_xticks(x, [str(p) for p in STAGES])
            a.set_ylim(0, PERCENT_TOP)
            a.set_xlabel("stages P (m keeps them busy at this hop)")
            a.set_ylabel("% of a chip's usable HBM")
            a.set_title("against pipeline stages")
            b.set_xscale("log")
            b.set_yscale("log")
            b.minorticks_off()
            b.set_xlim(CONTEXTS[0], CONTEXTS[-1])
            b.set_ylim(*RATIO_LIMITS)
            self.total_l = b.plot([], [], color=COLORS["total"], lw=2, label="weights + cache")[0]
            self.kv_l = b.plot([], [], color=COLORS["kv"], ls=(0, (5, 1)), lw=1.5, label="cache alone")[0]
            self.w_l = b.plot([], [], color=COLORS["weights"], ls=":", lw=1.5, label="weights alone")[0]
            b.axhline(1, color=COLORS["hbm"], ls="--", lw=1.3)
            self.here_l = b.plot([], [], "o", ms=7, color=COLORS["point"], mec="black")[0]
            b.set_xlabel("context L (tokens)")
            b.set_ylabel("multiples of usable HBM")
            b.set_title("against context, at this P")
            c.set_xscale("log")
            c.set_yscale("log")
            c.minorticks_off()
            c.set_xlim(DOMAINS[0], DOMAINS[-1])
            c.set_ylim(*MS_LIMITS)
            self.floor = c.plot([], [], color=COLORS["floor"], ls="-.", lw=1.8,
                                label="weight-read floor N b_w / (E W_chip), every expert, sharded evenly")[0]
            self.systems = c.plot([], [], "s", ms=5, color=COLORS["floor"], mec="black", label="catalog systems (E = S)")[0]
            self.token = c.plot([], [], "o", ms=8, color=COLORS["point"], mec="black", label="this token: reads + hops")[0]
            step = c.axhline(memory_data.LECTURE["step_ms"], color=COLORS["lecture"], ls=(0, (1, 3)), lw=1.2,
                             label="the lecture's 20 ms")
            c.set_xlabel("chips reading in parallel, E")
            c.set_ylabel("ms per token")
            c.set_title("against the chips reading")
            handles = [self.w_bars, self.k_bars, hbm, self.total_l, self.kv_l, self.w_l, self.floor,
                       self.systems, self.token, step]
            self.fig.legend(handles=handles, loc="lower center", ncol=5, frameon=False, fontsize=7.5)
            self.note = self.fig.text(0.5, 0.55, "", ha="center", va="center", fontsize=10, color="#b00")
        view = [self.w_bars, self.k_bars, *self.over, self.total_l, self.kv_l, self.w_l,
                self.floor, self.systems, self.note]
        self.layers = Layers(self.fig, view, [self.pick, self.here_l, self.token])
        self._view = None

    def draw(self, model, system, dtype, batch, context, stages, hop):
        """Move every artist to one set of parameters; returns the numbers the readout prints."""
        count = systems.get(system).count
        usable = _usable(system)
        t_hop = mem.hop_time(model, system, batch, hop)
        # The micro-batches that keep the stages busy depend on the hop (m = P only for short ones).
        w, k = stage_parts(model, system, dtype, batch, context, t_hop)
        wl, kl = context_parts(model, system, dtype, batch, stages, t_hop)
        view = (model, system, dtype, batch, context, stages, hop)
        if view != self._view:
            self._view = view
            self.note.set_text("")
            wp = np.minimum(100 * w / usable, PERCENT_TOP)
            top = np.minimum(100 * (w + k) / usable, PERCENT_TOP)
            self.w_bars.set_verts([_bar(i, 0, h) for i, h in enumerate(wp)])
            self.k_bars.set_verts([_bar(i, b, t) for i, (b, t) in enumerate(zip(wp, top))])
            for text, total in zip(self.over, 100 * (w + k) / usable):
                text.set_text(f"{number(total / 100)}×" if total > PERCENT_TOP else "")
            self.total_l.set_data(CONTEXTS, (wl + kl) / usable)
            self.kv_l.set_data(CONTEXTS, np.where(kl > 0, kl, np.nan) / usable)
            self.w_l.set_data(CONTEXTS, wl / usable)
            self.floor.set_data(DOMAINS, 1e3 * floor_line(model, system, dtype))
            rows = catalog_floors(model, dtype)
            self.systems.set_data([r[1] for r in rows], [1e3 * r[2] for r in rows])
        token = mem.token_time(model, system, batch, context, stages, t_hop, dtype)
        i = STAGES.index(stages)
        self.pick.set_data([i], [min(100 * (w[i] + k[i]) / usable, PERCENT_TOP)])
        here = wl[0] + np.interp(np.log10(max(context, CONTEXTS[0])), np.log10(CONTEXTS), kl)
        self.here_l.set_data([min(max(context, CONTEXTS[0]), CONTEXTS[-1])], [here / usable])
        self.token.set_data([count], [1e3 * token])
        return {"weights": w[i], "kv": k[i], "usable": usable, "token": token, "hop": t_hop,
                "microbatches": float(stage_microbatches(model, system, dtype, batch, context, t_hop)[i]),
                "floor": mem.weight_floor(model, system, dtype), "count": count}

    def message(self, text: str):
        self._view = ("message", text)
        self.w_bars.set_verts([])
        self.k_bars.set_verts([])
        for t in self.over:
            t.set_text("")
        for line in (self.total_l, self.kv_l, self.w_l, self.floor, self.systems, self.pick, self.here_l, self.token):
            line.set_data([], [])
        self.note.set_text(text)

    def render(self) -> bytes:
        return self.layers.render(None, self._view)


def readout(model, system, dtype, batch, context, stages, hop, numbers: dict) -> str:
    """The explorer's text for one view (HTML)."""
    sys_ = systems.get(system)
    total = numbers["weights"] + numbers["kv"]
    fits = total <= numbers["usable"]
    verdict = "fits" if fits else f"<b style=\"color:#b00\">does not fit</b> (short by {(total - numbers['usable']) / GB:,.1f} GB)"
    p_star = mem.crossover_stages(model, batch, context, dtype) if batch and context else math.inf
    cross = ("with m = P the cache outweighs the weights at every depth" if p_star < 1 else
             f"with m = P the cache outweighs the weights beyond P* = {p_star:,.2g} stages" if math.isfinite(p_star)
             else "no cache at this batch and context")
    most = mem.max_batch(model, system, context, dtype, stages, microbatches=numbers["microbatches"])
    ceiling = mem.max_batch(model, system, context, dtype, 10**9)
    most_text = ("the weights alone do not fit" if most == 0 else
                 f"largest micro-batch that fits with these m: {number(most)} sequences ({number(ceiling)} with "
                 f"unlimited stages and instant hops)" if math.isfinite(most) else "any micro-batch fits at zero context")
    hops = f" + {stages} hops of {1e6 * numbers['hop']:,.0f} µs" if stages > 1 else ""
    allreduce = mem.tp_allreduces(model, system, batch, dtype)
    if allreduce:
        hops += f" + {1e3 * allreduce:,.3g} ms of tensor-parallel all-reduces"
    elif models.get(model).moe:
        hops += " (each MoE layer's all-to-all not counted)"
    m_ = numbers["microbatches"]
    busy = (f"m = {number(m_)} micro-batches' worth in flight (P would do with instant hops)"
            if m_ > stages * 1.0005 else f"m = {stages} micro-batch{'es' if stages > 1 else ''}")
    return (f"{html.escape(models.get(model).display)} in {dtype} on P = {stages} stage{'s' if stages > 1 else ''} "
            f"of {html.escape(sys_.display)} (E = {sys_.count}), {busy} "
            f"of B = {number(batch)} at L = {number(context)}: per chip <b>{numbers['weights'] / GB:,.2f} GB of weights "
            f"+ {numbers['kv'] / GB:,.2f} GB of cache = {total / GB:,.2f} GB</b> of {numbers['usable'] / GB:,.0f} GB "
            f"usable, {verdict} &middot; {cross} &middot; {most_text}<br>"
            f"token &ge; {1e3 * numbers['token']:,.3g} ms: reads over E = {sys_.count} chips{hops}; the weights alone "
            f"take {1e3 * numbers['floor']:,.3g} ms on S = {sys_.count} at batches that touch every expert")


SESSION = [
    {"context": 65536}, {"context": 131072}, {"stages": 8}, {"stages": 16}, {"stages": 1},
    {"batch": 32}, {"batch": 64}, {"context": 8192}, {"hop": lecture_hop()}, {"stages": 2},
    {"dtype": "fp8"}, {"system": "gb200-nvl72"}, {"batch": 1024}, {"context": 32768}, {"stages": 4},
    {"model": "deepseek-v3"}, {"batch": 4096}, {"context": 65536}, {"stages": 12}, {"hop": 10e-6},
    {"model": "llama-3-70b"}, {"batch": 256}, {"context": 500000}, {"stages": 1}, {"dtype": "bf16"},
    {"system": "hgx-h100"}, {"batch": 16}, {"context": 4096}, {"stages": 3}, {"system": "tpu-v5p-cube"},
]
"""A reader's session for the benchmark: context, batch and stages most often."""


class Explorer(explorer.Explorer):
    """Chapter 4's explorer: model x system x dtype x P x context x batch x hop latency."""
    controls = (
        Dropdown("model", "model", catalog_options(models.names())),
        Dropdown("system", "system (one stage)", catalog_options(systems.names())),
        Dropdown("dtype", "weights", catalog_options(("fp8", "bf16", "fp4"))),
        Dropdown("stages", "stages P", tuple((str(p), p) for p in STAGES)),
        Dropdown("hop", "hop latency", HOPS),
        log_slider("context", "context L", 100, 1e6, valid=(0, 1e7)),
        log_slider("batch", "micro-batch B", 1, 1e5),
    )
    # Llama 3.1 405B on 8 H100s in BF16: the weights overflow one stage, the cache does not shrink.
    defaults = dict(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", stages=4, hop=10e-6,
                    context=32768.0, batch=16.0)
    rows = (("model", "system"), ("dtype", "stages", "hop"), ("context", "batch"))

    def make_figure(self):
        return MemoryFigure()

    def draw(self, model, system, dtype, stages, hop, context, batch) -> str:
        numbers = self.figure.draw(model, system, dtype, batch, context, stages, hop)
        return readout(model, system, dtype, batch, context, stages, hop, numbers)

    def explain(self, error, params):
        return str(error), "nothing to draw: see the message above"


# --- static twin ---------------------------------------------------------------------------------
TWIN_MODELS = ("deepseek-v3", "llama-3.1-405b", "llama-3-70b", "mixtral-8x7b")
TWIN_SYSTEMS = ("hgx-h100", "hgx-b200", "gb200-nvl72", "gb300-nvl72")
TWIN_DTYPES = ("fp8", "bf16")
TWIN_CONTEXTS = (2048, 8192, 32768, 131072)
"""Contexts a factor of 4 apart, to 128K (the longest Llama 3.1 and DeepSeek-V3 serve)."""
TWIN_BATCHES = (64, 512)
TWIN_LINK = 10e-6
"""The twin's measured-scale hop latency before payload: NCCL's model of a network step is 9 to
22 µs with its base latency (``memory_data``)."""
TEMPLATES = ["P = {stages}, m = {m} micro-batches' worth in flight: {0.weights} GB of weights + {0.kv} GB of "
             "cache = {0.total} GB per chip of {usable_gb} GB usable; with the lecture's hops m = {m_lecture} and "
             "{0.total_lecture} GB. Token at least {1.measured} ms ({1.lecture} ms with the lecture's hops; a dense "
             "model's tensor-parallel all-reduces included, an MoE's all-to-alls not); "
             "weights alone {floor_ms} ms on S = {count}",
             "!P = {stages}, m = {m}: {0.total} GB per chip does not fit in {usable_gb} GB usable (short by "
             "{short_gb} GB; {0.total_lecture} GB with the lecture's hops)"]


def twin_view(model, system, dtype, context, batch) -> dict:
    """One view: every series and readout value at each stop of the stages slider. Memory is drawn
    with the micro-batches that keep the stages busy at each hop: the measured-scale one (m close to
    P) and the lecture's."""
    measured = mem.hop_time(model, system, batch, TWIN_LINK)
    lecture = lecture_hop()
    try:
        w, k = stage_parts(model, system, dtype, batch, context, measured)
        _, k_lecture = stage_parts(model, system, dtype, batch, context, lecture)
    except ChalkError as e:
        return {"message": str(e)}
    usable = _usable(system)
    count = systems.get(system).count
    reads = np.array([mem.token_time(model, system, batch, context, p, 0.0, dtype) for p in STAGES])
    hops = np.array([0 if p == 1 else p for p in STAGES], dtype=float)
    t_measured, t_lecture = reads + hops * measured, reads + hops * lecture
    floor = mem.weight_floor(model, system, dtype)
    total, total_lecture = w + k, w + k_lecture
    fits = total <= usable
    top = _nice(1.1 * max(total.max(), usable) / GB)
    low, high = _decades(np.r_[1e3 * t_lecture, 1e3 * floor])
    return {"panels": [
        {"ylim": [0, top], "series": {"weights": twin.rounded(w / GB), "kv": twin.rounded(k / GB),
                                      "total": twin.rounded(total / GB),
                                      "total_lecture": twin.rounded(total_lecture / GB),  # may leave the plot: clipped
                                      "hbm": twin.rounded(np.full(len(STAGES), usable / GB))}},
        {"ylim": [low, high], "series": {"reads": twin.rounded(1e3 * reads), "measured": twin.rounded(1e3 * t_measured),
                                         "lecture": twin.rounded(1e3 * t_lecture),
                                         "floor": twin.rounded(np.full(len(STAGES), 1e3 * floor))}}],
        # The readout quotes the panels' series ({0.total}, {1.measured}); only what they lack is here.
        "readout": {"pick": [0 if ok else 1 for ok in fits],
                    "values": {"m": twin.rounded(stage_microbatches(model, system, dtype, batch, context, measured)),
                               "m_lecture": twin.rounded(stage_microbatches(model, system, dtype, batch, context,
                                                                            lecture)),
                               "short_gb": twin.rounded(np.where(fits, np.nan, (total - usable) / GB))},
                    "constants": {"usable_gb": twin.rounded(usable / GB)[0], "floor_ms": twin.rounded(1e3 * floor)[0],
                                  "count": count}}}


def twin_data() -> dict:
    """Every view, keyed ``model|system|dtype|context|batch``; the slider sets the stages."""
    controls = [
        twin.select("model", "model", [(m, models.get(m).display) for m in TWIN_MODELS]),
        twin.select("system", "system (one stage)", [(s, systems.get(s).display) for s in TWIN_SYSTEMS]),
        twin.select("dtype", "weights", [(d, d) for d in TWIN_DTYPES]),
        twin.select("context", "context (tokens)", [(c, f"{c:,}") for c in TWIN_CONTEXTS]),
        twin.select("batch", "micro-batch (sequences)", [(b, f"{b:,}") for b in TWIN_BATCHES]),
        twin.slider("stages", "pipeline stages P", STAGES, 4),
    ]
    xlabel = "pipeline stages P"
    panels = [twin.chart("memory per chip", xlabel, "GB per chip", xscale="linear", yscale="linear",
                         point=("total", "point")),
              twin.chart("time per token (lower bound)", xlabel, "ms per token", xscale="linear", yscale="log",
                         point=("measured", "point"))]
    hop = lecture_hop_text()
    styles = {"weights": twin.line_style("weights per chip", COLORS["weights"], 2, "12 3"),
              "kv": twin.line_style(f"KV cache per chip, m busy with {1e6 * TWIN_LINK:.0f} µs hops", COLORS["kv"], 2,
                                    "6 3"),
              "total": twin.line_style("weights + cache", COLORS["total"], 2.6),
              "total_lecture": twin.line_style(f"weights + cache, m busy with the lecture's {hop} hops",
                                               COLORS["lecture"], 1.8, "4 2 1 2"),
              "hbm": twin.line_style("usable HBM per chip", COLORS["hbm"], 1.4, "2 3"),
              "reads": twin.line_style("reads only", COLORS["weights"], 1.6, "6 3"),
              "measured": twin.line_style(f"with hops of {1e6 * TWIN_LINK:.0f} µs + payload", COLORS["total"], 2.2),
              "lecture": twin.line_style(f"with the lecture's {hop} hops", COLORS["lecture"], 1.6, "2 3"),
              "floor": twin.line_style("weights alone on this domain", COLORS["floor"], 1.4, "8 3 2 3"),
              "point": twin.point_style("chosen P", COLORS["point"])}
    views = {f"{m}|{s}|{d}|{c}|{b}": twin_view(m, s, d, c, b) for m in TWIN_MODELS for s in TWIN_SYSTEMS
             for d in TWIN_DTYPES for c in TWIN_CONTEXTS for b in TWIN_BATCHES}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=TEMPLATES, views=views)


# --- static twin of the floor against the domain ----------------------------------------------------
# A second twin, because a twin's charts share its one slider for x: this one's slider is the
# scale-up domain S, the other's the stages P.
FLOOR_CHIPS = (("H100-SXM", "hgx-h100", COLORS["weights"], "12 3"), ("H200", "hgx-h200", COLORS["kv"], "6 3"),
               ("GB200", "gb200-nvl72", COLORS["floor"], ""), ("Rubin", "vera-rubin-nvl72", COLORS["hops"], "2 2"))
"""The chips drawn, each through a catalog system that carries it, with its line's colour and dashes:
Hopper, its larger-memory refresh, Blackwell and Rubin (the other Blackwell parts read as fast as the
GB200)."""
FLOOR_STOPS = (1, 2, 4, 8, 16, 32, 64, 72, 128, 256, 512, 1000, 2000, 5000, 10000)
"""Domain sizes S on the floor twin's slider (at most three significant digits, as the twin keeps)."""


def floor_twin_view(model, dtype) -> dict:
    """One view of the floor twin: the weight-read floor of S chips of each of ``FLOOR_CHIPS`` at
    every stop (``floor_line`` at those sizes), the lecture's step, and the catalog's systems
    whose domain is each size."""
    stops = tuple(float(s) for s in FLOOR_STOPS)
    floors = {chip: floor_line(model, system, dtype, stops) for chip, system, _, _ in FLOOR_CHIPS}
    step = memory_data.LECTURE["step_ms"]
    low, high = _decades(np.r_[np.concatenate(list(floors.values())) * 1e3, step])
    by_size = {}
    for sys_ in systems.catalog_systems().values():
        by_size.setdefault(sys_.count, []).append(sys_.name)
    widest = widest_reading(model)
    notes = [("" if s <= widest else f" Past {widest:.0f} chips the experts of a layer would have to split, adding "
              "collectives this line does not count.") if math.isfinite(widest) else
             ("" if s == 1 else " A dense model reads this wide only tensor parallel, whose all-reduces this line "
              "does not count.") for s in FLOOR_STOPS]
    series = {chip: twin.rounded(1e3 * f) for chip, f in floors.items()}
    series["step"] = twin.rounded(np.full(len(stops), step))
    return {"panels": [{"ylim": [low, high], "series": series}],
            "vlines": [{"x": count, "style": "domains"} for count in sorted(by_size)],
            "readout": {"pick": [0] * len(stops),
                        "values": {"systems": [", ".join(sorted(by_size.get(s, []))) or "none"
                                               for s in FLOOR_STOPS], "note": notes},
                        "constants": {"step_ms": twin.rounded(step)[0]}}}


def floor_twin_data() -> dict:
    """The floor twin: a view per model and weight format, keyed ``model|dtype``; the slider sets S."""
    controls = [twin.select("model", "model", [(m, models.get(m).display) for m in TWIN_MODELS]),
                twin.select("dtype", "weights", [(d, d) for d in TWIN_DTYPES]),
                twin.slider("size", "scale-up domain S (chips reading)", FLOOR_STOPS, 72)]
    panels = [twin.chart("weight-read floor against domain size, every expert read, sharded evenly", "chips reading S",
                         "ms per token", xscale="log", yscale="log", point=("GB200", "point"))]
    styles = {chip: twin.line_style(f"{chip} chips, N b_w / (S W_chip)", color, 2, dash)
              for chip, _, color, dash in FLOOR_CHIPS}
    styles |= {"step": twin.line_style(f"the lecture's {memory_data.LECTURE['step_ms']:g} ms step",
                                       COLORS["lecture"], 1.4, "1 3"),
               "domains": twin.line_style("a catalog system's domain size", COLORS["total"], 0.8, "5 5"),
               "point": twin.point_style("chosen S, on GB200 chips", COLORS["point"])}
    chips = ", ".join(f"{chip} {{0.{chip}}} ms" for chip, _, _, _ in FLOOR_CHIPS)
    templates = ["S = {size} chips reading every weight once: " + chips + " (the lecture's step: {step_ms} ms). "
                 "Catalog systems of this size: {systems}.{note}"]
    views = {f"{m}|{d}": floor_twin_view(m, d) for m in TWIN_MODELS for d in TWIN_DTYPES}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=templates, views=views)
