"""Accelerators: published peak compute, HBM and interconnect figures (``data/chips.toml``)."""
from dataclasses import dataclass, field
from functools import cache

from .. import catalog
from ..errors import ChalkError, UnknownName, find, lookup

# Bytes per weight for each number format the catalog knows.
BYTES_PER_ELEMENT = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5}


def dtype_name(dtype: str) -> str:
    """The catalog's name of a number format (``BF16`` -> ``bf16``); unknown ones list the known."""
    key = find(dtype, BYTES_PER_ELEMENT)
    if key is None:
        lookup("number format", dtype, BYTES_PER_ELEMENT, param="dtype")
    return key


def bytes_per_weight(dtype: str) -> float:
    return BYTES_PER_ELEMENT[dtype_name(dtype)]


@dataclass(frozen=True)
class Chip:
    name: str
    vendor: str
    status: str
    peak_flops: dict[str, float] = field(repr=False)
    hbm_capacity: float
    """bytes every fit uses: the device's own report of its HBM where the catalog holds one
    (nvidia-smi's total), the nominal figure otherwise (``hbm_reported`` says which)"""
    hbm_bandwidth: float
    """bytes per second"""
    scale_up_bandwidth: float
    """bytes per second one chip sends on its scale-up links (NVLink, ICI), per direction"""
    scale_up_domain: int
    scale_out_bandwidth: float
    """bytes per second one chip sends on its scale-out NIC or DCN share, per direction"""
    source: str
    as_of: str
    note: str = ""
    rental_usd_per_hour: tuple[float, float] | None = None
    """Published on-demand rental range ($ per chip-hour), when one is published."""
    rental_source: str = ""
    rental_as_of: str = ""
    allreduce_fixed: float = 0.0
    """seconds one all-reduce takes whatever its size (measured on the smallest message); 0 where
    the catalog holds no measurement"""
    in_switch_reduction: bool = False
    """whether the scale-up switch reduces in the network (NVLink SHARP)"""
    allreduce_source: str = ""
    allreduce_as_of: str = ""
    hbm_nominal: float = 0.0
    """bytes, the capacity the vendor prints ("80 GB"), which tables show beside the reported one"""
    hbm_reported_source: str = ""
    hbm_reported_as_of: str = ""

    def flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s in ``dtype``; raises naming the formats this chip supports."""
        key = find(dtype_name(dtype), self.peak_flops)
        if key is None:
            raise UnknownName(f"dtype: {self.name} has no published {dtype!r} rate; its formats: "
                              f"{', '.join(self.peak_flops)}")
        return self.peak_flops[key]

    def intensity(self, dtype: str = "bf16") -> float:
        """Hardware intensity r = F/W in FLOP per byte of HBM traffic."""
        return self.flops(dtype) / self.hbm_bandwidth

    @property
    def hbm_reported(self) -> bool:
        """Whether ``hbm_capacity`` is the device's own report (True) or the nominal figure."""
        return bool(self.hbm_reported_source)

    def hbm_words(self, share: float = 1.0) -> str:
        """``share`` of the capacity every fit uses, and which figure it is: "90% of 85.5 GB as
        reported" (an "80 GB" H100), "186 GB nominal"."""
        basis = "as reported" if self.hbm_reported else "nominal"
        amount = f"{self.hbm_capacity / 1e9:,.1f} GB {basis}"
        return amount if share == 1 else f"{share:.0%} of {amount}"

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(self.peak_flops)

    @property
    def drain_time(self) -> float:
        """Seconds to read all of HBM once: capacity / bandwidth."""
        return self.hbm_capacity / self.hbm_bandwidth

    @property
    def scale_up_bandwidth_bidirectional(self) -> float:
        """Sent plus received on the scale-up links: the total vendors print ("900 GB/s" NVLink 4)."""
        return 2 * self.scale_up_bandwidth


_FIELDS = {"vendor": str, "status": str, "tflops": dict, "hbm_TBps": float,
           "scale_up_GBps_per_direction": float, "scale_up_domain": int}
STATUSES = ("shipping", "announced")

# A figure may be typed in the unit its source prints; each quantity lists (key, bytes per unit).
_UNITS = {"hbm": (("hbm_GB", 1e9), ("hbm_GiB", 2.0**30)),
          "hbm_reported": (("hbm_reported_MiB", 2.0**20), ("hbm_reported_bytes", 1.0)),
          "scale_out": (("scale_out_GBps_per_direction", 1e9), ("scale_out_Gbps_per_direction", 1e9 / 8))}


