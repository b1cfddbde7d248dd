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

Four kinds of answer (``kind``): a **number** (``Exercise``; ``exact=True`` for a whole number
where only the one integer is right, as "the smallest batch that ..." asks), a **choice** of one
listed option (``Choice``) and a **set of choices**, all that apply (``Choices``), each given by
letter or by the option's text and answered with targeted feedback for each misjudged option; and
a **written** answer, marked by hand (a ``free-text`` cell, ``chalk.teaching.student``). A numeric
item that needs a judgement first (decide the regime, then compute in it) says so with
``judgement=True``; a choice always is one.
"""
import base64
import functools
import hashlib
import importlib
import json
import math
import numbers
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..errors import ChalkError, lookup

RIGHT, WRONG, UNANSWERED = "right", "wrong", "unanswered"
NUMBER, CHOICE, CHOICES, WRITTEN = "number", "choice", "choices", "written"
KINDS = (NUMBER, CHOICE, CHOICES, WRITTEN)
"""What an exercise asks for (``kind``): the instructors' page and the grader's exports show it."""
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
    """A fast salted hash (64 bits: collisions are out of reach): what files a choice's options."""
    return hashlib.sha256(f"{salt}|{name}".encode()).hexdigest()[:16]


KDF = {"n": 2 ** 13, "r": 8, "p": 1}
"""scrypt's cost (8 MiB of memory, a few hundredths of a second a call) for sealing a number's cells:
every answer a search tries costs one call, and ``book/instructors.md`` says what that comes to."""


def bucket(name: str) -> str:
    """The run of ``CELLS_PER_TOLERANCE`` cells (one tolerance wide) a cell belongs to: the
    slow key-derivation runs once per bucket, so a check costs one call and sealing a band of
    cells a few, while a search pays one call for every tolerance-wide step it tries."""
    if name[0] in "+-":
        return f"{name[0]}{int(name[1:]) // CELLS_PER_TOLERANCE}"
    return name  # "0", or an exact exercise's "=357": each its own bucket


@functools.lru_cache(maxsize=4096)
def _slow(salt: str, bucket_name: str) -> bytes:
    chapter = salt.rsplit("/", 1)[0]  # "chalk/<chapter>": the scrypt salt, one per problem set
    return hashlib.scrypt(f"{salt}|{bucket_name}".encode(), salt=chapter.encode(), maxmem=64 * 2 ** 20,
                          dklen=32, **KDF)


def sealed_digest(salt: str, name: str) -> str:
    """A numeric cell's hash as a sealed key stores it: keyed by scrypt of its bucket (``KDF``),
    so that trying answers offline costs what trying them against ``check`` costs."""
    return hashlib.sha256(_slow(salt, bucket(name)) + f"|{name}".encode()).hexdigest()[:16]


EXACT_TEXT = "an exact whole number"
"""What the prompt and the check say of an ``exact`` exercise's tolerance."""


def whole_cell(answer: float) -> str:
    """The cell of an exact exercise: the integer itself, or one cell for every non-integer."""
    return f"={int(answer)}" if float(answer).is_integer() else "=not-whole"


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
    """One numeric exercise of an answer key; ``points`` weighs it in the grades (1 unless the key
    says). ``exact``: the answer is a whole number and only that integer is right (a typical
    mistake matches as its rounded integer, or a non-integer answer within ``rel_tol`` of it). ``judgement``: the number
    needs a judgement first (which regime, whether it hides). ``topic``: a few words for the
    instructors' table."""
    id: str
    expected: Callable[[], float]
    unit: str
    rel_tol: float
    hint: str
    mistakes: tuple[Mistake, ...] = field(default=())
    points: float = 1.0
    topic: str = ""
    judgement: bool = False
    exact: bool = False
    kind: ClassVar[str] = NUMBER

    def tolerance_text(self) -> str:
        return EXACT_TEXT if self.exact else tolerance_text(self.rel_tol)

    def whole_expected(self) -> int:
        """The key of an exact exercise, refused if it is not a whole number."""
        value = self.expected()
        if not math.isclose(value, round(value), rel_tol=0, abs_tol=1e-9 * max(1.0, abs(value))):
            raise ChalkError(f"exercise {self.id}: exact=True needs a whole-number key, got {value!r}")
        return round(value)

    def verdict(self, answer: float) -> bool | str | None:
        """True if ``answer`` is right, a mistake's hint if it is that mistake, else None."""
        expected = self.expected()
        if self.exact:
            if whole_cell(answer) == f"={self.whole_expected()}":
                return True
        elif close(answer, expected, self.rel_tol):
            return True
        for m in self.mistakes:
            wrong = m.wrong_answer(expected)
            if (whole_cell(answer) == f"={round(wrong)}" if self.exact and float(answer).is_integer()
                    else close(answer, wrong, self.rel_tol)):
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
    topic: str = ""
    judgement: bool = False
    exact: bool = False
    kind: ClassVar[str] = NUMBER

    def tolerance_text(self) -> str:
        return EXACT_TEXT if self.exact else tolerance_text(self.rel_tol)

    def verdict(self, answer: float) -> bool | str | None:
        whole = self.exact and float(answer).is_integer()
        mine = sealed_digest(self.salt, whole_cell(answer) if whole else cell(answer, self.rel_tol))
        if mine in self.right:
            return True
        return next((hint for hint, hashed in self.mistakes if mine in hashed), None)


