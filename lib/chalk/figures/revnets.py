"""Chapter 7's figures, live explorer and static twins: the toy Feistel cipher's avalanche matrix
round by round, and activation memory against depth under the three storage policies, every
number from ``chalk.reversible``."""
import html
from functools import lru_cache

import matplotlib
import numpy as np
from matplotlib.colors import to_hex

from .. import reversible as rv
from ..catalog import models
from ..errors import ChalkError
from . import explorer, twin
from .canvas import Layers, describe, new_figure, style
from .explorer import Dropdown, catalog_options, linear_slider

# --- the cipher ------------------------------------------------------------------------------------
WIDTH = 16
"""Block width of the cipher the figures draw: a 16 x 16 matrix stays readable."""
KEY = 0x0123456789ABCDEF
MAX_ROUNDS = 8
SAMPLES = 400
"""Inputs per matrix row: a cell's flip fraction has a standard error of about 0.025 at 1/2."""
ROUND_FUNCTIONS = {"middle-square": "middle square (nonlinear)", "sbox": "Heys S-box (no diffusion)",
                   "linear": "linear over GF(2)"}
CMAP = matplotlib.colormaps["coolwarm"]
"""Blue: never flips; grey: flips half the time (what an ideal cipher shows everywhere); red: always."""


@lru_cache(maxsize=None)
def avalanche_matrices(round_function: str) -> np.ndarray:
    """(MAX_ROUNDS, WIDTH, WIDTH): P(output bit j flips | input bit i flipped) after 1..MAX_ROUNDS
    rounds, one row per input bit (bit 0 least significant), from ``reversible.avalanche_matrix``."""
    if round_function not in ROUND_FUNCTIONS:
        raise ChalkError(f"round_function must be one of {', '.join(ROUND_FUNCTIONS)}, got {round_function!r}")
    return np.array([rv.avalanche_matrix(lambda x, r=r: rv.feistel_encrypt(x, KEY, r, WIDTH, round_function),
                                         WIDTH, SAMPLES) for r in range(1, MAX_ROUNDS + 1)])


def random_permutation_flip(bits: int = WIDTH) -> float:
    return float(rv.RANDOM_PERMUTATION_FLIP.subs(rv.n_bits, bits))


def near_half(matrix: np.ndarray, tolerance: float = 0.1) -> float:
    """Share of the matrix's cells within ``tolerance`` of 1/2: a coarse reading of the strict avalanche
    criterion for the explorer's small samples (``strict_avalanche_by_round`` is the test itself)."""
    return float(np.mean(np.abs(matrix - 0.5) <= tolerance))


SAC_SAMPLES = 20_000
"""Inputs per input bit for the strict avalanche test: a cell's standard error is 0.0035 at 1/2, so the
5-sigma line sits at 0.018."""


@lru_cache(maxsize=None)
def strict_avalanche_by_round(round_function: str) -> tuple[dict, ...]:
    """``reversible.strict_avalanche`` of the cipher's flip matrix after 1..MAX_ROUNDS rounds, with the
    matrix's mean, from ``SAC_SAMPLES`` inputs per input bit."""
    if round_function not in ROUND_FUNCTIONS:
        raise ChalkError(f"round_function must be one of {', '.join(ROUND_FUNCTIONS)}, got {round_function!r}")
    out = []
    for r in range(1, MAX_ROUNDS + 1):
        m = rv.avalanche_matrix(lambda x, r=r: rv.feistel_encrypt(x, KEY, r, WIDTH, round_function),
                                WIDTH, SAC_SAMPLES)
        out.append({**rv.strict_avalanche(m, SAC_SAMPLES), "mean": float(m.mean())})
    return tuple(out)


def first_sac_round(round_function: str) -> int | None:
    """The first round count at which no cell of the flip matrix is 5 sigma from 1/2 (None: never)."""
    return next((r for r, s in enumerate(strict_avalanche_by_round(round_function), 1) if s["beyond"] == 0), None)


