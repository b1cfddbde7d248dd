"""Chapter 1: the roofline lower bound on one decode step, and what follows from it.

The constants the lecture drops are explicit here: 2 FLOPs per parameter per token, ``b_w``
bytes per weight and ``b_kv`` bytes of KV cache per token of context.
"""
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .catalog import hardware, models
from .catalog.quoted import USD_PER_CHIP_HOUR
from .errors import ChalkError, DoesNotFit, in_range, non_negative, positive, positive_int
from .notation import B, F, L, N_act, N_tot, W, b_kv, b_w, n_chips, p_chip, r, s

# --- formulas ---------------------------------------------------------------------------------
t_compute = 2 * B * N_act / F
"""Matmul time of one step: every sequence's new token touches every active weight, 2 FLOPs each."""
t_weights = N_tot * b_w / W
"""Reading every weight (all experts) once from HBM."""
t_kv = B * L * b_kv / W
"""Reading each sequence's KV cache of L tokens."""
t_mem = t_weights + t_kv
t_step = sp.Max(t_compute, t_mem)
"""Lower bound on one decode step, assuming compute and memory traffic overlap perfectly."""

cost_per_token = t_step * n_chips * p_chip / (3600 * B)
"""Dollars per generated token: the replica's rental for one step shared by its B tokens."""
tokens_per_second = B / t_step



def _tidy(expr):
    """Write a quotient so its denominator is positive at zero context (solve returns -x/-y)."""
    num, den = sp.fraction(sp.together(expr))
    if den.subs(L, 0).could_extract_minus_sign():
        num, den = -num, -den
    return sp.Mul(num, sp.Pow(sp.expand(den), -1), evaluate=False)


balance_batch_expr = _tidy(sp.solve(sp.Eq(t_compute, t_mem), B)[0])
"""B* where compute time equals memory time, with KV traffic."""
balance_batch_r = _tidy(sp.simplify(balance_batch_expr.subs(F, r * W)))
"""The same B* written with the hardware intensity r = F/W."""
balance_batch_no_kv = sp.simplify(balance_batch_r.subs(L, 0).subs(N_tot, s * N_act))
"""B* = r b_w s / 2 when KV traffic is ignored."""
balance_context = sp.solve(sp.denom(sp.together(balance_batch_r)), L)[0]
"""L* where B* diverges: past it, KV reads alone outlast compute at any batch."""
mfu_beyond_balance = sp.limit(t_compute / t_mem, B, sp.oo).subs(F, r * W)
"""Compute time over memory time at infinite batch: L*/L once L > L*."""

lecture_ratio = F * b_w / (2 * W)
"""What the lecture's "≈300" stands for: multiplies per byte of weight, precision-independent."""

ARGS = (B, L, N_act, N_tot, b_w, b_kv, F, W)
_max = [{"Max": np.maximum}, "numpy"]
numeric = {
    name: sp.lambdify(ARGS, expr, modules=_max)
    for name, expr in {"t_compute": t_compute, "t_weights": t_weights, "t_kv": t_kv,
                       "t_mem": t_mem, "t_step": t_step, "balance_batch": balance_batch_expr}.items()
}
"""Vectorised NumPy versions of the formulas, all taking (B, L, N_act, N_tot, b_w, b_kv, F, W)."""


# --- the catalog-facing API -------------------------------------------------------------------
HEADROOM = 0.10
"""Fraction of HBM every fit check keeps free for activations, the runtime and fragmentation.

The one default of the library, the calculator and ``python -m chalk``; pass ``headroom=0`` for
the bare capacity bound (as the scaling book's worked answers use)."""


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

    @property
    def weight_bytes(self) -> float:
        return self.model.total_params * hardware.bytes_per_weight(self.dtype)

    def usable_hbm(self, headroom: float) -> float:
        return self.chips * self.chip.hbm_capacity * (1 - headroom)

    def kv_bytes(self, batch, context):
        """KV cache of ``batch`` sequences of ``context`` tokens, sliding windows counted exactly."""
        e = self.kv_bytes_per_element
        return (np.asarray(batch) * np.asarray(context) * self.model.kv_bytes_per_token(e)
                + np.asarray(batch) * self.model.kv_bytes_windowed(context, e))

    def params(self, context=0.0) -> tuple:
        """(N_act, N_tot, b_w, b_kv, F, W) for ``numeric``, after its (B, L).

        With sliding-window layers the KV cache is not linear in context; b_kv is then the
        effective bytes per token at ``context``, kv_bytes(context) / context, so that L b_kv is
        the exact cache of one sequence. Without windows it is ``kv_bytes_per_token``."""
        e = self.kv_bytes_per_element
        b_kv_value = self.model.kv_bytes_per_token(e)
        windowed = self.model.kv_bytes_windowed(context, e)
        if np.any(windowed):
            ctx = np.asarray(context, dtype=float)
            b_kv_value = b_kv_value + np.divide(windowed, ctx, out=np.zeros_like(ctx), where=ctx > 0)
        return (self.model.active_params, self.model.total_params, hardware.bytes_per_weight(self.dtype),
                b_kv_value, self.chips * self.chip.flops(self.dtype), self.chips * self.chip.hbm_bandwidth)

    def check_fit(self, batch, context, headroom: float = HEADROOM) -> None:
        """Raise DoesNotFit, with the shortfall, if weights + KV exceed the usable HBM."""
        needed = float(np.max(self.weight_bytes + self.kv_bytes(batch, context)))
        have = self.usable_hbm(headroom)
        if needed > have:
            kept = f" after keeping {headroom:.0%} free" if headroom else ""
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

    def balance_context(self) -> float:
        """L* = 2 N_act / (r b_kv) in tokens."""
        n_act, _, _, kv, flops, bw = self.params()
        return float(balance_context.subs({N_act: n_act, r: flops / bw, b_kv: kv}))


