"""API list prices (``data/prices.toml``): input, output, cache reads and writes with their hold
times, long-context steps and fast or priority tiers, each entry dated and sourced. What the prices
imply is worked out in ``chalk.pricing``.
"""
from dataclasses import dataclass
from functools import cache

from .. import catalog
from ..errors import ChalkError, lookup


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
    batch: dict | None = None
    """Asynchronous service within ``within_hours``, with its own source."""
    off_peak: dict | None = None
    """Prices in a daily window (``hours_utc``), with its own source."""
    context_window: int | None = None
    note: str = ""

    @property
    def secondary(self) -> bool:
        """Whether a figure of the entry rests on a restatement, not the provider's own page (its note says so)."""
        return "[secondary]" in self.note

    @property
    def label(self) -> str:
        """Provider and model as printed in a table, marked [secondary] where the entry is."""
        return f"{self.provider} {self.model}" + (" [secondary]" if self.secondary else "")

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
    def slow_discounts(self) -> dict[str, float]:
        """Output price of each slower tier (batch, off-peak) over the normal output price."""
        return {name: tier["output"] / self.output
                for name, tier in (("batch", self.batch), ("off-peak", self.off_peak)) if tier}

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
          "fast": {"input": float, "output": float}, "priority": {"input": float, "output": float},
          "batch": {"input": float, "output": float, "within_hours": int, "source": str, "as_of": str},
          "off_peak": {"input": float, "output": float, "hours_utc": str, "source": str, "as_of": str}}


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
    return lookup("price entry", name, catalog_prices(), param="price", plural="price entries")


def names() -> list[str]:
    return list(catalog_prices())