def _in_bytes(where: str, e: dict, quantity: str) -> float:
    """The one key present for ``quantity``, converted to bytes (or bytes per second)."""
    present = [(key, scale) for key, scale in _UNITS[quantity] if key in e]
    keys = " or ".join(key for key, _ in _UNITS[quantity])
    if len(present) != 1:
        raise ChalkError(f"{where}: give exactly one of {keys}")
    key, scale = present[0]
    catalog.require(where, e, {key: float})
    return float(e[key]) * scale


def _allreduce(where: str, e: dict) -> dict:
    """The optional all-reduce figures, which carry their own source and date."""
    keys = ("allreduce_fixed_us", "in_switch_reduction")
    if not any(key in e for key in keys):
        return {}
    if "allreduce_fixed_us" in e:
        catalog.require(where, e, {"allreduce_fixed_us": float})
    if "in_switch_reduction" in e:
        catalog.require(where, e, {"in_switch_reduction": bool})
    catalog.check_source(where, e.get("allreduce_source", ""), e.get("allreduce_as_of", ""), "allreduce_")
    return dict(allreduce_fixed=float(e.get("allreduce_fixed_us", 0.0)) * 1e-6,
                in_switch_reduction=e.get("in_switch_reduction", False),
                allreduce_source=e["allreduce_source"], allreduce_as_of=e["allreduce_as_of"])


def _hbm(where: str, e: dict) -> dict:
    """The capacity fits use and the nominal one: the device's report (with its own source and
    date) where there is one, else the nominal figure for both."""
    nominal = _in_bytes(where, e, "hbm")
    if not any(key in e for key, _ in _UNITS["hbm_reported"]):
        return dict(hbm_capacity=nominal, hbm_nominal=nominal)
    reported = _in_bytes(where, e, "hbm_reported")
    if not 0.9 * nominal <= reported <= 1.2 * nominal:
        raise ChalkError(f"{where}: the reported HBM ({reported / 1e9:.1f} GB) should be within -10%/+20% "
                         f"of the nominal {nominal / 1e9:.1f} GB")
    catalog.check_source(where, e.get("hbm_reported_source", ""), e.get("hbm_reported_as_of", ""), "hbm_reported_")
    return dict(hbm_capacity=reported, hbm_nominal=nominal, hbm_reported_source=e["hbm_reported_source"],
                hbm_reported_as_of=e["hbm_reported_as_of"])


def _rental(where: str, e: dict):
    """The optional (low, high) $/chip-hour range, which must carry its own source and date."""
    if "rental_usd_per_hour" not in e:
        return None
    low_high = e["rental_usd_per_hour"]
    if (not isinstance(low_high, list) or len(low_high) != 2
            or not all(isinstance(v, (int, float)) and v > 0 for v in low_high) or low_high[0] > low_high[1]):
        raise ChalkError(f"{where}: rental_usd_per_hour must be [low, high] with 0 < low <= high")
    catalog.check_source(where, e.get("rental_source", ""), e.get("rental_as_of", ""), "rental_")
    return (float(low_high[0]), float(low_high[1]))


@cache
def catalog_chips() -> dict[str, Chip]:
    chips = {}
    for name, e in catalog.load("chips.toml").items():
        where = f"chips.toml [{name}]"
        catalog.require(where, e, _FIELDS)
        if e["status"] not in STATUSES:
            raise ChalkError(f"{where}: status must be one of {', '.join(STATUSES)}, got {e['status']!r}")
        for dtype, tf in e["tflops"].items():
            if dtype not in BYTES_PER_ELEMENT:
                raise ChalkError(f"{where}: unknown dtype {dtype!r} in tflops")
            catalog.require(where, {dtype: tf}, {dtype: float})
        chips[name] = Chip(
            name=name, vendor=e["vendor"], status=e["status"],
            peak_flops={d: float(v) * 1e12 for d, v in e["tflops"].items()},
            **_hbm(where, e), hbm_bandwidth=e["hbm_TBps"] * 1e12,
            scale_up_bandwidth=e["scale_up_GBps_per_direction"] * 1e9, scale_up_domain=e["scale_up_domain"],
            scale_out_bandwidth=_in_bytes(where, e, "scale_out"),
            source=e["source"], as_of=e["as_of"], note=e.get("note", ""),
            rental_usd_per_hour=_rental(where, e), rental_source=e.get("rental_source", ""),
            rental_as_of=e.get("rental_as_of", ""), **_allreduce(where, e),
        )
    return chips


def get(name: str) -> Chip:
    """The chip called ``name``; an unknown name raises an error listing the known chips."""
    return lookup("chip", name, catalog_chips(), param="chip")


def names() -> list[str]:
    return list(catalog_chips())
