"""Chapter 4's published inputs (``data/memory.toml``): memory's share of an accelerator's cost,
training recipes in bytes per parameter, the latencies that bound a pipeline hop, published
serving layouts and the lecture's round numbers, each with its source and date.

``chalk.catalog.reference`` renders them for the reference pages and ``python -m chalk list``.
"""
from dataclasses import dataclass
from types import MappingProxyType

from .. import catalog
from ..errors import ChalkError, lookup
from . import models

KINDS = ("cost_share", "spending", "recipe", "latency", "deployment", "lecture")
_COMPONENTS = ("hbm", "packaging", "auxiliary", "logic")


@dataclass(frozen=True)
class Recipe:
    """Bytes one parameter costs in training: its working copy, its gradient and its optimizer
    state (the FP32 master copy included, as ZeRO counts it)."""
    name: str
    display: str
    weights: float
    gradients: float
    optimizer: float
    estimate: bool
    source: str
    as_of: str
    note: str

    @property
    def bytes_per_param(self) -> float:
        return self.weights + self.gradients + self.optimizer


@dataclass(frozen=True)
class CostShare:
    """Each component's share of AI accelerator component spending in one quarter."""
    name: str
    display: str
    period: str
    shares: MappingProxyType
    """hbm, packaging, auxiliary, logic: fractions that sum to 1."""
    estimate: bool
    source: str
    as_of: str
    note: str
    hbm_range: tuple[float, float] | None = None


def _numbers(where: str, entry: dict) -> None:
    """Every number of an entry positive; every list a list of positive numbers of one length."""
    lists = {k: v for k, v in entry.items() if isinstance(v, list)}
    for key, values in lists.items():
        if not values or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in values):
            raise ChalkError(f"{where}: '{key}' must be a list of numbers > 0")
    if len({len(v) for v in lists.values()}) > 1:
        raise ChalkError(f"{where}: the lists {sorted(lists)} must have one length")
    catalog.require(where, entry, {k: float for k, v in entry.items()
                                   if isinstance(v, (int, float)) and not isinstance(v, bool)})


def _load():
    table = catalog.load("memory.toml")
    out = {kind: {} for kind in KINDS}
    for name, e in table.items():
        where = f"memory.toml [{name}]"
        catalog.require(where, e, {"kind": str, "display": str, "estimate": bool})
        if e["kind"] not in KINDS:
            raise ChalkError(f"{where}: kind must be one of {', '.join(KINDS)}, got {e['kind']!r}")
        _numbers(where, e)
        out[e["kind"]][name] = e
    return out


_BY_KIND = _load()


def _recipe(name: str, e: dict) -> Recipe:
    catalog.require(f"memory.toml [{name}]", e, {"weights": float, "gradients": float, "optimizer": float})
    return Recipe(name, e["display"], float(e["weights"]), float(e["gradients"]), float(e["optimizer"]),
                  e["estimate"], e["source"], e["as_of"], e.get("note", ""))


def _share(name: str, e: dict) -> CostShare:
    where = f"memory.toml [{name}]"
    catalog.require(where, e, {c: float for c in _COMPONENTS} | {"period": str})
    shares = {c: float(e[c]) for c in _COMPONENTS}
    if abs(sum(shares.values()) - 1) > 0.005:
        raise ChalkError(f"{where}: the component shares must sum to 1, got {sum(shares.values()):.3f}")
    band = (float(e["hbm_low"]), float(e["hbm_high"])) if "hbm_low" in e else None
    if band and not band[0] <= shares["hbm"] <= band[1]:
        raise ChalkError(f"{where}: hbm {shares['hbm']} lies outside its range {band}")
    return CostShare(name, e["display"], e["period"], MappingProxyType(shares), e["estimate"], e["source"],
                     e["as_of"], e.get("note", ""), band)


RECIPES = MappingProxyType({n: _recipe(n, e) for n, e in _BY_KIND["recipe"].items()})
"""Training recipes by name: bytes per parameter of weights, gradients and optimizer state."""
COST_SHARES = MappingProxyType({n: _share(n, e) for n, e in _BY_KIND["cost_share"].items()})
"""Memory's (and the other components') share of accelerator component spending, by quarter."""
SPENDING = MappingProxyType(_BY_KIND["spending"]["epoch-component-spend"])
"""Epoch AI's yearly component spending (USD billions): hbm_2024, total_2024, hbm_2025, total_2025."""
LATENCIES = MappingProxyType({n: MappingProxyType(e) for n, e in _BY_KIND["latency"].items()})
"""Published figures that bound one rack-to-rack hop: NCCL's network-step model, DeepEP's timings."""
DEPLOYMENTS = MappingProxyType({n: MappingProxyType(e) for n, e in _BY_KIND["deployment"].items()})
"""Published serving layouts: GPUs, expert, tensor and pipeline degrees."""
LECTURE = MappingProxyType(_BY_KIND["lecture"]["lecture"])
"""The lecture's round numbers for this segment (capex share, E and P of its example, hop estimate)."""

for _name, _entry in DEPLOYMENTS.items():
    models.get(_entry["model"])


def recipe(name) -> Recipe:
    """The training recipe called ``name`` (or a Recipe, returned as is); an unknown name lists the known."""
    if isinstance(name, Recipe):
        return name
    return lookup("training recipe", name, RECIPES, param="recipe")


def deployment(name: str):
    return lookup("deployment", name, DEPLOYMENTS, param="deployment")


def latency(name: str):
    return lookup("latency figure", name, LATENCIES, param="name")
