"""Serving calculator: does it fit, how fast is a step, what does a token cost.

Every time comes from ``roofline``'s formulas (``roofline.numeric``); this module only picks the
hardware, applies the efficiency knobs and shows the formulas with the numbers put in.

Names are resolved and inputs checked here, once, into a ``roofline.Replica``; everything below
works on that. Defaults, stated once:
* ``HEADROOM``: ``roofline.HEADROOM`` (10% of HBM kept free for activations, the runtime and
  fragmentation), the same default as the library's own fit checks.
* ``MFU = 1.0`` and ``MEMORY_EFFICIENCY = 1.0``: the roofline bound. The knobs divide peak FLOP/s
  and peak HBM bandwidth, F -> eta_c F and W -> eta_m W, so a step takes at least 1/eta longer.
* A pass of ``n`` new tokens per sequence (prefill) does n times the matmul work of a decode step,
  its tokens attend causally (L - (n - 1)/2 cached tokens on average, L the context after the
  pass), it reads the weights its B n tokens touch once, and its KV term is the cache at L.
  Its attention is counted as prefill kernels run it (``roofline.attention_flops_per_pair``: MLA in
  its multi-head form), a decode step's as decode kernels do.
* On more than one chip a dense model's pass also pays the tensor-parallel all-reduces
  (``roofline.Replica.layout_allreduce_time``: two per layer, ring, in series with the rest),
  ``t_comm``; an MoE model's expert-parallel all-to-all is ``chalk.moe``'s.
"""
import math
import re
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import roofline
from .errors import ChalkError, ContextWarning, DoesNotFit, in_range, positive_int, whole
from .lazy import Lazy
from .notation import (B, F, F_att, L, N_act, N_rout, N_tot, W, b_kv, b_w, eta_c, eta_m, f_att, k, n,
                       n_chips, n_exp, p_chip)
from .catalog.quoted import USD_PER_CHIP_HOUR

HEADROOM = roofline.HEADROOM
MFU = 1.0
MEMORY_EFFICIENCY = 1.0
LIMITS = roofline.LIMITS
Hardware = roofline.Hardware
resolve = roofline.resolve

# --- formulas: roofline's, generalised to a pass of n tokens and to the efficiency knobs --------
# The Max of the pass and the lambdified times are built on first use (``chalk.lazy``): `import
# chalk` imports this module, and most interpreters never evaluate a pass.
_derived = Lazy(__name__)
_derated = {F: eta_c * F, F_att: eta_c * F_att, W: eta_m * W}
_compute_pass = (roofline.t_matmul + roofline.t_attn.subs(L, L - (n - 1) / 2)).subs(B, B * n)
_mem_pass = roofline.t_weights.subs(B, B * n) + roofline.t_kv
t_compute_pass = _compute_pass.subs(_derated, simultaneous=True)
"""A pass of n new tokens for each of B sequences: n times a decode step's matmuls, and attention
over the L - (n - 1)/2 tokens each new token sees on average."""
t_mem_pass = _mem_pass.subs(_derated, simultaneous=True)
"""The weights the pass's B n tokens touch, read once; the KV cache of every sequence read once."""


@_derived
def _t_pass():
    return sp.Max(t_compute_pass, t_mem_pass)


@_derived
def __pass_numeric():
    """The pass's times at peak rates, taking (n, *roofline.ARGS); the knobs derate F, F_att and W."""
    return {name: sp.lambdify((n,) + roofline.ARGS, expr) for name, expr in
            {"t_compute": _compute_pass, "t_weights": roofline.t_weights.subs(B, B * n),
             "t_kv": roofline.t_kv, "t_attn": roofline.t_attn.subs(L, L - (n - 1) / 2).subs(B, B * n)}.items()}


@_derived
def _cost_per_token_pass():
    """Dollars per token of a pass: the replica's rental for the pass shared by its B n tokens."""
    return _t_pass() * n_chips * p_chip / (3600 * B * n)


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


def _limited(name: str, value):
    return in_range(name, value, *LIMITS[name])


_context_warning = roofline.context_warning


def _replica(model, target, dtype, chips, kv_bytes_per_element) -> roofline.Replica:
    hw = resolve(target, chips)
    return roofline.replica(hw.chip, model, dtype, hw.count, kv_bytes_per_element)


# --- does it fit ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Fit:
    weights: float
    kv: float
    available: float
    """HBM the weights and KV may use, after the headroom."""
    headroom: float

    @property
    def needed(self) -> float:
        return self.weights + self.kv

    @property
    def fits(self) -> bool:
        return self.needed <= self.available

    @property
    def shortfall(self) -> float:
        """Bytes missing (0 when it fits)."""
        return max(0.0, self.needed - self.available)


