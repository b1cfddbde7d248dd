"""Chapter 4: memory capacity, and why pipelining does not shrink the KV cache.

Four pieces, each a SymPy expression first and a NumPy function second:

* memory per chip, c = (N_tot b_w + m B L b_kv) / (E P): the weights and the KV cache of m
  micro-batches of B sequences, spread over E chips per stage and P stages. Keeping P stages busy
  needs m = P (1 + P t_hop / T_read) micro-batches (Chapter 3's condition with a stage taking
  T_read / P), which is m = P when the hops are short against a stage, t_hop << T_read / P; at
  m = P, P cancels from the KV term: pipelining divides the weights, not the cache, and with
  slower hops the cache per chip grows with P. ``layout_bytes`` places every layer and every
  micro-batch's cache on explicit (stage, shard) chips in NumPy; it is used only to check
  ``per_chip``;
* the read time of one decoded token: the weights the micro-batch touches (every expert once the
  batch is large, Chapter 1's t_weights) and its cache, read once across the E chips of a stage
  whatever P, plus one hop per stage and, per MoE layer, the all-to-all among the E chips (for a
  dense model split tensor parallel, two all-reduces per layer instead, ``tp_allreduces``). The
  weight-read floor falls with E, the chips reading; a scale-up domain S >= E keeps that
  all-to-all on the fast links;
* the hop itself: a fixed latency plus the micro-batch's activations over the chips' network links;
* training memory for contrast: bytes per parameter of weights, gradients and optimizer state
  (``catalog.memory_data`` recipes), what each ZeRO stage divides over the data-parallel chips,
  and what it does not (activations, Chapter 7's ``reversible.activation_memory``).

Like the lecture, c assumes the weights shard perfectly over the E chips of a stage (tensor or
expert parallel) and the cache over the sequences; ``chalk.moe.placement`` counts the common
alternative that copies attention on every chip. Tensor-parallel attention copies the cache
instead (MLA's latent on every rank, GQA heads once the ranks outnumber them), so c is a lower
bound for both parts.
"""
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import moe, pipeline, roofline
from .catalog import hardware, memory_data, models, systems
from .errors import ChalkError, in_range, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import (B, C, E, L, N_rout, N_tot, P, W_chip, W_out, b_act, b_g, b_kv, b_opt, b_w, d_model, k, m,
                       n_DP, n_exp, t_F)
from .moe import _system  # a System from a name or itself; anything else is an error naming system
from .pipeline import _whole, t_hop  # _whole: a whole number >= 1, or an array of them (sweeps)

# Solved, simplified, limiting and lambdified forms are built on first use (``chalk.lazy``), so that
# importing the module does not pay for the ones a caller never reads.
_derived = Lazy(__name__)

# --- memory per chip ---------------------------------------------------------------------------
weight_bytes = N_tot * b_w
"""Every weight, all experts, once."""
kv_cache_bytes = m * B * L * b_kv
"""The cache of m micro-batches of B sequences of L tokens: what is in flight at once."""
per_chip_expr = (weight_bytes + kv_cache_bytes) / (E * P)
"""c: a chip's share when the weights shard over E chips and P stages and each stage holds its
own layers' cache for every sequence in flight."""
weights_per_chip = weight_bytes / (E * P)
kv_per_chip = kv_cache_bytes / (E * P)
per_chip_busy = sp.expand(per_chip_expr.subs(m, P))
"""c with the pipeline kept busy, written term by term: only the weights fall as 1/P."""
fit_expr = sp.Eq(per_chip_busy, C)


@_derived
def _kv_per_chip_busy():
    """B L b_kv / E: with m = P micro-batches, P cancels. Each stage keeps 1/P of the layers' cache
    for P times the sequences."""
    return sp.simplify(kv_per_chip.subs(m, P))


@_derived
def _per_chip_limit():
    """What infinitely many stages leave on each chip: the cache, B L b_kv / E."""
    return sp.limit(per_chip_busy, P, sp.oo)


@_derived
def _crossover_stages_expr():
    """P* = N_tot b_w / (B L b_kv): past this many stages the cache outweighs the weights on every chip."""
    return sp.solve(sp.Eq(weights_per_chip, _kv_per_chip_busy()), P)[0]


@_derived
def _max_batch_expr():
    """The most sequences per micro-batch that fit a chip of capacity C with P stages busy."""
    return sp.simplify(sp.solve(fit_expr, B)[0])


@_derived
def _max_batch_limit():
    """C E / (L b_kv): the ceiling no number of busy stages lifts (m = P, micro-batches of whole sequences)."""
    return sp.limit(_max_batch_expr(), P, sp.oo)


