"""Chapter 1: the roofline lower bound on one decode step, and what follows from it.

The constants the lecture drops are explicit here: 2 FLOPs per parameter per token, ``b_w``
bytes per weight and ``b_kv`` bytes of KV cache per token of context.
"""
import math
import warnings
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .catalog import hardware, models, systems
from .catalog.quoted import USD_PER_CHIP_HOUR
from .defaults import HEADROOM, LIMITS  # re-exported: roofline.HEADROOM, roofline.LIMITS
from .errors import (ChalkError, ContextWarning, DoesNotFit, RangeWarning, in_range, non_negative, positive,
                     positive_int, whole)
from .lazy import Lazy
from .notation import B, F, F_att, L, N_act, N_rout, N_tot, W, b_kv, b_w, f_att, k, n_chips, n_exp, p_chip, r, s

# Solved, simplified and lambdified forms are built on first use (``chalk.lazy``): `import chalk`
# imports this module, and every fresh interpreter would otherwise pay for them.
_derived = Lazy(__name__)

# --- formulas ---------------------------------------------------------------------------------
t_matmul = 2 * B * N_act / F
"""Weight matmuls of one step: every sequence's new token touches every active weight, 2 FLOPs each."""
t_attn = B * f_att * L / F_att
"""Attention of one step: each new token scores and sums its L cached tokens, f_att FLOPs each,
at the rate of the number format attention runs in (BF16 in today's serving kernels)."""
t_compute = t_matmul + t_attn

experts_unread = N_rout * (1 - k / n_exp) ** B
"""Routed-expert weights a step leaves unread: with uniform routing each expert is missed by one
token with probability 1 - k/n_exp, independently across the B tokens (``chalk.moe``)."""
t_weights_all = N_tot * b_w / W
"""Reading every weight (all experts) once from HBM: what a step of B >> n_exp/k tokens does."""
t_weights = (N_tot - experts_unread) * b_w / W
"""Reading the weights a step touches: everything dense, and the routed experts some token picked."""
t_kv = B * L * b_kv / W
"""Reading each sequence's KV cache of L tokens."""
t_mem = t_weights + t_kv
t_step = sp.Max(t_compute, t_mem)
"""Lower bound on one decode step, assuming compute and memory traffic overlap perfectly."""

t_step_phases = sp.Max(t_matmul, t_weights) + sp.Max(t_attn, t_kv)
"""The same step when the weight matmuls and attention run one after the other, each bound by its
own resource: what kernels that do not overlap the two phases can reach. ``t_step`` assumes a
perfect overlap (concurrent kernels, or two micro-batches taking turns); B* and L* belong to it."""

cost_per_token = t_step * n_chips * p_chip / (3600 * B)
"""Dollars per generated token: the replica's rental for one step shared by its B tokens."""
tokens_per_second = B / t_step


def _tidy(expr):
    """Write a quotient so its denominator is positive at zero context (solve returns -x/-y)."""
    num, den = sp.fraction(sp.together(expr))
    if den.subs(L, 0).could_extract_minus_sign():
        num, den = -num, -den
    return sp.Mul(num, sp.Pow(sp.expand(den), -1), evaluate=False)


# B* sits far above n_exp/k for every catalog model (thousands against 32 for DeepSeek-V3), where
# (1 - k/n_exp)^B is below 1e-10: the balance is solved with every expert read, and the tests
# check the exact root of t_compute = t_mem agrees.
@_derived
def _balance_batch_expr():
    """B* where compute time equals memory time, with attention FLOPs and KV traffic."""
    return _tidy(sp.solve(sp.Eq(t_compute, t_weights_all + t_kv), B)[0])


@_derived
def _balance_batch_r():
    """The same B* written with the hardware intensity r = F/W."""
    return _tidy(sp.simplify(_balance_batch_expr().subs(F, r * W)))


@_derived
def _balance_batch_no_kv():
    """B* = r b_w s / 2 when KV traffic is ignored."""
    return sp.simplify(_balance_batch_r().subs(L, 0).subs(N_tot, s * N_act))


@_derived
def _balance_context():
    """L* where B* diverges: past it, KV reads alone outlast compute at any batch. Infinite (no
    crossing) when attention's FLOPs per cached token outrun its bytes: f_att/F_att >= b_kv/W."""
    return sp.solve(sp.denom(sp.together(_balance_batch_r())), L)[0]


