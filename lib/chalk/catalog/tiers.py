"""Storage tiers a KV cache can be held in (``data/tiers.toml``), and a chip's or system's HBM as
the fastest of them.

Each tier has a capacity C, a read bandwidth W and a price of holding a byte for a second: for
HBM the rental of the chips that carry it, for every other tier its purchase price per byte
amortised over ``LIFETIME_YEARS`` (power, space and the host around it left out, which favours
the slow tiers; ``chalk.pricing`` sweeps the assumption).
"""
from dataclasses import dataclass, replace
from functools import cache

from .. import catalog
from ..errors import positive
from . import hardware, systems
from .quoted import USD_PER_CHIP_HOUR

LIFETIME_YEARS = 5.0
"""Straight-line amortisation of memory and drives: the warranty period of enterprise SSDs and
nearline disks (the Exos X24 and the BM1743 both carry five years)."""
SECONDS_PER_YEAR = 365.25 * 24 * 3600


@dataclass(frozen=True)
class Tier:
    name: str
    display: str
    capacity: float
    """bytes"""
    bandwidth: float
    """bytes per second"""
    usd_per_byte_second: float
    """what holding one byte here for one second costs"""
    source: str = ""
    as_of: str = ""
    system: str | None = None
    """the catalog system whose host memory this is, if it is host memory"""
    price_source: str = ""
    price_as_of: str = ""

    @property
    def drain_time(self) -> float:
        return self.capacity / self.bandwidth


def _amortised(usd_per_TB: float, lifetime_years: float) -> float:
    return usd_per_TB / 1e12 / (lifetime_years * SECONDS_PER_YEAR)


@cache
def _entries() -> dict[str, dict]:
    out = {}
    for name, e in catalog.load("tiers.toml").items():
        catalog.require(f"tiers.toml [{name}]", e, {"display": str, "capacity_TB": float, "bandwidth_GBps": float,
                                                     "usd_per_TB": float, "price_source": str, "price_as_of": str})
        if "system" in e:
            systems.get(e["system"])  # a host tier must name a catalog system
        out[name] = e
    return out


def catalog_tiers(lifetime_years: float = LIFETIME_YEARS) -> dict[str, Tier]:
    """Every tier of ``tiers.toml``, priced over ``lifetime_years``."""
    positive("lifetime_years", lifetime_years)
    return dict(_catalog_tiers(float(lifetime_years)))


@cache
def _catalog_tiers(lifetime_years: float) -> dict[str, Tier]:
    return {name: Tier(name, e["display"], e["capacity_TB"] * 1e12, e["bandwidth_GBps"] * 1e9,
                       _amortised(e["usd_per_TB"], lifetime_years), e["source"], e["as_of"], e.get("system"),
                       e["price_source"], e["price_as_of"])
            for name, e in _entries().items()}


def hbm_tier(target="H100-SXM", usd_per_chip_hour: float = USD_PER_CHIP_HOUR) -> Tier:
    """The HBM of ``target`` (a chip or system), priced at the chips' rental."""
    hw = systems.system_or_chip(target, param="target")
    positive("usd_per_chip_hour", usd_per_chip_hour)
    chips = hw.count if isinstance(hw, systems.System) else 1
    return Tier(f"hbm-{hw.name}", f"HBM of {hw.name}", hw.hbm_capacity, hw.hbm_bandwidth,
                chips * usd_per_chip_hour / 3600 / hw.hbm_capacity, hw.source, hw.as_of)


def host_tiers(target="H100-SXM", lifetime_years: float = LIFETIME_YEARS) -> list[Tier]:
    """The host memory beside ``target``: a system's own, or for a chip its share of the host
    memory of each catalog system built from it (capacity and bandwidth over the chip count)."""
    hw = systems.system_or_chip(target, param="target")
    out = []
    for t in catalog_tiers(lifetime_years).values():
        if t.system is None:
            continue
        host = systems.get(t.system)
        if isinstance(hw, systems.System) and host.name == hw.name:
            out.append(t)
        elif isinstance(hw, hardware.Chip) and host.chip.name == hw.name:
            out.append(replace(t, name=f"{t.name}/gpu", display=f"{t.display}, one GPU's share",
                               capacity=t.capacity / host.count, bandwidth=t.bandwidth / host.count))
    return out


def tiers_with_hbm(target="H100-SXM", usd_per_chip_hour: float = USD_PER_CHIP_HOUR,
                   lifetime_years: float = LIFETIME_YEARS) -> list[Tier]:
    """HBM of ``target``, its host memory, and the storage tiers, fastest (shortest drain) first."""
    return list(_tiers_with_hbm(target, usd_per_chip_hour, lifetime_years))


@cache
def _tiers_with_hbm(target, usd_per_chip_hour, lifetime_years) -> tuple[Tier, ...]:
    storage = [t for t in catalog_tiers(lifetime_years).values() if t.system is None]
    held = [hbm_tier(target, usd_per_chip_hour), *host_tiers(target, lifetime_years), *storage]
    return tuple(sorted(held, key=lambda t: t.drain_time))
