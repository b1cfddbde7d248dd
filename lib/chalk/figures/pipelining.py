"""Chapter 3's figures, live explorer and static twin: pipeline schedules as Gantt charts.

Every picture is drawn from ``pipeline.simulate``'s events and every bubble printed beside it
comes from ``pipeline.bubble_fraction``: the chart shows what the simulator measured, the readout
sets the closed form next to it.
"""
import html
from functools import lru_cache

import numpy as np
from matplotlib.patches import Patch

from .. import pipeline
from ..errors import ChalkError
from . import explorer, twin
from .canvas import describe, fast_png, new_figure, style
from .explorer import Dropdown

COLORS = {"forward": "#0072B2", "backward": "#E69F00", "forward2": "#56B4E9", "backward2": "#F0C46B",
          "idle": "#EEEEEE"}
"""Forward blue, backward orange; odd chunks of an interleaved schedule in the lighter shade."""
LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B", "inference": "inference"}
MARKERS = ("o", "^", "s", "D", "v")
"""One marker per pipeline depth in a plot: the depths stay apart in greyscale and to a reader
who cannot tell the colours apart."""

STAGES = (2, 4, 8, 16)
MICROBATCHES = (1, 2, 4, 8, 16, 32, 64)
CHUNKS = (1, 2, 4)
RATIOS = (1.0, 2.0, 3.0)
"""The explorer's grid, capped so that its largest simulation (16 x 64 x 4) stays a fraction of
a second and each one is run once (``run``'s cache)."""


@lru_cache(maxsize=256)
def run(stages: int, microbatches: int, schedule: str, chunks: int = 1, ratio: float = 2.0) -> pipeline.Simulation:
    """One simulated step with t_F = 1 and t_B = ``ratio``, kept: the explorer revisits views."""
    return pipeline.simulate(stages, microbatches, schedule, chunks, t_forward=1.0, t_backward=ratio)


def _shade(e: pipeline.Event) -> str:
    return e.kind + ("2" if e.chunk % 2 else "")


def _color(e: pipeline.Event) -> str:
    return COLORS[_shade(e)]


# --- the chapter's traffic table -----------------------------------------------------------------
TRAFFIC = dict(model="deepseek-v3", system="gb200-nvl72", degree=8, layout="deepseek-v3", grad_bytes=4)
"""Chapter 3's traffic table: DeepSeek-V3 on GB200 NVL72 chips, each kind alone at 8 chips, FP32
gradients, at the tokens per GPU of DeepSeek-V3's own pre-training step."""


def traffic_rows(tokens_per_chip=None, **inputs) -> list[pipeline.TrafficRow]:
    """The table's rows; ``tokens_per_chip`` (default: the published run's) and
    ``parallelism_table``'s inputs (``mfu``, ``grad_bytes``, ...) change one input at a time."""
    t = tokens_per_chip or pipeline.published_tokens_per_chip(TRAFFIC["layout"])
    kw = {"grad_bytes": TRAFFIC["grad_bytes"]} | inputs
    return pipeline.parallelism_table(TRAFFIC["model"], TRAFFIC["system"], TRAFFIC["degree"],
                                      TRAFFIC["degree"] * t, **kw)


