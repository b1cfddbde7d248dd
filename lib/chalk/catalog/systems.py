"""Systems: a count of one catalog chip joined by one scale-up network (``data/systems.toml``).

Only the chip and the count are data; every total is computed from the chip's figures, so a
system can never disagree with its chip. A System offers the same properties as a Chip
(``flops``, ``hbm_capacity``, ``hbm_bandwidth``, ``intensity``, ``drain_time``), as totals.
"""
from dataclasses import dataclass
from functools import cache

from . import hardware
from .. import catalog
from ..errors import ChalkError, find, lookup, unknown


@dataclass(frozen=True)
class System:
    name: str
    display: str
    chip: hardware.Chip
    count: int
    source: str
    as_of: str
    note: str = ""

    def flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s of all chips together."""
        return self.count * self.chip.flops(dtype)

    @property
    def hbm_capacity(self) -> float:
        return self.count * self.chip.hbm_capacity

    @property
    def hbm_bandwidth(self) -> float:
        return self.count * self.chip.hbm_bandwidth

    @property
    def scale_up_bandwidth(self) -> float:
        """Sum over chips of each chip's scale-up bandwidth, per direction."""
        return self.count * self.chip.scale_up_bandwidth

    @property
    def scale_up_bandwidth_bidirectional(self) -> float:
        """Sent plus received over all chips: the figure vendors print (NVL72 "130 TB/s")."""
        return self.count * self.chip.scale_up_bandwidth_bidirectional

    @property
    def scale_out_bandwidth(self) -> float:
        """Sum over chips of each chip's scale-out (NIC/DCN) bandwidth per direction: the egress."""
        return self.count * self.chip.scale_out_bandwidth

    @property
    def scale_up_to_out(self) -> float:
        """How many times faster one chip sends over scale-up than over scale-out, both per direction."""
        return self.chip.scale_up_bandwidth / self.chip.scale_out_bandwidth

    def intensity(self, dtype: str = "bf16") -> float:
        """Same as the chip's: totals scale together."""
        return self.flops(dtype) / self.hbm_bandwidth

    @property
    def drain_time(self) -> float:
        return self.hbm_capacity / self.hbm_bandwidth

    @property
    def status(self) -> str:
        return self.chip.status


_FIELDS = {"display": str, "chip": str, "count": int}


@cache
def catalog_systems() -> dict[str, System]:
    systems = {}
    for name, e in catalog.load("systems.toml").items():
        where = f"systems.toml [{name}]"
        catalog.require(where, e, _FIELDS)
        chip = hardware.get(e["chip"])
        if e["count"] > chip.scale_up_domain:
            raise ChalkError(f"{where}: count {e['count']} exceeds {chip.name}'s scale-up domain "
                             f"of {chip.scale_up_domain} chips")
        systems[name] = System(name=name, display=e["display"], chip=chip, count=e["count"],
                               source=e["source"], as_of=e["as_of"], note=e.get("note", ""))
    return systems


def get(name: str) -> System:
    """The system called ``name``; an unknown name raises an error listing the known systems."""
    return lookup("system", name, catalog_systems(), param="system")


def names() -> list[str]:
    return list(catalog_systems())


def system_or_chip(name: str, param: str = "system"):
    """A system (``gb200-nvl72``) or else a chip (``H100-SXM``) by name, ignoring case; an unknown
    name is an error naming ``param``."""
    for table in (catalog_systems(), hardware.catalog_chips()):
        key = find(name, table)
        if key is not None:
            return table[key]
    raise unknown("system or chip", name, [*catalog_systems(), *hardware.catalog_chips()],
                  param=param, plural="systems and chips")


# --- published throughput beside the bound --------------------------------------------------------
@dataclass(frozen=True)
class Measurement:
    """Throughput a real engine published for one catalog model on one catalog system."""
    name: str
    display: str
    model: str
    system: System
    prefill_tokens_per_second_per_node: float
    decode_tokens_per_second_per_node: float
    source: str
    as_of: str
    input_tokens: int | None = None
    note: str = ""
    dtype: str | None = None
    """the weights' number format, where the source gives it"""
    prefill_nodes: int | None = None
    operator: str | None = None
    """the operators.toml entry whose figures these are, if any"""
    preset: str | None = None
    """the name under which ``chalk.efficiency`` offers this run's measured / bound ratio"""
    preset_phase: str | None = None

    def per_chip(self, phase: str) -> float:
        """Tokens per second per chip in ``phase`` ("prefill" input, "decode" output)."""
        if phase not in ("prefill", "decode"):
            raise ChalkError(f"phase must be 'prefill' or 'decode', got {phase!r}")
        return getattr(self, f"{phase}_tokens_per_second_per_node") / self.system.count


_MEASURED = {"display": str, "model": str, "system": str, "prefill_tokens_per_second_per_node": float,
             "decode_tokens_per_second_per_node": float}


def _preset_phase(where: str, e: dict) -> str | None:
    """A preset's phase, checked against what computing its ratio needs."""
    if "preset" not in e:
        return None
    needs = {"decode": ("operator",), "prefill": ("input_tokens", "dtype", "prefill_nodes")}
    phase = e.get("preset_phase")
    if phase not in needs:
        raise ChalkError(f"{where}: 'preset_phase' must be 'decode' or 'prefill', got {phase!r}")
    missing = [key for key in needs[phase] if key not in e]
    if missing:
        raise ChalkError(f"{where}: a {phase} preset needs {', '.join(map(repr, missing))}")
    return phase


@cache
def catalog_measurements() -> dict[str, Measurement]:
    from . import operators  # operators reads this module's systems: import it when first asked
    out = {}
    for name, e in catalog.load("measured.toml").items():
        where = f"measured.toml [{name}]"
        if "operator" in e:  # the figures an operator published, typed once in operators.toml
            op = operators.get(e["operator"])
            e = {"model": op.model.name, "system": op.system.name,
                 "prefill_tokens_per_second_per_node": op.prefill_tokens_per_second_per_node,
                 "decode_tokens_per_second_per_node": op.decode_tokens_per_second_per_node} | e
        catalog.require(where, e, _MEASURED)
        out[name] = Measurement(name=name, display=e["display"], model=e["model"], system=get(e["system"]),
                                prefill_tokens_per_second_per_node=float(e["prefill_tokens_per_second_per_node"]),
                                decode_tokens_per_second_per_node=float(e["decode_tokens_per_second_per_node"]),
                                source=e["source"], as_of=e["as_of"], input_tokens=e.get("input_tokens"),
                                note=e.get("note", ""), dtype=e.get("dtype"), prefill_nodes=e.get("prefill_nodes"),
                                operator=e.get("operator"), preset=e.get("preset"),
                                preset_phase=_preset_phase(where, e))
    return out


def measurements_for(model_name: str, chip: hardware.Chip) -> list[Measurement]:
    """Published runs of ``model_name`` on chips of ``chip``'s compute class: the same dense peak
    FLOP/s in every format (H100, H800 and H200 are one class; their HBM and links differ)."""
    return [m for m in catalog_measurements().values()
            if m.model == model_name and m.system.chip.peak_flops == chip.peak_flops]