def replica(chip, model, dtype="bf16", chips=1, kv_bytes_per_element=2) -> Replica:
    """The public boundary: names (or catalog objects) resolved and every input checked, once."""
    chip = hardware.get(chip) if isinstance(chip, str) else chip
    model = models.get(model) if isinstance(model, str) else model
    chip.flops(dtype)  # the number format must be one this chip has a published rate for
    return Replica(chip, model, dtype, positive_int("chips", chips),
                   float(positive("kv_bytes_per_element", kv_bytes_per_element)))


def _workload(batch, context, headroom=HEADROOM):
    positive("batch", batch)
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)


def memory_needed(model, batch, context, dtype="bf16", kv_bytes_per_element=2):
    """Bytes of HBM for the weights plus the KV cache of ``batch`` sequences of ``context`` tokens.

    The KV term is ``batch * context * b_kv`` plus, for sliding-window layers, the tokens of each
    window (``Model.kv_bytes_windowed``), so windowed models are counted exactly.
    """
    model = models.get(model) if isinstance(model, str) else model
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
    return float(numeric["balance_batch"](0, context, *rep.params(context)))


def balance_context_for(chip, model, dtype="bf16", kv_bytes_per_element=2) -> float:
    """L* = 2 N_act / (r b_kv) in tokens."""
    return replica(chip, model, dtype, 1, kv_bytes_per_element).balance_context()


def step_time(chip, model, batch, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=HEADROOM):
    """Lower bound max(compute time, memory time) on one decode step, in seconds.

    Raises DoesNotFit when the weights and KV cache exceed the chips' usable HBM.
    """
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    _workload(batch, context, headroom)
    rep.check_fit(batch, context, headroom)
    t = numeric["t_step"](batch, context, *rep.params(context))
    return float(t) if np.ndim(t) == 0 else t


@dataclass(frozen=True)
class DecodePoint:
    """One operating point of a replica: the two times, the bound and what it costs."""
    t_compute: float
    t_weights: float
    t_kv: float
    batch: float
    chips: int
    usd_per_chip_hour: float

    @property
    def t_mem(self) -> float:
        return self.t_weights + self.t_kv

    @property
    def t_step(self) -> float:
        return max(self.t_compute, self.t_mem)

    @property
    def regime(self) -> str:
        if self.t_compute >= self.t_mem:
            return "compute-bound"
        return "memory-bound (weights)" if self.t_weights >= self.t_kv else "memory-bound (KV cache)"

    @property
    def mfu(self) -> float:
        """Fraction of peak FLOP/s the step can use at best."""
        return self.t_compute / self.t_step

    @property
    def tokens_per_second(self) -> float:
        return self.batch / self.t_step

    @property
    def usd_per_million_tokens(self) -> float:
        return 1e6 * self.t_step * self.chips * self.usd_per_chip_hour / 3600 / self.batch


def decode_point(chip, model, batch, context, dtype="bf16", chips=1, usd_per_chip_hour=USD_PER_CHIP_HOUR,
                 kv_bytes_per_element=2, headroom=HEADROOM) -> DecodePoint:
    """Everything the Chapter 1 widget and calculator show for one (batch, context)."""
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    _workload(batch, context, headroom)
    positive("usd_per_chip_hour", usd_per_chip_hour)
    rep.check_fit(batch, context, headroom)
    p = rep.params(context)
    return DecodePoint(
        t_compute=float(numeric["t_compute"](batch, context, *p)),
        t_weights=float(numeric["t_weights"](batch, context, *p)),
        t_kv=float(numeric["t_kv"](batch, context, *p)),
        batch=float(batch), chips=rep.chips, usd_per_chip_hour=float(usd_per_chip_hour))


def fast_mode(speed_ratio: float, price_ratio: float) -> tuple[float, float]:
    """Invert a fast tier: (normal batch / B*, fast batch / B*) from its speed and price ratios.

    Normal service sits on the compute-bound slope, where a step's time grows with batch, and fast
    mode on the flat weight-bound floor, where the price per token grows as the batch shrinks.
    """
    positive("speed_ratio", speed_ratio)
    positive("price_ratio", price_ratio)
    if speed_ratio < 1 or price_ratio < 1:
        raise ChalkError("speed_ratio and price_ratio must be >= 1 for a fast tier")
    return float(speed_ratio), 1.0 / float(price_ratio)


def replica_params(chip, model, dtype="bf16", chips=1, kv_bytes_per_element=2, context=0):
    """(N_act, N_tot, b_w, b_kv, F, W) of one replica, checked, in the order ``numeric`` takes
    after (B, L): for callers (plots, the widget) that evaluate the formulas on arrays of batches."""
    rep = replica(chip, model, dtype, chips, kv_bytes_per_element)
    non_negative("context", context)
    return rep.params(context)