# --- static figures for the chapter -----------------------------------------------------------
def gantt_figure(runs, titles, width=8.0, label_limit=16):
    """Gantt charts of simulated steps, one row of axes each: stage 1 at the top, time to the
    right in units of t_F; micro-batch numbers on the boxes while there are few enough."""
    fig, _ = new_figure(width, 0.4 + 0.32 * sum(r.stages + 2 for r in runs))
    fig.clear()
    with style():
        axes = fig.subplots(len(runs), 1, squeeze=False)[:, 0]
        for ax, r, title in zip(axes, runs, titles):
            for e in r.events:
                ax.barh(e.stage, e.end - e.start, left=e.start, height=0.8, color=_color(e),
                        edgecolor="white", linewidth=0.6)
                if r.microbatches * r.chunks <= label_limit:
                    ax.text((e.start + e.end) / 2, e.stage, str(e.microbatch + 1), ha="center",
                            va="center", fontsize=7, color="white")
            ax.set_ylim(r.stages - 0.5, -0.5)
            ax.set_yticks(range(r.stages), [f"stage {s + 1}" for s in range(r.stages)])
            ax.set_xlim(0, r.makespan)
            ax.set_title(f"{title}: idle {r.idle_fraction:.0%} of stage-time")
            ax.grid(False)
        axes[-1].set_xlabel("time (units of one micro-batch's forward on one stage, t_F)")
        fig.legend(handles=[Patch(color=COLORS["forward"], label="forward"),
                            Patch(color=COLORS["backward"], label="backward")],
                   loc="upper right", ncol=2, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
    return describe(fig, " ".join(_gantt_words(r, title) for r, title in zip(runs, titles)))


_ORDER = {"gpipe": "every forward pass, then every backward pass",
          "1f1b": "warm-up forwards, then one forward and one backward in turn, then the last backwards",
          "interleaved": "{v} model chunks per stage, forwards and backwards in turn",
          "inference": "forward passes only, each batch moving down the stages",
          "decode": "forward passes only, each micro-batch re-entering stage 1 for its next token"}
"""What a Gantt chart of each schedule looks like, in words for its alternative text."""


def _gantt_words(r: pipeline.Simulation, title: str) -> str:
    """One chart in words, its numbers measured on the simulated step."""
    order = _ORDER[r.schedule].format(v=r.chunks)
    lasts = {kind: max(e.end - e.start for e in r.events if e.kind == kind)
             for kind in ("forward", "backward") if any(e.kind == kind for e in r.events)}
    boxes = ", ".join(f"a {kind} box {length:g} t_F long" for kind, length in lasts.items())
    return (f"Gantt chart {title}: {r.microbatches} micro-batches through {r.stages} stages, {order}, "
            f"{boxes}; the step lasts {r.makespan:g} t_F and the stages are idle {r.idle_fraction:.0%} of it.")


def bubble_figure(stages=(4, 8, 16), microbatches=(1, 2, 4, 8, 16, 32, 64), chunks=2):
    """Bubble fraction against micro-batches: the closed forms as lines (a marker per P, dashed
    when interleaved), the simulator as crosses on them."""
    fig, (ax,) = new_figure(7.0, 3.6)
    ms = np.asarray(microbatches)
    simulated = []  # (m, bubble) the simulator measured, drawn as one set of crosses
    words = []
    with style():
        for P_, color, marker in zip(stages, ("#0072B2", "#009E73", "#D55E00", "#CC79A7"), MARKERS):
            closed = pipeline.bubble_fraction(P_, ms, "1f1b")
            ax.plot(ms, closed, color=color, marker=marker, ms=5, label=f"P = {P_}, GPipe and 1F1B")
            simulated += [(m_, run(P_, int(m_), "1f1b").idle_fraction) for m_ in ms]
            ok = ms[ms % P_ == 0]
            interleaved = pipeline.bubble_fraction(P_, ok, "interleaved", chunks)
            ax.plot(ok, interleaved, color=color, ls="--", marker=marker, ms=5, mfc="white",
                    label=f"P = {P_}, interleaved, v = {chunks}")
            simulated += [(m_, run(P_, int(m_), "interleaved", chunks).idle_fraction) for m_ in ok]
            words.append(f"P = {P_}: from {closed[0]:.0%} at m = {ms[0]} to {closed[-1]:.1%} at m = {ms[-1]}"
                         + (f", {interleaved[-1]:.1%} interleaved" if len(ok) else ""))
        xs, ys = zip(*simulated)
        ax.plot(xs, ys, "x", color="black", ms=4, ls="none", label="simulated")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("micro-batches per step, m")
        ax.set_ylabel("bubble: idle fraction of the step")
        ax.set_ylim(0, 1)
        ax.set_xticks(ms, [str(x) for x in ms])
        ax.legend(fontsize=7, ncol=2, frameon=False, title="lines: closed form; crosses: simulated",
                  title_fontsize=7)
        fig.tight_layout()
    gap = max(abs(y - b) for (m_, y), b in zip(simulated, _closed_forms(stages, ms, chunks)))
    return describe(fig, f"The bubble falls as the micro-batches grow and rises with the stages: "
                         f"{'; '.join(words)}. Every simulated cross sits on its line "
                         f"(largest gap {gap:.0e}).")


def _closed_forms(stages, ms, chunks) -> list[float]:
    """The closed form at each simulated point of ``bubble_figure``, in the order it runs them."""
    out = []
    for P_ in stages:
        out += [float(pipeline.bubble_fraction(P_, m_, "1f1b")) for m_ in ms]
        out += [float(pipeline.bubble_fraction(P_, m_, "interleaved", chunks)) for m_ in ms[ms % P_ == 0]]
    return out


# --- the live explorer ------------------------------------------------------------------------
def raster(r: pipeline.Simulation, width: int, height: int) -> np.ndarray:
    """The Gantt chart as RGB pixels at exactly the axes' size, time scaled to the makespan:
    pasted straight into the canvas, so a step of thousands of operations costs one copy."""
    rgb = {k: np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], np.uint8) for k, c in COLORS.items()}
    img = np.empty((height, width, 3), np.uint8)
    img[:] = rgb["idle"]
    edges = np.linspace(0, height, r.stages + 1).round().astype(int)
    img[edges[1:-1]] = 255  # a white line between stages
    scale = width / r.makespan
    for e in r.events:
        x0 = int(round(e.start * scale))
        x1 = max(int(round(e.end * scale)), x0 + 1)
        rows = slice(edges[e.stage] + 1, edges[e.stage + 1] - 1)
        img[rows, x0:x1] = rgb[_shade(e)]
        if x1 - x0 > 2:
            img[rows, x1 - 1] = 255  # the box's edge
    return img


