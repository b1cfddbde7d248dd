"""Chalk: the formulas, hardware figures and model shapes behind the course.

Modules: ``notation`` (symbols), ``hardware``, ``systems``, ``models`` and ``prices`` (catalog
data), ``quoted`` (the lecture's round numbers and the paper results the chapters quote),
``roofline`` (decode-step bounds, Chapter 1), ``calculator`` (fit, passes and money on any chip
or system; ``python -m chalk``).
"""
from . import calculator, hardware, models, notation, prices, roofline, systems
from .errors import ChalkError, DoesNotFit, UnknownName

__all__ = ["calculator", "hardware", "models", "notation", "prices", "roofline", "systems",
           "ChalkError", "DoesNotFit", "UnknownName"]