@_derived
def _max_batch_any_m_expr():
    """(C E P - N_tot b_w) / (m L b_kv): with fewer micro-batches than stages (m < P, stages idle) the
    batch that fits grows with P; it buys context at 1/P of the throughput per stage."""
    return sp.solve(sp.Eq(per_chip_expr, C), B)[0]


@_derived
def _max_context_expr():
    """(C E P - N_tot b_w) / (m B b_kv): the longest context that fits B sequences per micro-batch
    with m micro-batches in flight."""
    return sp.solve(sp.Eq(per_chip_expr, C), L)[0]


@_derived
def _max_context_limit():
    """C E / (B b_kv): the context no number of busy stages (m = P) lifts, where the cache alone fills
    every chip."""
    return sp.limit(_max_context_expr().subs(m, P), P, sp.oo)


@_derived
def _crossover_capacity_expr():
    """2 N_tot b_w / (C E): P* when the micro-batch is the largest that fits (past the balance
    context L*, where capacity and not B* sets it): the cache overtakes the weights once they take
    half of each chip."""
    return sp.solve(sp.Eq(weights_per_chip, _kv_per_chip_busy().subs(B, _max_batch_expr())), P)[0]


@_derived
def _same_chips_expr():
    """0: P stages of E chips with m = P micro-batches of B need exactly the memory per chip of one
    stage of E P chips holding the same P B sequences; the two differ only in time per token."""
    return sp.simplify(per_chip_busy - per_chip_expr.subs({E: E * P, P: 1, m: 1, B: P * B}, simultaneous=True))


# --- busy micro-batches and time per token ------------------------------------------------------
T_read = sp.Symbol(r"T_\text{read}", positive=True)
"""Local to this chapter: one micro-batch's reads for one token, all stages together."""
n_moe = sp.Symbol(r"n_\text{MoE}", positive=True)
"""Local to this chapter: the model's MoE layers, each with one all-to-all (dispatch and combine)."""
t_a2a = sp.Symbol(r"t_\text{a2a}", positive=True)
"""Local to this chapter: one MoE layer's dispatch and combine among the E chips of a stage."""
weights_read_bytes = (N_tot - roofline.experts_unread) * b_w
"""The weights one step of B sequences reads (Chapter 1's t_weights): every dense weight and the
routed experts some token picks; all N_tot b_w once B is a few times n_exp / k."""
t_read_expr = (weights_read_bytes + B * L * b_kv) / (E * W_chip)
"""T_read: the weights a micro-batch touches and its own cache, each read once by the E chips of
whichever stage holds them; the P stages take turns, so P does not enter."""


@_derived
def _microbatches_busy_expr():
    """m = P (1 + P t_hop / T_read): Chapter 3's m >= P (1 + t_hop / t_F) with a stage's share t_F =
    T_read / P. It is m = P only while t_hop << T_read / P; past that, slow hops need more
    micro-batches in flight, each with its cache."""
    return sp.expand(pipeline.DECODE_MIN_MICROBATCHES.subs(t_F, T_read / P))


@_derived
def _kv_per_chip_hops():
    """B L b_kv (1 + P t_hop / T_read) / E: with hops the cache per chip grows linearly with P."""
    return sp.factor(kv_per_chip.subs(m, _microbatches_busy_expr()))


weight_floor_expr = weights_read_bytes / (E * W_chip)
"""The weights a batch of B touches, read by the E chips that hold them (the chips reading)."""
weight_floor_all_expr = weight_bytes / (E * W_chip)
"""The same at batches that touch every expert: N_tot b_w / (E W_chip)."""
t_link = sp.Symbol(r"t_\text{link}", positive=True)
"""Local to this chapter: a hop's fixed latency (NIC, switches, software), before any payload."""
t_hop_expr = t_link + B * d_model * b_act / (E * W_out)
"""One stage boundary: the fixed latency plus the micro-batch's activations, each of the E chips
sending its own sequences' share over its own network link."""
t_ar = sp.Symbol(r"t_\text{AR}", nonnegative=True)
"""Local to this chapter: all of one token's tensor-parallel all-reduces, two per layer over the E
chips of a stage (``roofline.tp_allreduce_time``): 0 for an expert-parallel MoE layout."""
token_time_expr = sp.expand(P * (T_read / P + t_hop)) + n_moe * t_a2a + t_ar
"""One decoded token of a micro-batch: P stages in turn, each its T_read / P, and P hops (P-1
forward and the loop back to the first stage; one stage needs none), plus one all-to-all per MoE
layer and, for a tensor-parallel (dense) layout, its all-reduces, whose fixed cost per collective
does not fall with E. P cancels from the reads; only the hops grow with it."""