GAINS = (0.5, 1.0, 2.0, 4.0)
"""Initialisation gains of the sweep: the weights' standard deviation times sqrt(fan-in)."""
ARCHITECTURES = {"residual, 12 layers": (True, 12), "residual, 24 layers": (True, 24),
                 "plain tanh, 24 layers": (False, 24)}
"""The networks of the sweep: (residual connections, depth)."""
SWEEP_SEEDS = range(10)


@lru_cache(maxsize=None)
def gain_sweep() -> dict:
    """(architecture, gain) -> the output change over a small input change after the last layer, one
    value per seed (``reversible.sensitivity_sweep``)."""
    return {(name, g): row for name, (residual, depth) in ARCHITECTURES.items()
            for g, row in zip(GAINS, rv.sensitivity_sweep(GAINS, depth, residual, SWEEP_SEEDS))}


def amplification_text(value: float) -> str:
    """An amplification factor as the chapter prints it: whole numbers from 100, one decimal from 1."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.2g}"


def sweep_range(architecture: str, gain: float) -> str:
    """The smallest and largest amplification over the sweep's seeds, as "low–high"."""
    row = gain_sweep()[(architecture, gain)]
    return f"{amplification_text(row.min())}–{amplification_text(row.max())}"


def strict_avalanche_figure():
    """The worst cell of the flip matrix and the matrix's mean, each as a distance from 1/2, by round,
    against the 5-sigma line of the strict avalanche test."""
    fig, (ax,) = new_figure(5.2, 3.2)
    fig.subplots_adjust(left=0.15, right=0.97, bottom=0.16, top=0.9)
    rounds = np.arange(1, MAX_ROUNDS + 1)
    stats = {rf: strict_avalanche_by_round(rf) for rf in ("middle-square", "sbox")}
    line = rv.SAC_SIGMAS * stats["middle-square"][0]["sigma"]
    with style():
        for rf, ss in stats.items():
            ax.plot(rounds, [s["worst"] for s in ss], marker=MARKERS[rf], ms=3.5,
                    label=f"{ROUND_FUNCTIONS[rf]}: worst cell")
        ax.plot(rounds, [abs(s["mean"] - 0.5) for s in stats["middle-square"]], ls="--", color=ax.lines[0].get_color(),
                marker=MARKERS["middle-square"], ms=3.5, mfc="white", label="middle square: mean of the cells")
        ax.axhline(line, color=COLORS["model"], ls=":", lw=1.2, label=f"{rv.SAC_SIGMAS} standard errors")
        ax.set_yscale("log")  # from 1/2 down to sampling noise
        ax.set(xlabel="rounds", ylabel="distance from 1/2", title=f"{WIDTH}-bit Feistel: strict avalanche test")
        ax.legend(frameon=False, fontsize=7)
    ms = stats["middle-square"]
    said = ", ".join(f"{s['worst']:.3f}" for s in ms)
    return describe(fig, f"Log scale. Middle-square round, worst cell's distance from 1/2 after rounds 1 to "
                         f"{MAX_ROUNDS}: {said}; the {rv.SAC_SIGMAS}-sigma line is at {line:.3f}, first crossed "
                         f"below at round {first_sac_round('middle-square')}. The mean is within 0.001 of 1/2 from "
                         f"round {next(r for r, s in enumerate(ms, 1) if abs(s['mean'] - 0.5) < 1e-3)}. The S-box "
                         f"round's worst cell stays at {stats['sbox'][-1]['worst']:.2f}.")


# --- activation memory ---------------------------------------------------------------------------
MODELS = ("llama-3.1-8b", "llama-3-70b", "gpt-3-175b", "llama-3.1-405b")
TOKENS = (8192, 65536, 1048576)
"""Tokens in one micro-batch: one 8k sequence, eight, and 128 (a million tokens)."""
SEQ_LEN = 8192
"""Their sequences' length, for the attention FLOPs that recomputation adds."""
DEPTHS = tuple(range(8, 161, 8))
POLICY_LABELS = {"full": "store every intermediate", "block": "keep each layer's input (block remat)",
                 "reversible": "reversible layers"}
