"""Chapter 3: pipeline parallelism across racks.

Three pieces, each a SymPy expression first and a NumPy function second:

* the bubble of a training pipeline (GPipe, 1F1B, interleaved 1F1B), built from one step's
  makespan, and ``simulate``, a discrete-event run of each schedule that measures the idle time
  from its events instead of computing it;
* the rack-boundary test: the scale-up time a stage's MoE layers spend on all-to-all traffic
  against the scale-out time of its one boundary crossing, with the per-direction bandwidth
  ratio of the system a parameter;
* what each kind of parallelism sends per training step for a catalog model, and so which
  network it needs.

Times are for one stage, which owns a contiguous block of layers: ``t_F`` and ``t_B`` are the
forward and backward time of one micro-batch on it (with ``v`` chunks, each chunk takes 1/v).
Zero-bubble schedules (Qi et al. 2023) split the backward into its input- and weight-gradient
halves and move the latter into the bubble; they are described in the chapter, not simulated.
Sources: GPipe (Huang et al. 2019), 1F1B and interleaving (Narayanan et al. 2021), interleaved
memory (Korthikanti et al. 2022), tensor-parallel all-reduces (Shoeybi et al. 2019), ring
attention (Liu et al. 2023).
"""
import heapq
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import sympy as sp

from .catalog import models as _models
from .catalog import systems as _systems
from .catalog.quoted import LECTURE
from .errors import ChalkError, in_range, lookup, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import (E, F, L_stage, N_act, N_tot, P, W_out, W_up, b_act, b_g, b_kv, d_model, k, m,
                       n_CP, n_DP, n_TP, n_layers, n_tok, rho, t_B, t_F, v)

# Simplified, solved and lambdified forms are built on first use (``chalk.lazy``), so that importing
# the module does not pay for the ones a caller never reads.
_derived = Lazy(__name__)

# --- the bubble -------------------------------------------------------------------------------
t_ideal = m * (t_F + t_B)
"""One stage's own work in a step: m micro-batches, each forward and backward."""
t_bubble = (P - 1) * (t_F + t_B) / v
"""Idle time of each stage: the first micro-batch's forward reaches the last stage only after
P-1 other stages (one chunk, 1/v of a stage, each), and the last backward drains back the same
way. GPipe and 1F1B are the case v = 1."""
t_step = t_ideal + t_bubble
"""Makespan of one training step when every stage takes the same time."""

t_hop = sp.Symbol(r"t_\text{hop}", positive=True)
"""Local to this chapter: one stage-boundary crossing's latency (scale-out hop plus launch)."""
t_bubble_hops = t_bubble + 2 * (P - 1) * v * t_hop
"""The bubble when each crossing costs t_hop: the first forward crosses about (P-1) v boundaries on
its way down (v (P-1) chunk-to-chunk hops, one per chunk of each of the other stages) and the last
backward the same on its way back. Exact for GPipe; a lower bound for 1F1B and interleaving,
whose steady phase also stalls when a backward's round trip outlasts the warm-up's forwards
(``simulate(..., t_hop=...)`` measures that)."""



@_derived
def _BUBBLE_FRACTION():
    """Idle time as a fraction of the whole step: (P-1)/(v m + P - 1)."""
    return sp.simplify(t_bubble / t_step)


@_derived
def _BUBBLE_OVERHEAD():
    """Idle time over ideal compute time: (P-1)/(v m)."""
    return sp.simplify(t_bubble / t_ideal)


ACTIVATIONS_IN_FLIGHT = {
    # GPipe runs every forward before any backward: the first stage holds all m.
    "gpipe": m,
    # 1F1B starts a new forward only after a backward frees a slot: at most P on the first stage.
    "1f1b": sp.Min(m, P),
    # Megatron's interleaved warm-up is 2(P-1) + (v-1)P chunk forwards on the first stage, plus
    # the first steady forward; a chunk holds 1/v of a micro-batch's activations on that stage.
    "interleaved": sp.Min(m, P + (P - 1) / v),
}
"""Peak activations one stage holds, in micro-batches (the first stage holds the most)."""

SCHEDULES = {
    "gpipe": "GPipe: every forward, then every backward (Huang et al. 2019)",
    "1f1b": "1F1B: warm-up forwards, then one forward one backward, then cool-down (Narayanan et al. 2021)",
    "interleaved": "interleaved 1F1B: v model chunks per device (Narayanan et al. 2021)",
    "inference": "inference: forwards only, a stream of independent batches (prefill)",
    "decode": "decode: forwards only; each micro-batch's next step re-enters stage 1 after its last",
}
_TRAINING = ("gpipe", "1f1b", "interleaved")
_FORWARD_ONLY = ("inference", "decode")

BUBBLE_FRACTION_HOPS = t_bubble_hops / (t_ideal + t_bubble_hops)
"""Idle fraction with hops, in units where t_F = 1 (hop and t_B as multiples of t_F)."""



