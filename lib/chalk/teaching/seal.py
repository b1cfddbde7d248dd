"""Seal an answer key for the package students install.

A sealed exercise keeps what the check shows (unit, tolerance, hints, points) and replaces every
value by the salted hashes of the grid cells that count as it (``chalk.teaching.exercises.cells``):
the cells of the right answer and of each typical mistake. The student's ``check`` hashes the
cell of the answer it is given and looks it up, so it still says right, wrong with the mistake's
hint, or wrong, without any file or function holding the expected value.

What this does not stop, and cannot: trying values against ``check`` (or against the hashes, which
is the same search done faster) until one is accepted. The seal keeps the key from being read,
not from being found; ``book/instructors.md`` states this threat model.
"""
from . import problems
from .chapters import chapter_modules
from .exercises import Exercise, cells, digest, problem_set
from ..errors import ChalkError

FORMAT = 1
"""Version of the sealed table's layout, read by nothing yet but kept for a later change."""


def known_problem_sets() -> list[str]:
    """Chapters with an answer key, ``chalk.teaching.problems.chNN_name`` -> ``"NN_name"``."""
    return sorted(chapter_modules(problems))


def seal(chapter: str) -> dict:
    """The sealed table of ``chapter``'s key, as the student package stores it (JSON)."""
    exercises = []
    for ex in problem_set(chapter).values():
        if not isinstance(ex, Exercise):
            raise ChalkError(f"chapter {chapter}: the key is already sealed; seal from the instructor's key")
        expected = ex.expected()
        salt = f"chalk/{chapter}/{ex.id}"

        def hashed(value: float) -> list[str]:
            return sorted({digest(salt, c) for c in cells(value, ex.rel_tol)})

        exercises.append({
            "id": ex.id, "unit": ex.unit, "rel_tol": ex.rel_tol, "hint": ex.hint, "points": ex.points,
            "salt": salt, "right": hashed(expected),
            "mistakes": [{"hint": m.hint, "cells": hashed(m.wrong_answer(expected))} for m in ex.mistakes],
        })
    return {"format": FORMAT, "chapter": chapter, "exercises": exercises}
