"""Answer checking for the problem sets.

An exercise's id is also the name of the variable that holds the student's answer, so the check
cell (``check("balance_h100", balance_h100)``), the instructor's key and the grader's score
table all use one name. Expected values are computed from ``chalk`` formulas, never typed.

Each chapter registers its exercises in ``chalk.teaching.problems.<chapter>``; ``checker(chapter)``
returns the ``check`` function a problem set imports. The package a student installs has no
``problems``: it carries each chapter's key *sealed* (``chalk.teaching.seal``), and ``checker``
judges against that instead, with the same verdicts.

"Within ``rel_tol`` of a value" is decided on a fixed grid: an answer is close to a value when the
centre of the answer's grid cell lies within ``rel_tol`` of it. The cells are narrow (a tenth of
the tolerance, in log space), so this is the stated tolerance to within a twentieth of it; and
because it only asks which cell an answer falls in, a sealed key (the cells' salted hashes) gives
exactly the verdicts of the plain key, in the student's notebook and in the grader.
"""
import hashlib
import importlib
import json
import math
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ChalkError, lookup

RIGHT, WRONG, UNANSWERED = "right", "wrong", "unanswered"
STATUS_WORD = {RIGHT: "right", WRONG: "wrong", UNANSWERED: "not answered"}
"""The one word a student reads for each status."""
CHECK_LOG = "CHALK_CHECK_LOG"
"""Environment variable the grader sets: each ``check`` call is appended to that file, so the
grader grades the value a check cell was given, even when the kernel dies afterwards."""
CELLS_PER_TOLERANCE = 10
"""Grid cells per tolerance (in log space): the accepted band's edges sit within half a cell,
a twentieth of the tolerance, of the stated ones."""
SEALED_DIR = Path(__file__).resolve().parent / "sealed"
"""Where the student package keeps the sealed keys, ``<chapter>.json``; absent in the repository."""


# --- closeness on a grid --------------------------------------------------------------------
def _step(rel_tol: float) -> float:
    if not 0 < rel_tol < 1:
        raise ChalkError(f"rel_tol must be between 0 and 1 (exclusive), got {rel_tol!r}")
    return math.log1p(rel_tol) / CELLS_PER_TOLERANCE


def cell(answer: float, rel_tol: float) -> str:
    """The grid cell ``answer`` falls in: its sign and the index of ``log|answer|`` in steps of
    ``log(1 + rel_tol) / 10``. The grid does not depend on any key."""
    if answer == 0:
        return "0"
    return f"{'-' if answer < 0 else '+'}{math.floor(math.log(abs(answer)) / _step(rel_tol))}"


def _centre(name: str, rel_tol: float) -> float:
    if name == "0":
        return 0.0
    try:
        value = math.exp((int(name[1:]) + 0.5) * _step(rel_tol))
    except OverflowError:  # an answer within a cell of the largest float
        value = math.inf
    return -value if name[0] == "-" else value


def _within(centre: float, value: float, rel_tol: float) -> bool:
    return abs(centre - value) <= rel_tol * abs(value) if value != 0 else centre == 0


def close(answer: float, value: float, rel_tol: float) -> bool:
    """Whether ``answer`` counts as ``value``: its cell's centre lies within ``rel_tol`` of it."""
    return _within(_centre(cell(answer, rel_tol), rel_tol), value, rel_tol)


def cells(value: float, rel_tol: float) -> list[str]:
    """Every cell whose answers count as ``value``: what a sealed key stores, hashed."""
    if value == 0:
        return ["0"]
    step, sign = _step(rel_tol), "-" if value < 0 else "+"
    low, high = (math.floor(math.log(abs(value) * f) / step) for f in (1 - rel_tol, 1 + rel_tol))
    return [c for k in range(low, high + 1) if _within(_centre(c := f"{sign}{k}", rel_tol), value, rel_tol)]


def digest(salt: str, name: str) -> str:
    """A cell's salted hash as a sealed key stores it (64 bits: collisions are out of reach)."""
    return hashlib.sha256(f"{salt}|{name}".encode()).hexdigest()[:16]


def tolerance_text(rel_tol: float) -> str:
    return f"within {rel_tol:.0%}" if rel_tol >= 0.01 else f"within {rel_tol:.1%}" if rel_tol >= 1e-3 \
        else f"within {rel_tol:.0e} (relative)"


# --- exercises ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: ``expected * factor`` (or ``value()``), and the hint it earns."""
    hint: str
    factor: float | None = None
    value: Callable[[], float] | None = None

    def wrong_answer(self, expected: float) -> float:
        return self.value() if self.value else expected * self.factor


@dataclass(frozen=True)
class Exercise:
    """One exercise of an answer key; ``points`` weighs it in the grades (1 unless the key says)."""
    id: str
    expected: Callable[[], float]
    unit: str
    rel_tol: float
    hint: str
    mistakes: tuple[Mistake, ...] = field(default=())
    points: float = 1.0

    def tolerance_text(self) -> str:
        return tolerance_text(self.rel_tol)

    def verdict(self, answer: float) -> bool | str | None:
        """True if ``answer`` is right, a mistake's hint if it is that mistake, else None."""
        expected = self.expected()
        if close(answer, expected, self.rel_tol):
            return True
        for m in self.mistakes:
            if close(answer, m.wrong_answer(expected), self.rel_tol):
                return m.hint
        return None


