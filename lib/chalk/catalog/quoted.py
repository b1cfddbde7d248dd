"""Figures quoted from the lecture and from papers (``data/quoted.toml``), each with its source.

The chapters set these beside what the catalog computes, so each lives here once: a notebook, an
answer key or a flashcard that needs the lecture's "about 300" reads it from ``LECTURE``.
"""
from types import MappingProxyType

from .. import catalog

_TABLE = catalog.load("quoted.toml")
for _name, _entry in _TABLE.items():
    catalog.require(f"quoted.toml [{_name}]", _entry,
                    {k: float for k in _entry if k not in ("source", "as_of")})

LECTURE = MappingProxyType(_TABLE["lecture"])
"""The lecture's round numbers: usd_per_chip_hour, hardware_ratio, step_ms, DeepSeek-V3 experts."""
CLARK2022 = MappingProxyType(_TABLE["clark2022-routed"])
"""Clark et al. (2022): a routed model of ``experts`` experts with ``active_params`` per token
matched a dense model of ``dense_params``."""

FLASHMLA = MappingProxyType(_TABLE["flashmla-h800"])
"""FlashMLA's write-up: the H800's sustained BF16 rate under clock throttling."""

USD_PER_CHIP_HOUR = float(LECTURE["usd_per_chip_hour"])
"""The default rental rate wherever a price per token is shown: the lecture's."""