COLORS = {"full": "#D55E00", "block": "#0072B2", "reversible": "#009E73", "model": "#555555", "point": "#000000"}
DASHES = {"full": "-", "block": "--", "reversible": "-."}
"""Each policy's line style as well as its colour, so the three stay apart in greyscale."""
TWIN_DASHES = {"full": "", "block": "6 3", "reversible": "8 3 2 3"}
"""The same styles as SVG dash arrays, for the static twin."""
MARKERS = {"middle-square": "o", "sbox": "s", "linear": "^"}
"""One marker per round function."""
POLICY_MARKERS = {"full": "o", "block": "s", "reversible": "^"}
"""One marker per storage policy, where line styles already tell kept from peak."""


@lru_cache(maxsize=None)
def per_width(model: str) -> float:
    """``reversible.layer_kept_per_width`` of a catalog model, once per model: an explorer update
    must not pay for its SymPy substitution."""
    return rv.layer_kept_per_width(model)


def memory_curves(model: str, tokens: float) -> dict:
    """GB kept for the backward pass at every depth of ``DEPTHS``, per policy, at the model's width
    and with its own layer (attention scores not stored: memory-efficient attention)."""
    d = models.get(model).d_model
    depths = np.array(DEPTHS, dtype=float)
    per = per_width(model)
    return {p: rv.activation_bytes(tokens, d, depths, p, kept_per_width=per) / 1e9 for p in rv.POLICIES}


def memory_ylim(curves: dict) -> tuple[float, float]:
    """Log axis limits: whole decades around every policy's curve."""
    low = min(float(np.min(ys)) for ys in curves.values())
    high = max(float(np.max(ys)) for ys in curves.values())
    return 10.0 ** np.floor(np.log10(low)), 10.0 ** np.ceil(np.log10(high))


def memory_readout(model: str, tokens: float, policy: str, depth: float) -> dict:
    """The numbers the explorer and the twin print for one depth and policy."""
    m = models.get(model)
    per = per_width(model)
    kept = {p: rv.activation_bytes(tokens, m.d_model, depth, p, kept_per_width=per) / 1e9 for p in rv.POLICIES}
    peak = rv.activation_bytes(tokens, m.d_model, depth, policy, peak=True, vocab=m.vocab, kept_per_width=per) / 1e9
    return {"kept_gb": kept[policy], "peak_gb": peak, **{f"{p}_gb": v for p, v in kept.items()},
            "overhead_pct": 100 * rv.step_overhead(model, policy, SEQ_LEN),
            "step_pflop": rv.training_flops(m.active_params, tokens, policy) / 1e15}