class GanttFigure:
    """The explorer's chart: axes and stage ticks drawn once per P, the Gantt pixels pasted in."""

    def __init__(self):
        self.fig, (self.ax,) = new_figure(7.6, 2.8)
        self.fig.subplots_adjust(left=0.1, right=0.98, bottom=0.2, top=0.88)
        with style():
            self.ax.set_xlim(0, 1)
            self.ax.set_ylim(1, 0)
            self.ax.grid(False)
            self.ax.set_xlabel("time, as a fraction of the simulated step")
            self.fig.legend(handles=[Patch(color=COLORS[k], label=k) for k in ("forward", "backward")]
                            + [Patch(color=COLORS["idle"], label="idle (bubble)")],
                            loc="upper right", ncol=3, frameon=False)
        self.note = self.ax.text(0.5, 0.5, "", ha="center", va="center", transform=self.ax.transAxes,
                                 color="#b00", fontsize=10)
        self.note.set_visible(False)
        box = self.ax.get_window_extent()
        height = self.fig.canvas.get_width_height()[1]
        self.box = (int(height - box.y1) + 1, int(height - box.y0), int(box.x0) + 1, int(box.x1))
        self.backgrounds, self.stages, self.pixels = {}, 1, None

    @property
    def size(self) -> tuple[int, int]:
        top, bottom, left, right = self.box
        return right - left, bottom - top

    def draw(self, stages: int, pixels: np.ndarray):
        self.stages, self.pixels = stages, pixels

    def message(self, text: str):
        self.pixels = None
        self.note.set_text(text)

    def _background(self):
        if self.stages not in self.backgrounds:
            P_ = self.stages
            self.ax.set_yticks((np.arange(P_) + 0.5) / P_,
                               [f"stage {s + 1}" if P_ <= 8 or s % 2 == 0 else "" for s in range(P_)])
            self.fig.canvas.draw()
            self.backgrounds[self.stages] = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        return self.backgrounds[self.stages]

    def render(self) -> bytes:
        canvas = self.fig.canvas
        canvas.restore_region(self._background())
        if self.pixels is None:
            self.note.set_visible(True)
            self.fig.draw_artist(self.note)
            self.note.set_visible(False)
        else:
            top, bottom, left, right = self.box
            np.asarray(canvas.buffer_rgba())[top:bottom, left:right, :3] = self.pixels
        return fast_png(canvas.buffer_rgba())


