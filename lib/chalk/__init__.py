"""Chalk: the formulas, hardware figures and model shapes behind the course.

Modules: ``notation`` (symbols), ``hardware`` and ``models`` (catalog data), ``roofline``
(decode-step bounds, Chapter 1).
"""
from . import hardware, models, notation, roofline
from .errors import ChalkError, DoesNotFit, UnknownName

__all__ = ["hardware", "models", "notation", "roofline", "ChalkError", "DoesNotFit", "UnknownName"]
