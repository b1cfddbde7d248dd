"""API list prices (``data/prices.toml``) and what a provider's prices imply about its serving.

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
from functools import cache

import sympy as sp

from . import catalog, hardware, models, roofline, systems
from .errors import ChalkError, lookup, positive
from .notation import C, F, L_star, N_act, T_hold, W, b_kv, eta_c, p_in, p_out

# --- formulas -------------------------------------------------------------------------------
_prefill_time = roofline.t_compute.subs(roofline.B, 1)
_decode_time = _prefill_time.subs(F, eta_c * F)
decode_mfu_from_prices = sp.solve(sp.Eq(p_out / p_in, _decode_time / _prefill_time), eta_c)[0]
"""eta_c = p_in / p_out: decode MFU implied by the ratio of output to input price."""

kv_bytes_from_step = sp.solve(sp.Eq(L_star, roofline.balance_context), b_kv)[0]
"""b_kv = 2 N_act / (r L*): KV bytes per token implied by a price step at context L*."""

drain_time = C / W
"""Seconds to read a whole tier once."""

tier_mismatch = sp.Abs(sp.log(drain_time / T_hold))
"""How far a tier's drain time is from the hold time, on a log scale (0 = a perfect match)."""


@dataclass(frozen=True)
class Price:
    name: str
    provider: str
    model: str
    input: float
    output: float
    source: str
    as_of: str
    cache_read: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_storage_per_hour: float | None = None
    long_context: dict | None = None
    fast: dict | None = None
    priority: dict | None = None
    context_window: int | None = None
    note: str = ""

    @property
    def output_to_input(self) -> float:
        return self.output / self.input

    def ratio(self, field_name: str) -> float:
        """A cache price as a multiple of the base input price."""
        value = getattr(self, field_name)
        if value is None:
            raise ChalkError(f"field: {self.name} publishes no {field_name}")
        return value / self.input

    @property
    def long_context_multipliers(self) -> tuple[float, float] | None:
        """(input, output) price above the step over the base price."""
        lc = self.long_context
        return (lc["input"] / self.input, lc["output"] / self.output) if lc else None

    @property
    def fast_speedup(self) -> float | None:
        """Output speed of the fast tier over normal service, where the provider states one."""
        return (self.fast or {}).get("speedup")

    @property
    def fast_multipliers(self) -> tuple[float, float] | None:
        tier = self.fast or self.priority
        return (tier["input"] / self.input, tier["output"] / self.output) if tier else None


_FIELDS = {"provider": str, "model": str, "input": float, "output": float}
_OPTIONAL = {"cache_read": float, "cache_write_5m": float, "cache_write_1h": float,
             "cache_storage_per_hour": float, "context_window": int}
_TIERS = {"long_context": {"above_tokens": int, "input": float, "output": float},
          "fast": {"input": float, "output": float}, "priority": {"input": float, "output": float}}


def _build(name: str, e: dict) -> Price:
    where = f"prices.toml [{name}]"
    catalog.require(where, e, _FIELDS)
    catalog.require(where, e, {k: t for k, t in _OPTIONAL.items() if k in e})
    for tier, fields in _TIERS.items():
        if tier in e:
            catalog.require(f"{where} {tier}", e[tier], fields)
    if "speedup" in e.get("fast", {}):
        catalog.require(f"{where} fast", e["fast"], {"speedup": float})
    kwargs = {k: (float(v) if isinstance(v, int) and k != "context_window" else v)
              for k, v in e.items() if k in Price.__dataclass_fields__}
    return Price(name=name, **kwargs)


@cache
def catalog_prices() -> dict[str, Price]:
    return {name: _build(name, e) for name, e in catalog.load("prices.toml").items()}


def get(name: str) -> Price:
    """The price entry ``provider/model[@date]``; an unknown name lists the known ones."""
    return lookup("price entry", name, catalog_prices(), param="price")


def names() -> list[str]:
    return list(catalog_prices())


# --- storage tiers --------------------------------------------------------------------------
@dataclass(frozen=True)
class Tier:
    name: str
    display: str
    capacity: float
    """bytes"""
    bandwidth: float
    """bytes per second"""
    source: str = ""
    as_of: str = ""

    @property
    def drain_time(self) -> float:
        return float(drain_time.subs({C: self.capacity, W: self.bandwidth}))


@cache
def catalog_tiers() -> dict[str, Tier]:
    tiers = {}
    for name, e in catalog.load("tiers.toml").items():
        catalog.require(f"tiers.toml [{name}]", e, {"display": str, "capacity_TB": float, "bandwidth_GBps": float})
        tiers[name] = Tier(name, e["display"], e["capacity_TB"] * 1e12, e["bandwidth_GBps"] * 1e9,
                           e["source"], e["as_of"])
    return tiers


def tiers_with_hbm(target="H100-SXM") -> list[Tier]:
    """The HBM of ``target`` (a chip or system) followed by the catalog tiers, fastest first."""
    hw = systems.get(target) if target in systems.catalog_systems() else hardware.get(target)
    hbm = Tier(f"hbm-{hw.name}", f"HBM of {hw.name}", hw.hbm_capacity, hw.hbm_bandwidth, hw.source, hw.as_of)
    return sorted([hbm, *catalog_tiers().values()], key=lambda t: t.drain_time)


def tier_for_hold(hold_seconds: float, target="H100-SXM") -> Tier:
    """The tier whose drain time C/W is nearest ``hold_seconds`` on a log scale."""
    positive("hold_seconds", hold_seconds)
    mismatch = sp.lambdify((C, W, T_hold), tier_mismatch, "math")
    return min(tiers_with_hbm(target), key=lambda t: mismatch(t.capacity, t.bandwidth, hold_seconds))


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
    price = get(price) if isinstance(price, str) else price
    value = float(decode_mfu_from_prices.subs({p_in: price.input, p_out: price.output}))
    return Deduction("decode MFU", value, decode_mfu_from_prices,
                     {"p_in": price.input, "p_out": price.output})


def implied_kv_bytes_per_token(price, model, target="H100-SXM", dtype="bf16",
                               kv_bytes_per_element=2) -> Deduction:
    """b_kv implied by ``price``'s long-context step, for ``model`` served on ``target``."""
    price = get(price) if isinstance(price, str) else price
    model = models.get(model) if isinstance(model, str) else model
    if not price.long_context:
        raise ChalkError(f"price: {price.name} has no long-context price step to read")
    hw = systems.get(target) if target in systems.catalog_systems() else hardware.get(target)
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
    price = get(price) if isinstance(price, str) else price
    out = [implied_decode_mfu(price)]
    if price.long_context and model is not None:
        out.append(implied_kv_bytes_per_token(price, model, target, dtype))
    out += [implied_cache_tier(hold, target) for key, hold in CACHE_HOLDS.items()
            if getattr(price, key) is not None]
    return out


def fast_tier_batches(price) -> tuple[float, float] | None:
    """(normal, fast) batch / B* implied by a fast tier's speed-up and price (``roofline.fast_mode``)."""
    price = get(price) if isinstance(price, str) else price
    if price.fast_speedup is None:
        return None
    return roofline.fast_mode(price.fast_speedup, price.fast_multipliers[1])