@_derived
def _balance_context_same_format():
    """L* = 2 N_act / (r b_kv - f_att) when attention runs at the weights' FLOP rate (BF16 serving)."""
    return sp.simplify(_balance_context().subs(F_att, r * W))


@_derived
def _mfu_beyond_balance():
    """Compute time over memory time at infinite batch, once L > L*."""
    return sp.simplify(sp.limit(t_compute / (t_weights_all + t_kv), B, sp.oo).subs(F, r * W))


routed_identity = {N_rout: (N_tot - N_act) / (1 - k / n_exp)}
"""A token skips n_exp - k of every layer's routed experts, and those are exactly what N_tot has and
N_act lacks: N_rout (1 - k/n_exp) = N_tot - N_act."""


@_derived
def _small_batch_penalty():
    """Cost of a token at B = 1 over its cost in the compute-bound regime, KV aside: r b_w / 2 for any
    model, dense or MoE, because at B = 1 an MoE reads only the experts its token picked."""
    return sp.simplify(((t_weights / t_matmul).subs(B, 1).subs(routed_identity)).subs(F, r * W))


lecture_ratio = F * b_w / (2 * W)
"""What the lecture's "≈300" stands for: multiplies per byte of weight, precision-independent."""

ARGS = (B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp)


def _vectorised(f):
    """``f``, a NumPy function of ``ARGS`` (``roofline_numeric``), with the attention and routing
    arguments defaulting to the lecture's model, a dense one without attention FLOPs (attention at F)."""
    def evaluate(B, L, N_act, N_tot, b_w, b_kv, F, W, f_att=0.0, F_att=None, N_routed=0.0, k=1, n_exp=1):
        return f(B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F if F_att is None else F_att, N_routed, k, n_exp)
    return evaluate


@_derived
def _numeric():
    """Vectorised NumPy versions of the formulas: (B, L) then a replica's ``Replica.params(L)``."""
    from . import roofline_numeric
    return {name: _vectorised(getattr(roofline_numeric, name)) for name in _NUMERIC}


_NUMERIC = ("t_matmul", "t_attn", "t_compute", "t_weights", "t_weights_all", "t_kv", "t_mem", "t_step",
            "t_step_phases", "balance_batch")


def numeric_forms() -> dict:
    """The expressions this module evaluates as numbers, by the name of their plain-Python form in
    ``roofline_numeric.py``: ``numeric``'s, each a function of ``ARGS`` in that order, and L* of the
    replica's parameters. A function, not a table: B* and L* are solved on first use, and building
    them is what the generated file spares a kernel."""
    exprs = {"t_matmul": t_matmul, "t_attn": t_attn, "t_compute": t_compute, "t_weights": t_weights,
             "t_weights_all": t_weights_all, "t_kv": t_kv, "t_mem": t_mem, "t_step": t_step,
             "t_step_phases": t_step_phases, "balance_batch": _balance_batch_expr()}
    return {**{name: (ARGS, exprs[name]) for name in _NUMERIC}, "balance_context": _balance_context()}


def numeric_source() -> str:
    """The text of ``roofline_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.roofline", numeric_forms(), symbol_names(globals()),
                            "The formulas ``chalk.roofline`` evaluates as numbers "
                            "(``chalk.roofline.numeric_forms``), as plain Python, so that a kernel "
                            "evaluates them without solving or lambdifying.")


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


# --- the catalog-facing API -------------------------------------------------------------------
ACTIVATION_BYTES = 2
"""Bytes per activation element a tensor-parallel all-reduce sums: BF16, whatever the weights' format."""
ALLREDUCE_ALGORITHMS = ("ring", "in-switch")


@dataclass(frozen=True)
class Hardware:
    """What serves one replica: ``count`` chips of one kind, and how to name it."""
    chip: hardware.Chip
    count: int
    label: str


def resolve(target, chips=None) -> Hardware:
    """A system name (``"gb200-nvl72"``), a chip name (``"H100-SXM"``, times ``chips``, default 1),
    or a System / Chip object."""
    if isinstance(target, str):
        target = systems.system_or_chip(target)
    if isinstance(target, systems.System):
        if chips is not None and chips != target.count:
            raise ChalkError(f"chips: system {target.name} has {target.count} chips; leave chips out "
                             f"or name a chip instead")
        return Hardware(target.chip, target.count, target.name)
    if not isinstance(target, hardware.Chip):
        raise ChalkError(f"target: expected a system or chip name (`python -m chalk list systems`), got {target!r}")
    count = 1 if chips is None else in_range("chips", positive_int("chips", chips), *LIMITS["chips"])
    return Hardware(target, count, f"{count} x {target.name}")