def fit(model, target, batch, context, dtype="bf16", chips=None, kv_bytes_per_element=2,
        headroom=HEADROOM) -> Fit:
    """Weights + KV cache of ``batch`` sequences of ``context`` tokens against the HBM."""
    rep = _replica(model, target, dtype, chips, kv_bytes_per_element)
    _limited("batch", whole("batch", batch))
    _limited("context", context)
    in_range("headroom", headroom, 0, 0.99)
    _context_warning(rep.model, context)
    return Fit(weights=rep.weight_bytes, kv=float(rep.kv_bytes(batch, context)),
               available=rep.usable_hbm(headroom), headroom=headroom)


def max_batch(model, target, context, dtype="bf16", chips=None, kv_bytes_per_element=2,
              headroom=HEADROOM) -> float:
    """Largest batch whose KV cache of ``context`` tokens fits beside the weights."""
    rep = _replica(model, target, dtype, chips, kv_bytes_per_element)
    _limited("context", context)
    in_range("headroom", headroom, 0, 0.99)
    _context_warning(rep.model, context)
    return rep.max_batch(context, headroom)


def max_context(model, target, batch, dtype="bf16", chips=None, kv_bytes_per_element=2,
                headroom=HEADROOM) -> float:
    """Longest context (tokens) at which ``batch`` sequences fit; inf if the cache stops growing.

    KV bytes only grow with context, so the answer is found by bisection on the exact total
    (sliding windows make it piecewise linear).
    """
    rep = _replica(model, target, dtype, chips, kv_bytes_per_element)
    _limited("batch", positive_int("batch", batch))
    in_range("headroom", headroom, 0, 0.99)
    free = rep.usable_hbm(headroom) - rep.weight_bytes

    def fits(context):
        return float(rep.kv_bytes(batch, context)) <= free

    if not fits(0):
        rep.check_fit(0, 0, headroom)
    high = 1
    while fits(high):
        if high > 1e15:
            return math.inf
        high *= 2
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return float(low)


# --- step times -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PassPoint(roofline.DecodePoint):
    """A roofline operating point for a pass of ``n`` new tokens per sequence (decode: n = 1)."""
    n: int = 1
    context: float = 0.0
    t_compute_peak: float = 0.0
    """The matmul time at peak FLOP/s, before the MFU knob."""

    @property
    def tokens_per_second(self) -> float:
        return self.batch * self.n / self.t_step

    @property
    def mfu(self) -> float:
        """Fraction of peak FLOP/s used: peak matmul time over the step time."""
        return self.t_compute_peak / self.t_step

    @property
    def usd_per_million_tokens(self) -> float:
        return super().usd_per_million_tokens / self.n


def run_pass(model, target, batch, context, n=1, dtype="bf16", chips=None, kv_bytes_per_element=2,
             mfu=MFU, memory_efficiency=MEMORY_EFFICIENCY, usd_per_chip_hour=USD_PER_CHIP_HOUR,
             headroom=HEADROOM) -> PassPoint:
    """Lower bound on a pass of ``n`` tokens per sequence, ``context`` tokens cached after it.

    Raises DoesNotFit when the weights and KV exceed the HBM left after ``headroom``. ``batch`` and
    ``context`` may be arrays, as in ``roofline.step_time``: each time is then a masked array, NaN
    and masked where that point does not fit.
    """
    rep = _replica(model, target, dtype, chips, kv_bytes_per_element)
    _limited("batch", whole("batch", batch))
    _limited("context", context)
    n = _limited("prompt", positive_int("n", n))
    if np.any(np.asarray(context) < n):
        raise ChalkError(f"n: a pass of {n:,} new tokens per sequence needs a context of at least {n:,} "
                         f"(the context after the pass), got {context!r}")
    in_range("mfu", mfu, 1e-6, 1)
    in_range("memory_efficiency", memory_efficiency, 1e-6, 1)
    _limited("usd_per_chip_hour", usd_per_chip_hour)
    _context_warning(rep.model, context)
    in_range("headroom", headroom, 0, 0.99)
    swept = np.ndim(batch) or np.ndim(context)
    if not swept:
        rep.check_fit(batch, context, headroom)
    p = rep.params(context, "decode" if n == 1 else "prefill")
    derated = _derate(p, mfu, memory_efficiency)
    if swept:
        does_not_fit = rep.weight_bytes + rep.kv_bytes(batch, context) > rep.usable_hbm(headroom)
        out = lambda t: np.ma.masked_array(np.where(does_not_fit, np.nan, np.broadcast_to(t, does_not_fit.shape)),
                                           mask=does_not_fit)
    else:
        out = float
    times = {name: out(f(n, batch, context, *derated)) for name, f in __pass_numeric().items()}
    return PassPoint(
        **times, t_comm=out(rep.layout_allreduce_time(batch, n)),
        batch=out(np.asarray(batch, dtype=float)), chips=rep.chips, usd_per_chip_hour=float(usd_per_chip_hour),
        n=n, context=out(np.asarray(context, dtype=float)),
        t_compute_peak=out(__pass_numeric()["t_compute"](n, batch, context, *p)))


