"""Chapter 2's published figures that need no SymPy: DeepSeek-V3's expert-parallel deployments and
NVIDIA's scale-up domains by generation (``data/quoted.toml``, the systems catalog), evaluated with
``moe_numeric``, the plain-Python form of ``chalk.moe``'s formulas. ``chalk.moe`` re-exports them;
living here, ``python -m chalk list deployments`` prints them without importing SymPy."""
from dataclasses import dataclass
from types import MappingProxyType

from .. import catalog
from ..defaults import HEADROOM
from ..errors import in_range
from . import hardware, models, moe_numeric, systems

QUOTED = catalog.load("quoted.toml")


def quoted(name: str) -> MappingProxyType:
    """One entry of ``data/quoted.toml``, its numbers checked."""
    entry = QUOTED[name]
    catalog.require(f"quoted.toml [{name}]", entry, {key: float for key in entry if key not in ("source", "as_of")})
    return MappingProxyType(entry)


LECTURE = quoted("lecture-moe")
"""The lecture's figures of this segment: 64 expert chips, the 640 GB Hopper box, the 10-20 TB
Blackwell rack and its 5 T-parameter model, Rubin's "500-something" and its "genuine 4x"."""
ROADMAP = quoted("nvidia-gtc2025-roadmap")
"""Dies per package (Blackwell, Rubin, Rubin Ultra) and the announced Rubin Ultra NVL576 domain."""
NVLINK_SIGNALLING = quoted("nvlink-signalling")
COPPER_REACH = {int(e["lane_Gbps"]): float(e["reach_m"]) for e in map(quoted, ("copper-reach-50g", "copper-reach-100g"))}
"""Published reach of passive copper cable (metres) by lane rate (Gb/s)."""


@dataclass(frozen=True)
class Deployment:
    """A published expert-parallel deployment of DeepSeek-V3 (``quoted.toml``, ``deployment-*``)."""
    name: str
    chips: int
    nodes: int
    redundant: int
    printed_experts_per_chip: int
    source: str
    as_of: str = ""

    @property
    def experts_per_chip(self) -> int:
        """What chalk computes for it (``moe.experts_per_chip_expr``), to set beside the printed figure."""
        n_exp = models.get("deepseek-v3").moe["n_routed_experts"]
        return int(moe_numeric.EXPERTS_PER_CHIP(E=self.chips, n_exp=n_exp, n_red=self.redundant))


def deployments() -> list[Deployment]:
    """Every published DeepSeek-V3 deployment in the catalog."""
    out = []
    for name in QUOTED:
        if name.startswith("deployment-"):
            e = quoted(name)
            out.append(Deployment(name.removeprefix("deployment-"), int(e["chips"]), int(e["nodes"]),
                                  int(e["redundant"]), int(e["printed_experts_per_chip"]), e["source"], e["as_of"]))
    return out


@dataclass(frozen=True)
class Domain:
    """One scale-up domain as its vendor sells it: GPU packages, dies per package, HBM."""
    name: str
    packages: int
    dies_per_package: int
    hbm_per_package: float
    """bytes (as the chip reports them, where the catalog holds a report)"""
    status: str

    @property
    def dies(self) -> int:
        """The count NVIDIA's names use from Rubin on ("NVL576" = 144 packages x 4 dies)."""
        return self.packages * self.dies_per_package

    @property
    def hbm(self) -> float:
        return self.packages * self.hbm_per_package

    def max_total_params(self, dtype="bf16", headroom=HEADROOM) -> float:
        """The most parameters whose weights fit in the domain's HBM, ``headroom`` kept free
        (``moe.max_total_params_expr``)."""
        in_range("headroom", headroom, 0, 0.99)
        return float(moe_numeric.MAX_TOTAL_PARAMS(C=self.hbm_per_package * (1 - headroom), S=self.packages,
                                                  b_w=hardware.bytes_per_weight(dtype)))


_DIES = {"H100-SXM": "hopper", "GB200": "blackwell", "GB300": "blackwell", "Rubin": "rubin"}


def domain_growth() -> list[Domain]:
    """NVIDIA's scale-up domains by generation: Hopper's 8-GPU box, the Blackwell and Rubin racks
    from the catalog, and the announced Rubin Ultra NVL576 (GTC 2025)."""
    out = []
    for name in ("hgx-h100", "gb200-nvl72", "gb300-nvl72", "vera-rubin-nvl72"):
        sys_ = systems.get(name)
        family = _DIES[sys_.chip.name]
        dies = quoted("hopper-dies")["dies_per_package"] if family == "hopper" else ROADMAP[f"{family}_dies_per_package"]
        out.append(Domain(sys_.display, sys_.count, int(dies), sys_.chip.hbm_capacity, sys_.status))
    out.append(Domain("Rubin Ultra NVL576 (as announced)", int(ROADMAP["rubin_ultra_packages"]),
                      int(ROADMAP["rubin_ultra_dies_per_package"]), 1e9 * ROADMAP["rubin_ultra_hbm_GB_per_package"],
                      "announced"))
    return out