# --- training memory ---------------------------------------------------------------------------
ZERO_STAGES = {
    0: (b_w + b_g + b_opt) * N_tot,
    1: (b_w + b_g) * N_tot + b_opt * N_tot / n_DP,
    2: b_w * N_tot + (b_g + b_opt) * N_tot / n_DP,
    3: (b_w + b_g + b_opt) * N_tot / n_DP,
}
"""Bytes of model state per chip under each ZeRO stage (Rajbhandari et al. 2020): stage 1 shards
the optimizer state over the n_DP data-parallel chips, stage 2 also the gradients, stage 3 (FSDP)
also the weights. Activations, buffers and the layer a stage-3 chip gathers to compute are not
sharded by any stage."""

_C_ARGS = (N_tot, b_w, m, B, L, b_kv, E, P)
_READ_ARGS = (N_tot, N_rout, k, n_exp, b_w, B, L, b_kv, E, W_chip)
_HOP_ARGS = (t_link, B, d_model, b_act, E, W_out)


@_derived
def _numeric():
    """Vectorised NumPy versions of the formulas, each taking its symbols in this order: per-chip ones
    (N_tot, b_w, m, B, L, b_kv, E, P); ``t_read`` (N_tot, N_routed, k, n_exp, b_w, B, L, b_kv, E,
    W_chip); ``token_time`` (T_read, P, t_hop, n_MoE, t_a2a, t_AR); ``microbatches_busy`` (P, t_hop, T_read);
    ``weight_floor`` (N_tot, N_routed, k, n_exp, b_w, B, E, W_chip); ``hop_time`` (t_link, B,
    d_model, b_act, E, W_out); ``crossover_stages`` (N_tot, b_w, B, L, b_kv); ``crossover_capacity``
    (N_tot, b_w, C, E); ``max_batch`` (C, E, P, m, N_tot, b_w, L, b_kv); ``max_context`` (C, E, P, m,
    N_tot, b_w, B, b_kv); each ZeRO stage (N_tot, b_w,
    b_g, b_opt, n_DP)."""
    from . import memory_numeric
    return {name: getattr(memory_numeric, name) for name in numeric_names()}


def numeric_names() -> tuple[str, ...]:
    """The names of ``numeric``'s functions, as ``memory_numeric.py`` writes them."""
    return ("per_chip", "weights_per_chip", "kv_per_chip", "t_read", "token_time", "microbatches_busy",
            "weight_floor", "hop_time", "crossover_stages", "crossover_capacity", "max_batch", "max_context", "zero")


def numeric_forms() -> dict:
    """The expressions ``numeric`` evaluates, each with its arguments in order, by the name of its
    plain-Python form in ``memory_numeric.py``. A function, not a table: the solved crossovers and
    limits are built on first use, which the generated file spares a kernel."""
    return {
        "per_chip": (_C_ARGS, per_chip_expr),
        "weights_per_chip": (_C_ARGS, weights_per_chip),
        "kv_per_chip": (_C_ARGS, kv_per_chip),
        "t_read": (_READ_ARGS, t_read_expr),
        "token_time": ((T_read, P, t_hop, n_moe, t_a2a, t_ar), token_time_expr),
        "microbatches_busy": ((P, t_hop, T_read), _microbatches_busy_expr()),
        "weight_floor": (_READ_ARGS[:6] + (E, W_chip), weight_floor_expr),
        "hop_time": (_HOP_ARGS, t_hop_expr),
        "crossover_stages": ((N_tot, b_w, B, L, b_kv), _crossover_stages_expr()),
        "crossover_capacity": ((N_tot, b_w, C, E), _crossover_capacity_expr()),
        "max_batch": ((C, E, P, m, N_tot, b_w, L, b_kv), _max_batch_any_m_expr()),
        "max_context": ((C, E, P, m, N_tot, b_w, B, b_kv), _max_context_expr()),
        "zero": {stage: ((N_tot, b_w, b_g, b_opt, n_DP), expr) for stage, expr in ZERO_STAGES.items()},
    }


