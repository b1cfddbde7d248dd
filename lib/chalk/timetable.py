"""Chapter 1's train timetable, and a simulation of the serving loop that can prove it wrong.

**The closed form.** A step departs every T seconds and a request boards the next one. A request
that arrives a time u after a departure waits T - u; Poisson arrivals land at a uniform phase u in
[0, T), so the mean wait is T/2 and the worst approaches T. The step it boards prefills its prompt
and produces its first token, so if that prefill adds nothing to the step (a short prompt hides
under the weight read) the time to first token (TTFT) is the wait plus T: 1.5 T on average, 2 T
at worst. Derived in SymPy below.

**The simulation** (``simulate``) assumes none of that. One replica runs a loop of passes, as an
iteration-level scheduler does (Orca, Yu et al. 2022):

* Requests arrive (Poisson at ``rate``, or a given trace), each with a prompt length and an output
  length. A request that arrives during a pass waits for the pass to end: that boundary is its
  *next departure*. An idle replica starts a pass at once.
* At each boundary the scheduler admits waiting requests first come, first served, while the next
  one's KV cache fits: a request reserves HBM for its cache at its **final** length, prompt plus
  output, beside the weights (``Replica.usable_hbm`` after ``headroom``), as Orca reserves a
  request's maximum tokens, so a sequence once admitted is never evicted (vLLM instead pages the
  cache as it grows and evicts when HBM runs out; Kwon et al. 2023). The head of the queue blocks
  those behind it.
* **Prefill and decode share the replica's chips in one pass**: every running sequence decodes one
  token and every newly admitted request has its whole prompt prefilled (no chunking). The prefill
  ends with the logits of the prompt's last token, which give the request's first output token,
  so TTFT = wait for the next departure + wait for a seat + the pass that prefills it.
* A pass lasts the roofline bound: max(compute, memory), with compute the matmuls and attention
  of every token in the pass (a prompt token attends to (p + 1)/2 tokens on average, causally) and
  memory the weights read once (those its tokens touch, for an MoE) plus every token of KV cache
  the pass reads or writes. Each term is ``roofline.numeric``'s formula for its tokens.

Nothing above fixes the pass length, so the closed form holds only where its assumptions do: a
weight-bound pass, a short prompt, free seats. The tests and Chapter 1 show where each fails.

**Offered load.** Whether a run can reach a steady state at all is fixed before it starts, by two
ratios (``offered_load``). The FLOPs the requests bring, λ times one request's matmuls and
attention at peak, over the chips' peak: at 1 or more no schedule keeps up. And the requests the
seats can turn over: with all B seats taken a pass lasts t_full and a request holds its seat for
n_out passes, and every un-chunked prefill stalls its pass by t_stall, so the replica serves at
most B / (n_out t_full + B t_stall) requests per second; past that the queue for seats, and every
wait, grows without bound, by seat_load - 1 seconds per second of traffic.

**Steady state.** A run starts empty and ends draining, and both ends bias its averages: passes
are short while the batch fills, and the last requests finish in a shrinking batch.
``Run.steady`` keeps only the requests that arrive, and the passes that start, between the first
arrival plus two seat lifetimes and the last arrival minus one (a lifetime: the longest any
request holds a seat). One lifetime in, no sequence in the batch remembers the empty start; the
second lets the pass length, which depends on the batch, settle; one lifetime before the end, the
requests kept finish before arrivals stop. Over a stable steady window the chips' time at peak
FLOP/s (the MFU) equals the offered FLOPs; the tests check it, and check that including the
warm-up breaks it. A run past its seat capacity has no steady state (its waits grow for as long as
it runs); ``Run.saturated_window`` keeps the part where every seat is taken and the queue never
empties, over which the replica completes requests at its seat capacity.

Scope: the replica does nothing but these passes (no speculative decoding, no prefix cache, no
chunked prefill, no communication time); a sequence's output length is known to the scheduler's
HBM reservation (a real server reserves for its ``max_tokens``, or pages and evicts); prefill
attention is priced with the decode kernels' FLOPs per cached token (exact for MHA/GQA/MQA, an
overestimate for MLA, whose prefill does not absorb its projections); sliding-window models take
their per-token KV bytes and attention FLOPs at each pass's mean context.
"""
from collections import deque
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import roofline
from .errors import ChalkError, DoesNotFit, in_range, positive, positive_int
from .lazy import Lazy
from .notation import B, L, T, W, b_kv, lam