# --- live explorer ------------------------------------------------------------------------------
class RevnetFigure:
    """Left, the avalanche matrix; right, activation memory against depth with the chosen point."""

    def __init__(self):
        self.fig, (self.ax_cipher, self.ax_mem) = new_figure(8.0, 3.6, 2)
        self.fig.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.9, wspace=0.45)
        with style():
            # "none": Agg pastes the 16 x 16 pixels scaled, without a resampling pass per redraw.
            self.image = self.ax_cipher.imshow(np.zeros((WIDTH, WIDTH)), cmap=CMAP, vmin=0, vmax=1,
                                               origin="lower", interpolation="none")
            self.ax_cipher.grid(False)
            self.ax_cipher.set_xlabel("output bit flipped")
            self.ax_cipher.set_ylabel("input bit flipped")
            self.fig.colorbar(self.image, ax=self.ax_cipher, fraction=0.046, pad=0.03, label="P(flip)")
            self.lines = {p: self.ax_mem.plot(DEPTHS, np.ones(len(DEPTHS)), color=COLORS[p], ls=DASHES[p],
                                              label=POLICY_LABELS[p])[0]
                          for p in rv.POLICIES}
            self.model_line = self.ax_mem.axvline(1, color=COLORS["model"], ls=":", lw=1.2, label="the model's depth")
            self.point = self.ax_mem.plot([], [], "o", ms=8, color=COLORS["point"], zorder=5, clip_on=False)[0]
            self.ax_mem.set_xlim(0, DEPTHS[-1])
            self.ax_mem.set_yscale("log")  # the three policies differ by orders of magnitude
            self.ax_mem.minorticks_off()
            self.ax_mem.set_xlabel("layers")
            self.ax_mem.set_ylabel("activations kept (GB)")
            self.ax_mem.legend(loc="upper left", frameon=False)
        # Fixed titles: the view's own words go in the HTML readout, text being slow to rasterise.
        self.ax_cipher.set_title("avalanche matrix: P(output bit flips)")
        self.ax_mem.set_title("activations kept between layers")
        self.note = self.ax_cipher.text(0.5, 0.5, "", transform=self.ax_cipher.transAxes, ha="center",
                                        va="center", color="#b00", fontsize=9, wrap=True)
        self.layers = Layers(self.fig, [self.image, *self.lines.values(), self.model_line, self.note],
                             [self.point], [self.ax_mem.yaxis])
        self._key = None

    def draw(self, round_function, rounds, model, tokens, policy, depth):
        matrix = avalanche_matrices(round_function)[int(rounds) - 1]
        self.image.set_data(matrix)
        self.image.set_visible(True)
        self.note.set_text("")
        curves = memory_curves(model, tokens)
        for p, ys in curves.items():
            self.lines[p].set_ydata(ys)
        self.ax_mem.set_ylim(*memory_ylim(curves))
        self.model_line.set_xdata([models.get(model).n_layers] * 2)
        kept = rv.activation_bytes(tokens, models.get(model).d_model, depth, policy,
                                   kept_per_width=per_width(model)) / 1e9
        self.point.set_data([depth], [kept])
        self._key = ((model, tokens), (round_function, rounds, model, tokens))

    def message(self, text):
        self.image.set_visible(False)
        self.note.set_text(text)
        self._key = (self._key[0] if self._key else None, ("message", text))

    def render(self) -> bytes:
        return self.layers.render(*self._key)


class Explorer(explorer.Explorer):
    """Chapter 7's explorer: rounds x round function -> avalanche matrix; depth x policy -> memory."""
    controls = (
        Dropdown("round_function", "round F", tuple((t, n) for n, t in ROUND_FUNCTIONS.items())),
        linear_slider("rounds", "rounds", 1, MAX_ROUNDS, 1),
        Dropdown("model", "model", catalog_options(MODELS)),
        Dropdown("tokens", "tokens", tuple((f"{t:,}", t) for t in TOKENS)),
        Dropdown("policy", "policy", tuple((POLICY_LABELS[p], p) for p in rv.POLICIES)),
        linear_slider("depth", "layers", DEPTHS[0], DEPTHS[-1], 8, valid=(1, 1000)),
    )
    defaults = dict(round_function="middle-square", rounds=4.0, model="llama-3-70b", tokens=65536,
                    policy="block", depth=80.0)
    rows = (("round_function", "rounds"), ("model", "tokens"), ("policy", "depth"))

    def make_figure(self):
        return RevnetFigure()

    def draw(self, round_function, rounds, model, tokens, policy, depth) -> str:
        if not float(rounds).is_integer():
            raise ChalkError(f"rounds must be a whole number from 1 to {MAX_ROUNDS}, got {rounds!r}")
        self.figure.draw(round_function, rounds, model, tokens, policy, depth)
        matrix = avalanche_matrices(round_function)[int(rounds) - 1]
        r = memory_readout(model, tokens, policy, depth)
        return (f"cipher: {int(rounds)} rounds of {html.escape(ROUND_FUNCTIONS[round_function])}, mean flip "
                f"fraction {matrix.mean():.3f} (random permutation {random_permutation_flip():.3f}), "
                f"{near_half(matrix):.0%} of cells within 0.1 of 1/2<br>"
                f"memory: {depth:,.0f} layers, {html.escape(POLICY_LABELS[policy])}: <b>{r['kept_gb']:,.3g} GB</b> "
                f"kept between layers (full {r['full_gb']:,.3g}, block {r['block_gb']:,.3g}, reversible "
                f"{r['reversible_gb']:,.3g}); peak {r['peak_gb']:,.3g} GB with the running layer, head and "
                f"FP32 logits; recomputation +{r['overhead_pct']:.1f}% FLOPs at {SEQ_LEN:,}-token sequences (flash "
                f"attention's scores included), {r['step_pflop']:,.3g} PFLOP of weight matmuls per step for the "
                f"{models.get(model).n_layers}-layer model")