def readout(r: pipeline.Simulation, ratio: float) -> str:
    """What the simulator measured, beside the closed form (training) or the steady state
    (inference)."""
    head = (f"{LABELS[r.schedule]}{f', v = {r.chunks}' if r.schedule == 'interleaved' else ''}: "
            f"stages P = {r.stages}, micro-batches m = {r.microbatches}, t_B = {ratio:g} t_F")
    if r.schedule == "inference":
        steady = (f"steady-state idle {r.steady_state_idle_fraction:.1%}" if r.microbatches >= r.stages
                  else "too few batches to fill every stage at once")
        return (f"{html.escape(head)}<br>idle {r.idle_fraction:.1%} of stage-time, all of it fill and "
                f"drain; {steady}. A stream of independent batches has no bubble.")
    formula = pipeline.bubble_fraction(r.stages, r.microbatches, r.schedule, r.chunks)
    peak = pipeline.activations_in_flight(r.stages, r.microbatches, r.schedule, r.chunks)
    return (f"{html.escape(head)}<br>bubble measured <b>{r.idle_fraction:.2%}</b>, closed form "
            f"(P-1)/({'v ' if r.schedule == 'interleaved' else ''}m+P-1) = {formula:.2%} &middot; "
            f"activations in flight, most on one stage, in micro-batches: {r.peak_activations:g} "
            f"(closed form {peak:g})")


@lru_cache(maxsize=256)
def view(stages: int, microbatches: int, schedule: str, chunks: int, ratio: float, size: tuple) -> tuple:
    """(Gantt pixels, readout) of one explorer view, kept: a reader goes back and forth."""
    r = run(stages, microbatches, schedule, chunks, ratio)
    return raster(r, *size), readout(r, ratio)


SESSION = [
    {"microbatches": 8}, {"microbatches": 16}, {"schedule": "gpipe"}, {"microbatches": 32},
    {"schedule": "1f1b"}, {"ratio": 1.0}, {"ratio": 3.0}, {"stages": 8}, {"microbatches": 8},
    {"schedule": "interleaved"}, {"chunks": 4}, {"microbatches": 16}, {"chunks": 2},
    {"schedule": "inference"}, {"microbatches": 4}, {"stages": 4}, {"schedule": "gpipe"},
    {"microbatches": 2}, {"microbatches": 64}, {"stages": 2}, {"schedule": "1f1b"},
    {"microbatches": 1}, {"stages": 16}, {"microbatches": 32}, {"schedule": "interleaved", "chunks": 1},
    {"ratio": 2.0}, {"stages": 4, "microbatches": 8}, {"microbatches": 6},
    {"schedule": "gpipe", "microbatches": 4}, {"stages": 8},
]
"""A reader's session for the benchmark; ``{"microbatches": 6}`` under interleaving is refused
with a message (6 is not a multiple of 4 stages)."""


class Explorer(explorer.Explorer):
    """Chapter 3's explorer: stages x micro-batches x schedule x chunks x t_B/t_F."""
    controls = (
        # decode needs a steps axis the explorer does not have: the chapter shows it as a figure
        Dropdown("schedule", "schedule", tuple((LABELS[s], s) for s in pipeline.SCHEDULES if s in LABELS)),
        Dropdown("stages", "stages P", tuple((str(p), p) for p in STAGES)),
        Dropdown("microbatches", "micro-batches m", tuple((str(m_), m_) for m_ in MICROBATCHES + (6, 12, 24, 48))),
        Dropdown("chunks", "chunks v", tuple((str(c), c) for c in CHUNKS)),
        Dropdown("ratio", "t_B / t_F", tuple((f"{x:g}", x) for x in RATIOS)),
    )
    defaults = dict(schedule="1f1b", stages=4, microbatches=4, chunks=2, ratio=2.0)
    rows = (("schedule", "stages", "microbatches"), ("chunks", "ratio"))

    def make_figure(self):
        return GanttFigure()

    def explain(self, error, params):
        if params.get("stages") in STAGES:  # the stage ticks follow the reader's choice
            self.figure.stages = params["stages"]
        why = str(error).split(":", 1)[-1].split(",")[0].strip()
        return str(error), f"nothing to draw: {why}"

    def draw(self, schedule, stages, microbatches, chunks, ratio) -> str:
        # Only interleaving splits a stage into chunks; the other schedules ignore v.
        chunks = chunks if schedule == "interleaved" else 1
        pixels, text = view(stages, microbatches, schedule, chunks, ratio, self.figure.size)
        self.figure.draw(stages, pixels)
        return text