# Integrated, summed, solved and lambdified forms are built on first use (``chalk.lazy``): the
# lambdified load formulas alone, roofline expressions of a dozen symbols, cost over half a second
# of every import.
_derived = Lazy(__name__)

_u = sp.Dummy("u", nonnegative=True)
"""Arrival phase after the last departure: only a variable of integration, so not notation."""



@_derived
def _wait_mean():
    """Mean wait for the next departure, averaging T - u over a uniform phase u."""
    return sp.integrate((T - _u) / T, (_u, 0, T))


wait_worst = (T - _u).subs(_u, 0)
"""Arriving just after a departure: a full interval to wait."""


@_derived
def _ttft_mean():
    """Time to first token: the wait, then the one step of length T that prefills the prompt and
    emits the first token (prefill assumed to add nothing to the step)."""
    return _wait_mean() + T


ttft_worst = wait_worst + T
batch_mean = lam * T
"""Requests per departure on average: the new requests each step takes on in steady state."""


@_derived
def _CLOSED_FORM():
    return {"wait_mean": _wait_mean(), "wait_worst": wait_worst, "ttft_mean": _ttft_mean(), "ttft_worst": ttft_worst}


# --- offered load -------------------------------------------------------------------------------
n_in = sp.Symbol(r"n_\text{in}", positive=True)
"""Local to this module: prompt tokens of one request."""
n_out = sp.Symbol(r"n_\text{out}", positive=True)
"""Local to this module: output tokens of one request, the first of them from the prefill."""
_j = sp.Dummy("j", positive=True, integer=True)
"""Index of a decode step: only a variable of summation, so not notation."""

request_tokens = n_in + n_out - 1
"""Tokens one request pushes through the matmuls: its prompt, then every output token but the
last, which is never fed back."""


@_derived
def _request_attended():
    """Cached tokens its new tokens attend to: causally within the prompt, then n_in + j at decode
    step j."""
    return sp.factor(n_in * (n_in + 1) / 2 + sp.summation(n_in + _j, (_j, 1, n_out - 1)))


@_derived
def _request_compute():
    """Seconds of the replica's peak FLOP/s that one request needs: ``roofline.t_compute`` for its
    tokens at their mean attended context."""
    return roofline.t_compute.subs({B: request_tokens, L: _request_attended() / request_tokens})


@_derived
def _offered_compute():
    """Offered FLOPs over peak: the MFU a stable replica must reach; at 1 or more no schedule keeps up."""
    return lam * _request_compute()


t_full = sp.Symbol(r"t_\text{full}", positive=True)
"""Local to this module: a decode pass with all B seats taken."""
t_stall = sp.Symbol(r"t_\text{stall}", positive=True)
"""Local to this module: what one un-chunked prefill adds to such a pass."""
seat_load = lam * n_out / B * t_full + lam * t_stall
"""Fraction of a full replica's time the arrivals need: λ n_out / B passes per second (each
request holds a seat for n_out passes) of t_full each, plus λ prefill stalls."""


@_derived
def _seat_capacity():
    """Requests per second a replica with every seat taken serves: B / (n_out t_full + B t_stall)."""
    return sp.solve(sp.Eq(seat_load, 1), lam)[0]


@_derived
def _seat_turnover():
    """The same with prefill free (chunked into passes' idle FLOPs): B / (n_out t_full)."""
    return _seat_capacity().subs(t_stall, 0)


t_full_expr = roofline.t_step.subs(L, n_in + n_out / 2)
"""t_full: the roofline step of B sequences at their mean context, n_in + n_out/2."""
t_prompt_expr = roofline.t_compute.subs({B: n_in, L: (n_in + 1) / 2})
"""One whole prompt's matmuls and causal attention at peak FLOP/s."""


@_derived
def _t_stall_expr():
    """t_stall: a pass of B - 1 decoding sequences plus one whole prompt (its matmuls and causal
    attention, and its KV cache written), less t_full. About zero while the prompt hides under the
    pass's memory time (a little below: one sequence fewer reads its cache), up to the prompt's whole
    compute once the pass is compute-bound."""
    prefill_pass = sp.Max(roofline.t_compute.subs(B, B - 1) + t_prompt_expr,
                          roofline.t_weights.subs(B, B - 1 + n_in) + roofline.t_kv.subs(B, B - 1) + n_in * b_kv / W)
    return (prefill_pass - roofline.t_step).subs(L, n_in + n_out / 2)