# --- decode: the loop back --------------------------------------------------------------------
decode_cycle = P * (t_F + t_hop)
"""Time for one micro-batch to go round once in decode: every stage, every hop including the
loop back from the last stage to the first (which also samples the token)."""
DECODE_IDLE = 1 - m * t_F / sp.Max(m * t_F, decode_cycle)
"""Steady-state idle fraction of a decode pipeline with m micro-batches in flight: each stage
works m t_F per cycle, and a cycle lasts as long as the slower of that and one round trip."""


@_derived
def _DECODE_MIN_MICROBATCHES():
    """Micro-batches in flight that keep every decode stage busy: P (1 + t_hop / t_F)."""
    return sp.solve(sp.Eq(m * t_F, decode_cycle), m)[0]


def decode_idle_fraction(stages, microbatches, hop: float = 0.0):
    """Steady-state idle fraction of decode with ``hop`` = t_hop / t_F (closed form)."""
    P_, m_ = _whole("stages", stages), _whole("microbatches", microbatches)
    non_negative("hop", hop)
    return _scalar(_numeric().decode_idle(P_, m_, hop))


def decode_microbatches_needed(stages, hop: float = 0.0) -> int:
    """Fewest micro-batches in flight that keep every decode stage busy: ceil(P (1 + hop))."""
    P_ = positive_int("stages", stages)
    non_negative("hop", hop)
    exact = float(_numeric().decode_min_microbatches(P=P_, t_hop=hop))
    return math.ceil(exact - 1e-9)


def _schedule(schedule: str, chunks, kinds=_TRAINING) -> str:
    name = lookup("schedule", schedule, {s: s for s in kinds}, param="schedule")
    if name != "interleaved" and np.any(np.asarray(chunks) != 1):
        raise ChalkError(f"chunks: only the 'interleaved' schedule splits a stage into chunks; "
                         f"{name!r} needs chunks=1, got {chunks!r}")
    return name


def _whole(name: str, value):
    """A positive whole number or an array of them (for sweeps)."""
    if np.ndim(value) == 0:
        return positive_int(name, value)
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or np.any(arr < 1):
        raise ChalkError(f"{name} must be whole numbers >= 1, got {value!r}")
    return arr


def _pipeline_args(stages, microbatches, schedule, chunks):
    stages, microbatches = _whole("stages", stages), _whole("microbatches", microbatches)
    chunks = _whole("chunks", chunks)
    name = _schedule(schedule, chunks)
    if name == "interleaved" and np.any(np.asarray(microbatches) % np.asarray(stages)):
        raise ChalkError(f"microbatches: the interleaved schedule needs a multiple of stages "
                         f"({stages!r}), got {microbatches!r}")
    return stages, microbatches, chunks


def _scalar(x):
    return float(x) if np.ndim(x) == 0 else x


def bubble_fraction(stages, microbatches, schedule: str = "gpipe", chunks=1, hop: float = 0.0,
                    backward_ratio: float = 2.0):
    """Idle time as a fraction of the step: (P-1)/(m+P-1); (P-1)/(v m+P-1) interleaved.

    Exact when every stage takes the same time and hops are free; arrays broadcast for sweeps.
    ``hop`` > 0 (t_hop / t_F, with t_B = ``backward_ratio`` t_F) adds 2 (P-1) v t_hop to the
    bubble: exact for GPipe, a lower bound otherwise (see ``t_bubble_hops``)."""
    P_, m_, v_ = _pipeline_args(stages, microbatches, schedule, chunks)
    non_negative("hop", hop)
    positive("backward_ratio", backward_ratio)
    if np.all(np.asarray(hop) == 0):
        return _scalar(_numeric().bubble_fraction(P_, m_, v_))
    return _scalar(_numeric().bubble_fraction_hops(P_, m_, v_, hop, backward_ratio))


def bubble_overhead(stages, microbatches, schedule: str = "gpipe", chunks=1):
    """Bubble time over ideal compute time: (P-1)/m; (P-1)/(v m) interleaved."""
    P_, m_, v_ = _pipeline_args(stages, microbatches, schedule, chunks)
    return _scalar(_numeric().bubble_overhead(P_, m_, v_))


def activations_in_flight(stages, microbatches, schedule: str = "1f1b", chunks=1) -> float:
    """Peak micro-batches of activations one stage holds under ``schedule`` (closed form)."""
    P_, m_, v_ = _pipeline_args(stages, microbatches, schedule, chunks)
    name = _schedule(schedule, chunks)
    return float(ACTIVATIONS_IN_FLIGHT[name].subs({P: P_, m: m_, v: v_}))