# --- choices --------------------------------------------------------------------------------
def normal_text(text: str) -> str:
    """An answer or option as compared: case, runs of white space and a closing full stop ignored."""
    return " ".join(str(text).casefold().split()).rstrip(" .")


_LETTER = re.compile(r"\(?([a-z])[).]?")
_LABELLED = re.compile(r"\(?([a-z])[).]\s+(.+)")
_SEPARATORS = re.compile(r"\s*(?:[,;/&+]|\band\b)\s*")


class _Options:
    """Reading a student's answer as option letters, shared by the plain and the sealed keys."""
    id: str
    options: dict[str, str]

    def _one(self, text: str) -> str | None:
        """The letter ``text`` names: "b", "(b)", "b)", the option's text, or "(b) " and its text."""
        n = normal_text(text)
        if (m := _LETTER.fullmatch(n)) and m.group(1) in self.options:
            return m.group(1)
        if (m := _LABELLED.fullmatch(n)) and normal_text(self.options.get(m.group(1), "")) == m.group(2):
            return m.group(1)
        return next((letter for letter, option in self.options.items() if normal_text(option) == n), None)

    def letters(self, answer) -> frozenset[str] | None:
        """The letters ``answer`` names (by letter or by text, any case and spacing; for a set, a
        string like "a, c" or "ac", or a collection), or None if it names something else."""
        if isinstance(answer, str) and (one := self._one(answer)) is not None:
            return frozenset({one})
        if self.kind != CHOICES:
            return None
        if isinstance(answer, str):
            return _distinct(self._many(normal_text(answer)))
        if isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(p, str) for p in answer):
            return _distinct([self._one(p) for p in answer])
        return None

    def _many(self, n: str) -> list[str | None]:
        """Letters named in one string: options' texts (longest first, as a text may hold commas
        or another's words), then letters apart ("a, c", "a and c", "a c") or run together ("ac")."""
        parts = [self._one(p) for p in _SEPARATORS.split(n) if p.strip(" .")]
        if parts and None not in parts:  # each part an option by itself: "a, c", "(a) one, (c) three"
            return parts
        found = []
        for letter, option in sorted(self.options.items(), key=lambda item: -len(item[1])):
            text = re.compile(rf"(?<!\w){re.escape(normal_text(option))}(?!\w)")
            if text.search(n):
                found.append(letter)
                n = text.sub(",", n)
        rest = [p for p in _SEPARATORS.split(n) if p.strip(" .")]
        if len(rest) == 1 and re.fullmatch(r"[a-z]{2,}", rest[0]):
            rest = list(rest[0])
        words = [w for p in rest for w in (p.split() if all(_LETTER.fullmatch(w) for w in p.split()) else [p])]
        return found + [self._one(w) for w in words]

    def letters_text(self) -> str:
        letters = list(self.options)
        return f"{letters[0]} to {letters[-1]}"

    def shown(self, letters: frozenset[str]) -> str:
        return ", ".join(f"({x})" for x in sorted(letters))


def _distinct(found: list[str | None]) -> frozenset[str] | None:
    """The letters found, or None if one was unreadable or named twice."""
    if not found or None in found or len(set(found)) != len(found):
        return None
    return frozenset(found)


def _check_options(ex_id: str, options: dict, answer: frozenset, feedback: dict, many: bool) -> None:
    letters = list(options)
    if len(letters) < 2 or letters != [chr(ord("a") + i) for i in range(len(letters))]:
        raise ChalkError(f"exercise {ex_id}: options must be keyed 'a', 'b', ... in order (at least two), "
                         f"got {letters}")
    texts = [normal_text(t) for t in options.values()]
    if not all(isinstance(t, str) and t.strip() for t in options.values()) or len(set(texts)) != len(texts):
        raise ChalkError(f"exercise {ex_id}: options must be distinct, non-empty texts")
    if any(_LETTER.fullmatch(t) for t in texts):
        raise ChalkError(f"exercise {ex_id}: an option's text must not read as a letter")
    if not answer or not answer <= set(letters) or (not many and len(answer) != 1):
        raise ChalkError(f"exercise {ex_id}: answer must be {'letters' if many else 'one letter'} of "
                         f"{', '.join(letters)}, got {sorted(answer)}")
    unknown = set(feedback) - set(letters)
    if unknown:
        raise ChalkError(f"exercise {ex_id}: feedback names letters that are no option: {sorted(unknown)}")
    if not many and answer & set(feedback):
        raise ChalkError(f"exercise {ex_id}: feedback is for wrong options; the answer {sorted(answer)[0]!r} has some")


