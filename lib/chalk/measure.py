"""Chapter 1's roofline measured on the machine at hand: its two ceilings and a small decode step.

A CPU has the same two ceilings as an accelerator, matmul FLOP/s ``F`` and memory bandwidth ``W``,
with a smaller ratio ``r = F/W`` between them. This module measures both with NumPy in float32,
times a decode step of random weights (a stack of dense layers, and an MoE variant with top-k
routing) over a sweep of batch sizes, and sets the times against the roofline that ``chalk.roofline``
predicts from the measured ``F`` and ``W``: the predicted lines are its SymPy formulas, evaluated.

Every timing is a median over repeats after a warm-up round, and the repeats go round the whole
sweep so that a burst of load on a shared machine lands on every batch alike. NumPy's BLAS runs
``threads`` threads (default 1: one core's ceilings); where the BLAS is not the OpenBLAS that
NumPy's wheels ship, its own default is used and reported as ``None``. With one thread the clock is
that thread's CPU time, so that time the scheduler gives other processes is not counted (the
memory bus they share still is); with more, it is wall time.
"""
import contextlib
import ctypes
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp

from . import moe, roofline
from .errors import ChalkError, lookup, positive, positive_int

BYTES_PER_WEIGHT = 4
"""float32, the format NumPy's matmuls run fastest in on a CPU; b_w of every measured step."""
DENSE_BATCHES = tuple(2 ** i for i in range(8))
"""Batches of the dense sweep, 1 to 128: from well below to well above a CPU's balance batch
(r b_w / 2, with r of a few to a few tens of FLOPs per byte)."""
MOE_BATCHES = tuple(2 ** i for i in range(7))
"""Batches of the MoE sweep, 1 to 64: from k experts a layer to every expert touched."""
KNEE_RISE = 0.4
"""A knee is reported only where the log-log slope of the step times rises by this much from the
batches below it to those above (0 to 1 on the roofline; a BLAS kernel's rounded corner and no
overlap of reads and arithmetic, t = a + cB, still give about 0.6 over this module's sweeps)."""

_experts_touched = sp.lambdify((moe.n_step, moe.k, moe.n_exp), moe.experts_touched_expr, "numpy")


# --- threads ----------------------------------------------------------------------------------
_SET_THREADS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_GET_THREADS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads")


def _openblas():
    """(set, get) thread-count functions of the OpenBLAS that NumPy's wheel bundles, or None."""
    home = Path(np.__file__).parent
    for folder in (home.parent / "numpy.libs", home / ".dylibs", home / ".libs"):
        for path in sorted(folder.glob("*openblas*")) if folder.is_dir() else ():
            lib = ctypes.CDLL(str(path))  # already loaded by NumPy: this returns the same library
            setter = next((getattr(lib, n) for n in _SET_THREADS if hasattr(lib, n)), None)
            getter = next((getattr(lib, n) for n in _GET_THREADS if hasattr(lib, n)), None)
            if setter and getter:
                setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                return setter, getter
    return None


@contextlib.contextmanager
def blas_threads(threads):
    """Run NumPy's BLAS on ``threads`` threads inside the block; yields the count in force, or None
    where the BLAS is not one whose count can be set (then it runs as it would anyway)."""
    positive_int("threads", threads)
    blas = _openblas()
    if blas is None:
        yield None
        return
    setter, getter = blas
    before = getter()
    setter(threads)
    try:
        yield getter()
    finally:
        setter(before)


# --- timing -----------------------------------------------------------------------------------
def _clock(threads_used):
    """The calling thread's CPU time when it alone runs the BLAS, else wall time."""
    return time.thread_time if threads_used == 1 else time.perf_counter


def _median_seconds(run, repeats, clock):
    """Median time of ``run()`` over ``repeats`` calls after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = clock()
        run()
        times.append(clock() - start)
    return float(np.median(times))


@dataclass(frozen=True)
class Ceilings:
    """This machine's two roofline ceilings, as measured."""
    flops: float
    """F: FLOP/s of a float32 matmul of two ``matmul_size``-square matrices (they sit in cache)."""
    bandwidth: float
    """W: bytes/s reading a float32 array of ``stream_bytes`` (far past the last-level cache) once,
    by a matrix-vector product: 2 FLOPs per 4 bytes, so the reads bound it on any machine."""
    threads: int | None
    matmul_size: int
    stream_bytes: int

    @property
    def ratio(self) -> float:
        """r = F/W, FLOPs per byte of bandwidth."""
        return self.flops / self.bandwidth