def context_warning(model, context) -> None:
    """Warn, without refusing, when a context is past what the model was published to support:
    ``step_time`` and the calculator do. ``decode_point``, ``max_batch`` and ``check_fit`` stay
    quiet, since the chapters' figures sweep past a model's maximum on purpose."""
    limit = model.max_context
    if limit and float(np.max(context)) > limit:
        warnings.warn(ContextWarning(f"context {float(np.max(context)):,.0f} is beyond {model.display}'s maximum "
                                     f"context of {limit:,} tokens ({model.max_context_source})"), stacklevel=3)


@dataclass(frozen=True)
class Replica:
    """The chips that serve one copy of a model, with names resolved and inputs checked once.

    Public functions take names or catalog objects and build one with ``replica``; everything
    inside works on it, so no layer looks a name up or re-checks an input again."""
    chip: hardware.Chip
    model: models.Model
    dtype: str
    chips: int
    kv_bytes_per_element: float
    attention_dtype: str = "bf16"

    @property
    def weight_bytes(self) -> float:
        """The model's weights as served: ``dtype`` for every weight, or a checkpoint's own mixture."""
        return self.model.weight_bytes(self.dtype)

    def allreduce_time(self, batch, n=1, algorithm: str = "ring"):
        """Seconds a step of ``batch`` sequences x ``n`` new tokens spends in tensor-parallel
        all-reduces: two per layer (after attention's output projection and the FFN's down
        projection), each of the step's activations in BF16, B n d_model x 2 bytes.

        A ring sends 2(N-1)/N of the message each way per chip; an in-switch reduction (where the
        catalog says the switch reduces, ``Chip.in_switch_reduction``) sends it once. Each
        collective also pays the chip's measured fixed cost (``Chip.allreduce_fixed``). Nothing
        overlaps: each layer waits for its sum. A replica larger than one scale-up domain runs its
        ring at the scale-out rate (a ring is as slow as its slowest link), with a RangeWarning.
        0 for one chip."""
        if algorithm not in ALLREDUCE_ALGORITHMS:
            raise ChalkError(f"algorithm must be one of {', '.join(map(repr, ALLREDUCE_ALGORITHMS))}, got {algorithm!r}")
        if self.chips == 1:
            return 0.0 * np.asarray(batch, dtype=float) if np.ndim(batch) else 0.0
        chip, count = self.chip, self.chips
        link = chip.scale_up_bandwidth
        if count > chip.scale_up_domain:
            warnings.warn(RangeWarning(
                f"chips: {count:,} x {chip.name} span more than one scale-up domain of {chip.scale_up_domain:,}; "
                f"the all-reduce ring runs at the scale-out rate ({chip.scale_out_bandwidth / 1e9:,.1f} GB/s per "
                f"direction)"), stacklevel=3)
            link = chip.scale_out_bandwidth
        if algorithm == "in-switch":
            if not chip.in_switch_reduction or count > chip.scale_up_domain:
                raise ChalkError(f"algorithm: the catalog records no in-switch reduction for {count:,} x {chip.name}; "
                                 "use 'ring'")
            share = 1.0
        else:
            share = 2 * (count - 1) / count
        message = np.asarray(batch, dtype=float) * n * self.model.d_model * ACTIVATION_BYTES
        per_collective = chip.allreduce_fixed + share * message / link
        t = 2 * self.model.n_layers * per_collective
        return float(t) if np.ndim(t) == 0 else t

    def usable_hbm(self, headroom: float) -> float:
        return self.chips * self.chip.hbm_capacity * (1 - headroom)

    def kv_bytes(self, batch, context):
        """KV cache of ``batch`` sequences of ``context`` tokens, sliding windows counted exactly."""
        e = self.kv_bytes_per_element
        return (np.asarray(batch) * np.asarray(context) * self.model.kv_bytes_per_token(e)
                + np.asarray(batch) * self.model.kv_bytes_windowed(context, e))

    def layout_allreduce_time(self, batch, n=1):
        """The all-reduces the library's layouts pay: a dense model is tensor parallel over the
        replica's chips (``allreduce_time``, ring); an MoE model is laid out expert-parallel with
        data-parallel attention (Chapter 2), whose all-to-all ``chalk.moe`` counts, so 0 here."""
        if self.model.moe:
            return 0.0 * np.asarray(batch, dtype=float) if np.ndim(batch) else 0.0
        return self.allreduce_time(batch, n)

    @property
    def attention_flops_rate(self) -> float:
        """F_att: the replica's peak FLOP/s in the number format attention runs in."""
        return self.chips * self.chip.flops(self.attention_dtype)

    def params(self, context=0.0, phase: str = "decode") -> tuple:
        """(N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_routed, k, n_exp) for ``numeric``, after
        its (B, L).

        With sliding-window layers the KV cache and the attention work are not linear in context;
        b_kv and f_att are then their effective values per token at ``context`` (total / context),
        so that L b_kv and L f_att are exact for one sequence. Without windows they are the
        per-token constants. A dense model has N_routed = 0 (and k = n_exp = 1, which then
        multiply nothing). f_att is counted as ``phase``'s kernels run attention
        (``attention_flops_per_pair``); b_w is the bytes per weight averaged over the checkpoint."""
        m, e = self.model, self.kv_bytes_per_element
        b_kv_value, f_value = m.kv_bytes_per_token(e), m.attention_flops_per_cached_token(phase)
        windowed = m.kv_bytes_windowed(context, e)
        if np.any(windowed):
            ctx = np.asarray(context, dtype=float)
            per_token = lambda total: np.divide(total, ctx, out=np.zeros_like(ctx), where=ctx > 0)
            b_kv_value = b_kv_value + per_token(windowed)
            f_value = f_value + per_token(m.attention_flops_windowed(context, phase))
        k_value, n_value = (m.moe["experts_per_token"], m.moe["n_routed_experts"]) if m.moe else (1, 1)
        return (m.active_params, m.total_params, self.weight_bytes / m.total_params, b_kv_value,
                self.chips * self.chip.flops(self.dtype), self.chips * self.chip.hbm_bandwidth,
                f_value, self.attention_flops_rate, m.routed_expert_params, k_value, n_value)

    def check_fit(self, batch, context, headroom: float = HEADROOM) -> None:
        """Raise DoesNotFit, with the shortfall, if weights + KV exceed the usable HBM."""
        needed = float(np.max(self.weight_bytes + self.kv_bytes(batch, context)))
        have = self.usable_hbm(headroom)
        if needed > have:
            kept = f" ({self.chip.hbm_words(1 - headroom)} each)"
            raise DoesNotFit(
                f"does not fit: {self.model.display} in {self.dtype} with batch {np.max(batch):,.0f} x "
                f"context {np.max(context):,.0f} needs {needed / 1e9:,.0f} GB, {self.chips} x "
                f"{self.chip.name} have {have / 1e9:,.0f} GB{kept} (short by {(needed - have) / 1e9:,.0f} GB)",
                needed, have)

    def max_batch(self, context, headroom: float = HEADROOM) -> float:
        """Largest batch whose KV cache of ``context`` tokens fits beside the weights (inf at 0)."""
        free = self.usable_hbm(headroom) - self.weight_bytes
        if free < 0:
            self.check_fit(0, 0, headroom)
        if context == 0:
            return math.inf
        return float(math.floor(free / float(self.kv_bytes(1, context))))

    def balance_context(self, clock: float = 1.0, query_tokens: int = 1) -> float:
        """L* in tokens at long context; ``inf`` when attention's FLOPs per cached token take at
        least as long as its bytes (f_att / F_att >= b_kv / W), so that no context is KV-bound.

        ``clock`` scales every peak FLOP rate (a sustained clock below the nominal one);
        ``query_tokens`` is the tokens each sequence gets per step (speculative decoding verifies
        several): their matmuls and attention repeat, the weight and cache reads do not."""
        n_act, _, _, kv, flops, bw, f, f_rate, *_ = self.params()
        flops, f_rate = clock * flops, clock * f_rate
        n_act, f = query_tokens * n_act, query_tokens * f
        if f / f_rate >= kv / bw:
            return math.inf
        from . import roofline_numeric
        return float(roofline_numeric.balance_context(F_att=f_rate, N_act=n_act, W=bw, b_kv=kv, f_att=f, r=flops / bw))


