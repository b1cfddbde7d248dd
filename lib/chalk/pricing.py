"""What a provider's public prices imply about its serving.

Reading prices backwards (the lecture's Chapter 6 argument), each with its convention:

* Decode MFU from the output/input price ratio. Prices are taken proportional to chip-time per
  token; prefill runs at the compute roofline (2 N_act / F per token) and decode at MFU eta_c
  (2 N_act / (eta_c F)). Then p_out / p_in = 1 / eta_c.
* KV bytes per token from a long-context price step: the step is read as the balance context L*
  of ``roofline.balance_context`` (beyond it KV reads outlast the matmuls at any batch), solved for
  b_kv = 2 N_act / (r L*) with r = F / W of the serving chip. The lecture writes N_act / (r L*)
  with its "≈300", which is F b_w / (2 W) (``roofline.lecture_ratio``); with BF16 weights that is
  numerically F / W, so the lecture's answer is half of this one.
* The storage tier behind a cache duration: the tier whose drain time C / W is closest (on a log
  scale) to how long the cache is held, a cousin of the five-minute rule: a tier is worth using
  for data that is read back about once per drain time.
"""
from dataclasses import dataclass, field

import sympy as sp

from . import roofline
from .catalog import models, prices, systems, tiers
from .errors import ChalkError, positive
from .notation import C, F, L_star, N_act, T_hold, W, b_kv, eta_c, p_in, p_out

# --- formulas -------------------------------------------------------------------------------
# Both passes are priced by their weight matmuls, at short context where attention is negligible.
_prefill_time = roofline.t_matmul.subs(roofline.B, 1)
_decode_time = _prefill_time.subs(F, eta_c * F)
decode_mfu_from_prices = sp.solve(sp.Eq(p_out / p_in, _decode_time / _prefill_time), eta_c)[0]
"""eta_c = p_in / p_out: decode MFU implied by the ratio of output to input price."""

kv_bytes_from_step = sp.solve(sp.Eq(L_star, roofline.balance_context.subs(roofline.f_att, 0)), b_kv)[0]
"""b_kv = 2 N_act / (r L*): KV bytes per token implied by a price step at context L*, for a model
whose attention FLOPs are negligible beside its KV bytes (MHA/GQA, about 8 FLOP per byte). An MLA
model does f_att FLOPs per cached token and would need f_att / r more bytes for the same step."""

drain_time = C / W
"""Seconds to read a whole tier once."""

tier_mismatch = sp.Abs(sp.log(drain_time / T_hold))
"""How far a tier's drain time is from the hold time, on a log scale (0 = a perfect match)."""


def tier_for_hold(hold_seconds: float, target="H100-SXM") -> tiers.Tier:
    """The tier whose drain time C/W is nearest ``hold_seconds`` on a log scale."""
    positive("hold_seconds", hold_seconds)
    mismatch = sp.lambdify((C, W, T_hold), tier_mismatch, "math")
    return min(tiers.tiers_with_hbm(target), key=lambda t: mismatch(t.capacity, t.bandwidth, hold_seconds))


# --- deductions -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Deduction:
    """A number read off prices, the formula it came from, and the real figure where we have one."""
    quantity: str
    value: float
    formula: sp.Expr
    inputs: dict = field(default_factory=dict)
    actual: float | None = None
    actual_label: str = ""


def implied_decode_mfu(price) -> Deduction:
    price = prices.get(price) if isinstance(price, str) else price
    value = float(decode_mfu_from_prices.subs({p_in: price.input, p_out: price.output}))
    return Deduction("decode MFU", value, decode_mfu_from_prices,
                     {"p_in": price.input, "p_out": price.output})


def implied_kv_bytes_per_token(price, model, target="H100-SXM", dtype="bf16",
                               kv_bytes_per_element=2) -> Deduction:
    """b_kv implied by ``price``'s long-context step, for ``model`` served on ``target``."""
    price = prices.get(price) if isinstance(price, str) else price
    model = models.get(model) if isinstance(model, str) else model
    if not price.long_context:
        raise ChalkError(f"price: {price.name} has no long-context price step to read")
    hw = systems.system_or_chip(target, param="target")
    step = price.long_context["above_tokens"]
    r_value = hw.intensity(dtype)
    value = float(kv_bytes_from_step.subs({N_act: model.active_params, roofline.r: r_value, L_star: step}))
    return Deduction("KV bytes per token", value, kv_bytes_from_step,
                     {"N_act": model.active_params, "r": r_value, "L*": step},
                     actual=model.kv_bytes_per_token(kv_bytes_per_element),
                     actual_label=f"{model.display} from its config")


def implied_cache_tier(hold_seconds: float, target="H100-SXM") -> Deduction:
    tier = tier_for_hold(hold_seconds, target)
    return Deduction("storage tier", tier.drain_time, drain_time,
                     {"T_hold": hold_seconds, "tier": tier.display})


CACHE_HOLDS = {"cache_write_5m": 300.0, "cache_write_1h": 3600.0}
"""Seconds a cache is held for each cache-write price field."""


def deduce(price, model=None, target="H100-SXM", dtype="bf16") -> list[Deduction]:
    """Everything this module reads off one price entry."""
    price = prices.get(price) if isinstance(price, str) else price
    out = [implied_decode_mfu(price)]
    if price.long_context and model is not None:
        out.append(implied_kv_bytes_per_token(price, model, target, dtype))
    out += [implied_cache_tier(hold, target) for key, hold in CACHE_HOLDS.items()
            if getattr(price, key) is not None]
    return out


def fast_tier_batches(price) -> tuple[float, float] | None:
    """(normal, fast) batch / B* implied by a fast tier's speed-up and price (``roofline.fast_mode``)."""
    price = prices.get(price) if isinstance(price, str) else price
    if price.fast_speedup is None:
        return None
    return roofline.fast_mode(price.fast_speedup, price.fast_multipliers[1])