def _derate(params: tuple, mfu: float, memory_efficiency: float) -> tuple:
    """``Replica.params`` with F and F_att times ``mfu`` and W times ``memory_efficiency``."""
    named = dict(zip(roofline.ARGS[2:], params))
    named[F] *= mfu
    named[F_att] *= mfu
    named[W] *= memory_efficiency
    return tuple(named.values())


def decode(model, target, batch, context, **kwargs) -> PassPoint:
    """One decode step: one new token for each of ``batch`` sequences with ``context`` cached."""
    return run_pass(model, target, batch, context, n=1, **kwargs)


def prefill(model, target, batch, prompt, **kwargs) -> PassPoint:
    """Prefill of ``prompt`` tokens for each of ``batch`` sequences, in one pass."""
    prompt = positive_int("prompt", prompt)
    return run_pass(model, target, batch, prompt, n=prompt, **kwargs)


def substituted(point: PassPoint, model, target, dtype="bf16", chips=None, kv_bytes_per_element=2,
                mfu=MFU, memory_efficiency=MEMORY_EFFICIENCY) -> tuple[str, str]:
    """The pass formula in plain text, and the same text with this point's numbers in place of
    the symbols (term for term, so the two lines read alike)."""
    rep = _replica(model, target, dtype, chips, kv_bytes_per_element)
    named = dict(zip(roofline.ARGS[2:], rep.params(point.context, "decode" if point.n == 1 else "prefill")))
    values = {sym: _g(float(value)) for sym, value in named.items()}
    values |= {B: int(point.batch), n: point.n, L: int(point.context), k: int(named[k]),
               n_exp: int(named[n_exp]), eta_c: _g(mfu), eta_m: _g(memory_efficiency)}
    expr = roofline.t_step if (point.n, mfu, memory_efficiency) == (1, 1, 1) else _t_pass()
    if not rep.model.moe:  # a dense model reads all its weights at any batch: no experts term
        expr = expr.subs(N_rout, 0)
    formula = plain(expr)
    by_name = {_ascii_name(sym): str(value) for sym, value in values.items()}
    filled = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: by_name.get(m.group(0), m.group(0)), formula)
    return formula, filled


def _ascii_name(sym) -> str:
    name = re.sub(r"\\text\{(\w+)\}", r"\1", sym.name)
    return name.replace("^\\star", "_star").replace("\\", "").replace("{", "").replace("}", "")


def plain(expr) -> str:
    """A formula in plain text for a terminal: N_\\text{act} -> N_act, \\eta_\\text{c} -> eta_c, powers
    with ^."""
    return sp.sstr(expr.subs({s_: sp.Symbol(_ascii_name(s_)) for s_ in expr.free_symbols})).replace("**", "^")


def _g(x: float) -> str:
    return f"{x:.4g}"


def money(model, target, batch, context, prompt, usd_per_chip_hour, **kwargs) -> dict:
    """$ per million output tokens (decode at ``context``) and input tokens (prefill of ``prompt``)."""
    out = decode(model, target, batch, context, usd_per_chip_hour=usd_per_chip_hour, **kwargs)
    inp = prefill(model, target, batch, prompt, usd_per_chip_hour=usd_per_chip_hour, **kwargs)
    return {"output": out.usd_per_million_tokens, "input": inp.usd_per_million_tokens}


def rental_prices(target, chips=None, usd_per_chip_hour=None) -> list[float]:
    """The $/chip-hour figures to price at: the one given, else the chip's published range."""
    if usd_per_chip_hour is not None:
        _limited("usd_per_chip_hour", usd_per_chip_hour)
        return [float(usd_per_chip_hour)]
    rental = resolve(target, chips).chip.rental_usd_per_hour
    return list(rental) if rental else []


__all__ = ["HEADROOM", "MFU", "MEMORY_EFFICIENCY", "LIMITS", "ContextWarning", "Fit", "PassPoint", "DoesNotFit", "fit", "max_batch",
           "max_context", "decode", "prefill", "run_pass", "money", "rental_prices", "resolve",
           "substituted", "t_pass", "t_compute_pass", "t_mem_pass", "cost_per_token_pass"]