def numeric_source() -> str:
    """The text of ``memory_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.memory", numeric_forms(), symbol_names(globals()),
                            "The formulas ``chalk.memory`` evaluates as numbers "
                            "(``chalk.memory.numeric_forms``), as plain Python, so that a kernel "
                            "evaluates them without solving or lambdifying.")


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


# --- inputs ------------------------------------------------------------------------------------
def _model(model) -> models.Model:
    if not isinstance(model, (str, models.Model)):
        raise ChalkError(f"model must be a catalog model name or a chalk Model (known: {', '.join(models.names())}), "
                         f"got {model!r}")
    return models.get(model) if isinstance(model, str) else model


def _chip(chip) -> hardware.Chip:
    if not isinstance(chip, (str, hardware.Chip)):
        raise ChalkError(f"chip must be a catalog chip name or a chalk Chip (known: {', '.join(hardware.names())}), "
                         f"got {chip!r}")
    return hardware.get(chip) if isinstance(chip, str) else chip


def _scalar(x):
    return float(x) if np.ndim(x) == 0 else x


def _batch(batch, check=non_negative):
    """B checked: sequences per micro-batch, a number (``check``: >= 0 by default) or an array of
    them. A bool is refused: True would silently count as one sequence."""
    if isinstance(batch, (bool, np.bool_)) or np.asarray(batch).dtype == bool:
        raise ChalkError(f"batch must be a number of sequences {'> 0' if check is positive else '>= 0'}, got {batch!r}")
    return check("batch", batch)


def _in_flight(microbatches):
    """m checked: a number >= 1, or an array of them. Not necessarily whole: ``busy_microbatches``
    gives the micro-batches' worth of sequences a pipeline keeps in flight, a real number."""
    try:
        arr = np.asarray(microbatches, dtype=float)
    except (TypeError, ValueError):
        arr = np.array(np.nan)
    if isinstance(microbatches, bool) or not np.all(np.isfinite(arr)) or np.any(arr < 1):
        raise ChalkError(f"microbatches must be a number >= 1, got {microbatches!r}")
    return microbatches if np.ndim(microbatches) == 0 else arr


def _degrees(expert_parallel, stages, microbatches) -> tuple:
    """E, P and m checked: E and P whole numbers >= 1, P also an array of them (a sweep over
    depths); m a number >= 1 or an array of them, P by default."""
    E_ = positive_int("expert_parallel", expert_parallel)
    P_ = _whole("stages", stages)
    m_ = P_ if microbatches is None else _in_flight(microbatches)
    return E_, P_, m_


def _at_most_layers(mdl: models.Model, P_, stages) -> None:
    """A stage needs at least one layer: P <= n_layers."""
    if np.any(np.asarray(P_) > mdl.n_layers):
        raise ChalkError(f"stages must be at most the model's {mdl.n_layers} layers, got {stages!r}")


def kv_per_sequence(model, context, kv_bytes_per_element=2):
    """KV-cache bytes of one sequence of ``context`` tokens, sliding windows counted exactly
    (``roofline.memory_needed``, less the weights)."""
    mdl = _model(model)
    kv = roofline.memory_needed(mdl, 1, context, "bf16", kv_bytes_per_element) \
        - roofline.memory_needed(mdl, 0, 0, "bf16", kv_bytes_per_element)
    return _scalar(kv)


def _effective_b_kv(mdl: models.Model, context, kv_bytes_per_element) -> np.ndarray:
    """b_kv with L b_kv the exact cache of one sequence (differs from b_kv only for windowed layers)."""
    ctx = np.asarray(context, dtype=float)
    per_seq = np.asarray(kv_per_sequence(mdl, ctx, kv_bytes_per_element), dtype=float)
    flat = mdl.kv_bytes_per_token(kv_bytes_per_element)
    return np.where(ctx > 0, np.divide(per_seq, ctx, out=np.full_like(per_seq, flat), where=ctx > 0), flat)


def _args(model, batch, context, dtype, expert_parallel, stages, microbatches, kv_bytes_per_element):
    mdl = _model(model)
    _batch(batch)
    non_negative("context", context)
    positive("kv_bytes_per_element", kv_bytes_per_element)
    E_, P_, m_ = _degrees(expert_parallel, stages, microbatches)
    _at_most_layers(mdl, P_, stages)
    return (mdl.total_params, hardware.bytes_per_weight(dtype), m_, np.asarray(batch, dtype=float),
            np.asarray(context, dtype=float), _effective_b_kv(mdl, context, kv_bytes_per_element), E_, P_)


# --- memory per chip ---------------------------------------------------------------------------
def per_chip(model, batch, context, dtype="bf16", expert_parallel=1, stages=1, microbatches=None,
             kv_bytes_per_element=2):
    """Bytes each chip holds: the weights N_tot b_w plus the KV cache of ``microbatches`` x
    ``batch`` sequences of ``context`` tokens, divided by ``expert_parallel`` x ``stages``.

    ``batch`` is sequences per micro-batch; ``microbatches`` (a number >= 1) defaults to
    ``stages``, the fewest that keep a decode pipeline busy when its hops are short against a stage
    (t_hop << T_read / P; ``busy_microbatches`` counts them for a given hop). Sliding-window layers are counted exactly. The weights and
    the cache are assumed to shard perfectly (``layout_bytes`` shows where they do not). Batch,
    context, stages and micro-batches may be arrays, which broadcast."""
    args = _args(model, batch, context, dtype, expert_parallel, stages, microbatches, kv_bytes_per_element)
    return _scalar(_numeric()["per_chip"](*args))


