"""Accelerators: published peak compute, HBM and interconnect figures (``data/chips.toml``)."""
from dataclasses import dataclass, field
from functools import cache

from . import catalog
from .errors import lookup

# Bytes per weight for each number format the catalog knows.
BYTES_PER_ELEMENT = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5}


def bytes_per_weight(dtype: str) -> float:
    return lookup("dtype", dtype, BYTES_PER_ELEMENT, param="dtype")


@dataclass(frozen=True)
class Chip:
    name: str
    vendor: str
    status: str
    peak_flops: dict[str, float] = field(repr=False)
    hbm_capacity: float
    """bytes"""
    hbm_bandwidth: float
    """bytes per second"""
    scale_up_bandwidth: float
    """bytes per second, bidirectional, per chip"""
    scale_up_domain: int
    scale_out_bandwidth: float
    """bytes per second per chip"""
    source: str
    as_of: str
    note: str = ""

    def flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s in ``dtype``; raises naming the formats this chip supports."""
        bytes_per_weight(dtype)
        return lookup(f"dtype for {self.name} (supported)", dtype, self.peak_flops, param="dtype")

    def intensity(self, dtype: str = "bf16") -> float:
        """Hardware intensity r = F/W in FLOP per byte of HBM traffic."""
        return self.flops(dtype) / self.hbm_bandwidth

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(self.peak_flops)

    @property
    def drain_time(self) -> float:
        """Seconds to read all of HBM once: capacity / bandwidth."""
        return self.hbm_capacity / self.hbm_bandwidth


_FIELDS = {"vendor": str, "status": str, "tflops": dict, "hbm_GB": float, "hbm_TBps": float,
           "scale_up_GBps": float, "scale_up_domain": int, "scale_out_GBps": float}


@cache
def catalog_chips() -> dict[str, Chip]:
    chips = {}
    for name, e in catalog.load("chips.toml").items():
        where = f"chips.toml [{name}]"
        catalog.require(where, e, _FIELDS)
        for dtype, tf in e["tflops"].items():
            if dtype not in BYTES_PER_ELEMENT:
                raise catalog.ChalkError(f"{where}: unknown dtype {dtype!r} in tflops")
            catalog.require(where, {dtype: tf}, {dtype: float})
        chips[name] = Chip(
            name=name, vendor=e["vendor"], status=e["status"],
            peak_flops={d: float(v) * 1e12 for d, v in e["tflops"].items()},
            hbm_capacity=e["hbm_GB"] * 1e9, hbm_bandwidth=e["hbm_TBps"] * 1e12,
            scale_up_bandwidth=e["scale_up_GBps"] * 1e9, scale_up_domain=e["scale_up_domain"],
            scale_out_bandwidth=e["scale_out_GBps"] * 1e9,
            source=e["source"], as_of=e["as_of"], note=e.get("note", ""),
        )
    return chips


def get(name: str) -> Chip:
    """The chip called ``name``; an unknown name raises an error listing the known chips."""
    return lookup("chip", name, catalog_chips(), param="chip")


def names() -> list[str]:
    return list(catalog_chips())