# --- static twin ------------------------------------------------------------------------------
TWIN_STAGES = (2, 4, 8)
TWIN_MICROBATCHES = (1, 2, 4, 8, 12)
TWIN_SCHEDULES = (("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("inference", 1))
TWIN_RATIO = 2.0
PANEL_W, PANEL_H, LEFT, TOP = 640, 230, 58, 28
TEMPLATES = ["P = {stages}, m = {microbatches}: bubble measured {measured}%, closed form {formula}%; "
             "activations in flight, in micro-batches: {peak} (closed form {peak_formula})",
             "P = {stages}, m = {microbatches}, inference: idle {measured}% of stage-time, all fill and "
             "drain; steady-state idle {steady}%",
             "!P = {stages}, m = {microbatches}: {why}"]


def frame(r: pipeline.Simulation) -> list:
    """One Gantt chart as twin shapes, time scaled to the panel's width."""
    row = (PANEL_H - TOP - 22) / r.stages
    scale = (PANEL_W - LEFT - 10) / r.makespan
    shapes = [twin.text(LEFT - 6, TOP + row * (s + 0.6), f"stage {s + 1}", anchor="end", size=9)
              for s in range(r.stages)]
    # Whole pixels: the chart reads the same and the page carries thousands of boxes.
    shapes += [twin.rect(round(LEFT + e.start * scale), round(TOP + row * e.stage),
                         max(1, round((e.end - e.start) * scale)), round(row * 0.85), _color(e))
               for e in r.events]
    shapes.append(twin.text(LEFT, PANEL_H - 6, "time, scaled to the step (blue forward, orange backward, "
                                               "gaps idle)", size=9))
    return shapes


def _refused(why: str) -> list:
    return [twin.text(PANEL_W / 2, PANEL_H / 2, why, anchor="middle", size=11)]


def twin_view(schedule: str, chunks: int, stages: int) -> dict:
    """One view: a frame and a readout per micro-batch stop, or why that stop cannot run."""
    frames, pick = [], []
    values = {k: [] for k in ("measured", "formula", "peak", "peak_formula", "steady")}
    whys = []
    for m_ in TWIN_MICROBATCHES:
        try:
            r = run(stages, m_, schedule, chunks, TWIN_RATIO)
        except ChalkError as e:
            why = str(e).split(":", 1)[1].strip().split(",")[0]
            frames.append(_refused(why))
            pick.append(2)
            whys.append(why)
            for k in values:
                values[k].append(float("nan"))
            continue
        frames.append(frame(r))
        whys.append("")
        if schedule == "inference":
            pick.append(1)
            steady = 100 * r.steady_state_idle_fraction if m_ >= stages else float("nan")
            row = (100 * r.idle_fraction, float("nan"), float("nan"), float("nan"), steady)
        else:  # fractions in percent, as the chapter prints them
            pick.append(0)
            row = (100 * r.idle_fraction, 100 * pipeline.bubble_fraction(stages, m_, schedule, chunks), r.peak_activations,
                   pipeline.activations_in_flight(stages, m_, schedule, chunks), float("nan"))
        for k, x in zip(values, row):
            values[k].append(x)
    out = {k: twin.rounded(v) for k, v in values.items() if not all(np.isnan(v))}
    out["why"] = whys
    return {"panels": [{"frames": frames}],
            "readout": {"pick": pick, "values": out, "constants": {"stages": stages}}}


def twin_data() -> dict:
    """Every view, keyed ``schedule|stages``, t_B = 2 t_F."""
    controls = [
        twin.select("schedule", "schedule", [(f"{s}-{v}", LABELS[s] + (f", v = {v}" if s == "interleaved" else ""))
                                             for s, v in TWIN_SCHEDULES], start="1f1b-1"),
        twin.select("stages", "stages P", [(p, str(p)) for p in TWIN_STAGES], start=4),
        twin.slider("microbatches", "micro-batches m", TWIN_MICROBATCHES, 8),
    ]
    views = {f"{s}-{v}|{p}": twin_view(s, v, p) for s, v in TWIN_SCHEDULES for p in TWIN_STAGES}
    return twin.twin_data(controls, [twin.shapes("one step of the pipeline, simulated", PANEL_W, PANEL_H)],
                          styles={}, legend=[], templates=TEMPLATES, views=views)