def per_chip_parts(model, batch, context, dtype="bf16", expert_parallel=1, stages=1, microbatches=None,
                   kv_bytes_per_element=2) -> tuple:
    """(weights, KV cache) of ``per_chip``, in bytes per chip."""
    args = _args(model, batch, context, dtype, expert_parallel, stages, microbatches, kv_bytes_per_element)
    shape = np.broadcast_shapes(*map(np.shape, args))
    return (_scalar(_numeric()["weights_per_chip"](*args) * np.ones(shape)),
            _scalar(_numeric()["kv_per_chip"](*args) * np.ones(shape)))


def crossover_stages(model, batch, context, dtype="bf16", kv_bytes_per_element=2):
    """P* = N_tot b_w / (B L b_kv): with more stages than this (m = P), each chip holds more cache
    than weights; below 1, the cache outweighs the weights even unpipelined (inf at context 0)."""
    mdl = _model(model)
    _batch(batch, positive)
    non_negative("context", context)
    ctx = np.asarray(context, dtype=float)
    with np.errstate(divide="ignore"):  # no cache at context 0: the weights win at any depth
        out = _numeric()["crossover_stages"](mdl.total_params, hardware.bytes_per_weight(dtype), np.asarray(batch, dtype=float),
                                          ctx, _effective_b_kv(mdl, context, kv_bytes_per_element))
    return _scalar(np.where(ctx > 0, out, np.inf))


def max_batch(model, system, context, dtype="bf16", stages=1, kv_bytes_per_element=2, headroom=roofline.HEADROOM,
              microbatches=None):
    """Most sequences per micro-batch that fit when every chip of ``system`` is one of the E chips
    of a stage, with P = ``stages`` stages and ``microbatches`` micro-batches in flight (m = P, the
    busy pipeline with short hops, by default): ``max_batch_any_m_expr`` with C the chip's usable
    HBM. 0 when the weights alone do not fit; inf at context 0."""
    mdl, sys_ = _model(model), _system(system)
    P_ = positive_int("stages", stages)
    m_ = P_ if microbatches is None else _in_flight(microbatches)
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)
    usable = sys_.chip.hbm_capacity * (1 - headroom)
    b = hardware.bytes_per_weight(dtype)
    if mdl.total_params * b / (sys_.count * P_) > usable:
        return 0.0
    if not context:
        return math.inf
    most = _numeric()["max_batch"](usable, sys_.count, P_, m_, mdl.total_params, b, float(context),
                                float(_effective_b_kv(mdl, context, kv_bytes_per_element)))
    return float(math.floor(most + 1e-9))


def max_context(model, system, batch, dtype="bf16", stages=1, kv_bytes_per_element=2, headroom=roofline.HEADROOM,
                microbatches=None) -> float:
    """Longest context, in tokens, at which ``batch`` sequences per micro-batch fit when every chip
    of ``system`` is one of the E chips of a stage, with P = ``stages`` and ``microbatches`` in
    flight (m = P by default): ``max_context_expr`` with C the chip's usable HBM, or, for a model
    with sliding-window layers (whose cache is not linear in context), the root of c = C found by
    bisection. 0 when the weights alone do not fit; ``stages`` to infinity gives C E / (B b_kv)."""
    mdl, sys_ = _model(model), _system(system)
    _batch(batch, positive)
    P_ = positive_int("stages", stages)
    m_ = P_ if microbatches is None else _in_flight(microbatches)
    in_range("headroom", headroom, 0, 0.99)
    usable = sys_.chip.hbm_capacity * (1 - headroom)
    b = hardware.bytes_per_weight(dtype)
    if mdl.total_params * b / (sys_.count * P_) > usable:
        return 0.0
    flat = mdl.kv_bytes_per_token(kv_bytes_per_element)
    closed = float(_numeric()["max_context"](usable, sys_.count, P_, m_, mdl.total_params, b, float(batch), flat))
    if not np.any(mdl.kv_bytes_windowed(np.array([1.0, 1e9]), kv_bytes_per_element)):
        return closed
    low, high = 0.0, max(closed, 1.0)   # windowed layers hold less than L b_kv: the root lies past closed
    while per_chip(mdl, batch, high, dtype, sys_.count, P_, m_, kv_bytes_per_element) <= usable:
        low, high = high, 2 * high
        if high > 1e12:
            return math.inf
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if per_chip(mdl, batch, mid, dtype, sys_.count, P_, m_, kv_bytes_per_element) <= usable \
            else (low, mid)
    return low


