"""Seal an answer key for the package students install.

A sealed exercise keeps what the check shows (unit, tolerance, hints, points) and replaces every
value by the salted hashes of the grid cells that count as it (``chalk.teaching.exercises.cells``):
the cells of the right answer and of each typical mistake. The student's ``check`` hashes the
cell of the answer it is given and looks it up, so it still says right, wrong with the mistake's
hint, or wrong, without any file or function holding the expected value.

An exact exercise stores the hash of its integer (``=357``) as the right cell, and for each mistake
that of its rounded integer beside the cells of its band. A choice keeps its options' texts (the
check reads an answer given as text) and files each option's verdict and feedback, right or wrong,
under the option's salted hash, masked and padded to one length (``exercises.seal_entry``): no
file says which option is right, neither in plain form nor by which option lacks feedback.

What this does not stop, and cannot: trying values against ``check`` (or against the hashes, which
is the same search done faster) until one is accepted. The seal keeps the key from being read,
not from being found; ``book/instructors.md`` states this threat model.
"""
import json

from . import problems
from .chapters import chapter_modules
from .exercises import CHOICE, CHOICES, Choice, Exercise, cells, digest, problem_set, seal_entry, whole_cell
from ..errors import ChalkError

FORMAT = 2
"""Version of the sealed table's layout (2: kinds, choices and exact integers), read by nothing yet
but kept for a later change."""


def known_problem_sets() -> list[str]:
    """Chapters with an answer key, ``chalk.teaching.problems.chNN_name`` -> ``"NN_name"``."""
    return sorted(chapter_modules(problems))


def _seal_number(ex: Exercise, salt: str) -> dict:
    expected = ex.expected()

    def hashed(value: float, exact: bool = False) -> list[str]:
        found = {digest(salt, c) for c in cells(value, ex.rel_tol)}
        return sorted(found | {digest(salt, whole_cell(round(value)))} if exact else found)

    right = [digest(salt, whole_cell(ex.whole_expected()))] if ex.exact else hashed(expected)
    return {"unit": ex.unit, "rel_tol": ex.rel_tol, "judgement": ex.judgement, "exact": ex.exact, "right": right,
            "mistakes": [{"hint": m.hint, "cells": hashed(m.wrong_answer(expected), ex.exact)} for m in ex.mistakes]}


def _seal_choice(ex: Choice, salt: str) -> dict:
    size = max(len(json.dumps({"r": False, "f": f}).encode()) for f in [*ex.feedback.values(), ""])
    size = 64 * (size // 64 + 1)  # one length for every entry, whatever its feedback
    entries = {digest(salt, f"option|{x}"): seal_entry(salt, x, *ex.entry(x), size) for x in ex.options}
    return {"options": dict(ex.options), "entries": dict(sorted(entries.items()))}


def seal(chapter: str) -> dict:
    """The sealed table of ``chapter``'s key, as the student package stores it (JSON)."""
    exercises = []
    for ex in problem_set(chapter).values():
        if not isinstance(ex, (Exercise, Choice)):
            raise ChalkError(f"chapter {chapter}: the key is already sealed; seal from the instructor's key")
        salt = f"chalk/{chapter}/{ex.id}"
        common = {"id": ex.id, "kind": ex.kind, "hint": ex.hint, "points": ex.points, "topic": ex.topic, "salt": salt}
        exercises.append(common | (_seal_choice(ex, salt) if ex.kind in (CHOICE, CHOICES) else _seal_number(ex, salt)))
    return {"format": FORMAT, "chapter": chapter, "exercises": exercises}