@_derived
def __load_numeric():
    args = (lam, n_in, n_out, B) + roofline.ARGS[2:]
    return {name: sp.lambdify(args, expr, modules=[{"Max": np.maximum}, "numpy"]) for name, expr in {
        "compute_share": _offered_compute(), "t_full": t_full_expr, "t_stall": _t_stall_expr(),
        "t_full_compute": roofline.t_compute.subs(L, n_in + n_out / 2), "t_prompt": t_prompt_expr}.items()}


@_derived
def __seat_numeric():
    return sp.lambdify((lam, n_out, B, t_full, t_stall), (_seat_capacity(), _seat_turnover(), seat_load))


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


@dataclass(frozen=True)
class Load:
    """What ``offered_load`` finds: the two ratios that decide whether a run is stable."""
    rate: float
    compute_share: float
    """Offered FLOPs over the replica's peak."""
    seats: int
    """Requests whose KV cache, reserved at prompt + output tokens, fits beside the weights."""
    t_full: float
    """A decode pass with every seat taken, at the seats' mean context n_in + n_out/2."""
    t_full_compute: float
    """The compute part of t_full: what its chips would take at peak FLOP/s."""
    t_prompt: float
    """One whole prompt's matmuls and attention at peak FLOP/s."""
    t_stall: float
    """What prefilling one whole prompt adds to a full pass."""
    seat_turnover: float
    """Requests/s full seats release if prefill stalled nothing."""
    seat_capacity: float
    """Requests/s full seats release with every prompt prefilled whole in one pass."""
    seat_load: float
    """rate / seat_capacity: below 1 the seats keep up; above, every wait grows by seat_load - 1
    seconds per second of traffic once they are full."""

LIMITS = {"n_requests": 1_000_000, "prompt": 1_000_000, "output": 1_000_000}
"""Largest accepted sizes: the loop runs one Python iteration per pass (at most the sum of the
output lengths), so a slip of the keyboard should fail here, not run for an hour."""


def closed_form(interval: float) -> dict[str, float]:
    """The four closed-form times, in seconds, for departures every ``interval`` seconds."""
    positive("interval", interval)
    return {name: float(expr.subs(T, interval)) for name, expr in _CLOSED_FORM().items()}


@dataclass(frozen=True)
class Summary:
    """A run in numbers (seconds, sequences, fractions), named as Chapter 1 prints them."""
    requests: int
    step_floor: float
    """The fastest pass, one token at no context (the weight read for a dense model): the T the
    closed form would use if the step did not depend on the load."""
    step_mean: float
    step_max: float
    departure_wait_mean: float
    """Arrival to the next pass boundary: the closed form's wait."""
    departure_wait_worst: float
    wait_mean: float
    """Arrival to the start of the pass that prefills the request: seat waits included."""
    wait_worst: float
    seat_waited: float
    """Fraction of requests that found no seat at their next departure."""
    ttft_mean: float
    ttft_worst: float
    prefill_pass_mean: float
    """Mean length of the pass that prefills a request: the part of TTFT after the wait."""
    tpot_mean: float
    """Time per output token after the first, over requests with two or more (nan if none)."""
    batch_mean: float
    """Sequences in the replica, time-averaged over the span (idle time counts as zero)."""
    batch_max: int
    compute_bound: float
    """Fraction of passes whose compute outlasts their memory traffic."""
    busy: float
    """Fraction of the span the replica spends in passes."""
    mfu: float
    """Peak-FLOP time of the matmuls and attention over the span's length: the roofline's MFU."""
    throughput: float
    """Requests completed per second of the span."""
    time_in_batch_mean: float
    """Mean time from boarding to the last token."""
    start: float
    stop: float
    """The span measured, seconds: requests arriving and passes starting in [start, stop)."""