@dataclass(frozen=True)
class Crossover:
    """Where the cache overtakes the weights at the batch a stage would run."""
    stages: float
    """P*: more stages than this (m = P) and each chip holds more cache than weights."""
    batch: float
    """Sequences per micro-batch at P*: the balance batch B*(L), or the largest that fits there."""
    capacity_bound: bool
    """True when capacity, not the balance batch, sets the batch (always past L*, where B* is inf)."""


def crossover_at_balance(model, system, context, dtype="bf16", kv_bytes_per_element=2,
                         headroom=roofline.HEADROOM, attention_dtype=None) -> Crossover:
    """P* at the micro-batch a stage of ``system`` would run: the balance batch B*(L) of Chapter 1
    (``roofline.balance_batch`` at this context, inf past L*) when it fits, else the largest that
    fits, B_max(P). The batch grows with P, and so does the cache's share, so P* is the larger of
    N_tot b_w / (B* L b_kv) and 2 N_tot b_w / (C E), where the weights take half of each chip.
    ``attention_dtype`` is the attention kernels' number format (``roofline.replica``: BF16 by
    default); FP8 attention lowers L*, past which B* is inf and capacity sets the batch."""
    mdl, sys_ = _model(model), _system(system)
    positive("context", context)
    in_range("headroom", headroom, 0, 0.99)
    b = hardware.bytes_per_weight(dtype)
    usable = sys_.chip.hbm_capacity * (1 - headroom)
    rep = roofline.replica(sys_.chip, mdl, dtype, 1, kv_bytes_per_element, attention_dtype)
    b_star = roofline._balance_batch(rep, context)  # roofline.balance_batch, in this attention format
    by_balance = crossover_stages(mdl, b_star, context, dtype, kv_bytes_per_element) if math.isfinite(b_star) else 0.0
    by_capacity = float(_numeric()["crossover_capacity"](mdl.total_params, b, usable, sys_.count))
    if by_balance >= by_capacity:
        return Crossover(by_balance, b_star, False)
    b_kv_ = float(_effective_b_kv(mdl, context, kv_bytes_per_element))
    fits = float(_numeric()["max_batch"](usable, sys_.count, by_capacity, by_capacity, mdl.total_params, b,
                                      float(context), b_kv_))
    return Crossover(by_capacity, fits, True)


