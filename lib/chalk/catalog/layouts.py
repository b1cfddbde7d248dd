"""Published training layouts (``data/layouts.toml``): the parallel degrees real runs used.

Chapter 3 sets them beside its parallelism table; the figures printed with them (data-parallel
degree, MFU, DeepSeek-V3's bandwidth ratio and expert counts) are there to be recomputed.
"""
from types import MappingProxyType

from .. import catalog
from ..errors import lookup
from . import models

_TABLE = catalog.load("layouts.toml")
for _name, _entry in _TABLE.items():
    _where = f"layouts.toml [{_name}]"
    catalog.require(_where, _entry, {"model": str, "chips": int})
    catalog.require(_where, _entry, {key: float for key, value in _entry.items()
                                     if key not in ("model", "source", "as_of", "note")})
    models.get(_entry["model"])

LAYOUTS = MappingProxyType({name: MappingProxyType(entry) for name, entry in _TABLE.items()})


def get(name: str):
    """The layout called ``name``; an unknown name lists the known ones."""
    return lookup("layout", name, LAYOUTS, param="layout")


def names() -> list[str]:
    return list(LAYOUTS)