@dataclass(frozen=True)
class Choice(_Options):
    """One option of several is right (``answer``, a letter). ``feedback`` maps each wrong letter
    to what a student who picks it reads (why it fails); a wrong letter without feedback gets
    ``hint``."""
    id: str
    options: dict[str, str]
    answer: str
    feedback: dict[str, str]
    hint: str
    topic: str = ""
    points: float = 1.0
    kind: ClassVar[str] = CHOICE
    judgement: ClassVar[bool] = True
    exact: ClassVar[bool] = False

    def __post_init__(self):
        _check_options(self.id, self.options, frozenset({self.answer}) if isinstance(self.answer, str)
                       else frozenset(), self.feedback, many=False)

    def right_letters(self) -> frozenset[str]:
        return frozenset({self.answer})

    def entry(self, letter: str) -> tuple[bool, str]:
        """(whether ``letter`` belongs to the answer, the feedback shown when it is misjudged)."""
        return letter in self.right_letters(), self.feedback.get(letter, "")


@dataclass(frozen=True)
class Choices(Choice):
    """Every option that applies (``answer``: a set of letters, or a string like "a, c").
    ``feedback`` maps a letter to what a student reads when they misjudge it: pick it though it
    does not apply, or leave it out though it does."""
    answer: frozenset[str] | set[str] | str
    kind: ClassVar[str] = CHOICES

    def __post_init__(self):
        letters = self.letters(self.answer) if isinstance(self.answer, str) else frozenset(self.answer)
        if letters is None:
            raise ChalkError(f"exercise {self.id}: answer {self.answer!r} names no set of options")
        object.__setattr__(self, "answer", frozenset(letters))
        _check_options(self.id, self.options, self.answer, self.feedback, many=True)

    def right_letters(self) -> frozenset[str]:
        return self.answer