def _model(model) -> models.Model:
    """A model name or catalog object, checked: None or a number is an error naming ``model``."""
    model = models.get(model) if isinstance(model, str) else model
    if not isinstance(model, models.Model):
        raise ChalkError(f"model: expected a model name (`python -m chalk list models`), got {model!r}")
    return model


def replica(chip, model, dtype="bf16", chips=1, kv_bytes_per_element=2, attention_dtype=None) -> Replica:
    """The public boundary: names (or catalog objects) resolved and every input checked, once.

    ``attention_dtype`` is the number format of the attention kernels: by default BF16, as in
    FlashAttention and FlashMLA whatever format the weights are served in, or the weights' own
    format on a chip with no published BF16 rate."""
    chip = hardware.get(chip) if isinstance(chip, str) else chip
    model = _model(model)
    if not isinstance(chip, hardware.Chip):
        raise ChalkError(f"chip: expected a chip name (`python -m chalk list chips`), got {chip!r}")
    chip.flops(dtype)  # the number format must be one this chip has a published rate for
    if attention_dtype is None:
        attention_dtype = "bf16" if "bf16" in chip.dtypes else dtype
    chip.flops(attention_dtype)
    return Replica(chip, model, dtype, in_range("chips", positive_int("chips", chips), *LIMITS["chips"]),
                   float(positive("kv_bytes_per_element", kv_bytes_per_element)), attention_dtype)