SESSION = [
    {"rounds": 1}, {"rounds": 2}, {"rounds": 3}, {"rounds": 5}, {"rounds": 8},
    {"round_function": "sbox"}, {"rounds": 2}, {"rounds": 6}, {"round_function": "linear"}, {"rounds": 9},
    {"depth": 16}, {"depth": 40}, {"depth": 120}, {"policy": "full"}, {"depth": 160},
    {"policy": "reversible"}, {"depth": 24}, {"tokens": 1048576}, {"depth": 96}, {"model": "llama-3.1-405b"},
    {"policy": "block"}, {"depth": 128}, {"round_function": "middle-square"}, {"rounds": 4}, {"tokens": 8192},
    {"model": "gpt-3-175b"}, {"depth": 96}, {"policy": "full"}, {"rounds": 10}, {"depth": 64},
]
"""A reader's session for the benchmark: cipher rounds and depth most often, one control at a time."""


# --- static twins --------------------------------------------------------------------------------
CELL, ORIGIN_X, ORIGIN_Y = 16, 46, 34
LEVELS = 10
"""The twin's heat map shows flip fractions to the nearest 1/LEVELS: enough to tell 0, 1/2 and 1
apart, and runs of equal cells merge into one rectangle, which keeps the page light."""


def _heat_frame(matrix: np.ndarray) -> list:
    """One avalanche matrix as rectangles, input bit 0 at the bottom, equal neighbours in a row merged."""
    levels = np.rint(matrix * LEVELS).astype(int)
    shapes = []
    for i, row in enumerate(levels):
        y = ORIGIN_Y + CELL * (WIDTH - 1 - i)
        start = 0
        for j in range(1, WIDTH + 1):
            if j == WIDTH or row[j] != row[start]:
                shapes.append(twin.rect(ORIGIN_X + CELL * start, y, CELL * (j - start), CELL,
                                        to_hex(CMAP(row[start] / LEVELS))))
                start = j
    return shapes


def _heat_axes() -> list:
    right, bottom = ORIGIN_X + CELL * WIDTH, ORIGIN_Y + CELL * WIDTH
    out = [twin.text(ORIGIN_X + CELL * WIDTH / 2, bottom + 28, "output bit flipped", "middle"),
           twin.text(ORIGIN_X - 30, ORIGIN_Y - 8, "input bit flipped (row)", "start", 9)]
    for b in range(0, WIDTH, 4):
        out.append(twin.text(ORIGIN_X + CELL * (b + 0.5), bottom + 13, str(b), "middle", 9))
        out.append(twin.text(ORIGIN_X - 6, ORIGIN_Y + CELL * (WIDTH - b - 0.3), str(b), "end", 9))
    for k in range(LEVELS + 1):  # colour key
        out.append(twin.rect(right + 18, bottom - 14 * (k + 1), 14, 14, to_hex(CMAP(k / LEVELS))))
    out += [twin.text(right + 36, bottom - 4, "never flips", size=9),
            twin.text(right + 36, bottom - 14 * (LEVELS / 2 + 0.6), "half the time", size=9),
            twin.text(right + 36, bottom - 14 * LEVELS - 4, "always", size=9)]
    return out


