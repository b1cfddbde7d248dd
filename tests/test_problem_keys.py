"""Every chapter's answer key behaves as a check must, both ways: the key and answers within its
tolerance are right, each listed typical mistake is wrong and gets its own hint, other answers get
the general hint, and non-numbers are refused. Chapters are found from their key modules, so a
new problem set is covered with no change here; each chapter's own test file checks its key
against hand calculations and its prompts against the key's inputs.

A choice (one option, or all that apply) is right by letter or text in any case and spacing, and
each misjudged option earns its own feedback. An exact exercise accepts its one integer only.

The sealed key (what the student package carries) must give the plain key's verdicts, answer for
answer, and hold no expected value in plain form, nor say which option is right."""
import itertools
import json
import math
import re

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from chalk.errors import ChalkError
from chalk.teaching import exercises, leaks
from chalk.teaching import seal as seal_module
from chalk.teaching.exercises import (CHOICE, CHOICES, KINDS, NUMBER, RIGHT, UNANSWERED, WRONG, Choice, Choices,
                                      Exercise, Mistake, cells, close, judge, problem_set, sealed_digest,
                                      sealed_exercises)
from chalk.teaching.seal import known_problem_sets, seal

ALL = [(chapter, ex) for chapter in known_problem_sets() for ex in problem_set(chapter).values()]
CASES = [(chapter, ex) for chapter, ex in ALL if ex.kind == NUMBER]
IDS = [f"{chapter}:{ex.id}" for chapter, ex in CASES]
CHOICE_CASES = [(chapter, ex) for chapter, ex in ALL if ex.kind in (CHOICE, CHOICES)]
CHOICE_IDS = [f"{chapter}:{ex.id}" for chapter, ex in CHOICE_CASES]


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_enough_exercises_with_complete_entries(chapter):
    exercises = problem_set(chapter)
    assert len(exercises) >= 10, chapter
    for ex in exercises.values():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", ex.id), ex.id
        assert ex.kind in KINDS and isinstance(ex.judgement, bool) and isinstance(ex.topic, str), ex.id
        assert ex.hint and ex.points > 0, ex.id
        if ex.kind == NUMBER:
            assert ex.unit and ex.mistakes, ex.id
            assert 0 < ex.rel_tol <= 0.1, ex.id
        else:
            assert ex.judgement, ex.id
            misjudgeable = set(ex.options) - ({ex.answer} if ex.kind == CHOICE else set())
            assert set(ex.feedback) == misjudgeable, (ex.id, "feedback for every option a student can misjudge")
            assert all(f.strip() for f in ex.feedback.values()), ex.id


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_each_set_asks_for_judgement_and_names_every_topic(chapter):
    exercises = problem_set(chapter).values()
    judged = [ex.id for ex in exercises if ex.judgement]
    assert len(judged) >= 4, (chapter, judged)  # choices, or numbers that need the judgement first
    assert any(ex.kind in (CHOICE, CHOICES) for ex in exercises), chapter
    assert all(ex.topic.strip() for ex in exercises), [ex.id for ex in exercises if not ex.topic.strip()]


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_key_is_right_within_its_tolerance_and_wrong_past_it(chapter, ex):
    value = ex.expected()
    assert math.isfinite(value) and value > 0
    assert judge(ex, value).status == RIGHT
    if ex.exact:
        whole = ex.whole_expected()
        assert whole == value and judge(ex, whole).status == RIGHT and judge(ex, float(whole)).status == RIGHT
        for neighbour in (whole - 1, whole + 1, whole + 0.5, whole - 0.5, whole * (1 + 0.5 * ex.rel_tol)):
            assert judge(ex, neighbour).status == WRONG, (ex.id, neighbour)
        return
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
SEALED: dict = {}
"""{chapter: its sealed exercises}, filled by ``cheap_kdf``."""
CHEAP_KDF = {"n": 2 ** 4, "r": 8, "p": 1}


@pytest.fixture(scope="module", autouse=True)
def cheap_kdf(tmp_path_factory):
    """Seal and judge under a cheap scrypt. Whether a sealed key gives the plain key's verdict does
    not depend on the derivation's cost, and the probes below pay one derivation each (about 2,000:
    a minute of CPU at the real cost); test_seal.py checks the real cost and what it buys."""
    real, cache = dict(exercises.KDF), seal_module.CACHE
    exercises.KDF.update(CHEAP_KDF)
    exercises._slow.cache_clear()  # its derivations are keyed by salt and bucket, not by cost
    seal_module.CACHE = tmp_path_factory.mktemp("seal-cache")  # not the real tables' cache
    SEALED.update({chapter: sealed_exercises(seal(chapter)) for chapter in known_problem_sets()})
    yield
    SEALED.clear()
    exercises.KDF.clear()
    exercises.KDF.update(real)
    exercises._slow.cache_clear()
    seal_module.CACHE = cache


