"""Storage tiers a KV cache can be held in (``data/tiers.toml``), and a chip's or system's HBM as
the fastest of them."""
from dataclasses import dataclass
from functools import cache

from .. import catalog
from . import systems


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
        return self.capacity / self.bandwidth


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
    hw = systems.system_or_chip(target, param="target")
    hbm = Tier(f"hbm-{hw.name}", f"HBM of {hw.name}", hw.hbm_capacity, hw.hbm_bandwidth, hw.source, hw.as_of)
    return sorted([hbm, *catalog_tiers().values()], key=lambda t: t.drain_time)