def cipher_view(round_function: str) -> dict:
    matrices = avalanche_matrices(round_function)
    axes = _heat_axes()
    means = [float(m.mean()) for m in matrices]
    return {"panels": [{"frames": [_heat_frame(m) + axes for m in matrices]},
                       {"ylim": [0, 0.75], "series": {"mean": twin.rounded(means),
                                                      "ideal": twin.rounded([random_permutation_flip()] * MAX_ROUNDS)}}],
            "readout": {"pick": [0] * MAX_ROUNDS,
                        "values": {"near": twin.rounded([100 * near_half(m) for m in matrices], 2)},
                        "constants": {"function": ROUND_FUNCTIONS[round_function]}}}


def cipher_twin_data() -> dict:
    """The avalanche twin: round function (views) x rounds (slider)."""
    rounds = list(range(1, MAX_ROUNDS + 1))
    controls = [twin.select("round_function", "round function F", list(ROUND_FUNCTIONS.items())),
                twin.slider("rounds", "rounds", rounds, 4)]
    panels = [twin.shapes(f"avalanche matrix of the {WIDTH}-bit Feistel cipher", 420, 330),
              twin.chart("mean fraction of output bits flipped", "rounds", "mean flip fraction",
                         xscale="linear", yscale="linear", point=("mean", "point"))]
    styles = {"mean": twin.line_style("toy cipher", COLORS["block"], 2),
              "ideal": twin.line_style("random permutation", COLORS["model"], 1.2, "4 3"),
              "point": twin.point_style("rounds chosen", COLORS["point"])}
    templates = ["{rounds} rounds of {function}: mean flip fraction {1.mean} (a random permutation: "
                 "{1.ideal}); {near}% of cells within 0.1 of 1/2"]
    views = {rf: cipher_view(rf) for rf in ROUND_FUNCTIONS}
    return twin.twin_data(controls, panels, styles, list(styles), templates, views)


def memory_view(model: str, tokens: int, policy: str) -> dict:
    curves = memory_curves(model, tokens)
    readouts = [memory_readout(model, tokens, policy, d) for d in DEPTHS]
    series = {p: twin.rounded(ys) for p, ys in curves.items()}
    series["chosen"] = series[policy]
    m = models.get(model)
    return {"panels": [{"ylim": list(memory_ylim(curves)), "series": series,
                        "vlines": [{"x": m.n_layers, "style": "model"}]}],
            "readout": {"pick": [0] * len(DEPTHS),
                        "values": {k: twin.rounded([r[k] for r in readouts])
                                   for k in ("full_gb", "block_gb", "reversible_gb", "peak_gb")},
                        "constants": {"policy": POLICY_LABELS[policy], "layers": m.n_layers,
                                      "overhead": f"{readouts[0]['overhead_pct']:.1f}",
                                      "pflop": twin.rounded(readouts[0]["step_pflop"])[0]}}}


def memory_twin_data() -> dict:
    """The memory twin: model x tokens x policy (views) x depth (slider)."""
    controls = [twin.select("model", "model", [(m, models.get(m).display) for m in MODELS]),
                twin.select("tokens", "tokens per micro-batch", [(t, f"{t:,}") for t in TOKENS]),
                twin.select("policy", "policy", list(POLICY_LABELS.items())),
                twin.slider("depth", "layers", DEPTHS, 80)]
    panels = [twin.chart("activation memory kept between layers", "layers", "GB",
                         xscale="linear", yscale="log", point=("chosen", "point"))]
    styles = {p: twin.line_style(POLICY_LABELS[p], COLORS[p], 2, TWIN_DASHES[p]) for p in rv.POLICIES}
    styles.update(chosen=twin.line_style("policy chosen", COLORS["point"], 0.8, "1 3"),
                  model=twin.line_style("the model's own depth", COLORS["model"], 1.2, "2 3"),
                  point=twin.point_style("depth chosen", COLORS["point"]))
    templates = ["{depth} layers, {policy}: {0.chosen} GB kept between layers (full {full_gb}, block "
                 "{block_gb}, reversible {reversible_gb}); peak {peak_gb} GB with the running layer, head and "
                 "FP32 logits; recomputation adds {overhead}% FLOPs at " + f"{SEQ_LEN:,}" + "-token sequences (flash "
                 "attention's scores included), {pflop} PFLOP of weight matmuls per step for the {layers}-layer model"]
    views = {f"{m}|{t}|{p}": memory_view(m, t, p) for m in MODELS for t in TOKENS for p in POLICY_LABELS}
    return twin.twin_data(controls, panels, styles, list(styles), templates, views)