@dataclass(frozen=True)
class Run:
    """One simulated run: every request's times and every pass's length and load.

    Request arrays are indexed by request (arrival order); pass arrays by pass. All times in
    seconds from time 0."""
    replica: roofline.Replica
    arrivals: np.ndarray
    prompts: np.ndarray
    outputs: np.ndarray
    reserved: np.ndarray
    """HBM each request reserves for its KV cache while it runs, bytes."""
    kv_budget: float
    """HBM for KV cache: usable HBM after ``headroom`` minus the weights, bytes."""
    departures: np.ndarray
    """Start of the first pass at or after the arrival (the arrival itself if the replica idled)."""
    boarded: np.ndarray
    """Start of the pass that prefilled the request."""
    first_token: np.ndarray
    finished: np.ndarray
    pass_start: np.ndarray
    pass_length: np.ndarray
    pass_batch: np.ndarray
    """Sequences in each pass: those decoding plus those being prefilled."""
    pass_prefills: np.ndarray
    pass_compute: np.ndarray
    """Compute time of each pass at peak FLOP/s (its memory time is pass_length where larger)."""
    step_floor: float

    @property
    def departure_waits(self) -> np.ndarray:
        return self.departures - self.arrivals

    @property
    def waits(self) -> np.ndarray:
        return self.boarded - self.arrivals

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token: arrival to the end of the pass that prefilled the prompt."""
        return self.first_token - self.arrivals

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token after the first, for the requests with two or more."""
        many = self.outputs > 1
        return (self.finished[many] - self.first_token[many]) / (self.outputs[many] - 1)

    @property
    def life(self) -> float:
        """The longest any request held a seat, boarding to last token: how far back the batch at
        any moment remembers."""
        return float(np.max(self.finished - self.boarded))

    def steady_window(self, warmup_lives: float = 2.0) -> tuple[float, float]:
        """(start, stop) of the steady part of the run: from the first arrival plus ``warmup_lives``
        seat lifetimes to the last arrival minus one (the module docstring says why)."""
        in_range("warmup_lives", warmup_lives, 1, 100)
        start = float(self.arrivals.min()) + warmup_lives * self.life
        stop = float(self.arrivals.max()) - self.life
        if stop <= start:
            raise ChalkError(
                f"n_requests: the arrivals span {self.arrivals.max() - self.arrivals.min():.3g} s, less than "
                f"{warmup_lives + 1:g} seat lifetimes of {self.life:.3g} s, so no part of the run is steady; "
                "simulate more requests")
        return start, stop

    @property
    def pass_waiting(self) -> np.ndarray:
        """Requests left waiting at each pass: arrived by its start and not boarded in it or before."""
        return (np.searchsorted(self.arrivals, self.pass_start, side="right")
                - np.searchsorted(np.sort(self.boarded), self.pass_start, side="right"))

    def saturated_window(self) -> tuple[float, float]:
        """(start, stop) of an overloaded run's saturated part, for runs offered more requests than
        their seats turn over (``Load.seat_load`` > 1), which have no steady state: from one seat
        lifetime after the first request found every seat taken (by then the seats hold only
        sequences that boarded from the queue) to the last arrival. Raises if the queue for seats
        empties in between: the run was not overloaded."""
        waited = self.boarded > self.departures
        if not waited.any():
            raise ChalkError("seats: no request waited for a seat, so the seats never filled; for a run "
                             "below its seat capacity use steady()")
        start, stop = float(self.departures[waited].min()) + self.life, float(self.arrivals.max())
        if stop <= start:
            raise ChalkError(f"n_requests: the seats filled at {start - self.life:.3g} s and arrivals stop at "
                             f"{stop:.3g} s, within one seat lifetime ({self.life:.3g} s); simulate more requests")
        inside = (self.pass_start >= start) & (self.pass_start < stop)
        if np.any(self.pass_waiting[inside] == 0):
            empty = self.pass_start[inside][np.argmin(self.pass_waiting[inside])]
            raise ChalkError(f"seats: the queue for seats emptied at {empty:.4g} s, so the run is not saturated; "
                             "use steady()")
        return start, stop

    def steady(self, warmup_lives: float = 2.0) -> Summary:
        """``summary`` over ``steady_window``: warm-up and drain left out."""
        return self.summary(*self.steady_window(warmup_lives))

    def summary(self, start: float | None = None, stop: float | None = None) -> Summary:
        """The run in numbers: by default all of it, first arrival to last token.

        With ``start`` and ``stop`` (seconds), only the requests that arrive in [start, stop) and
        the passes that start in it; time averages (batch, busy, MFU, throughput) are over the
        span, a pass that straddles an edge counting for its part inside."""
        t0 = float(self.arrivals.min()) if start is None else float(start)
        t1 = float(self.finished.max()) if stop is None else float(stop)
        if not t1 > t0:
            raise ChalkError(f"stop must be after start, got start {t0!r}, stop {t1!r}")
        req = (self.arrivals >= t0) & (self.arrivals < t1)
        runs = (self.pass_start >= t0) & (self.pass_start < t1)
        if not req.any() or not runs.any():
            raise ChalkError(f"start, stop: no request arrives and no pass starts in [{t0:.4g}, {t1:.4g}) s")
        span = t1 - t0
        inside = np.clip(np.minimum(self.pass_start + self.pass_length, t1) - np.maximum(self.pass_start, t0), 0, None)
        lengths = self.pass_length[runs]
        waits, ttft = self.waits[req], self.ttft[req]
        tpot = self.tpot[req[self.outputs > 1]]
        return Summary(
            requests=int(req.sum()), step_floor=self.step_floor,
            step_mean=float(lengths.mean()), step_max=float(lengths.max()),
            departure_wait_mean=float(self.departure_waits[req].mean()),
            departure_wait_worst=float(self.departure_waits[req].max()),
            wait_mean=float(waits.mean()), wait_worst=float(waits.max()),
            seat_waited=float(np.mean(self.boarded[req] > self.departures[req])),
            ttft_mean=float(ttft.mean()), ttft_worst=float(ttft.max()),
            prefill_pass_mean=float((self.first_token - self.boarded)[req].mean()),
            tpot_mean=float(tpot.mean()) if len(tpot) else float("nan"),
            batch_mean=float(np.dot(self.pass_batch, inside) / span), batch_max=int(self.pass_batch[runs].max()),
            compute_bound=float(np.mean(self.pass_compute[runs] >= lengths)),
            busy=float(inside.sum() / span),
            mfu=float(np.dot(self.pass_compute, inside / self.pass_length) / span),
            throughput=float(np.sum((self.finished > t0) & (self.finished <= t1)) / span),
            time_in_batch_mean=float((self.finished - self.boarded)[req].mean()), start=t0, stop=t1)