@dataclass(frozen=True)
class SealedExercise:
    """An exercise as the student package carries it: the cells of the right answer and of each
    typical mistake, hashed, so that no file or function gives the expected value."""
    id: str
    unit: str
    rel_tol: float
    hint: str
    salt: str
    right: frozenset[str]
    mistakes: tuple[tuple[str, frozenset[str]], ...] = ()
    points: float = 1.0

    def tolerance_text(self) -> str:
        return tolerance_text(self.rel_tol)

    def verdict(self, answer: float) -> bool | str | None:
        mine = digest(self.salt, cell(answer, self.rel_tol))
        if mine in self.right:
            return True
        return next((hint for hint, hashed in self.mistakes if mine in hashed), None)


def answer_text(x: float) -> str:
    """The student's answer as feedback shows it: grouped digits, at most 6 significant."""
    return f"{x:,.6g}" if 1e-4 <= abs(x) < 1e15 else f"{x:.6g}"


def markdown_literal(text: str) -> str:
    """``text`` shown as written in Markdown: "$" would open inline maths in JupyterLab and on
    most Markdown viewers an instructor hands feedback out with; "\\$" is a literal dollar there."""
    return text.replace("$", "\\$")


@dataclass(frozen=True)
class Result:
    id: str
    status: str
    message: str
    """What follows the status word: the student's value, unit and tolerance, and a hint."""
    answer: float | None = None

    def _repr_markdown_(self) -> str:
        # Dingbats that common text fonts carry, so no emoji font is needed to show them.
        icon = {RIGHT: "✔", WRONG: "✘", UNANSWERED: "✎"}[self.status]
        return f"{icon} **{STATUS_WORD[self.status]}** · `{self.id}`: {markdown_literal(self.message)}"

    def __repr__(self) -> str:
        return f"[{self.status}] {self.id}: {self.message}"


def judge(exercise: Exercise | SealedExercise, answer) -> Result:
    """Compare ``answer`` with the key; name the typical mistake when the answer matches one."""
    ex = exercise
    wanted = f"{ex.unit}, {ex.tolerance_text()}"
    if answer is ... or answer is None:
        return Result(ex.id, UNANSWERED, f"set `{ex.id}` to a number ({wanted})")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return Result(ex.id, WRONG, f"expected a finite number ({wanted}), got {answer!r:.60}")
    value = float(answer)
    given = f"{answer_text(value)} ({ex.unit})"
    verdict = ex.verdict(value)
    if verdict is True:
        return Result(ex.id, RIGHT, f"{given} is {ex.tolerance_text()} of the answer", value)
    hint = f"A typical slip: {verdict}" if verdict else f"Hint: {ex.hint}"
    return Result(ex.id, WRONG, f"{given} is not {ex.tolerance_text()} of the answer. {hint}", value)


# --- problem sets ---------------------------------------------------------------------------
def sealed_exercises(table: dict) -> dict[str, SealedExercise]:
    """The exercises of a sealed table (``chalk.teaching.seal.seal``), keyed by id."""
    return {e["id"]: SealedExercise(
        id=e["id"], unit=e["unit"], rel_tol=e["rel_tol"], hint=e["hint"], salt=e["salt"],
        right=frozenset(e["right"]), points=e["points"],
        mistakes=tuple((m["hint"], frozenset(m["cells"])) for m in e["mistakes"]))
        for e in table["exercises"]}


def _sealed(chapter: str) -> dict[str, SealedExercise]:
    path = SEALED_DIR / f"{chapter}.json"
    if not path.is_file():
        known = sorted(p.stem for p in SEALED_DIR.glob("*.json"))
        raise ChalkError(f"chapter: no problem set {chapter!r}; known: {', '.join(known) or 'none'}")
    return sealed_exercises(json.loads(path.read_text(encoding="utf-8")))


def problem_set(chapter: str) -> dict[str, Exercise | SealedExercise]:
    """The exercises of ``chapter`` (e.g. ``"01_batching"``), keyed by id: the instructor's key
    where ``chalk.teaching.problems`` exists, else the sealed key the student package carries."""
    name = f"chalk.teaching.problems.ch{chapter}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name not in (name, "chalk.teaching.problems"):
            raise  # the key exists but imports something missing: that is the key's bug
        if err.name == name and not SEALED_DIR.is_dir():
            raise ChalkError(f"chapter: no problem set {chapter!r}") from None
        return _sealed(chapter)
    exercises = {}
    for ex in module.EXERCISES:
        if ex.id in exercises:
            raise ChalkError(f"chapter {chapter}: exercise id {ex.id!r} is defined twice")
        exercises[ex.id] = ex
    return exercises


def answer_record(value):
    """An answer as the grader stores it: a float, None (unanswered), or a description of what
    else it was, so that the grader's ``judge`` sees what the notebook's ``check`` saw."""
    if value is None or value is ...:
        return None
    if isinstance(value, bool):
        return {"bool": value}
    try:
        if isinstance(value, numbers.Real):
            return float(value)
        return {"repr": repr(value)[:200]}
    except Exception as err:  # a student's object whose repr or float raises
        return {"repr": f"<unreadable: {type(err).__name__}>"}


def record_value(record):
    """The inverse of ``answer_record`` as far as ``judge`` needs: a number, None, or a stand-in."""
    if isinstance(record, dict):
        return record.get("bool", record.get("repr"))  # {"missing": true} -> None: unanswered
    return record


def _log_check(exercise_id: str, answer) -> None:
    path = os.environ.get(CHECK_LOG)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"id": exercise_id, "answer": answer_record(answer)}) + "\n")


def checker(chapter: str) -> Callable[[str, object], Result]:
    """The ``check(id, answer)`` function a problem set calls after each answer cell."""
    exercises = problem_set(chapter)

    def check(exercise_id: str, answer) -> Result:
        result = judge(lookup("exercise", exercise_id, exercises, param="exercise_id"), answer)
        _log_check(exercise_id, answer)
        return result

    return check