def _workload(batch, context, headroom=HEADROOM):
    positive("batch", batch)  # continuous here: B* and the graphs' sweeps are not counts
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)


def attention_flops_per_pair(model, phase: str = "decode") -> float:
    """FLOPs of attention per (new token, cached token) pair, all layers, as ``phase``'s kernels
    run it: "decode" or "prefill". They differ for MLA only: decode absorbs the up-projections
    (2 n_heads (2 d_c + d_R) per layer, about 17 MFLOP for DeepSeek-V3's 61 layers), prefill runs
    the multi-head form (2 n_heads (2 d_head + d_R), about 5.0 MFLOP)."""
    return _model(model).attention_flops_per_cached_token(phase)


def tp_allreduce_time(model, target, batch, chips=None, n=1, algorithm="ring", dtype="bf16"):
    """Seconds one decode step (or a pass of ``n`` tokens per sequence) spends in tensor-parallel
    all-reduces on ``target`` (a system, or a chip times ``chips``): 0 for one chip.
    ``Replica.allreduce_time`` says what it counts."""
    hw = resolve(target, chips)
    rep = replica(hw.chip, model, dtype, hw.count)
    whole("batch", batch)
    n = positive_int("n", n)
    return rep.allreduce_time(batch, n, algorithm)


def memory_needed(model, batch, context, dtype="bf16", kv_bytes_per_element=2):
    """Bytes of HBM for the weights plus the KV cache of ``batch`` sequences of ``context`` tokens.

    The KV term is ``batch * context * b_kv`` plus, for sliding-window layers, the tokens of each
    window (``Model.kv_bytes_windowed``), so windowed models are counted exactly.
    """
    model = _model(model)
    non_negative("batch", batch)
    non_negative("context", context)
    hardware.bytes_per_weight(dtype)
    positive("kv_bytes_per_element", kv_bytes_per_element)
    rep = Replica(None, model, dtype, 1, float(kv_bytes_per_element))
    return rep.weight_bytes + rep.kv_bytes(batch, context)


def check_fit(chip, model, batch, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=HEADROOM) -> None:
    """Raise DoesNotFit, with the shortfall, if weights + KV exceed the chips' usable HBM.

    ``headroom`` is the fraction of HBM kept free for activations and the runtime (``HEADROOM``).
    """
    non_negative("batch", batch)
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)
    replica(chip, model, dtype, chips, kv_bytes_per_element).check_fit(batch, context, headroom)


def max_batch(chip, model, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=HEADROOM) -> float:
    """Largest batch whose KV cache fits beside the weights (inf at context 0)."""
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)
    return rep.max_batch(context, headroom)


