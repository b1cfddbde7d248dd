"""Chapter 1's lab: graphs A and B with this machine's measured steps on the predicted roofline,
and the MoE step's reads against the experts its tokens touch.

Each function takes a ``chalk.measure.Lab`` (the notebook passes the one it measured) or, without
one, measures this machine first. The lines are ``chalk.measure.predicted``, that is the roofline's
SymPy formulas at the measured F and W; the markers are the medians measured.
"""
import numpy as np
from matplotlib.ticker import FuncFormatter

from .. import measure
from .canvas import describe, new_figure, style
from .plotting import COLORS, LINESTYLES

WHOLE = FuncFormatter(lambda value, _: f"{value:g}")
"""Batches as numbers (1, 4, 16), not powers of two."""
MEASURED = dict(ls="none", marker="o", ms=6, color=COLORS["point"], mec="black", zorder=5)
"""Measured points: markers only, so they read apart from every predicted line."""


def _grid(sweep) -> np.ndarray:
    return np.geomspace(sweep.batches[0], sweep.batches[-1], 97)


def roofline_figure(result=None):
    """Graph A (step time) and graph B (machine time per token) of the dense step, measured."""
    result = result or measure.lab()
    c, sweep, cmp = result.ceilings, result.dense, result.dense_vs_roofline
    grid = _grid(sweep)
    lines = {t: measure.predicted(sweep, c.flops, c.bandwidth, t, grid) for t in ("t_matmul", "t_weights", "t_step")}
    labels = {"t_matmul": "predicted compute, 2BN/F", "t_weights": "predicted weight read, N b_w/W",
              "t_step": "predicted bound: max of the two"}
    styles = {"t_matmul": "t_compute", "t_weights": "t_weights", "t_step": "t_step"}
    fig, (ax_a, ax_b) = new_figure(8.0, 4.0, 2)
    fig.subplots_adjust(left=0.09, right=0.97, bottom=0.3, top=0.9, wspace=0.3)
    with style():
        for ax, per_token in ((ax_a, False), (ax_b, True)):
            for t, y in lines.items():
                ax.plot(grid, 1e3 * y / (grid if per_token else 1), color=COLORS[styles[t]], ls=LINESTYLES[styles[t]],
                        lw=2.6 if t == "t_step" else 1.3, label=labels[t])
            ax.axvline(cmp.predicted_balance_batch, color=COLORS["balance"], ls=(0, (1, 3)), lw=1.2,
                       label="predicted balance batch B*")
            if cmp.knee.balance_batch is not None:
                ax.axvline(cmp.knee.balance_batch, color="#555555", ls=(0, (4, 2, 1, 2)), lw=1.2,
                           label="measured knee")
            ax.plot(sweep.batches, 1e3 * sweep.seconds / (sweep.batches if per_token else 1),
                    label="measured (median)", **MEASURED)
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(WHOLE)
            ax.set_yscale("log")
            ax.set_xlabel("batch B (sequences per step)")
        ax_a.set_ylabel("time per decode step (ms)")
        ax_b.set_ylabel("machine time per token (ms)")
        ax_a.set_title("A: step time, measured on the roofline")
        ax_b.set_title("B: cost per token (this machine's time)")
        fig.legend(*ax_a.get_legend_handles_labels(), loc="lower center", ncol=3, frameon=False)
    knee = ("no knee" if cmp.knee.balance_batch is None else f"the measured knee at {cmp.knee.balance_batch:.3g}")
    return describe(fig, f"Measured step times of {measure.sweep_text(sweep)} on this machine, batches "
                         f"{sweep.batches[0]} to {sweep.batches[-1]}: {1e3 * sweep.seconds[0]:.3g} ms to "
                         f"{1e3 * sweep.seconds[-1]:.3g} ms, against a predicted "
                         f"{1e3 * cmp.predicted_seconds[0]:.3g} ms to {1e3 * cmp.predicted_seconds[-1]:.3g} ms; "
                         f"predicted balance batch {cmp.predicted_balance_batch:.3g}, {knee}. "
                         "Time per token falls with the batch until the knee, then levels off.")


def moe_figure(result=None):
    """The MoE step's time against the batch on its roofline, and the experts its tokens touch."""
    result = result or measure.lab()
    c, sweep, cmp = result.ceilings, result.moe, result.moe_vs_roofline
    grid = _grid(sweep)
    fig, (ax_t, ax_e) = new_figure(8.0, 3.6, 2)
    fig.subplots_adjust(left=0.09, right=0.97, bottom=0.3, top=0.9, wspace=0.3)
    with style():
        ax_t.plot(grid, 1e3 * measure.predicted(sweep, c.flops, c.bandwidth, "t_weights", grid),
                  color=COLORS["t_weights"], ls=LINESTYLES["t_weights"], lw=1.6,
                  label="predicted: weights of the experts touched / W")
        ax_t.plot(grid, 1e3 * measure.predicted(sweep, c.flops, c.bandwidth, "t_matmul", grid),
                  color=COLORS["t_compute"], ls=LINESTYLES["t_compute"], lw=1.3, label="predicted compute, 2BN_act/F")
        ax_t.plot(sweep.batches, 1e3 * sweep.seconds, label="measured (median)", **MEASURED)
        ax_t.set_yscale("log")
        ax_t.set_ylabel("time per decode step (ms)")
        ax_t.set_title("MoE step time")
        ax_e.plot(grid, measure.predicted_experts_touched(grid, sweep.top_k, sweep.experts), color="#000000",
                  ls=LINESTYLES["t_step"], lw=1.6, label="E(1 - (1 - k/E)^B)")
        ax_e.plot(sweep.batches, sweep.experts_touched, label="measured (mean per layer)", **MEASURED)
        ax_e.set_ylim(0, sweep.experts * 1.08)
        ax_e.set_ylabel("experts touched per layer")
        ax_e.set_title(f"Experts touched (E = {sweep.experts}, k = {sweep.top_k})")
        for ax in (ax_t, ax_e):
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(WHOLE)
            ax.set_xlabel("batch B (tokens per step)")
            ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.5), frameon=False, fontsize=7.5)
    return describe(fig, f"MoE step of {measure.sweep_text(sweep)}: from batch {sweep.batches[0]} to "
                         f"{sweep.batches[-1]} the experts touched per layer rise from "
                         f"{sweep.experts_touched[0]:.3g} to {sweep.experts_touched[-1]:.3g} (formula "
                         f"{measure.predicted_experts_touched(sweep.batches[-1], sweep.top_k, sweep.experts):.3g}) "
                         f"and the measured step time from {1e3 * sweep.seconds[0]:.3g} ms to "
                         f"{1e3 * sweep.seconds[-1]:.3g} ms, against a predicted {1e3 * cmp.predicted_seconds[0]:.3g} "
                         f"ms to {1e3 * cmp.predicted_seconds[-1]:.3g} ms.")