def probes(ex):
    """Answers on both sides of the key's and each mistake's tolerance, and far from both."""
    expected = ex.expected()
    values = [expected] + [m.wrong_answer(expected) for m in ex.mistakes]
    whole = [round(v) + d for v in values for d in (-1, 0, 1)] if ex.exact else []
    return [v * f for v in values for f in (1, 1 - 0.9 * ex.rel_tol, 1 + 0.9 * ex.rel_tol,
                                             1 - 1.1 * ex.rel_tol, 1 + 1.1 * ex.rel_tol, 1.5, -1)] + whole + [0.0, ..., "x"]


@pytest.mark.parametrize("chapter, ex", CASES, ids=IDS)
def test_sealed_key_gives_the_plain_keys_verdict_for_every_answer(chapter, ex):
    sealed = SEALED[chapter][ex.id]
    assert (sealed.unit, sealed.rel_tol, sealed.hint, sealed.points) == (ex.unit, ex.rel_tol, ex.hint, ex.points)
    assert (sealed.kind, sealed.exact, sealed.judgement, sealed.topic) == (ex.kind, ex.exact, ex.judgement, ex.topic)
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
    text = json.dumps(table)
    for ex in problem_set(chapter).values():  # no choice's feedback in plain form, right or wrong
        for feedback in getattr(ex, "feedback", {}).values():
            assert json.dumps(feedback)[1:-1] not in text, (ex.id, feedback)
    # Nor does any text (a hint, a unit) print an answer.
    found = [a for a in leaks.answers([chapter]) if a.searchable]
    assert not leaks.find(json.dumps(table), found, chapter)


# --- choices ---------------------------------------------------------------------------------
def answer_forms(ex, letters):
    """Ways a student writes ``letters``: letters in any case and spacing, and the options' texts."""
    letters = sorted(letters)
    texts = [ex.options[x] for x in letters]
    forms = [", ".join(letters), ", ".join(x.upper() for x in letters), f"  {' , '.join(letters)} ",
             ", ".join(t.upper() for t in texts), ", ".join("  ".join(t.split()) for t in texts)]
    if ex.kind == CHOICES:
        forms += ["".join(letters), " and ".join(letters), letters, set(x.upper() for x in letters), tuple(texts)]
    else:
        forms += [f"({letters[0]})", f"{letters[0].upper()})"]
    return forms


def subsets(ex):
    letters = list(ex.options)
    if ex.kind == CHOICE:
        return [frozenset({x}) for x in letters]
    return [frozenset(c) for n in range(1, len(letters) + 1) for c in itertools.combinations(letters, n)]


def right_letters(ex):
    return frozenset({ex.answer}) if ex.kind == CHOICE else frozenset(ex.answer)


@pytest.mark.parametrize("chapter, ex", CHOICE_CASES, ids=CHOICE_IDS)
def test_a_choice_is_right_in_every_form_and_each_misjudged_option_gets_its_feedback(chapter, ex):
    right = right_letters(ex)
    for form in answer_forms(ex, right):
        assert judge(ex, form).status == RIGHT, (ex.id, form)
    for picked in subsets(ex):
        if picked == right:
            continue
        result = judge(ex, ", ".join(sorted(picked)))
        assert result.status == WRONG, (ex.id, picked)
        for x in (picked ^ right) & set(ex.feedback):
            if ex.kind == CHOICE and x not in picked:
                continue  # one pick: the feedback is that of the option picked
            assert ex.feedback[x] in result.message, (ex.id, picked, x)
    assert judge(ex, ...).status == UNANSWERED and judge(ex, None).status == UNANSWERED
    for bad in ("", "z", "a, z", 3, 2.0, True, {"a": 1}):
        assert judge(ex, bad).status == WRONG, (ex.id, bad)