def twin_data() -> dict:
    """Both twins' data, for the size budget: the chapter shows them one after the other."""
    return {"cipher": cipher_twin_data(), "memory": memory_twin_data()}


# --- the chapter's static figures ----------------------------------------------------------------
def mixing_figure(rounds: int = MAX_ROUNDS, depth: int = 12):
    """Left: the cipher's mean flip fraction round by round for each round function, against a
    random permutation's. Right: a residual network's response to a small input change, layer by
    layer, as a multiple of the change."""
    fig, (ax_c, ax_n) = new_figure(8.0, 3.2, 2)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.88, wspace=0.3)
    ideal = random_permutation_flip()
    means = {rf: avalanche_matrices(rf)[:rounds].mean(axis=(1, 2)) for rf in ROUND_FUNCTIONS}
    sensitivity = rv.residual_sensitivity(depth)
    with style():
        for rf, label in ROUND_FUNCTIONS.items():
            ax_c.plot(range(1, rounds + 1), means[rf], marker=MARKERS[rf], ms=3.5, label=label)
        ax_c.axhline(ideal, color=COLORS["model"], ls="--", lw=1.2, label="random permutation")
        ax_c.set(xlabel="rounds", ylabel="mean fraction of output bits flipped", ylim=(0, 0.75),
                 title=f"{WIDTH}-bit Feistel cipher: one input bit flipped")
        ax_c.legend(frameon=False, loc="lower right")
        ax_n.plot(range(depth + 1), sensitivity, "o-", ms=3.5, color=COLORS["block"])
        ax_n.set(xlabel="layers", ylabel="|change in output| / |change in input|", ylim=(0, None),
                 title="residual network, gain 1: a small input change")
    # Every point, as a sighted reader reads them off the figure.
    cipher = "; ".join(f"{ROUND_FUNCTIONS[rf]}: {', '.join(f'{v:.2f}' for v in m)}" for rf, m in means.items())
    return describe(fig, f"Mean flip fraction after rounds 1 to {rounds}, a random permutation's being "
                         f"{ideal:.2f}: {cipher}. The residual network's response at gain 1 stays between "
                         f"{sensitivity.min():.2f} and {sensitivity.max():.2f} times the input change over "
                         f"{depth} layers.")


def round_trip_figure(depth: int = 64, dtypes=("float16", "float32", "float64")):
    """Largest reconstruction error of a stack of couplings against depth, per number format."""
    fig, (ax,) = new_figure(5.2, 3.2)
    fig.subplots_adjust(left=0.15, right=0.97, bottom=0.16, top=0.9)
    errors = {dt: rv.round_trip_error(depth, dtype=dt) for dt in dtypes}
    with style():
        for dt, ls in zip(dtypes, ("-", "--", ":", "-.")):
            ax.plot(range(1, depth + 1), errors[dt], ls=ls, label=dt)
        ax.set_yscale("log")
        ax.set(xlabel="couplings inverted", ylabel="max |x - inverse(forward(x))| / max |x|",
               title="RevNet round trip in floating point")
        ax.legend(frameon=False)
    said = "; ".join(f"{dt} from {e[0]:.1e} after 1 coupling to {e[-1]:.1e} after {depth}" for dt, e in errors.items())
    return describe(fig, f"Log scale; the error grows with depth and shrinks with precision: {said}.")