def balance_batch(chip, model, dtype="bf16", context=0, kv_bytes_per_element=2) -> float:
    """Sequences per step at which weight-and-KV read time equals compute time.

    Returns ``inf`` when ``context`` is at or beyond the balance context L*: there the KV reads
    alone take longer than the matmuls, so the step is memory-bound at every batch.
    """
    rep = replica(chip, model, dtype, 1, kv_bytes_per_element)
    non_negative("context", context)
    return _balance_batch(rep, context)


def _balance_batch(rep: Replica, context) -> float:
    if context >= rep.balance_context():
        return math.inf
    return float(_numeric()["balance_batch"](0, context, *rep.params(context)))


def balance_context_for(chip, model, dtype="bf16", kv_bytes_per_element=2, *, attention_dtype=None,
                        clock=1.0, query_tokens=1) -> float:
    """L* = 2 N_act / (r b_kv - f_att F/F_att) in tokens; ``inf`` when there is none.

    ``attention_dtype`` is the attention kernels' number format (``replica``: BF16 by default);
    FP8 attention (FlashAttention-3) doubles F_att and so lowers L*; FlashMLA's FP8-cache decode
    dequantises to BF16, so it is BF16 attention over an FP8 cache (``kv_bytes_per_element=1``).
    ``clock`` (sustained over nominal FLOP rate, in (0, 1]) and ``query_tokens`` (tokens per
    sequence per step, >= 1) are ``Replica.balance_context``'s."""
    rep = replica(chip, model, dtype, 1, kv_bytes_per_element, attention_dtype)
    in_range("clock", positive("clock", clock), 0, 1)
    return rep.balance_context(clock, positive_int("query_tokens", query_tokens))


def balance_context_sensitivity(chip, model, dtype="bf16") -> dict[tuple[str, str], float]:
    """L* for each attention number format and KV-cache format the chip can run, keyed
    (attention format, cache format): e.g. ("bf16", "fp8") is BF16 attention kernels over an FP8
    cache. For latent attention r b_kv - f_att F/F_att subtracts two close numbers, so these
    choices move L* by large factors (Chapter 1's deeper page, Chapter 4)."""
    chip_ = hardware.get(chip) if isinstance(chip, str) else chip
    formats = [d for d in ("bf16", "fp8") if d in chip_.dtypes]
    return {(att, kv): balance_context_for(chip_, model, dtype, hardware.bytes_per_weight(kv), attention_dtype=att)
            for att in formats for kv in ("bf16", "fp8")}


def step_time(chip, model, batch, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=HEADROOM, allreduce=True):
    """Lower bound on one decode step, in seconds: max(compute time, memory time), plus, for a
    dense model, the tensor-parallel all-reduces over ``chips`` (``Replica.layout_allreduce_time``,
    ring) unless ``allreduce=False`` (the roofline alone, as the lecture draws it).

    One point that does not fit raises DoesNotFit. Over arrays of batches or contexts the answer
    is a masked array: points that do not fit are NaN and masked, the rest are answered.
    """
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    _workload(batch, context, headroom)
    context_warning(rep.model, context)
    swept = np.ndim(batch) or np.ndim(context)
    if not swept:
        rep.check_fit(batch, context, headroom)
    t = _numeric()["t_step"](batch, context, *rep.params(context))
    if allreduce:
        t = t + rep.layout_allreduce_time(batch)
    if not swept:
        return float(t)
    does_not_fit = rep.weight_bytes + rep.kv_bytes(batch, context) > rep.usable_hbm(headroom)
    t = np.broadcast_to(t, does_not_fit.shape)
    return np.ma.masked_array(np.where(does_not_fit, np.nan, t), mask=does_not_fit)