def _lengths(name: str, value, n: int) -> np.ndarray:
    """A whole number >= 1 for every request: one for all, or one each."""
    if np.ndim(value) == 0:
        in_range(name, positive_int(name, value), 1, LIMITS[name])
        return np.full(n, int(value), dtype=np.int64)
    arr = np.asarray(value)
    if arr.shape != (n,):
        raise ChalkError(f"{name} must be one whole number or one per request ({n}), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) or arr.min() < 1:
        raise ChalkError(f"{name} must hold whole numbers >= 1, got {value!r}")
    in_range(name, arr, 1, LIMITS[name])
    return arr.astype(np.int64)


def _arrival_times(rate, arrivals, n_requests, seed) -> np.ndarray:
    if (rate is None) == (arrivals is None):
        raise ChalkError("rate, arrivals: give exactly one, rate (Poisson arrivals, requests/s) or "
                         "arrivals (a trace of times, s)")
    if arrivals is not None:
        times = np.asarray(arrivals, dtype=float)
        if times.ndim != 1 or not 1 <= len(times) <= LIMITS["n_requests"]:
            raise ChalkError(f"arrivals must be a list of 1 to {LIMITS['n_requests']:,} times, got {arrivals!r}")
        in_range("arrivals", times, 0, np.inf)
        if np.any(np.diff(times) < 0):
            raise ChalkError("arrivals must be in time order (non-decreasing)")
        return times
    positive("rate", rate)
    in_range("n_requests", positive_int("n_requests", n_requests), 1, LIMITS["n_requests"])
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    # Unit-rate gaps scaled by 1/rate: runs at different rates with one seed see the same arrivals
    # in stretched time, so a sweep over rate compares like with like.
    return np.cumsum(rng.exponential(1.0, n_requests)) / float(rate)


def simulate(chip, model, dtype="bf16", chips=1, *, rate=None, arrivals=None, n_requests=10_000,
             prompt=128, output=256, seats=None, headroom=roofline.HEADROOM, kv_bytes_per_element=2,
             seed=0) -> Run:
    """Serve requests on one replica, pass by pass, and record when each one boards and finishes.

    The replica is ``roofline.replica(chip, model, dtype, chips, kv_bytes_per_element)``. Arrivals
    are Poisson at ``rate`` requests/s (``n_requests`` of them, drawn from ``seed``, an int or a
    ``numpy.random.Generator``) or the times in ``arrivals``. ``prompt`` and ``output`` are token
    counts, one for all requests or one per request. ``seats`` caps the sequences in a pass (a
    scheduler's limit); by default only HBM limits them. The module docstring states the
    scheduling policy and what it leaves out.
    """
    rep = roofline.replica(chip, model, dtype, chips, kv_bytes_per_element)
    in_range("headroom", headroom, 0, 0.99)
    if seats is not None:
        seats = positive_int("seats", seats)
    times = _arrival_times(rate, arrivals, n_requests, seed)
    n = len(times)
    prompts, outputs = _lengths("prompt", prompt, n), _lengths("output", output, n)
    _check_context(rep, int((prompts + outputs).max()))
    budget = rep.usable_hbm(headroom) - rep.weight_bytes
    if budget <= 0:
        rep.check_fit(0, 0, headroom)
    reserved = np.asarray(rep.kv_bytes(np.ones(n), prompts + outputs), dtype=float)
    if reserved.max() > budget:
        worst = int(np.argmax(reserved))
        raise DoesNotFit(
            f"prompt + output: one request of {prompts[worst] + outputs[worst]:,} tokens needs "
            f"{reserved[worst] / 1e9:,.1f} GB of KV cache, but {rep.chips} x {rep.chip.name} keep only "
            f"{budget / 1e9:,.1f} GB beside the weights", float(reserved[worst]), float(budget))
    return _serve(rep, times, prompts, outputs, reserved, budget, seats)


def offered_load(chip, model, dtype="bf16", chips=1, *, rate, prompt, output, headroom=roofline.HEADROOM,
                 kv_bytes_per_element=2) -> Load:
    """The load ``simulate`` would be offered, from the formulas above, before running anything.

    Arguments as for ``simulate``, with one ``prompt`` and one ``output`` length for all requests.
    Scope: as ``simulate``'s; a sliding-window model's per-token KV bytes and attention FLOPs are
    taken at the mean context n_in + n_out/2."""
    rep = roofline.replica(chip, model, dtype, chips, kv_bytes_per_element)
    positive("rate", rate)
    in_range("headroom", headroom, 0, 0.99)
    prompt, output = (in_range(name, positive_int(name, value), 1, LIMITS[name])
                      for name, value in (("prompt", prompt), ("output", output)))
    _check_context(rep, prompt + output)
    seats = rep.max_batch(prompt + output, headroom)
    if seats < 1:
        raise DoesNotFit(f"prompt + output: one request of {prompt + output:,} tokens does not fit beside the "
                         f"weights of {rep.model.display} on {rep.chips} x {rep.chip.name}",
                         float(rep.kv_bytes(1, prompt + output)), rep.usable_hbm(headroom) - rep.weight_bytes)
    params = rep.params(prompt + output / 2)
    values = {name: float(f(rate, prompt, output, seats, *params)) for name, f in __load_numeric().items()}
    capacity, turnover, load = __seat_numeric()(rate, output, seats, values["t_full"], values["t_stall"])
    return Load(float(rate), values["compute_share"], int(seats), values["t_full"], values["t_full_compute"],
                values["t_prompt"], values["t_stall"], float(turnover), float(capacity), float(load))


def _check_context(rep, longest: int) -> None:
    if rep.model.max_context and longest > rep.model.max_context:
        raise ChalkError(f"prompt + output: {longest:,} tokens is beyond {rep.model.display}'s maximum "
                         f"context of {rep.model.max_context:,} tokens")


class _Passes:
    """The roofline's time for one pass, from ``roofline.numeric`` with the replica's parameters.

    ``Replica.params`` depends on context only for sliding-window models; for the others it is
    computed once, because it costs far more than a pass's arithmetic."""

    def __init__(self, rep: roofline.Replica):
        self.rep = rep
        self.windowed = bool(np.any(rep.model.kv_bytes_windowed(1.0, rep.kv_bytes_per_element)))
        self.fixed = rep.params(0.0)
        self.cache = {}
        f = roofline.numeric
        self.t_compute, self.t_mem = f["t_compute"], f["t_mem"]

    def params(self, context: float) -> tuple:
        if not self.windowed:
            return self.fixed
        key = round(context)
        if key not in self.cache:
            self.cache[key] = self.rep.params(float(key))
        return self.cache[key]

    def floor(self) -> float:
        """The fastest pass: one token at no context."""
        return float(roofline.numeric["t_step"](1, 0, *self.params(0)))

    def time(self, decoding: int, decode_kv: float, new_prompts: list) -> tuple[float, float]:
        """(pass length, its compute time) for ``decoding`` sequences reading ``decode_kv`` tokens
        of cache between them, plus the prompts prefilled in the same pass."""
        prompt_tokens = sum(new_prompts)
        tokens = decoding + prompt_tokens
        kv = decode_kv + prompt_tokens
        p = self.params(kv / tokens)
        compute = self.t_compute(decoding, decode_kv / decoding, *p) if decoding else 0.0
        for prompt in new_prompts:
            compute += self.t_compute(prompt, (prompt + 1) / 2, *p)
        memory = self.t_mem(tokens, kv / tokens, *p)
        # The roofline's overlap assumption, t_step = max(t_compute, t_mem), over a mixed pass.
        return (compute if compute > memory else memory), compute


def _serve(rep, times, prompts, outputs, reserved, budget, seats) -> Run:
    n = len(times)
    departures, boarded, first_token, finished = ([0.0] * n for _ in range(4))
    starts, lengths, batches, prefills, computes = [], [], [], [], []
    passes = _Passes(rep)
    # Python lists and floats: the loop runs once per pass and NumPy scalars would triple its cost.
    arrival, prompt, output, need = times.tolist(), prompts.tolist(), outputs.tolist(), reserved.tolist()
    board_pass = [0] * n
    queue = deque()
    finishing = {}        # pass index -> requests whose last token that pass produces
    offset = 0            # sum over decoding sequences of (prompt - pass they boarded)
    decoding, free, arrived, done, t, m = 0, float(budget), 0, 0, 0.0, 0
    while done < n:
        if decoding == 0 and not queue:
            t = max(t, arrival[arrived])  # idle: the next arrival starts a pass at once
        while arrived < n and arrival[arrived] <= t:
            departures[arrived] = t
            queue.append(arrived)
            arrived += 1
        new = []
        while queue and need[queue[0]] <= free and (seats is None or decoding + len(new) < seats):
            i = queue.popleft()
            free -= need[i]
            new.append(i)
        # A sequence that boarded at pass k with prompt p attends to p + (m - k) tokens at pass m.
        length, compute = passes.time(decoding, offset + decoding * m, [prompt[i] for i in new])
        starts.append(t)
        lengths.append(length)
        batches.append(decoding + len(new))
        prefills.append(len(new))
        computes.append(compute)
        for i in new:
            boarded[i], first_token[i], board_pass[i] = t, t + length, m
        t += length
        for i in new:
            if output[i] == 1:
                finished[i] = t
                free += need[i]
                done += 1
            else:
                offset += prompt[i] - m
                decoding += 1
                finishing.setdefault(m + output[i] - 1, []).append(i)
        for i in finishing.pop(m, ()):
            finished[i] = t
            offset -= prompt[i] - board_pass[i]
            decoding -= 1
            free += need[i]
            done += 1
        m += 1
    per_request = map(np.array, (departures, boarded, first_token, finished))
    per_pass = map(np.array, (starts, lengths, batches, prefills, computes))
    return Run(rep, times, prompts, outputs, reserved, float(budget), *per_request, *per_pass, passes.floor())


def sweep(vary: str, values, **kwargs) -> list[Summary]:
    """``simulate(**kwargs)`` once per value of the argument ``vary``, summarised over each run's
    steady window (``Run.steady``).

    With the default ``seed`` every run sees the same arrival pattern (stretched in time when
    ``vary`` is ``"rate"``), so differences between runs come from the varied argument."""
    if vary in kwargs:
        raise ChalkError(f"vary: {vary!r} is also given as a fixed argument")
    return [simulate(**kwargs, **{vary: value}).steady() for value in values]