@pytest.mark.parametrize("chapter, ex", CHOICE_CASES, ids=CHOICE_IDS)
def test_sealed_choice_gives_the_plain_verdicts_and_hides_which_is_right(chapter, ex):
    sealed = SEALED[chapter][ex.id]
    assert (sealed.kind, sealed.options, sealed.hint, sealed.points) == (ex.kind, ex.options, ex.hint, ex.points)
    probes = [", ".join(sorted(p)) for p in subsets(ex)] + answer_forms(ex, right_letters(ex)) + ["", "z", ..., 4]
    for answer in probes:
        assert judge(sealed, answer) == judge(ex, answer), (ex.id, answer)
    table = next(e for e in seal(chapter)["exercises"] if e["id"] == ex.id)
    assert set(table) == {"id", "kind", "hint", "points", "topic", "salt", "options", "entries"}
    assert len(table["entries"]) == len(ex.options) and len({len(v) for v in table["entries"].values()}) == 1


def test_choice_reading_by_hand():
    c = Choice("hide", {"a": "It hides", "b": "It does not hide", "c": "Only in prefill"}, "b",
               {"a": "that holds if the step were compute-bound.", "c": "prefill is compute-bound."}, "compare times")
    assert [judge(c, a).status for a in ("b", " B ", "(b)", "it DOES not   hide", "(b) It does not hide.", "a", "c",
                                         "d", "b, c", ["b"], "(a) It does not hide")] == [RIGHT] * 5 + [WRONG] * 6
    assert "that holds if the step were compute-bound." in judge(c, "a").message
    assert "expected one letter, a to c, or an option's text" in judge(c, "d").message  # unreadable
    many = Choices("which", {"a": "one", "b": "two", "c": "three"}, "a, c",
                   {"a": "a applies.", "b": "b does not.", "c": "c applies."}, "think")
    assert many.answer == frozenset("ac")
    for form in ("a, c", "ac", "C A", "a and c", ["a", "c"], {"A", "C"}, "one, three", ("THREE.", "a"), "three, a",
                 "(a) one, (c) Three.", "a) one and c"):
        assert judge(many, form).status == RIGHT, form
    missing, extra = judge(many, "a"), judge(many, "a, b, c")
    assert missing.status == extra.status == WRONG
    assert "Left out (c): c applies." in missing.message and "b does not" not in missing.message
    assert "Picked (b): b does not." in extra.message and "c applies" not in extra.message
    for bad in ("aa", "a, a", "a, d", "", ["a", 1]):
        assert judge(many, bad).status == WRONG, bad


@pytest.mark.parametrize("kwargs, message", [
    (dict(options={"a": "xx"}, answer="a"), "at least two"),
    (dict(options={"a": "xx", "c": "yy"}, answer="a"), "in order"),
    (dict(options={"a": "xx", "b": "XX "}, answer="a"), "distinct"),
    (dict(options={"a": "xx", "b": "(c)"}, answer="a"), "letter"),
    (dict(options={"a": "xx", "b": "yy"}, answer="c"), "answer must be one letter"),
    (dict(options={"a": "xx", "b": "yy"}, answer="a", feedback={"a": "no"}), "wrong options"),
    (dict(options={"a": "xx", "b": "yy"}, answer="a", feedback={"q": "no"}), "no option"),
])
def test_a_malformed_choice_is_refused_by_name(kwargs, message):
    with pytest.raises(ChalkError, match=message):
        Choice("bad", **{"feedback": {}, "hint": "h", **kwargs})


def test_exact_exercise_accepts_one_integer_and_names_a_slip_only_at_its_integer():
    ex = Exercise("n", lambda: 357.0, "sequences", 0.005, "scan B.",
                  (Mistake("rounded down.", value=lambda: 356.4),), exact=True)
    assert judge(ex, 357).status == RIGHT and judge(ex, 357.0).status == RIGHT
    assert judge(ex, 357).message == "357 (sequences) is the answer (an exact whole number)"
    assert "rounded down" in judge(ex, 356).message and "rounded down" in judge(ex, 356.5).message
    assert "Hint: scan B." in judge(ex, 358).message and judge(ex, 357.3).status == WRONG
    sealed = sealed_exercises({"exercises": [{**e, "salt": e["salt"]} for e in _table_of(ex)]})["n"]
    for answer in (355, 356, 356.4, 356.5, 357, 357.0, 357.3, 358, 1e9, -357):
        assert judge(sealed, answer) == judge(ex, answer), answer
    with pytest.raises(ChalkError, match="whole-number key"):
        judge(Exercise("m", lambda: 2.5, "x", 0.01, "h", exact=True), 2)


def _table_of(ex):
    return [{"id": ex.id, "kind": ex.kind, "hint": ex.hint, "points": ex.points, "topic": ex.topic, "salt": "t"}
            | seal_module._seal_number(ex, "t", sealed_digest)]


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