@dataclass(frozen=True)
class DecodePoint:
    """One operating point of a replica: the two times, the bound and what it costs.

    ``t_compute`` is the weight matmuls plus attention (``t_attn`` of it); ``t_weights`` counts
    only the experts the step's tokens touch. The cost covers decode output tokens at the rental
    price alone: no prefill, idle capacity, networking between replicas, or margin."""
    t_compute: float
    t_weights: float
    t_kv: float
    batch: float
    chips: int
    usd_per_chip_hour: float
    t_attn: float = 0.0
    t_comm: float = 0.0
    """Tensor-parallel all-reduces, in series with the rest (``Replica.allreduce_time``)."""

    @property
    def t_mem(self) -> float:
        return self.t_weights + self.t_kv

    @property
    def t_step(self) -> float:
        return np.maximum(self.t_compute, self.t_mem) + self.t_comm

    @property
    def regime(self) -> str:
        """Which term sets the step; over a sweep (``calculator``'s arrays), one per point, and
        "does not fit" where the point is masked."""
        if np.ndim(self.t_compute) == 0:
            return _regime(self.t_compute, self.t_weights, self.t_kv, self.t_attn, self.t_comm)
        fields = np.broadcast_arrays(*(np.ma.filled(np.ma.asarray(x, dtype=float), np.nan) for x in
                                       (self.t_compute, self.t_weights, self.t_kv, self.t_attn, self.t_comm)))
        return np.array([_regime(*point) if not np.isnan(point[0]) else "does not fit" for point in zip(*(f.ravel() for f in fields))],
                        dtype=object).reshape(fields[0].shape)

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation at best: the step's FLOPs (weight matmuls and attention) over
        what the chips could do at peak in the step's time."""
        return self.t_compute / self.t_step

    @property
    def tokens_per_second(self) -> float:
        return self.batch / self.t_step

    @property
    def usd_per_million_tokens(self) -> float:
        return 1e6 * self.t_step * self.chips * self.usd_per_chip_hour / 3600 / self.batch


def _regime(t_compute, t_weights, t_kv, t_attn, t_comm) -> str:
    t_mem = t_weights + t_kv
    if t_comm > max(t_compute, t_mem):
        return "communication-bound (all-reduce)"
    if t_compute >= t_mem:
        return "compute-bound (attention)" if 2 * t_attn > t_compute else "compute-bound"
    return "memory-bound (weights)" if t_weights >= t_kv else "memory-bound (KV cache)"


def decode_point(chip, model, batch, context, dtype="bf16", chips=1, usd_per_chip_hour=USD_PER_CHIP_HOUR,
                 kv_bytes_per_element=2, headroom=HEADROOM, attention_dtype=None, allreduce=False) -> DecodePoint:
    """Everything the Chapter 1 widget and calculator show for one (batch, context).

    The roofline alone by default, as the chapter's graphs draw it; ``allreduce=True`` adds the
    tensor-parallel all-reduces over ``chips`` in series (``t_comm``), as ``step_time`` does."""
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element, attention_dtype)
    _workload(batch, context, headroom)
    positive("usd_per_chip_hour", usd_per_chip_hour)
    rep.check_fit(batch, context, headroom)
    p = rep.params(context)
    return DecodePoint(
        t_compute=float(_numeric()["t_compute"](batch, context, *p)),
        t_weights=float(_numeric()["t_weights"](batch, context, *p)),
        t_kv=float(_numeric()["t_kv"](batch, context, *p)),
        t_attn=float(_numeric()["t_attn"](batch, context, *p)),
        t_comm=float(rep.layout_allreduce_time(batch)) if allreduce else 0.0,
        batch=float(batch), chips=rep.chips, usd_per_chip_hour=float(usd_per_chip_hour))


def fast_mode(speed_ratio: float, price_ratio: float) -> tuple[float, float]:
    """Where the roofline places a fast tier: (normal batch / B*, fast batch / B*).

    The batch ratio B_0/B_f = speed ratio x price ratio is an identity whenever a token's cost is
    proportional to t_step / B, whatever the bound. The roofline only adds a placement, under an
    assumption: normal service runs compute-bound (B_0 >= B*, step time proportional to batch)
    and fast mode on the weight-read floor (B_f <= B*, step time flat). Past L* normal service is
    not compute-bound and the placement fails; speculative decoding, dedicated capacity or lower
    utilisation explain a fast tier as well.
    """
    positive("speed_ratio", speed_ratio)
    positive("price_ratio", price_ratio)
    if speed_ratio < 1 or price_ratio < 1:
        raise ChalkError("speed_ratio and price_ratio must be >= 1 for a fast tier")
    return float(speed_ratio), 1.0 / float(price_ratio)


def replica_params(chip, model, dtype="bf16", chips=1, kv_bytes_per_element=2, context=0):
    """``Replica.params`` of one replica, checked, in the order ``numeric`` takes after (B, L): for callers (plots, the widget) that evaluate the formulas on arrays of batches."""
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    non_negative("context", context)
    return rep.params(context)


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "roofline_numeric.py")
