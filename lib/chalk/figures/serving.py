"""Chapter 1's serving-loop figures: the train timetable's closed form against ``timetable.simulate``.

Every curve is drawn from a simulated run's own records; the closed form is drawn from
``timetable.closed_form`` at the replica's fastest pass, the T it would assume, and the offered
load from ``timetable.offered_load``.
"""
import numpy as np

from .. import timetable
from . import canvas
from .canvas import new_figure, style
from .plotting import COLORS

MS = 1e3

CLOSED_FORM_LABELS = {"wait_mean": "mean wait", "wait_worst": "worst wait",
                      "ttft_mean": "mean time to first token", "ttft_worst": "worst time to first token"}
"""How the chapter and its deeper page name ``timetable.CLOSED_FORM``'s quantities."""


def closed_form_figure(run: timetable.Run, start: float = -np.inf, stop: float = np.inf):
    """Waits for the next departure and times to first token of the requests arriving in
    [start, stop) (all of them by default), as densities, against the closed form's uniform laws
    on (0, T] and (T, 2T]."""
    interval = run.step_floor
    expected = timetable.closed_form(interval)
    kept = (run.arrivals >= start) & (run.arrivals < stop)
    fig, axes = new_figure(7.2, 2.6, ncols=2)
    panels = [(run.departure_waits[kept], (0, interval), "wait_mean", "wait for the next departure (ms)"),
              (run.ttft[kept], (interval, 2 * interval), "ttft_mean", "time to first token (ms)")]
    with style():
        for ax, (values, (low, high), key, label) in zip(axes, panels):
            ax.hist(MS * values, bins=40, density=True, color=COLORS["t_compute"], alpha=0.75,
                    label="simulated")
            ax.plot(MS * np.array([low, low, high, high]), np.array([0, 1, 1, 0]) / (MS * interval), color="black",
                    lw=1.2, label="closed form (uniform)")
            ax.axvline(MS * expected[key], color="black", ls="--", lw=1, label="closed-form mean")
            ax.axvline(MS * values.mean(), color=COLORS["t_mem"], ls=":", lw=1.6, label="simulated mean")
            ax.set_xlabel(label)
            ax.set_ylabel("density (1/ms)")
        axes[0].legend(loc="lower center", bbox_to_anchor=(1.1, 1.0), ncols=4, frameon=False)
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.2, top=0.86, wspace=0.3)
    waits, ttft = run.departure_waits[kept], run.ttft[kept]
    return canvas.describe(fig, f"Over {kept.sum():,} requests with T = {MS * interval:.3g} ms: waits spread "
                                f"from 0 to {MS * waits.max():.3g} ms with mean {MS * waits.mean():.3g} ms against "
                                f"the closed form's {MS * expected['wait_mean']:.3g}; times to first token from "
                                f"{MS * ttft.min():.3g} to {MS * ttft.max():.3g} ms, mean {MS * ttft.mean():.3g} "
                                f"against {MS * expected['ttft_mean']:.3g}.")


def where_it_breaks_figure(loads, by_rate, prompts, by_prompt, crowded: timetable.Run, crowded_load: timetable.Load):
    """The closed form's three assumptions failing, one panel each.

    (a) ``by_rate``: steady summaries at the offered loads ``loads`` (``timetable.Load``, one per
    rate); (b) ``by_prompt``: at each prompt length in ``prompts``; (c) ``crowded``: a run offered
    more requests than its seats turn over (``crowded_load``), drawn over time, with its saturated
    window shaded and the queue's growth the formulas predict there."""
    floor = by_rate[0].step_floor
    rates = [load.rate for load in loads]
    fig, axes = new_figure(9.6, 3.0, ncols=3)
    ax_a, ax_b, ax_c = axes
    with style():
        ax_a.plot(rates, [MS * s.step_mean for s in by_rate], "o-", color=COLORS["t_mem"], label="mean step")
        ax_a.plot(rates, [MS * s.departure_wait_mean for s in by_rate], "s-", color=COLORS["t_compute"],
                  label="mean wait")
        ax_a.axhline(MS * floor, color="black", ls="--", lw=1, label="closed form: $T$, $T/2$")
        ax_a.axhline(MS * floor / 2, color="black", ls="--", lw=1)
        ax_a.set_xticks(rates, [f"{r:g}\n{100 * load.compute_share:.0f}%" for r, load in zip(rates, loads)])
        ax_a.set_xlabel("requests/s (offered FLOPs, % of peak)")
        ax_a.set_ylabel("ms")
        ax_a.set_title("(a) load: the step grows", loc="left")
        ax_a.legend(frameon=False)

        ttft = np.array([MS * s.ttft_mean for s in by_prompt])
        prefill = np.array([MS * s.prefill_pass_mean for s in by_prompt])
        ax_b.plot(prompts, ttft, "o-", color=COLORS["t_compute"], label="mean time to first token")
        ax_b.plot(prompts, prefill, "s--", color=COLORS["t_weights"], label="of which the prefill pass")
        ax_b.axhline(MS * 1.5 * floor, color="black", ls="--", lw=1, label="closed form: $1.5\\,T$")
        ax_b.set_xscale("log")
        ax_b.set_yscale("log")
        ax_b.set_xticks(prompts, [f"{p:,}" for p in prompts], minor=False)
        ax_b.set_xticks([], minor=True)
        ax_b.set_xlabel("prompt (tokens)")
        ax_b.set_ylabel("ms")
        ax_b.set_title("(b) long prompts: prefill dominates", loc="left")
        ax_b.legend(frameon=False)

        starts, waiting = crowded.pass_start, crowded.pass_waiting
        start, stop = crowded.saturated_window()
        ax_c.axvspan(start, stop, color="0.92", lw=0, label="measured (seats full)")
        ax_c.plot(starts, crowded.pass_batch, color=COLORS["t_kv"], lw=1, label="in the batch")
        ax_c.plot(starts, waiting, color=COLORS["point"], lw=1, ls=(0, (4, 1, 1, 1)), label="waiting for a seat")
        # Arrivals minus the seats' capacity: the queue's growth the formulas predict once seats are full.
        first = np.interp(start, starts, waiting)
        ax_c.plot([start, stop], [first, first + (crowded_load.rate - crowded_load.seat_capacity) * (stop - start)],
                  color="black", ls=":", lw=1.4, label="arrivals $-$ capacity")
        ax_c.axhline(crowded_load.seats, color="black", ls="--", lw=1, label="seats")
        ax_c.set_ylim(0, 2.3 * crowded_load.seats)
        ax_c.set_xlabel("time (s)")
        ax_c.set_ylabel("requests")
        ax_c.set_title("(c) seats full: requests queue", loc="left")
        ax_c.legend(frameon=False, loc="upper left", fontsize="small")
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.9, wspace=0.28)
    return canvas.describe(fig, f"(a) mean step rises from {MS * by_rate[0].step_mean:.3g} to "
                                f"{MS * by_rate[-1].step_mean:.3g} ms as arrivals go from {loads[0].rate:.3g} to "
                                f"{loads[-1].rate:.3g} per second; (b) mean time to first token rises from "
                                f"{MS * by_prompt[0].ttft_mean:.3g} to {MS * by_prompt[-1].ttft_mean:.3g} ms as "
                                f"prompts grow from {prompts[0]:,} to {prompts[-1]:,} tokens; (c) with "
                                f"{crowded_load.seats:,.0f} seats full the queue grows by about "
                                f"{crowded_load.rate - crowded_load.seat_capacity:.2g} requests per second.")
