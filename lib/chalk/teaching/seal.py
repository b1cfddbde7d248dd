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

A number's cells are hashed under a key that scrypt derives from the cell's bucket (one
tolerance wide) with a per-problem-set salt (``exercises.sealed_digest``, cost ``exercises.KDF``):
a ``check`` pays one derivation, and so does every value a search tries, in the notebook or
offline against the wheel's tables. A choice's few options are filed under fast hashes: trying
them all is as cheap as asking the check, whatever the hash.

What this does not stop, and cannot: trying values until one is accepted. The seal keeps the key
from being read and makes finding it cost what asking the check costs; ``book/instructors.md``
states this threat model and the measured cost.

Sealing pays one derivation per bucket stored (a few per exercise), so ``seal`` keeps each
chapter's table in the user's cache (``CACHE``), named by a hash of everything it is made from:
the edition, the grader, the tests and any copy of the repository reseal a chapter only when its
key changes.
"""
import hashlib
import json
import os
from pathlib import Path

from . import problems
from .chapters import chapter_modules
from .exercises import (CHOICE, CHOICES, KDF, Choice, Exercise, cells, digest, problem_set, seal_entry,
                        sealed_digest, whole_cell)
from ..errors import ChalkError

FORMAT = 3
"""Version of the sealed table's layout (2: kinds, choices and exact integers; 3: numbers' cells
under scrypt, ``kdf`` recorded)."""
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chalk" / "seal"
"""Sealed tables by content: what the wheel holds, shared by every checkout of this user's."""


def known_problem_sets() -> list[str]:
    """Chapters with an answer key, ``chalk.teaching.problems.chNN_name`` -> ``"NN_name"``."""
    return sorted(chapter_modules(problems))


def _seal_number(ex: Exercise, salt: str, hashing) -> dict:
    expected = ex.expected()

    def hashed(value: float, exact: bool = False) -> list[str]:
        found = {hashing(salt, c) for c in cells(value, ex.rel_tol)}
        return sorted(found | {hashing(salt, whole_cell(round(value)))} if exact else found)

    right = [hashing(salt, whole_cell(ex.whole_expected()))] if ex.exact else hashed(expected)
    return {"unit": ex.unit, "rel_tol": ex.rel_tol, "judgement": ex.judgement, "exact": ex.exact, "right": right,
            "mistakes": [{"hint": m.hint, "cells": hashed(m.wrong_answer(expected), ex.exact)} for m in ex.mistakes]}


def _seal_choice(ex: Choice, salt: str) -> dict:
    size = max(len(json.dumps({"r": False, "f": f}).encode()) for f in [*ex.feedback.values(), ""])
    size = 64 * (size // 64 + 1)  # one length for every entry, whatever its feedback
    entries = {digest(salt, f"option|{x}"): seal_entry(salt, x, *ex.entry(x), size) for x in ex.options}
    return {"options": dict(ex.options), "entries": dict(sorted(entries.items()))}


def _table(chapter: str, hashing) -> dict:
    """The sealed table of ``chapter``'s key, with ``hashing`` naming a number's cell
    (``sealed_digest``; ``seal`` passes a plain one to name the table in its cache)."""
    exercises = []
    for ex in problem_set(chapter).values():
        if not isinstance(ex, (Exercise, Choice)):
            raise ChalkError(f"chapter {chapter}: the key is already sealed; seal from the instructor's key")
        salt = f"chalk/{chapter}/{ex.id}"
        common = {"id": ex.id, "kind": ex.kind, "hint": ex.hint, "points": ex.points, "topic": ex.topic, "salt": salt}
        exercises.append(common | (_seal_choice(ex, salt) if ex.kind in (CHOICE, CHOICES)
                                   else _seal_number(ex, salt, hashing)))
    return {"format": FORMAT, "chapter": chapter, "kdf": kdf_text(), "exercises": exercises}


def kdf_text() -> str:
    """``KDF`` as the table records it: text, so that a table's only numbers stay its tolerances and points."""
    return "scrypt " + ",".join(f"{k}={v}" for k, v in KDF.items())


def seal(chapter: str) -> dict:
    """The sealed table of ``chapter``'s key, as the student package stores it (JSON); from
    ``CACHE`` when the same key was sealed before with the same cost.

    The cache entry is named by the SHA-256 of the table with every cell in plain form, which only
    the instructor's machine computes; it holds what the wheel holds and nothing more."""
    plain = json.dumps(_table(chapter, lambda salt, name: f"{salt}|{name}"), sort_keys=True)
    name = hashlib.sha256(plain.encode()).hexdigest()[:32]
    path = CACHE / f"{chapter}-{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    table = _table(chapter, sealed_digest)
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        for old in CACHE.glob(f"{chapter}-*.json"):
            old.unlink(missing_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table), encoding="utf-8")
        tmp.replace(path)  # whole or absent, when two processes seal at once
    except OSError:
        pass  # a read-only checkout seals every time
    return table
