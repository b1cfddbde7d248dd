"""Every chapter's answer key behaves as a check must, both ways: the key and answers within its
tolerance are right, each listed typical mistake is wrong and gets its own hint, other answers get
the general hint, and non-numbers are refused. Chapters are found from their key modules, so a
new problem set is covered with no change here; each chapter's own test file checks its key
against hand calculations and its prompts against the key's inputs.

The sealed key (what the student package carries) must give the plain key's verdicts, answer for
answer, and hold no expected value in plain form."""
import json
import math
import re

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from chalk.errors import ChalkError
from chalk.teaching import leaks
from chalk.teaching.exercises import (RIGHT, UNANSWERED, WRONG, Exercise, Mistake, cells, close, judge,
                                      problem_set, sealed_exercises)
from chalk.teaching.seal import known_problem_sets, seal

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


# --- the sealed key -------------------------------------------------------------------------
SEALED = {chapter: sealed_exercises(seal(chapter)) for chapter in known_problem_sets()}


def probes(ex):
    """Answers on both sides of the key's and each mistake's tolerance, and far from both."""
    expected = ex.expected()
    values = [expected] + [m.wrong_answer(expected) for m in ex.mistakes]
    return [v * f for v in values for f in (1, 1 - 0.9 * ex.rel_tol, 1 + 0.9 * ex.rel_tol,
                                             1 - 1.1 * ex.rel_tol, 1 + 1.1 * ex.rel_tol, 1.5, -1)] + [0.0, ..., "x"]


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_sealed_key_gives_the_plain_keys_verdict_for_every_answer(chapter, ex):
    sealed = SEALED[chapter][ex.id]
    assert (sealed.unit, sealed.rel_tol, sealed.hint, sealed.points) == (ex.unit, ex.rel_tol, ex.hint, ex.points)
    for answer in probes(ex):
        assert judge(sealed, answer) == judge(ex, answer), (ex.id, answer)
    assert judge(sealed, ex.expected()).status == RIGHT
    for m in ex.mistakes:
        assert m.hint in judge(sealed, m.wrong_answer(ex.expected())).message


def numbers_in(node, key=None):
    """(key, number) of every number in a parsed JSON table."""
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in numbers_in(v, k)]
    if isinstance(node, list):
        return [pair for v in node for pair in numbers_in(v, key)]
    return [(key, node)] if isinstance(node, (int, float)) and not isinstance(node, bool) else []


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_sealed_table_holds_no_expected_value(chapter):
    table = seal(chapter)
    # The only numbers are the tolerances, the points and the format: no value, not even a mistake's.
    assert {k for k, _ in numbers_in(table)} <= {"rel_tol", "points", "format"}
    # Nor does any text (a hint, a unit) print an answer.
    found = [a for a in leaks.answers([chapter]) if a.searchable]
    assert not leaks.find(json.dumps(table), found, chapter)


def test_tolerance_on_the_grid_is_the_stated_one_to_a_twentieth():
    # 2%: a cell is log(1.02)/10 = 0.00198 wide in log space, so the edge moves by at most 0.1%.
    for value in (1.0, 17.87, 5277.7, 3.6e24, 1e-5, -42.0):
        assert close(value * 1.019, value, 0.02) and close(value * 0.981, value, 0.02)
        assert not close(value * 1.021, value, 0.02) and not close(value * 0.979, value, 0.02)
        assert not close(-value, value, 0.02)
        listed = cells(value, 0.02)
        indices = [int(c[1:]) for c in listed]
        assert indices == list(range(indices[0], indices[-1] + 1))  # one unbroken run of cells
        assert 19 <= len(listed) <= 21  # 2 x 2% of width over cells of 0.198%
    assert cells(0.0, 0.02) == ["0"] and close(0.0, 0.0, 0.02) and not close(1e-9, 0.0, 0.02)
    with pytest.raises(ChalkError, match="rel_tol must be between 0 and 1"):
        close(1.0, 1.0, 1.5)


def test_check_messages_show_the_value_unit_tolerance_and_one_status_word():
    ex = Exercise("cost", lambda: 0.25, "$ per million tokens", 0.02, "rent / tokens: $2 per hour / 3600",
                  (Mistake("that is per token, not per million.", factor=1e-6),))
    right, slip, other, blank = (judge(ex, a) for a in (0.251, 0.25e-6, 7.0, ...))
    assert right.message == "0.251 ($ per million tokens) is within 2% of the answer"
    assert slip.message.startswith("2.5e-07 ($ per million tokens) is not within 2% of the answer. "
                                   "A typical slip: that is per token")
    assert other.message.endswith("is not within 2% of the answer. Hint: rent / tokens: $2 per hour / 3600")
    assert blank.message == "set `cost` to a number ($ per million tokens, within 2%)"
    assert "0.25" not in other.message.replace("0.251", "")  # the key is never shown
    md = MarkdownIt("commonmark").use(dollarmath_plugin)  # as jupyterlab-myst reads $...$
    for result, word in ((right, "right"), (slip, "wrong"), (other, "wrong"), (blank, "not answered")):
        text = result._repr_markdown_()
        assert f"**{word}**" in text and text.count("**") == 2, text
        tokens = [t for block in md.parse(text) for t in (block.children or [])]
        assert not [t for t in tokens if "math" in t.type], text  # "$" is a dollar, not maths