# --- the independent check ---------------------------------------------------------------------
def _layer_weights(mdl: models.Model, dtype: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(bytes of each layer that split evenly over a stage's chips, bytes of each routed expert of
    each layer (0 for a dense layer), embedding bytes). Everything that is not a routed expert or
    an embedding table is spread evenly over the layers."""
    b = hardware.bytes_per_weight(dtype)
    n = mdl.n_layers
    moe_layers = np.zeros(n, dtype=bool)
    expert = 0.0
    if mdl.moe:
        period, offset = mdl.moe.get("layer_period", 1), mdl.moe.get("layer_offset", 0)
        moe_layers = np.array([i >= mdl.moe.get("n_dense_layers", 0) and i % period == offset for i in range(n)])
        expert = moe.expert_params(mdl) * b
    routed = moe_layers.sum() * (mdl.moe["n_routed_experts"] if mdl.moe else 0) * expert
    shared = (mdl.total_params * b - mdl.embedding_params * b - routed) / n
    return np.full(n, shared), np.where(moe_layers, expert, 0.0), mdl.embedding_params * b


def _layer_kv(mdl: models.Model, context: float, kv_bytes_per_element: float) -> np.ndarray:
    """KV bytes of one sequence in each layer: a global layer holds every token, a windowed one at
    most its window, a state-space layer none; layers that share a cache split it."""
    width = {"gqa": 2 * mdl.n_kv_heads * mdl.d_head, "mha": 2 * mdl.n_kv_heads * mdl.d_head,
             "mqa": 2 * mdl.d_head,
             "mla": (mdl.mla or {}).get("kv_lora_rank", 0) + (mdl.mla or {}).get("rope_head_dim", 0)}[mdl.attention]
    tokens = {"G": context, "L": min(context, mdl.sliding_window or 0), "S": 0.0}
    return np.array([tokens[k] * width * kv_bytes_per_element / mdl.kv_share for k in mdl.layer_kinds()])


def layout_bytes(model, batch, context, dtype="bf16", expert_parallel=1, stages=1, microbatches=None,
                 kv_bytes_per_element=2) -> np.ndarray:
    """Bytes on each chip of an explicit placement, as a (stages, expert_parallel) array.

    Used only as the check of ``per_chip``: it places instead of dividing. Layer i goes to stage
    floor(i P / n_layers); on its stage, routed expert j of the layer goes whole to shard j mod E
    and the rest of the layer splits evenly; the input embedding sits on the first stage and the
    output head on the last (one table on the first stage when tied). Micro-batch k's sequence s
    lives on shard s mod E of every stage, which holds that sequence's cache for its own layers.
    With layers, experts and sequences that divide evenly every chip holds ``per_chip``; otherwise
    the mean over chips does and the largest holds more."""
    mdl = _model(model)
    non_negative("context", context)
    positive("kv_bytes_per_element", kv_bytes_per_element)
    E_, P_ = positive_int("expert_parallel", expert_parallel), positive_int("stages", stages)
    m_ = P_ if microbatches is None else positive_int("microbatches", microbatches)
    _batch(batch)
    batch_ = positive_int("batch", batch) if batch else 0
    _at_most_layers(mdl, P_, stages)
    chips = np.zeros((P_, E_))
    stage_of = (np.arange(mdl.n_layers) * P_) // mdl.n_layers
    even, expert, embeddings = _layer_weights(mdl, dtype)
    n_experts = mdl.moe["n_routed_experts"] if mdl.moe else 0
    for i, stage in enumerate(stage_of):
        chips[stage] += even[i] / E_
        for j in range(n_experts):
            chips[stage, j % E_] += expert[i]
    if mdl.tied_embeddings:
        chips[0] += embeddings / E_
    else:
        chips[0] += embeddings / 2 / E_
        chips[-1] += embeddings / 2 / E_
    layer_kv = _layer_kv(mdl, float(context), float(kv_bytes_per_element))
    stage_kv = np.bincount(stage_of, weights=layer_kv, minlength=P_)
    sequences_per_shard = np.bincount(np.arange(batch_) % E_, minlength=E_) * m_
    chips += stage_kv[:, None] * sequences_per_shard[None, :]
    return chips


# --- time per token ----------------------------------------------------------------------------
def _reading(model, system, dtype, expert_parallel) -> tuple:
    """(model, N_tot, N_routed, k, n_exp, b_w, E, W_chip) of E chips of ``system`` reading
    ``model``; E is every chip of the system unless ``expert_parallel`` says otherwise (E > S
    spans several systems). A dense model routes nothing (N_routed = 0, k = n_exp = 1)."""
    mdl, sys_ = _model(model), _system(system)
    E_ = sys_.count if expert_parallel is None else positive_int("expert_parallel", expert_parallel)
    k_, n_ = (mdl.moe["experts_per_token"], mdl.moe["n_routed_experts"]) if mdl.moe else (1, 1)
    return (mdl, mdl.total_params, mdl.routed_expert_params, k_, n_, hardware.bytes_per_weight(dtype), E_,
            sys_.chip.hbm_bandwidth)


def weight_floor(model, system, dtype="bf16", batch=None, expert_parallel=None):
    """Seconds for the E chips that hold the weights (``expert_parallel``; every chip of ``system``
    by default) to read them once. With ``batch`` None, at batches that touch every expert:
    N_tot b_w / (E W_chip). With a batch of B sequences, only the experts it touches (Chapter 1's
    t_weights): N_act b_w / (E W_chip) at B = 1. No pipelining lowers it; E beyond the scale-up
    domain puts each MoE layer's all-to-all on the network (``token_time``'s ``alltoall``)."""
    mdl, n, routed, k_, n_, b, E_, W_ = _reading(model, system, dtype, expert_parallel)
    B_ = np.inf if batch is None else np.asarray(_batch(batch), dtype=float)
    return _scalar(_numeric()["weight_floor"](n, routed, k_, n_, b, B_, E_, W_))


def read_time(model, system, batch, context, dtype="bf16", kv_bytes_per_element=2, expert_parallel=None):
    """T_read: seconds for one micro-batch of ``batch`` sequences to read, once, the weights it
    touches and its own cache of ``context`` tokens, over E chips (every chip of ``system``
    unless ``expert_parallel`` says otherwise). A pipeline's stages share it out; P does not enter."""
    mdl, n, routed, k_, n_, b, E_, W_ = _reading(model, system, dtype, expert_parallel)
    _batch(batch)
    non_negative("context", context)
    return _scalar(_numeric()["t_read"](n, routed, k_, n_, b, np.asarray(batch, dtype=float), np.asarray(context, dtype=float),
                                     _effective_b_kv(mdl, context, kv_bytes_per_element), E_, W_))


def busy_microbatches(model, system, batch, context, stages, hop=0.0, dtype="bf16", kv_bytes_per_element=2,
                      expert_parallel=None):
    """Micro-batches in flight that keep every stage busy when each hop takes ``hop`` seconds,
    each stage being a ``system``: m = P (1 + P t_hop / T_read) (``microbatches_busy_expr``), P
    itself at ``hop`` 0 (the no-hop limit); one stage has no hop and needs one. A real number: the
    micro-batches' worth of sequences in flight, which sets the cache (whole micro-batches round it
    up; P of them leave each stage idle a fraction 1 - P/m). ``stages``, ``batch`` and
    ``context`` may be arrays, which broadcast."""
    P_ = _whole("stages", stages)
    non_negative("hop", hop)
    T = read_time(model, system, batch, context, dtype, kv_bytes_per_element, expert_parallel)
    return _scalar(_numeric()["microbatches_busy"](P_, np.where(np.asarray(P_) > 1, float(hop), 0.0), T))


