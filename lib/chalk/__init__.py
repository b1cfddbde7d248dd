"""Chalk: the formulas, hardware figures and model shapes behind the course.

Three layers, one package each, so a chapter's pieces are found from its topic name:

* maths, one module per chapter at the top: ``roofline`` (Chapter 1, batching; ``timetable`` is
  its serving-loop simulation, ``operator`` sets a real operator's published figures beside it),
  ``moe`` (2), ``pipeline`` (3), ``scaling`` (5), ``pricing`` (what API
  prices imply, 6), ``reversible`` (7); ``notation`` holds every symbol; ``calculator`` and
  ``python -m chalk`` are the engineer's entry points. No chapter module is imported with the
  package: ``calculator``, ``notation``, ``pricing`` and ``roofline`` load when first read as
  ``chalk.roofline``, the others when imported by name (``from chalk import scaling``), so that
  ``import chalk`` and ``python -m chalk --help`` stay quick.
* ``catalog``: the data (chips, systems, models, prices, storage tiers, quoted figures), each
  entry with its source and date.
* ``figures``: figures, live explorers and their static twins for the website.
* ``teaching``: exercises and their keys, student edition, grading, flashcards, decks, review.

``chalk.hardware``, ``chalk.systems``, ``chalk.models`` and ``chalk.prices`` are the catalog's
modules under their short names, as the course and its users have always called them.
"""
import importlib
import sys

from .catalog import hardware, models, prices, systems
from .errors import ChalkError, DoesNotFit, UnknownName

for _module in (hardware, models, prices, systems):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module
del _module

_ON_FIRST_USE = ("calculator", "notation", "pricing", "roofline")
"""Submodules built on SymPy: imported when first named (``chalk.roofline``, PEP 562), so that
``python -m chalk --help`` and ``list`` never load SymPy. ``from chalk import roofline`` imports a
submodule by itself."""


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE))

__all__ = ["calculator", "hardware", "models", "notation", "prices", "pricing", "roofline", "systems",
           "ChalkError", "DoesNotFit", "UnknownName"]