# --- the schedule simulator -------------------------------------------------------------------
class Event(NamedTuple):
    """One operation as it ran: which stage, micro-batch, chunk and pass, and when.

    In decode, ``microbatch`` is t m + j for step (token) t of micro-batch j."""
    stage: int
    microbatch: int
    chunk: int
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class Simulation:
    """The events of one simulated step, and what is measured from them."""
    stages: int
    microbatches: int
    schedule: str
    chunks: int
    events: tuple[Event, ...]

    @property
    def makespan(self) -> float:
        return max(e.end for e in self.events) - min(e.start for e in self.events)

    @property
    def busy_time(self) -> float:
        """Work done, summed over stages."""
        return sum(e.end - e.start for e in self.events)

    @property
    def idle_fraction(self) -> float:
        """Idle stage-time over all stage-time from the first start to the last end."""
        return 1 - self.busy_time / (self.stages * self.makespan)

    @property
    def bubble_time(self) -> float:
        """Idle time of the average stage: makespan minus its mean busy time."""
        return self.makespan - self.busy_time / self.stages

    @property
    def steady_state_idle_fraction(self) -> float:
        """Idle fraction inside the window where every stage has started and none has finished.

        The fill and drain are left out: for a stream of inference batches this is 0."""
        firsts = [min(e.start for e in self.events if e.stage == s) for s in range(self.stages)]
        lasts = [max(e.end for e in self.events if e.stage == s) for s in range(self.stages)]
        lo, hi = max(firsts), min(lasts)
        if hi <= lo:
            raise ChalkError("microbatches: too few for a steady state (every stage must be busy "
                             "at once); raise microbatches")
        busy = sum(max(0.0, min(e.end, hi) - max(e.start, lo)) for e in self.events)
        return 1 - busy / (self.stages * (hi - lo))

    def held(self, stage: int) -> list[tuple[float, float]]:
        """(time, micro-batches of activations held) after each change on ``stage``.

        A micro-batch's activations are held from the end of its forward on the stage until the
        end of its backward there; one chunk counts 1/chunks."""
        if self.schedule in _FORWARD_ONLY:
            return [(0.0, 0.0)]
        changes = sorted((e.end, 1 if e.kind == "forward" else -1)
                         for e in self.events if e.stage == stage)
        level, out = 0, []
        for time, delta in changes:
            level += delta
            out.append((time, level / self.chunks))
        return out

    @property
    def peak_activations(self) -> float:
        """The most micro-batches whose activations any one stage holds at once."""
        return max(level for s in range(self.stages) for _, level in self.held(s))


def _orders(P_: int, m_: int, v_: int, schedule: str, steps: int = 1) -> list[list[tuple[str, int, int]]]:
    """Each stage's operations, in the order the schedule runs them: (kind, micro-batch, chunk)."""
    orders = []
    for s in range(P_):
        if schedule in _FORWARD_ONLY:
            # decode numbers its operations step by step: step t of micro-batch j is t m + j
            orders.append([("forward", j, 0) for j in range(m_ * steps)])
        elif schedule == "gpipe":
            orders.append([("forward", j, 0) for j in range(m_)] + [("backward", j, 0) for j in range(m_)])
        elif schedule == "1f1b":
            warm = min(P_ - s - 1, m_)
            order = [("forward", j, 0) for j in range(warm)]
            for i in range(m_ - warm):
                order += [("forward", warm + i, 0), ("backward", i, 0)]
            orders.append(order + [("backward", j, 0) for j in range(m_ - warm, m_)])
        else:
            orders.append(_interleaved_order(P_, m_, v_, s))
    return orders


def _interleaved_order(P_: int, m_: int, v_: int, s: int) -> list[tuple[str, int, int]]:
    """Megatron-LM's interleaved 1F1B on stage ``s`` (Narayanan et al. 2021, section 2.2.2).

    Micro-batches go in groups of P: chunk 0 of the group, then chunk 1, ...; backwards visit
    the chunks in reverse. The warm-up is deeper than plain 1F1B so that the first backward's
    input has arrived when the steady phase needs it."""
    total = m_ * v_

    def which(i: int, backward: bool) -> tuple[int, int]:
        group, within = divmod(i, P_ * v_)
        chunk = within // P_
        return group * P_ + within % P_, (v_ - 1 - chunk) if backward else chunk

    warm = min((P_ - s - 1) * 2 + (v_ - 1) * P_, total)
    order = [("forward", *which(i, False)) for i in range(warm)]
    for i in range(total - warm):
        order += [("forward", *which(warm + i, False)), ("backward", *which(i, True))]
    return order + [("backward", *which(i, True)) for i in range(total - warm, total)]