def hop_time(model, system, batch, latency, bytes_per_element=2):
    """Seconds for one stage boundary: ``latency`` plus the micro-batch's activations (``batch``
    sequences x d_model x ``bytes_per_element``) sent by the system's chips, each its own share
    over its own scale-out link (per direction)."""
    mdl, sys_ = _model(model), _system(system)
    _batch(batch)
    non_negative("latency", latency)
    positive("bytes_per_element", bytes_per_element)
    return _scalar(_numeric()["hop_time"](latency, np.asarray(batch, dtype=float), mdl.d_model, bytes_per_element,
                                       sys_.count, sys_.chip.scale_out_bandwidth))


def tp_allreduces(model, system, batch, dtype="bf16", expert_parallel=None):
    """Seconds one decoded token of a micro-batch of ``batch`` sequences spends in tensor-parallel
    all-reduces when a dense model is split over the E chips of a stage (every chip of ``system``
    unless ``expert_parallel`` says otherwise): two per layer, whatever P (each stage runs its own
    layers' share), as Chapter 1's ``roofline.tp_allreduce_time`` counts them (ring, the chip's
    measured fixed cost per collective where the catalog has one, else the links alone). 0 for an
    MoE model, laid out expert-parallel with its all-to-all counted apart, and for one chip."""
    mdl, sys_ = _model(model), _system(system)
    E_ = sys_.count if expert_parallel is None else positive_int("expert_parallel", expert_parallel)
    rep = roofline.Replica(sys_.chip, mdl, dtype, E_, 2.0)
    return _scalar(rep.layout_allreduce_time(np.asarray(_batch(batch), dtype=float)))


def token_time(model, system, batch, context, stages=1, hop=0.0, dtype="bf16", kv_bytes_per_element=2,
               alltoall=0.0, expert_parallel=None, allreduce=None):
    """Lower bound on one decoded token's time per micro-batch of ``batch`` sequences when each of
    ``stages`` stages is a whole ``system`` (E = its chips, or ``expert_parallel``): T_read (the
    weights the micro-batch touches and its cache, read once by a stage's chips), plus ``hop``
    seconds per stage (none for one stage), ``alltoall`` seconds per MoE layer (not counted by
    default; Chapter 2's ``moe.layer_times(...).communication`` gives it) and ``allreduce`` seconds
    of tensor-parallel all-reduces per token (by default ``tp_allreduces``: a dense model's, none for
    an MoE). Memory reads only: the matmuls overlap them (Chapter 1)."""
    mdl = _model(model)
    P_ = positive_int("stages", stages)
    non_negative("hop", hop)
    non_negative("alltoall", alltoall)
    T = read_time(mdl, system, batch, context, dtype, kv_bytes_per_element, expert_parallel)
    ar = tp_allreduces(mdl, system, batch, dtype, expert_parallel) if allreduce is None \
        else non_negative("allreduce", allreduce)
    return _scalar(_numeric()["token_time"](T, P_, hop if P_ > 1 else 0.0, mdl.n_moe_layers, alltoall, ar))


# --- training memory ---------------------------------------------------------------------------
def training_state_bytes(model, recipe="zero-mixed-adam", chips=1, zero_stage=0):
    """Bytes of model state (weights, gradients, optimizer state) per chip for ``recipe``
    (``memory_data.RECIPES``) with ``chips`` data-parallel chips under ZeRO stage 0 to 3.
    Activations are not included: see ``reversible.activation_memory``."""
    mdl = _model(model)
    r = memory_data.recipe(recipe)
    n = positive_int("chips", chips)
    if zero_stage not in ZERO_STAGES:
        raise ChalkError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    return float(_numeric()["zero"][zero_stage](mdl.total_params, r.weights, r.gradients, r.optimizer, n))


def fewest_chips_to_train(model, chip, recipe="zero-mixed-adam", headroom=roofline.HEADROOM) -> int:
    """Fewest chips whose usable HBM holds the model state fully sharded (ZeRO stage 3), before any
    activation: the floor under every training layout."""
    mdl = _model(model)
    hw = _chip(chip)
    in_range("headroom", headroom, 0, 0.99)
    state = training_state_bytes(mdl, recipe)
    return math.ceil(state / (hw.hbm_capacity * (1 - headroom)) - 1e-9)


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "memory_numeric.py")