def ceilings(threads=1, repeats=7, matmul_size=1024, stream_bytes=256 * 2**20, seed=0) -> Ceilings:
    """Measure F and W (medians over ``repeats`` after a warm-up) with ``threads`` BLAS threads."""
    positive_int("repeats", repeats)
    positive_int("matmul_size", matmul_size)
    if positive_int("stream_bytes", stream_bytes) < 2**20:
        raise ChalkError(f"stream_bytes must be at least 1 MiB (2**20) to stream, got {stream_bytes!r}")
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((matmul_size, matmul_size), dtype=np.float32) for _ in range(2))
    product = np.empty_like(a)
    width = 1024
    rows = max(stream_bytes // (BYTES_PER_WEIGHT * width), 1)
    stream = np.ones((rows, width), dtype=np.float32)  # its values do not change how fast it reads
    ones = np.ones(width, dtype=np.float32)
    with blas_threads(threads) as used:
        clock = _clock(used)
        t_matmul = _median_seconds(lambda: np.matmul(a, b, out=product), repeats, clock)
        t_stream = _median_seconds(lambda: stream @ ones, repeats, clock)
    return Ceilings(flops=2 * matmul_size**3 / t_matmul, bandwidth=stream.nbytes / t_stream, threads=used,
                    matmul_size=matmul_size, stream_bytes=stream.nbytes)


# --- the decode step --------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSweep:
    """Median decode-step times over a sweep of batches, and the shape of the step that was timed.

    A dense step has ``experts = top_k = 1`` and no ``experts_touched``; an MoE step's every weight
    is a routed expert's (N_routed = N_tot), and ``experts_touched`` is the mean count of distinct
    experts a layer's tokens picked at each batch."""
    batches: np.ndarray
    seconds: np.ndarray
    active_params: float
    total_params: float
    experts: int = 1
    top_k: int = 1
    experts_touched: np.ndarray | None = None
    threads: int | None = None
    layers: int = 1

    @property
    def width(self) -> int:
        """Each square weight matrix's side (a layer's, or an expert's)."""
        return round(math.sqrt(self.total_params / (self.layers * self.experts)))

    @property
    def routed_params(self) -> float:
        return self.total_params if self.experts > 1 else 0.0

    @property
    def weight_bytes(self) -> float:
        return self.total_params * BYTES_PER_WEIGHT


def _batches(batches) -> np.ndarray:
    values = np.asarray(batches)
    if (values.ndim != 1 or values.size < 3 or values.dtype.kind not in "iu"
            or np.any(values < 1) or np.any(np.diff(values) <= 0)):
        raise ChalkError(f"batches must be at least 3 whole numbers >= 1, increasing, got {batches!r}")
    return values


def _sweep(step, batches, repeats, clock):
    """Median of the seconds ``step(batch, clock)`` returns at each batch: a warm-up round, then
    ``repeats`` rounds, each going once through the whole sweep."""
    for batch in batches:
        step(batch, clock)
    return np.median([[step(batch, clock) for batch in batches] for _ in range(repeats)], axis=0)


def dense_step(batches=DENSE_BATCHES, layers=8, width=2048, repeats=5, threads=1, seed=0) -> StepSweep:
    """Time one decode step of ``layers`` dense ``width`` x ``width`` float32 layers (8 x 2048^2:
    128 MiB, four times a large last-level cache) at each batch: every token passes every weight."""
    batches = _batches(batches)
    for name, value in (("layers", layers), ("width", width), ("repeats", repeats)):
        positive_int(name, value)
    rng = np.random.default_rng(seed)
    # Scaled so that activations keep unit size through the stack (no overflow, no denormals).
    weights = rng.standard_normal((layers, width, width), dtype=np.float32) / np.float32(math.sqrt(width))
    tokens = {b: rng.standard_normal((b, width), dtype=np.float32) for b in batches}

    def step(batch, clock):
        x = tokens[batch]
        start = clock()
        for w in weights:
            x = x @ w
        return clock() - start

    with blas_threads(threads) as used:
        seconds = _sweep(step, batches, repeats, _clock(used))
    params = float(layers * width * width)
    return StepSweep(batches, seconds, params, params, threads=used, layers=layers)


def moe_step(batches=MOE_BATCHES, layers=2, width=1024, experts=16, top_k=2, repeats=5, threads=1,
             seed=0) -> StepSweep:
    """Time one decode step of ``layers`` MoE layers of ``experts`` ``width``-square float32 experts
    (2 x 16 x 1024^2: 128 MiB) at each batch. A router (random unit-norm columns) scores every
    token against every expert and sends it to its ``top_k`` best; only the experts some token
    picked are multiplied, so only their weights are read. Fresh tokens every step, so each step
    routes anew, as uniformly as the formula assumes."""
    batches = _batches(batches)
    for name, value in (("layers", layers), ("width", width), ("experts", experts), ("repeats", repeats)):
        positive_int(name, value)
    if positive_int("top_k", top_k) > experts:
        raise ChalkError(f"top_k must be between 1 and experts ({experts}), got {top_k!r}")
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((layers, experts, width, width), dtype=np.float32) / np.float32(math.sqrt(width))
    router = rng.standard_normal((layers, width, experts), dtype=np.float32)
    router /= np.linalg.norm(router, axis=1, keepdims=True)
    touched = {b: [] for b in batches}

    def step(batch, clock):
        x = rng.standard_normal((batch, width), dtype=np.float32)  # drawn outside the clock
        start = clock()
        for layer in range(layers):
            choice = np.argpartition(-(x @ router[layer]), top_k - 1, axis=1)[:, :top_k]
            y = np.zeros_like(x)
            picked = np.unique(choice)
            for e in picked:
                rows = np.nonzero(choice == e)[0]
                y[rows] += x[rows] @ weights[layer, e]
            x = y
            touched[batch].append(picked.size)
        return clock() - start

    with blas_threads(threads) as used:
        seconds = _sweep(step, batches, repeats, _clock(used))
    return StepSweep(batches, seconds, float(layers * top_k * width * width),
                     float(layers * experts * width * width), experts, top_k,
                     np.array([np.mean(touched[b]) for b in batches]), used, layers)


# --- the analysis -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Knee:
    """The fit t(B) = max(flat, slope x B) to step times, least squares in log t.

    ``balance_batch`` is flat / slope, the batch where the two lines cross, or None when the
    times show no knee inside the sweep (``verdict`` says which way they run)."""
    balance_batch: float | None
    flat: float
    slope: float
    rms_log_error: float
    verdict: str


def _positive_series(name, values, size):
    arr = np.asarray(positive(name, values), dtype=float)
    if arr.shape != (size,):
        raise ChalkError(f"{name} must hold one value per batch ({size}), got shape {arr.shape}")
    return arr


def _log_slope(x, y):
    return float(np.polyfit(x, y, 1)[0])


def fit_roofline(batches, seconds) -> Knee:
    """Fit max(flat, slope B) to measured step times, least squares in log t, and find the knee.

    For a knee at batch K the model is log slope + log max(K, B), whose best log slope is the mean
    of log t - log max(K, B); K is scanned on a fine grid over and past the sweep. The knee counts
    only with at least two batches on each side of it and with the log-log slope of the times
    rising by ``KNEE_RISE`` from the batches below it to those above: a straight line in log-log
    (all flat, all linear, or any power law) has no knee, though max(...) fitted to it finds one."""
    b = _batches(batches).astype(float)
    y, x = np.log(_positive_series("seconds", seconds, b.size)), np.log(b)
    grid = np.geomspace(b[0] / 2, b[-1] * 2, 1024)
    model = np.log(np.maximum(grid[:, None], b[None, :]))  # one row per knee on the grid
    offsets = (y - model).mean(axis=1)
    errors = np.sqrt(((y - model - offsets[:, None]) ** 2).mean(axis=1))
    best = int(np.argmin(errors))
    knee, slope = float(grid[best]), float(np.exp(offsets[best]))
    below, above = b < knee, b > knee
    if below.sum() < 2:
        verdict = "no knee: rising over the whole sweep"
    elif above.sum() < 2:
        verdict = "no knee: flat over the whole sweep"
    elif _log_slope(x[above], y[above]) - _log_slope(x[below], y[below]) < KNEE_RISE:
        verdict = "no knee: one power law over the sweep, not flat then linear"
    else:
        verdict = "knee"
    return Knee(knee if verdict == "knee" else None, knee * slope, slope, float(errors[best]), verdict)


def _formula_args(sweep: StepSweep, flops, bandwidth):
    """``roofline.numeric``'s arguments after (B, L) for the measured step: no KV cache, no attention."""
    return (sweep.active_params, sweep.total_params, BYTES_PER_WEIGHT, 0.0, flops, bandwidth, 0.0, None,
            sweep.routed_params, sweep.top_k, sweep.experts)


def predicted(sweep: StepSweep, flops, bandwidth, term="t_step", batches=None):
    """The roofline's ``term`` (``t_step``, ``t_matmul`` or ``t_weights``) for the sweep's step, at
    the sweep's batches or at ``batches`` (a figure's fine grid)."""
    positive("flops", flops)
    positive("bandwidth", bandwidth)
    f = lookup("term", term, {t: roofline.numeric[t] for t in ("t_step", "t_matmul", "t_weights")}, param="term")
    b = sweep.batches if batches is None else np.asarray(positive("batches", batches))
    return np.broadcast_to(f(b.astype(float), 0.0, *_formula_args(sweep, flops, bandwidth)), np.shape(b)).astype(float)


def balance_batch(flops, bandwidth, active_params=1.0, total_params=1.0) -> float:
    """``roofline``'s B* for a float32 step at these ceilings, every weight read: r b_w s / 2."""
    positive("flops", flops)
    positive("bandwidth", bandwidth)
    positive("active_params", active_params)
    positive("total_params", total_params)
    return float(roofline.numeric["balance_batch"](0.0, 0.0, active_params, total_params, BYTES_PER_WEIGHT, 0.0,
                                                   flops, bandwidth))


def predicted_experts_touched(batches, top_k, experts):
    """Chapter 1's E (1 - (1 - k/E)^B) distinct experts for B tokens each picking k of E."""
    return np.asarray(_experts_touched(np.asarray(batches, dtype=float), top_k, experts), dtype=float)


@dataclass(frozen=True)
class Comparison:
    """A measured sweep against the roofline predicted from the measured ceilings."""
    knee: Knee
    predicted_balance_batch: float
    predicted_seconds: np.ndarray
    bandwidth_fractions: np.ndarray
    """At each batch, the bytes of weights the step reads over its measured time, as a fraction of W."""
    flops_fractions: np.ndarray
    """At each batch, the FLOPs the step does over its measured time, as a fraction of F."""
    end_ratios: tuple[float, float]
    """Measured over predicted step time at the smallest and the largest batch."""

    @property
    def balance_ratio(self) -> float | None:
        """Measured balance batch over predicted; None without a knee."""
        kb = self.knee.balance_batch
        return None if kb is None else kb / self.predicted_balance_batch


def compare(sweep: StepSweep, flops, bandwidth, fit_from=2) -> Comparison:
    """Fit the sweep's knee and set it, its end points and its ceilings against the roofline.

    The knee is fitted to the batches from ``fit_from`` on: NumPy sends a batch of one through the
    matrix-vector kernel, which reads at the ceiling, and every larger batch through the
    matrix-matrix kernel, whose tiles of rows make a small batch cost more than its reads. Fitting
    both would average two kernels; the end ratios and fractions cover every batch."""
    t_pred = predicted(sweep, flops, bandwidth)
    b_star = balance_batch(flops, bandwidth, sweep.active_params, sweep.total_params)
    ends = (float(sweep.seconds[0] / t_pred[0]), float(sweep.seconds[-1] / t_pred[-1]))
    fitted = sweep.batches >= positive_int("fit_from", fit_from)
    return Comparison(fit_roofline(sweep.batches[fitted], sweep.seconds[fitted]), b_star, t_pred,
                      predicted(sweep, flops, bandwidth, "t_weights") / sweep.seconds,
                      predicted(sweep, flops, bandwidth, "t_matmul") / sweep.seconds, ends)


# --- the whole lab ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Lab:
    """This machine's ceilings, both decode steps, and each step set against the roofline."""
    ceilings: Ceilings
    dense: StepSweep
    moe: StepSweep
    dense_vs_roofline: Comparison
    moe_vs_roofline: Comparison


def lab(threads=1, repeats=5) -> Lab:
    """Measure the ceilings, time the dense and the MoE step at their default sweeps, compare."""
    c = ceilings(threads, repeats=repeats + 2)
    dense, routed = dense_step(repeats=repeats, threads=threads), moe_step(repeats=repeats, threads=threads)
    return Lab(c, dense, routed, compare(dense, c.flops, c.bandwidth), compare(routed, c.flops, c.bandwidth))


def _sig(x, digits=3):
    return f"{x:,.{digits}g}" if x >= 10 ** (digits - 1) else f"{x:.{digits}g}"


def table(result: Lab) -> str:
    """The comparison as plain-text tables, for ``python -m chalk measure`` and ``make bench``."""
    c, d, m = result.ceilings, result.dense_vs_roofline, result.moe_vs_roofline
    threads = "BLAS default (not settable)" if c.threads is None else f"{c.threads}"
    lines = [f"Ceilings (float32, BLAS threads: {threads}, medians after a warm-up)",
             f"  F  matmul {c.matmul_size} x {c.matmul_size}           {c.flops / 1e9:8.1f} GFLOP/s",
             f"  W  reading {c.stream_bytes / 2**20:,.0f} MiB once          {c.bandwidth / 1e9:8.2f} GB/s",
             f"  r = F/W                          {c.ratio:8.2f} FLOP/byte", ""]
    for title, sweep, cmp in ((f"Dense step: {sweep_text(result.dense)}", result.dense, d),
                              (f"MoE step: {sweep_text(result.moe)}", result.moe, m)):
        lines.append(title)
        header = "  batch  measured ms  roofline ms  ratio  of W  of F"
        touched = sweep.experts_touched is not None
        if touched:
            header += "  experts touched (E(1-(1-k/E)^B))"
            expected = predicted_experts_touched(sweep.batches, sweep.top_k, sweep.experts)
        lines.append(header)
        for i, b in enumerate(sweep.batches):
            row = (f"  {b:5d}  {1e3 * sweep.seconds[i]:11.2f}  {1e3 * cmp.predicted_seconds[i]:11.2f}  "
                   f"{sweep.seconds[i] / cmp.predicted_seconds[i]:5.2f}  {cmp.bandwidth_fractions[i]:4.0%}  "
                   f"{cmp.flops_fractions[i]:4.0%}")
            if touched:
                row += f"  {sweep.experts_touched[i]:5.1f} ({expected[i]:.1f})"
            lines.append(row)
        knee = cmp.knee
        if touched:  # no knee to fit: the sweep stays below B*, where reads grow with the experts touched
            lines.append(f"  balance batch with every expert read: predicted {_sig(cmp.predicted_balance_batch)} "
                         f"= r b_w s / 2 (s = E/k = {sweep.experts / sweep.top_k:g})")
        else:
            found = (f"{_sig(knee.balance_batch)} (measured / predicted {cmp.balance_ratio:.2f})"
                     if knee.balance_batch is not None else knee.verdict)
            lines.append(f"  balance batch: predicted {_sig(cmp.predicted_balance_batch)} = r b_w / 2; measured {found}")
        lines += [f"  step time measured / predicted: {cmp.end_ratios[0]:.2f} at batch {sweep.batches[0]}, "
                  f"{cmp.end_ratios[1]:.2f} at batch {sweep.batches[-1]}", ""]
    return "\n".join(lines).rstrip()


def sweep_text(sweep: StepSweep) -> str:
    """What was timed, in words: '8 layers, 128 MiB of float32 weights' and the routing if any."""
    text = f"{sweep.weight_bytes / 2**20:,.0f} MiB of float32 weights"
    if sweep.experts_touched is not None:
        text += f", {sweep.experts} experts a layer, top-{sweep.top_k} routing"
    return text