def _needs(op: tuple[str, int, int, int], P_: int, v_: int, schedule: str, m_: int = 1):
    """The operations whose output ``op`` = (kind, micro-batch, chunk, stage) consumes.

    Chunk c on stage s is virtual stage c P + s: a forward needs the virtual stage before it, a
    backward the one after it, and the last virtual stage's backward its own forward. In decode,
    operation t m + j on the first stage needs the last stage's t-1 of the same micro-batch: the
    next token cannot be fed before the previous one has been sampled."""
    kind, j, c, s = op
    if schedule == "decode" and s == 0:
        return [] if j < m_ else [("forward", j - m_, 0, P_ - 1)]
    q, last = c * P_ + s, v_ * P_ - 1
    if kind == "forward":
        return [] if q == 0 else [("forward", j, (q - 1) // P_, (q - 1) % P_)]
    if q == last:
        return [("forward", j, c, s)]
    return [("backward", j, (q + 1) // P_, (q + 1) % P_)]


def _per_stage(name: str, value, P_: int) -> np.ndarray:
    positive(name, value)
    arr = np.broadcast_to(np.asarray(value, dtype=float), (P_,)) if np.ndim(value) == 0 else np.asarray(value, dtype=float)
    if arr.shape != (P_,):
        raise ChalkError(f"{name} must be one number or one per stage ({P_}), got {len(arr)} values")
    return arr


MAX_OPERATIONS = 200_000
"""Largest simulation accepted (stages x micro-batches x chunks x 2): a few seconds of Python."""


def simulate(stages: int, microbatches: int, schedule: str = "1f1b", chunks: int = 1,
             t_forward=1.0, t_backward=2.0, t_hop: float = 0.0, steps: int = 1) -> Simulation:
    """Run one step of ``schedule`` as a discrete-event simulation and record every operation.

    Each stage runs its operations one at a time in the schedule's order; an operation starts
    when its stage is free and its input has arrived (``t_hop`` after the stage that made it
    finished, when that is another stage). ``t_forward`` and ``t_backward`` are one
    micro-batch's times on a stage, one number or one per stage; a chunk takes 1/chunks of them.
    ``"inference"`` runs forwards only, a stream of ``microbatches`` independent batches;
    ``"decode"`` runs ``steps`` tokens of each of ``microbatches`` sequences, and a sequence's
    next token enters the first stage only ``t_hop`` after its last one left the last stage.
    """
    P_, m_ = positive_int("stages", stages), positive_int("microbatches", microbatches)
    v_ = positive_int("chunks", chunks)
    name = _schedule(schedule, v_, kinds=tuple(SCHEDULES))
    n_steps = positive_int("steps", steps)
    if name != "decode" and n_steps != 1:
        raise ChalkError(f"steps: only the 'decode' schedule runs several steps; {name!r} needs "
                         f"steps=1, got {steps!r}")
    if name == "interleaved" and m_ % P_:
        raise ChalkError(f"microbatches: the interleaved schedule needs a multiple of stages "
                         f"({P_}), got {m_}")
    if 2 * P_ * m_ * v_ * n_steps > MAX_OPERATIONS:
        raise ChalkError(f"stages x microbatches x chunks x steps must be at most "
                         f"{MAX_OPERATIONS // 2:,}, got {P_ * m_ * v_ * n_steps:,}")
    duration = {"forward": _per_stage("t_forward", t_forward, P_) / v_,
                "backward": _per_stage("t_backward", t_backward, P_) / v_}
    non_negative("t_hop", t_hop)
    hop = float(t_hop)

    orders = _orders(P_, m_, v_, name, n_steps)
    position = [0] * P_
    busy = [False] * P_
    finished: dict[tuple, float] = {}
    events: list[Event] = []
    queue: list[tuple[float, int, str, int, tuple]] = []
    counter = 0

    def push(time, what, stage, op=()):
        nonlocal counter
        heapq.heappush(queue, (time, counter, what, stage, op))
        counter += 1

    def try_start(s: int, now: float) -> None:
        if busy[s] or position[s] == len(orders[s]):
            return
        kind, j, c = orders[s][position[s]]
        op = (kind, j, c, s)
        needs = _needs(op, P_, v_, name, m_)
        if any(n not in finished for n in needs):
            return
        ready = max([now] + [finished[n] + (hop if n[3] != s else 0.0) for n in needs])
        if ready > now:
            push(ready, "wake", s)
            return
        busy[s] = True
        position[s] += 1
        push(now + duration[kind][s], "end", s, (op, now))

    for s in range(P_):
        try_start(s, 0.0)
    while queue:
        now, _, what, s, payload = heapq.heappop(queue)
        if what == "end":
            op, start = payload
            kind, j, c, _ = op
            busy[s] = False
            finished[op] = now
            events.append(Event(s, j, c, kind, start, now))
            for other in range(P_):
                try_start(other, now)
        else:
            try_start(s, now)
    if any(position[s] < len(orders[s]) for s in range(P_)):
        raise RuntimeError(f"{name} deadlocked: its operation order contradicts its dependencies")
    events.sort(key=lambda e: (e.start, e.stage))
    return Simulation(P_, m_, name, v_, tuple(events))


# --- the rack boundary ------------------------------------------------------------------------
b_disp = sp.Symbol(r"b_\text{disp}", positive=True)
"""Local to this test: bytes per element of the expert dispatch (DeepEP sends FP8, 1 byte)."""
b_comb = sp.Symbol(r"b_\text{comb}", positive=True)
"""Local to this test: bytes per element of the expert combine (DeepEP returns BF16, 2 bytes)."""
b_bnd = sp.Symbol(r"b_\text{bnd}", positive=True)
"""Local to this test: bytes per element of the activations a stage boundary sends (BF16, 2)."""
BF16 = 2.0
"""The default of all three formats: one format everywhere, in which the bytes cancel."""

copies_per_crossing = 2 * k * L_stage * (E - 1) / E
"""Scale-up transfers of one token per stage: each MoE layer dispatches it to k experts and
combines k results back (2 k), on each of the stage's L_stage MoE layers; with uniform routing
over E chips, the 1/E of copies whose expert sits on the token's own chip never leave it."""
t_scale_up = k * L_stage * (E - 1) / E * d_model * (b_disp + b_comb) / W_up
"""Scale-up time per token in one stage: the k dispatched copies and the k combined results of
each MoE layer (each direction of the links carries them once), each in its own format."""
t_scale_out = d_model * b_bnd / W_out
"""Scale-out time per token: it leaves the rack once, at the stage boundary."""



@_derived
def _RACK_RATIO():
    """Scale-up over scale-out time per stage, k L_stage (E-1)(b_disp + b_comb)/(E rho b_bnd): at
    least 1 the crossing is no slower than the all-to-all (``crossing_margin`` weighs it against
    the compute). d_model and the widths cancel; the formats cancel only when all three are equal."""
    return sp.factor(sp.simplify((t_scale_up / t_scale_out).subs(W_up, rho * W_out)))


@_derived
def _SAME_FORMAT_RATIO():
    """The ratio when dispatch, combine and boundary carry one format: 2 k L_stage (E-1)/(E rho)."""
    return sp.simplify(_RACK_RATIO().subs({b_disp: b_bnd, b_comb: b_bnd}))


LECTURE_RHO = LECTURE["scale_up_to_out"]
"""The scale-up to scale-out ratio the lecture writes on the board (notes section 4.2)."""


@_derived
def _LECTURE_RATIO():
    """The lecture's 2 k L_stage / rho (rho = 8 on the board): one format, every copy counted as
    leaving the chip (E -> infinity)."""
    return sp.limit(_SAME_FORMAT_RATIO(), E, sp.oo)


@_derived
def _MIN_LAYERS():
    """MoE layers per stage at which scale-up and scale-out times are equal, in one format:
    rho E / (2 k (E-1)). ``min_layers_per_stage`` weighs the formats too."""
    return sp.factor(sp.solve(sp.Eq(_SAME_FORMAT_RATIO(), 1), L_stage)[0])


@_derived
def _k_fanout():
    """Copies one crossing can fan out to over scale-up in the time scale-out moves it once: rho.
    DeepSeek-V3's node-limited routing reads this as experts per node (section 3.2.2)."""
    x = d_model * b_bnd
    return sp.solve(sp.Eq(k * x / W_up, x / W_out), k)[0].subs(W_up, rho * W_out)


_RACK_ARGS = (k, L_stage, rho, E, b_disp, b_comb, b_bnd)


def _formats(dispatch_bytes, combine_bytes, boundary_bytes) -> tuple:
    positive("dispatch_bytes", dispatch_bytes)
    positive("combine_bytes", combine_bytes)
    positive("boundary_bytes", boundary_bytes)
    return dispatch_bytes, combine_bytes, boundary_bytes


def rack_boundary_ratio(layers_per_stage, experts_per_token, bandwidth_ratio, expert_parallel=None,
                        dispatch_bytes=BF16, combine_bytes=BF16, boundary_bytes=BF16):
    """Scale-up over scale-out time of one stage (>= 1: the rack boundary is not the bottleneck).

    ``bandwidth_ratio`` is per chip, per direction (``systems.get(name).scale_up_to_out``);
    ``expert_parallel`` = None counts every copy as leaving its chip, as the lecture does. The
    three formats are bytes per element of the expert dispatch, the expert combine and the stage
    boundary (DeepEP: 1, 2, 2); with one format they cancel. A bandwidth test: it prices
    throughput (training, prefill), not the latency of a decode step's few bytes."""
    positive("layers_per_stage", layers_per_stage)
    positive("experts_per_token", experts_per_token)
    positive("bandwidth_ratio", bandwidth_ratio)
    fmt = _formats(dispatch_bytes, combine_bytes, boundary_bytes)
    if expert_parallel is None:
        return _scalar(_numeric().lecture_limit(experts_per_token, layers_per_stage, bandwidth_ratio, *fmt))
    _check_ep(expert_parallel)
    return _scalar(_numeric().rack_ratio(experts_per_token, layers_per_stage, bandwidth_ratio, expert_parallel, *fmt))


def _check_ep(expert_parallel):
    positive("expert_parallel", expert_parallel)
    if np.any(np.asarray(expert_parallel) < 2):
        raise ChalkError(f"expert_parallel must be >= 2 (one chip sends nothing), got {expert_parallel!r}")


def min_layers_per_stage(experts_per_token, bandwidth_ratio, expert_parallel=None,
                         dispatch_bytes=BF16, combine_bytes=BF16, boundary_bytes=BF16) -> int:
    """Fewest whole MoE layers per stage that pass the rack test (the crossing no slower than the
    stage's all-to-all); ``crossing_margin`` weighs the crossing against the compute instead."""
    # The ratio is linear in the layers: the fewest is 1 / (the ratio at one layer), rounded up.
    one = rack_boundary_ratio(1, experts_per_token, bandwidth_ratio, expert_parallel,
                              dispatch_bytes, combine_bytes, boundary_bytes)
    # A tolerance so that an exact integer (rho = 16, k = 8: 1.0) is not rounded up by float noise.
    return max(1, math.ceil(1 / one - 1e-9))


def experts_per_crossing(bandwidth_ratio) -> float:
    """Copies of a token scale-up delivers while scale-out moves it once: the ratio itself.

    DeepSeek-V3 (section 3.2.2) reads this as the experts per node a token may use at no extra
    NVLink cost: 160/50 GB/s gives 3.2."""
    positive("bandwidth_ratio", bandwidth_ratio)
    return _scalar(_numeric().experts_per_crossing(bandwidth_ratio))


@dataclass(frozen=True)
class RackBoundary:
    """The rack-boundary test for one model on one system, in the formats it was asked for."""
    model: str
    system: str
    experts_per_token: int
    moe_layers: int
    bandwidth_ratio: float
    ratio_one_layer: float
    min_layers: int
    expert_parallel: int | None = None
    formats: tuple[float, float, float] = (BF16, BF16, BF16)
    """Bytes per element of dispatch, combine and boundary."""

    @property
    def max_stages(self) -> int:
        """Most pipeline stages whose every stage still has enough MoE layers."""
        return max(1, self.moe_layers // self.min_layers)


def rack_boundary(model, system, expert_parallel=None, dispatch_bytes=BF16, combine_bytes=BF16,
                  boundary_bytes=BF16) -> RackBoundary:
    """The test for a catalog MoE model on a catalog system, with the system's real ratio."""
    mdl = model if isinstance(model, _models.Model) else _models.get(model)
    sys_ = system if isinstance(system, _systems.System) else _systems.get(system)
    if not mdl.moe:
        raise ChalkError(f"model: {mdl.display} has no MoE layers, so no all-to-all to weigh the "
                         f"boundary against; pick an MoE model (e.g. deepseek-v3, mixtral-8x7b)")
    kk, ratio = mdl.moe["experts_per_token"], sys_.scale_up_to_out
    fmt = _formats(dispatch_bytes, combine_bytes, boundary_bytes)
    return RackBoundary(mdl.name, sys_.name, kk, mdl.n_moe_layers, ratio,
                        rack_boundary_ratio(1, kk, ratio, expert_parallel, *fmt),
                        min_layers_per_stage(kk, ratio, expert_parallel, *fmt), expert_parallel, fmt)


def switched_systems() -> list[_systems.System]:
    """The catalog systems the rack test prices: whole scale-up domains in which every chip reaches
    every other at its own link rate (NVLink, Infinity Fabric). TPU pods are left out: their ICI is
    a torus, on which an all-to-all gets only a share of each chip's links (``moe.torus_share``),
    and a v5p cube is a slice of a larger domain (``moe.is_slice``)."""
    from . import moe   # imported here: moe loads the roofline, which this module does not need
    return [s for s in _systems.catalog_systems().values()
            if s.chip.vendor != "Google" and not moe.is_slice(s) and moe.torus_shape(s) is None]


DEEPEP_FORMATS = dict(dispatch_bytes=1.0, combine_bytes=2.0, boundary_bytes=2.0)
"""DeepEP's formats (DeepSeek-AI 2025): FP8 dispatch, BF16 combine; the boundary sends BF16."""


def rack_test(model="deepseek-v3", **formats) -> list[RackBoundary]:
    """The rack test on every switched catalog system, experts spread over all its chips
    (E = the system's count): the one computation behind Chapter 3's table, its correction box
    and its cards. ``formats`` as ``rack_boundary``'s (default one format, BF16)."""
    return [rack_boundary(model, s, expert_parallel=s.count, **formats) for s in switched_systems()]


# --- the kinds of parallelism -----------------------------------------------------------------
n_moe = sp.Symbol(r"n_\text{moe}", positive=True)
"""Local to this table: the model's MoE layers (of its n_layers)."""


def _ring(n):
    """Share of a message each chip sends in a ring all-reduce (reduce-scatter + all-gather)."""
    return 2 * (n - 1) / n


@dataclass(frozen=True)
class Kind:
    splits: str
    sends: str
    degree: sp.Symbol
    bytes_per_chip: sp.Expr
    """Bytes one chip sends in one training step (forward and backward) of n_tok tokens."""


PARALLELISM = {
    "data": Kind("the batch (each chip a full replica)", "gradients, one all-reduce per step",
                 n_DP, _ring(n_DP) * N_tot * b_g),
    # Megatron-style: two all-reduces of the activations per layer forward, two backward.
    "tensor": Kind("each matmul's weights", "activations, 4 all-reduces per layer",
                   n_TP, 4 * n_layers * _ring(n_TP) * n_tok * d_model * b_act),
    # Each chip routes its n_tok/E tokens: dispatch + combine forward, the same backward.
    "expert": Kind("the experts of each MoE layer", "tokens, 2 all-to-alls per MoE layer each way",
                   E, 4 * n_moe * k * (E - 1) / E * (n_tok / E) * d_model * b_act),
    # An inner stage sends activations forward and input gradients back, once each.
    "pipeline": Kind("the layers", "activations at each stage boundary, once each way",
                     P, 2 * n_tok * d_model * b_act),
    # Ring attention: each chip's K,V block goes round once forward, twice backward (K,V and
    # dK,dV); b_kv counts every attention layer's keys and values of one token.
    "context": Kind("the sequence", "keys and values round a ring, every attention layer",
                    n_CP, 3 * (n_CP - 1) / n_CP * n_tok * b_kv),
}
"""Per-chip traffic of each kind used alone at its degree, for one step of n_tok tokens."""

u_mfu = sp.Symbol(r"\text{MFU}", positive=True)
"""Local to this table: the share of peak FLOP/s the step's matmuls achieve."""
step_compute = 6 * N_act * n_tok / (u_mfu * F)
"""One step's compute time on the group, the time the traffic can hide behind (F: all chips'
peak), assuming every transfer overlaps compute perfectly: the best case for each kind."""
DEFAULT_MFU = 0.4
"""A realistic large-run MFU (Llama 3 405B printed 38-43%), the table's default."""


@dataclass(frozen=True)
class TrafficRow:
    kind: str
    splits: str
    sends: str
    degree: int
    bytes_per_chip: float
    compute_time: float
    scale_up_time: float
    scale_out_time: float
    hides_above: float | None = None
    """Tokens per chip per step above which the transfer hides behind compute over scale-out, for
    a kind whose bytes do not grow with the tokens (data parallelism's gradients); None for the
    kinds whose bytes grow with the tokens as the compute does, whose verdict no batch changes."""

    @property
    def network(self) -> str:
        """The slower network whose transfer still fits inside the step's compute time, or
        "neither" when even scale-up does not hide it."""
        if self.scale_out_time <= self.compute_time:
            return "scale-out"
        return "scale-up" if self.scale_up_time <= self.compute_time else "neither"


def parallelism_table(model, system, degree: int, tokens: float, grad_bytes: float = 4,
                      act_bytes: float = 2, dtype: str = "bf16",
                      mfu: float = DEFAULT_MFU) -> list[TrafficRow]:
    """Each kind of parallelism used alone at ``degree`` chips on one step of ``tokens`` tokens.

    ``system`` supplies the chip (its peak FLOP/s and per-direction link rates, nominal, not
    achievable). Gradients are reduced in FP32 by default (``grad_bytes`` 4), activations sent in
    BF16; compute runs at ``mfu`` of peak and every transfer is assumed to overlap it perfectly
    (tensor-parallel all-reduces and expert dispatch block unless overlapped; recomputation adds
    two all-reduces per layer). The context row sends the model's cached K/V bytes per token
    (for an MLA model, its compressed latent), not per-head keys and values. Expert parallelism
    applies to MoE models only and is left out for dense ones."""
    mdl = model if isinstance(model, _models.Model) else _models.get(model)
    chip = (system if isinstance(system, _systems.System) else _systems.get(system)).chip
    n_chips = positive_int("degree", degree)
    if n_chips < 2:
        raise ChalkError(f"degree must be >= 2 (one chip communicates nothing), got {degree!r}")
    positive("tokens", tokens)
    positive("grad_bytes", grad_bytes)
    positive("act_bytes", act_bytes)
    positive("mfu", mfu)
    in_range("mfu", mfu, 0, 1)
    values = {N_tot: mdl.total_params, N_act: mdl.active_params, n_layers: mdl.n_layers,
              d_model: mdl.d_model, n_tok: tokens, b_g: grad_bytes, b_act: act_bytes,
              n_moe: mdl.n_moe_layers, k: mdl.moe["experts_per_token"] if mdl.moe else 0,
              b_kv: mdl.kv_bytes_per_token(act_bytes),
              F: n_chips * chip.flops(dtype), u_mfu: mfu}
    compute = float(step_compute.subs(values))
    rows = []
    for name, kind in PARALLELISM.items():
        if name == "expert" and not mdl.moe:
            continue
        sent = float(kind.bytes_per_chip.subs(values | {kind.degree: n_chips}))
        out_time = sent / chip.scale_out_bandwidth
        # compute grows with the tokens; fixed bytes hide once the tokens make the step long enough
        hides = None if kind.bytes_per_chip.has(n_tok) else tokens / n_chips * out_time / compute
        rows.append(TrafficRow(name, kind.splits, kind.sends, n_chips, sent, compute,
                               sent / chip.scale_up_bandwidth, out_time, hides))
    return rows


def published_tokens_per_chip(layout: str) -> float:
    """Tokens each chip processes per step in a published training layout that prints its batch:
    batch sequences x sequence length / chips (DeepSeek-V3: 15,360 x 4,096 / 2,048 = 30,720)."""
    from .catalog import layouts
    lay = layouts.get(layout)
    if "batch_sequences" not in lay:
        raise ChalkError(f"layout: {layout!r} prints no batch; known with one: "
                         f"{', '.join(n for n in layouts.names() if 'batch_sequences' in layouts.get(n))}")
    return lay["batch_sequences"] * lay["seq_len"] / lay["chips"]


# --- the crossing against the stage's compute ---------------------------------------------------
stage_compute = 6 * N_act * L_stage / (n_layers * u_mfu * F)
"""Training compute of one token on a stage of L_stage layers, on one chip (F: that chip's peak):
the average layer's share of the active parameters, 6 FLOPs each (forward and backward)."""
stage_crossing = 2 * d_model * b_act / W_out
"""The same token's boundary crossing in training: its activation forward and its gradient back,
each over the chip's own network card."""


@_derived
def _CROSSING_MARGIN():
    """A training stage's compute over its boundary crossing, per token and chip:
    3 N_act L_stage W_out / (n_layers MFU F d_model b_act). Above 1 the crossing can hide behind the
    compute whatever the rack test says; the rack test asks more, that it hide behind the all-to-all."""
    return sp.simplify(stage_compute / stage_crossing)


def _stage_values(model, system, layers_per_stage, dtype, mfu, act_bytes) -> dict:
    mdl = model if isinstance(model, _models.Model) else _models.get(model)
    chip = (system if isinstance(system, _systems.System) else _systems.get(system)).chip
    positive("layers_per_stage", layers_per_stage)
    in_range("layers_per_stage", layers_per_stage, 0, mdl.n_layers)
    in_range("mfu", mfu, 0, 1)
    positive("mfu", mfu)
    positive("act_bytes", act_bytes)
    return {N_act: mdl.active_params, n_layers: mdl.n_layers, L_stage: layers_per_stage,
            u_mfu: mfu, F: chip.flops(dtype), W_out: chip.scale_out_bandwidth,
            d_model: mdl.d_model, b_act: act_bytes}


def crossing_margin(model, system, layers_per_stage: float = 1, dtype: str = "bf16",
                    mfu: float = DEFAULT_MFU, act_bytes: float = BF16) -> float:
    """How many times longer a training stage of ``layers_per_stage`` layers computes than its
    boundary crossing takes, per token on one chip of ``system`` at ``mfu`` of its ``dtype`` peak.

    The rack test compares the crossing with the stage's all-to-all only; this compares it with
    the compute that a pipelined step overlaps it with (each layer the average share of the
    active parameters and attention's score FLOPs left out: a lower bound)."""
    values = _stage_values(model, system, layers_per_stage, dtype, mfu, act_bytes)
    return float(_CROSSING_MARGIN().subs(values))


@_derived
def _HOP_OVER_FORWARD():
    """The bandwidth part of t_hop / t_F: one activation sent one way over the stage's forward
    compute (a third of the training compute), per token: (3/2) / the crossing margin."""
    return sp.simplify((stage_crossing / 2) / (stage_compute / 3))


def hop_over_forward(model, system, layers_per_stage: float, dtype: str = "bf16",
                     mfu: float = DEFAULT_MFU, act_bytes: float = BF16) -> float:
    """A stage boundary's transfer time over the stage's forward time, t_hop / t_F, when the send
    is not overlapped (as on the fill's critical path) and the hop's fixed latency is left out."""
    values = _stage_values(model, system, layers_per_stage, dtype, mfu, act_bytes)
    return float(_HOP_OVER_FORWARD().subs(values))


def data_parallel_degree(chips: int, tensor: int = 1, context: int = 1, pipeline: int = 1) -> int:
    """Replicas in a layout: chips over the product of the other degrees (which must divide it)."""
    n = positive_int("chips", chips)
    others = positive_int("tensor", tensor) * positive_int("context", context) * positive_int("pipeline", pipeline)
    if n % others:
        raise ChalkError(f"chips: {n:,} is not a multiple of tensor x context x pipeline = {others:,}")
    return n // others


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


# --- the numeric forms ---------------------------------------------------------------------------
def _numeric():
    """``pipeline_numeric``: the formulas this module evaluates, as plain Python (``numeric_forms``)."""
    from . import pipeline_numeric
    return pipeline_numeric


def numeric_forms() -> dict:
    """The expressions this module evaluates as numbers, with t_F = 1 (times in forward passes) and
    each with its arguments in order, by the name of its plain-Python form in ``pipeline_numeric.py``.
    A function, not a table: the bubbles, the decode minimum, the rack ratio and its limit are
    solved on first use, which the generated file spares a kernel."""
    return {
        "bubble_fraction": ((P, m, v), _BUBBLE_FRACTION()),
        "bubble_overhead": ((P, m, v), _BUBBLE_OVERHEAD()),
        "bubble_fraction_hops": ((P, m, v, t_hop, t_B), BUBBLE_FRACTION_HOPS.subs(t_F, 1)),
        "decode_idle": ((P, m, t_hop), DECODE_IDLE.subs(t_F, 1)),
        "decode_min_microbatches": _DECODE_MIN_MICROBATCHES().subs(t_F, 1),
        "rack_ratio": (_RACK_ARGS, _RACK_RATIO()),
        "lecture_limit": ((k, L_stage, rho, b_disp, b_comb, b_bnd), sp.limit(_RACK_RATIO(), E, sp.oo)),
        "experts_per_crossing": ((rho,), _k_fanout()),
    }


def numeric_source() -> str:
    """The text of ``pipeline_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.pipeline", numeric_forms(), symbol_names(globals()),
                            "The formulas ``chalk.pipeline`` evaluates as numbers "
                            "(``chalk.pipeline.numeric_forms``), as plain Python with t_F = 1, so "
                            "that a kernel evaluates them without solving or lambdifying.")


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "pipeline_numeric.py")
