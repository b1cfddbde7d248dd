"""Every chapter's answer key behaves as a check must, both ways: the key and answers within its
tolerance are right, each listed typical mistake is wrong and gets its own hint, other answers get
the general hint, and non-numbers are refused. Chapters are found from their key modules, so a
new problem set is covered with no change here; each chapter's own test file checks its key
against hand calculations and its prompts against the key's inputs."""
import math
import re

import pytest

from chalk.teaching.exercises import RIGHT, UNANSWERED, WRONG, judge, problem_set
from chalk.teaching.grading import known_problem_sets

CASES = [(chapter, ex) for chapter in known_problem_sets() for ex in problem_set(chapter).values()]
IDS = [f"{chapter}:{ex.id}" for chapter, ex in CASES]


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_enough_exercises_with_complete_entries(chapter):
    exercises = problem_set(chapter)
    assert len(exercises) >= 10, chapter
    for ex in exercises.values():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", ex.id), ex.id
        assert ex.unit and ex.hint and ex.mistakes, ex.id
        assert 0 < ex.rel_tol <= 0.1, ex.id


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_key_is_right_within_its_tolerance_and_wrong_past_it(chapter, ex):
    value = ex.expected()
    assert math.isfinite(value) and value > 0
    assert judge(ex, value).status == RIGHT
    assert judge(ex, value * (1 + 0.9 * ex.rel_tol)).status == RIGHT
    assert judge(ex, value * (1 + 1.5 * ex.rel_tol)).status == WRONG


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_each_mistake_is_wrong_gets_its_own_hint_and_stands_apart(chapter, ex):
    expected = ex.expected()
    values = [expected]
    for mistake in ex.mistakes:
        wrong = mistake.wrong_answer(expected)
        result = judge(ex, wrong)
        assert result.status == WRONG and mistake.hint in result.message, (ex.id, mistake.hint)
        values.append(wrong)
    # A mistake within twice the tolerance of the key or of another mistake could not be told apart.
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            assert not math.isclose(a, b, rel_tol=2 * ex.rel_tol, abs_tol=0.0), (ex.id, a, b)


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_other_answers_get_the_general_hint_and_non_numbers_are_refused(chapter, ex):
    result = judge(ex, 3.7 * ex.expected())
    assert result.status == WRONG and ex.hint in result.message and ex.unit in result.message
    assert judge(ex, ...).status == UNANSWERED
    for bad in ("0.2", float("nan"), float("inf"), True, [1.0]):
        assert judge(ex, bad).status == WRONG, bad
