"""Chapter 5's published inputs (``data/overtraining.toml``): loss fits and the lecture's guesses.

A fit is the five constants of the Chinchilla loss, with the paper (and table) they come from; the
lecture's entry holds the round numbers behind its "about 100x over-trained", each a guess.
"""
from dataclasses import dataclass
from types import MappingProxyType

from .. import catalog
from ..errors import ChalkError

_FIT_FIELDS = {"display": str, "E0": float, "A": float, "B0": float, "alpha": float, "beta": float,
               "note": str}


@dataclass(frozen=True)
class Fit:
    """L(N, D) = E0 + A/N^alpha + B0/D^beta, nats per token."""
    name: str
    display: str
    E0: float
    A: float
    B0: float
    alpha: float
    beta: float
    note: str
    source: str
    as_of: str


def _fit(name: str, entry: dict) -> Fit:
    where = f"overtraining.toml [{name}]"
    catalog.require(where, entry, _FIT_FIELDS)
    return Fit(name=name, source=entry["source"], as_of=entry["as_of"],
               **{k: entry[k] if k in ("display", "note") else float(entry[k]) for k in _FIT_FIELDS})


_TABLE = catalog.load("overtraining.toml")
for _name, _entry in _TABLE.items():
    if _entry.get("kind") not in ("fit", "inputs", "reported"):
        raise ChalkError(f"overtraining.toml [{_name}]: kind must be 'fit', 'inputs' or 'reported', "
                         f"got {_entry.get('kind')!r}")

FITS = MappingProxyType({n: _fit(n, e) for n, e in _TABLE.items() if e["kind"] == "fit"})
"""The published loss fits by name: ``hoffmann``, ``hoffmann-rounded``, ``epoch``."""

_lecture = {k: v for k, v in _TABLE["lecture"].items() if k != "kind"}
catalog.require("overtraining.toml [lecture]", _lecture,
                {k: float for k in _lecture if k not in ("source", "as_of")})
LECTURE = MappingProxyType({k: v if k in ("source", "as_of") else float(v) for k, v in _lecture.items()})
"""The lecture's inputs to its over-training estimate (§6.2-6.4 of the notes), every one a guess."""

REPORTED = MappingProxyType({n: MappingProxyType({k: v if isinstance(v, str) else float(v) for k, v in e.items()
                                                  if k != "kind"})
                             for n, e in _TABLE.items() if e["kind"] == "reported"})
"""Compute-optimal points other labs report from their own fits: ``llama3-scaling-law``."""
