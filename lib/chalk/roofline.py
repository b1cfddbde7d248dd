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
def _resolve(chip, model):
    chip = hardware.get(chip) if isinstance(chip, str) else chip
    model = models.get(model) if isinstance(model, str) else model
    return chip, model


def _params(chip, model, dtype, chips, kv_bytes_per_element, context=0):
    """(N_act, N_tot, b_w, b_kv, F, W) for the numeric formulas, after checking the inputs.

    With sliding-window layers the KV cache is not linear in context; b_kv is then the effective
    bytes per token at ``context``, kv_bytes(context) / context, so that L b_kv is the exact cache
    of one sequence. Without windows it is ``kv_bytes_per_token`` at any context.
    """
    chips = positive_int("chips", chips)
    positive("kv_bytes_per_element", kv_bytes_per_element)
    return (model.active_params, model.total_params, hardware.bytes_per_weight(dtype),
            _effective_kv_per_token(model, context, kv_bytes_per_element), chips * chip.flops(dtype),
            chips * chip.hbm_bandwidth)


def _effective_kv_per_token(model, context, kv_bytes_per_element):
    b_kv_long = model.kv_bytes_per_token(kv_bytes_per_element)
    windowed = model.kv_bytes_windowed(context, kv_bytes_per_element)
    if not np.any(windowed):
        return b_kv_long
    ctx = np.asarray(context, dtype=float)
    return b_kv_long + np.divide(windowed, ctx, out=np.zeros_like(ctx), where=ctx > 0)


def memory_needed(model, batch, context, dtype="bf16", kv_bytes_per_element=2):
    """Bytes of HBM for the weights plus the KV cache of ``batch`` sequences of ``context`` tokens.

    The KV term is ``batch * context * b_kv`` plus, for sliding-window layers, the tokens of each
    window (``Model.kv_bytes_windowed``), so windowed models are counted exactly.
    """
    model = models.get(model) if isinstance(model, str) else model
    non_negative("batch", batch)
    non_negative("context", context)
    return (model.total_params * hardware.bytes_per_weight(dtype)
            + np.asarray(batch) * np.asarray(context) * model.kv_bytes_per_token(kv_bytes_per_element)
            + np.asarray(batch) * model.kv_bytes_windowed(context, kv_bytes_per_element))


def _usable(chip, chips, headroom):
    """HBM the weights and KV may use: all of it, less the fraction ``headroom`` kept free."""
    in_range("headroom", headroom, 0, 0.99)
    return positive_int("chips", chips) * chip.hbm_capacity * (1 - headroom)


def check_fit(chip, model, batch, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=0.0) -> None:
    """Raise DoesNotFit, with the shortfall, if weights + KV exceed the chips' HBM.

    ``headroom`` is the fraction of HBM kept free for activations and the runtime (default none).
    """
    chip, model = _resolve(chip, model)
    needed = float(np.max(memory_needed(model, batch, context, dtype, kv_bytes_per_element)))
    have = _usable(chip, chips, headroom)
    if needed > have:
        kept = f" after keeping {headroom:.0%} free" if headroom else ""
        raise DoesNotFit(
            f"does not fit: {model.display} in {dtype} with batch {np.max(batch):g} x context "
            f"{np.max(context):g} needs {needed / 1e9:,.0f} GB, {chips} x {chip.name} have "
            f"{have / 1e9:,.0f} GB{kept} (short by {(needed - have) / 1e9:,.0f} GB)", needed, have)


def max_batch(chip, model, context, dtype="bf16", chips=1, kv_bytes_per_element=2,
              headroom=0.0) -> float:
    """Largest batch whose KV cache fits beside the weights (inf at context 0)."""
    chip, model = _resolve(chip, model)
    non_negative("context", context)
    free = _usable(chip, chips, headroom) - memory_needed(model, 0, 0, dtype)
    if free < 0:
        check_fit(chip, model, 0, 0, dtype, chips, headroom=headroom)
    if context == 0:
        return math.inf
    per_sequence = float(memory_needed(model, 1, context, dtype, kv_bytes_per_element)) - memory_needed(model, 0, 0, dtype)
    return float(math.floor(free / per_sequence))


def balance_batch(chip, model, dtype="bf16", context=0, kv_bytes_per_element=2) -> float:
    """Sequences per step at which weight-and-KV read time equals compute time.

    Returns ``inf`` when ``context`` is at or beyond the balance context L*: there the KV reads
    alone take longer than the matmuls, so the step is memory-bound at every batch.
    """
    chip, model = _resolve(chip, model)
    non_negative("context", context)
    p = _params(chip, model, dtype, 1, kv_bytes_per_element, context)
    if context >= balance_context_for(chip, model, dtype, kv_bytes_per_element):
        return math.inf
    return float(numeric["balance_batch"](0, context, *p))


def balance_context_for(chip, model, dtype="bf16", kv_bytes_per_element=2) -> float:
    """L* = 2 N_act / (r b_kv) in tokens."""
    chip, model = _resolve(chip, model)
    n_act, _, _, kv, flops, bw = _params(chip, model, dtype, 1, kv_bytes_per_element)
    return float(balance_context.subs({N_act: n_act, r: flops / bw, b_kv: kv}))


def step_time(chip, model, batch, context, dtype="bf16", chips=1, kv_bytes_per_element=2):
    """Lower bound max(compute time, memory time) on one decode step, in seconds.

    Raises DoesNotFit when the weights and KV cache exceed the chips' HBM.
    """
    chip, model = _resolve(chip, model)
    positive("batch", batch)
    non_negative("context", context)
    check_fit(chip, model, batch, context, dtype, chips, kv_bytes_per_element)
    t = numeric["t_step"](batch, context, *_params(chip, model, dtype, chips, kv_bytes_per_element, context))
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
                 kv_bytes_per_element=2) -> DecodePoint:
    """Everything the Chapter 1 widget and calculator show for one (batch, context)."""
    chip, model = _resolve(chip, model)
    positive("usd_per_chip_hour", usd_per_chip_hour)
    step_time(chip, model, batch, context, dtype, chips, kv_bytes_per_element)  # validates, checks fit
    p = _params(chip, model, dtype, chips, kv_bytes_per_element, context)
    return DecodePoint(
        t_compute=float(numeric["t_compute"](batch, context, *p)),
        t_weights=float(numeric["t_weights"](batch, context, *p)),
        t_kv=float(numeric["t_kv"](batch, context, *p)),
        batch=float(batch), chips=chips, usd_per_chip_hour=float(usd_per_chip_hour))


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
    chip, model = _resolve(chip, model)
    non_negative("context", context)
    return _params(chip, model, dtype, chips, kv_bytes_per_element, context)