def _stream(salt: str, letter: str, n: int) -> bytes:
    blocks = (hashlib.sha256(f"{salt}|{letter}|pad|{i}".encode()).digest() for i in range(n // 32 + 1))
    return b"".join(blocks)[:n]


def seal_entry(salt: str, letter: str, right: bool, feedback: str, size: int) -> str:
    """One option's (right?, feedback), padded to ``size`` bytes and masked by a stream that only
    the option's letter and the salt give, so every option's entry looks alike."""
    plain = json.dumps({"r": right, "f": feedback}).encode().ljust(size)
    return base64.b64encode(bytes(a ^ b for a, b in zip(plain, _stream(salt, letter, size)))).decode()


def open_entry(salt: str, letter: str, sealed: str) -> tuple[bool, str]:
    masked = base64.b64decode(sealed)
    data = json.loads(bytes(a ^ b for a, b in zip(masked, _stream(salt, letter, len(masked)))))
    return bool(data["r"]), str(data["f"])


@dataclass(frozen=True)
class SealedChoice(_Options):
    """A choice as the student package carries it: the options' texts, and each option's verdict
    and feedback masked and filed under its salted hash (``seal_entry``); no file says which
    option is right, not even by leaving it out."""
    id: str
    options: dict[str, str]
    hint: str
    salt: str
    entries: dict[str, str]
    points: float = 1.0
    topic: str = ""
    kind: str = CHOICE
    judgement: ClassVar[bool] = True
    exact: ClassVar[bool] = False

    def entry(self, letter: str) -> tuple[bool, str]:
        return open_entry(self.salt, letter, self.entries[digest(self.salt, f"option|{letter}")])


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
    answer: float | str | None = None
    """The number judged, or the letters picked ("a, c"); None when unanswered or unreadable."""

    def _repr_markdown_(self) -> str:
        # Dingbats that common text fonts carry, so no emoji font is needed to show them.
        icon = {RIGHT: "✔", WRONG: "✘", UNANSWERED: "✎"}[self.status]
        return f"{icon} **{STATUS_WORD[self.status]}** · `{self.id}`: {markdown_literal(self.message)}"

    def __repr__(self) -> str:
        return f"[{self.status}] {self.id}: {self.message}"


def _judge_choice(ex, answer) -> Result:
    many = ex.kind == CHOICES
    wanted = (f"the letters of every option that applies, e.g. \"a, c\" ({ex.letters_text()})" if many
              else f"one letter, {ex.letters_text()}, or an option's text")
    if answer is ... or answer is None:
        return Result(ex.id, UNANSWERED, f"set `{ex.id}` to {wanted}")
    picked = ex.letters(answer)
    if picked is None:
        return Result(ex.id, WRONG, f"expected {wanted}, got {answer!r:.60}")
    given = ex.shown(picked)
    entries = {letter: ex.entry(letter) for letter in ex.options}
    misjudged = [x for x, (right, _) in entries.items() if right != (x in picked)]
    if not misjudged:
        return Result(ex.id, RIGHT, f"{given} {'is the right set' if many else 'is right'}", given)
    if not many:
        feedback = entries[next(iter(picked))][1]
        return Result(ex.id, WRONG, f"{given} is not the right choice. "
                                    f"{f'Why not: {feedback}' if feedback else f'Hint: {ex.hint}'}", given)
    notes = []
    for x in misjudged:
        right, feedback = entries[x]
        what = f"left out ({x})" if right else f"picked ({x})"
        notes.append(f"{what.capitalize()}: {feedback}" if feedback else
                     f"{what.capitalize()}, which {'applies' if right else 'does not apply'}")
    return Result(ex.id, WRONG, f"{given} is not the right set ({len(misjudged)} option(s) misjudged). "
                                f"{' '.join(n if n.endswith(('.', '!', '?')) else n + '.' for n in notes)} "
                                f"Hint: {ex.hint}", given)


def judge(exercise, answer) -> Result:
    """Compare ``answer`` with the key; name the typical mistake when the answer matches one, or
    give the feedback of each option misjudged."""
    ex = exercise
    if ex.kind in (CHOICE, CHOICES):
        return _judge_choice(ex, answer)
    wanted = f"{ex.unit}, {ex.tolerance_text()}"
    if answer is ... or answer is None:
        return Result(ex.id, UNANSWERED, f"set `{ex.id}` to a number ({wanted})")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return Result(ex.id, WRONG, f"expected a finite number ({wanted}), got {answer!r:.60}")
    value = float(answer)
    given = f"{answer_text(value)} ({ex.unit})"
    verdict = ex.verdict(value)
    hint = f"A typical slip: {verdict}" if isinstance(verdict, str) else f"Hint: {ex.hint}"
    if ex.exact:
        if verdict is True:
            return Result(ex.id, RIGHT, f"{given} is the answer ({EXACT_TEXT})", value)
        return Result(ex.id, WRONG, f"{given} is not the answer ({EXACT_TEXT}). {hint}", value)
    if verdict is True:
        return Result(ex.id, RIGHT, f"{given} is {ex.tolerance_text()} of the answer", value)
    return Result(ex.id, WRONG, f"{given} is not {ex.tolerance_text()} of the answer. {hint}", value)


# --- problem sets ---------------------------------------------------------------------------
def _sealed_one(e: dict) -> SealedExercise | SealedChoice:
    common = dict(id=e["id"], hint=e["hint"], salt=e["salt"], points=e["points"], topic=e.get("topic", ""))
    if e.get("kind", NUMBER) in (CHOICE, CHOICES):
        return SealedChoice(**common, options=e["options"], entries=e["entries"], kind=e["kind"])
    return SealedExercise(**common, unit=e["unit"], rel_tol=e["rel_tol"], right=frozenset(e["right"]),
                          judgement=e.get("judgement", False), exact=e.get("exact", False),
                          mistakes=tuple((m["hint"], frozenset(m["cells"])) for m in e["mistakes"]))


def sealed_exercises(table: dict) -> dict[str, SealedExercise | SealedChoice]:
    """The exercises of a sealed table (``chalk.teaching.seal.seal``), keyed by id."""
    return {e["id"]: _sealed_one(e) for e in table["exercises"]}


def _sealed(chapter: str) -> dict[str, SealedExercise]:
    path = SEALED_DIR / f"{chapter}.json"
    if not path.is_file():
        known = sorted(p.stem for p in SEALED_DIR.glob("*.json"))
        raise ChalkError(f"chapter: no problem set {chapter!r}; known: {', '.join(known) or 'none'}")
    return sealed_exercises(json.loads(path.read_text(encoding="utf-8")))


def problem_set(chapter: str) -> dict[str, Exercise | Choice | SealedExercise | SealedChoice]:
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
        if isinstance(value, str):
            return {"str": value[:500]}
        if isinstance(value, (set, frozenset, list, tuple)) and len(value) <= 26 and all(isinstance(v, str) for v in value):
            return {"strs": sorted(v[:500] for v in value)}
        return {"repr": repr(value)[:200]}
    except Exception as err:  # a student's object whose repr or float raises
        return {"repr": f"<unreadable: {type(err).__name__}>"}


def record_value(record):
    """The inverse of ``answer_record`` as far as ``judge`` needs: a number, None, or a stand-in."""
    if isinstance(record, dict):
        for kind in ("bool", "str", "strs", "repr"):
            if kind in record:
                return record[kind]
        return None  # {"missing": true}: unanswered
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
