"""Efficiency presets: how far a published run landed from chalk's bound, at the run's own operating point.

A preset's value is measured throughput over the roofline's for the same model, chips, number
format and workload (``catalog/data/measured.toml`` names which runs are presets and for which
phase). Used as ``--efficiency`` in ``python -m chalk serve``, it sets both the MFU and the memory
efficiency of that phase's pass, so the bound's step takes 1/value as long: at the run's own
operating point that reproduces the published throughput. Elsewhere it is an assumption, that
another model or chip lands as far from its bound.

* decode: the operator's published output per node against the bound at the batch Little's law
  gives and the published context (``chalk.operator.decode_efficiency``);
* prefill: the published input tokens per chip against the bound's ceiling at the published prompt
  length, its compute time alone (the batch is not published, and no batch makes the bound faster).
"""
from dataclasses import dataclass
from functools import cache

from .catalog import systems
from .errors import ChalkError


@dataclass(frozen=True)
class Preset:
    name: str
    phase: str
    value: float
    """measured / bound at the run's own operating point"""
    measurement: systems.Measurement
    point: str
    """the operating point the ratio is taken at, in words"""

    @property
    def cited(self) -> str:
        m = self.measurement
        return f"{m.display}; {m.source} ({m.as_of})"


def _decode(m: systems.Measurement) -> tuple[float, str]:
    from . import operator  # builds the MoE machinery: only when a preset is asked for
    batch_per_gpu, context, point = operator.roofline_point(m.operator)
    gpus = point.chips
    return operator.decode_efficiency(m.operator), (f"{batch_per_gpu:,.0f} sequences per GPU (Little's law) at "
                                                    f"{context:,.0f} tokens of context, {gpus} {m.system.chip.name}s")


def _prefill(m: systems.Measurement) -> tuple[float, str]:
    from . import calculator
    chips = m.prefill_nodes * m.system.count
    point = calculator.prefill(m.model, m.system.chip.name, 1, m.input_tokens, dtype=m.dtype, chips=chips)
    ceiling = point.n / point.t_compute / chips  # compute time is linear in the batch: any batch gives it
    return m.per_chip("prefill") / ceiling, (f"{m.input_tokens:,}-token prompts in {m.dtype}, against the bound's "
                                             f"compute ceiling ({ceiling:,.0f} tokens/s per {m.system.chip.name})")


@cache
def presets() -> dict[str, Preset]:
    """Every preset in the catalog, by name."""
    out = {}
    for m in systems.catalog_measurements().values():
        if m.preset is not None:
            value, point = (_decode if m.preset_phase == "decode" else _prefill)(m)
            out[m.preset] = Preset(m.preset, m.preset_phase, value, m, point)
    return out


def listing() -> str:
    """The presets, one per paragraph: name, phase, value, what it was measured on, source and date."""
    return "\n".join(f"  {p.name}: {p.phase} efficiency {p.value:.3g}, {p.point}\n    {p.cited}"
                     for p in presets().values())


def get(name: str) -> Preset:
    """The preset ``name``; an unknown name is a ChalkError listing the valid ones."""
    table = presets()
    if name not in table:
        raise ChalkError(f"efficiency: {name!r} is neither a number in (0, 1] nor a preset; the presets are "
                         f"{', '.join(table)}:\n{listing()}")
    return table[name]
