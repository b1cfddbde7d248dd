"""Answer checking for the problem sets.

An exercise's id is also the name of the variable that holds the student's answer, so the check
cell (``check("balance_h100", balance_h100)``), the instructor's key and the grader's score
table all use one name. Expected values are computed from ``chalk`` formulas, never typed.

Each chapter registers its exercises in ``chalk.teaching.problems.<chapter>``; ``checker(chapter)`` returns
the ``check`` function a problem set imports.
"""
import importlib
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ChalkError, lookup

RIGHT, WRONG, UNANSWERED = "right", "wrong", "unanswered"


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
    id: str
    expected: Callable[[], float]
    unit: str
    rel_tol: float
    hint: str
    mistakes: tuple[Mistake, ...] = field(default=())

    def tolerance_text(self) -> str:
        return f"within {self.rel_tol:.0%}" if self.rel_tol >= 0.01 else f"within {self.rel_tol:.1%}"


@dataclass(frozen=True)
class Result:
    id: str
    status: str
    message: str

    def _repr_markdown_(self) -> str:
        # Dingbats that common text fonts carry, so no emoji font is needed to show them.
        icon = {RIGHT: "✔", WRONG: "✘", UNANSWERED: "✎"}[self.status]
        return f"{icon} **{self.id}**: {self.message}"

    def __repr__(self) -> str:
        return f"[{self.status}] {self.id}: {self.message}"


def _close(a: float, b: float, rel_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0) if b != 0 else abs(a) <= rel_tol


def judge(exercise: Exercise, answer) -> Result:
    """Compare ``answer`` with the key; name the typical mistake when the answer matches one."""
    ex = exercise
    if answer is ... or answer is None:
        return Result(ex.id, UNANSWERED, f"not answered yet (give a number in {ex.unit})")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return Result(ex.id, WRONG, f"expected a finite number in {ex.unit}, got {answer!r}")
    expected = ex.expected()
    if _close(float(answer), expected, ex.rel_tol):
        return Result(ex.id, RIGHT, f"right ({ex.tolerance_text()} of the key, in {ex.unit})")
    for m in ex.mistakes:
        if _close(float(answer), m.wrong_answer(expected), ex.rel_tol):
            return Result(ex.id, WRONG, f"not quite: {m.hint}")
    return Result(ex.id, WRONG, f"not yet (answer in {ex.unit}, {ex.tolerance_text()}). Hint: {ex.hint}")


def problem_set(chapter: str) -> dict[str, Exercise]:
    """The exercises of ``chapter`` (e.g. ``"01_batching"``), keyed by id."""
    try:
        module = importlib.import_module(f"chalk.teaching.problems.ch{chapter}")
    except ModuleNotFoundError:
        raise ChalkError(f"chapter: no problem set {chapter!r}") from None
    exercises = {}
    for ex in module.EXERCISES:
        if ex.id in exercises:
            raise ChalkError(f"chapter {chapter}: exercise id {ex.id!r} is defined twice")
        exercises[ex.id] = ex
    return exercises


def checker(chapter: str) -> Callable[[str, object], Result]:
    """The ``check(id, answer)`` function a problem set calls after each answer cell."""
    exercises = problem_set(chapter)

    def check(exercise_id: str, answer) -> Result:
        return judge(lookup("exercise", exercise_id, exercises, param="exercise_id"), answer)

    return check
