"""What the grader writes, and the hand-marked points merged back into it.

A batch of grades is a folder, never overwritten (``new_folder``):

* ``grades.csv`` one row per graded notebook: student, problem set, status, points per exercise,
  total, flags and notes; ``grades.json`` the same rows for ``merge``;
* ``feedback/<file>.md`` for each student: each exercise's status, their value, unit, tolerance
  and a hint, and any flag or note;
* ``canvas.csv`` the columns of Canvas's gradebook import (one column per problem set, with the
  *Points Possible* row), ``gradescope.csv`` the name, id and score columns of Gradescope's score
  export, and
  ``gradescope/<file>/results.json`` per submission in the Gradescope autograder's format;
* ``exercises.csv`` what each problem set asks: one row per part with its kind (number, choice,
  choices or written), whether it is a judgement item, its topic and points
  (``chalk.teaching.overview``); each Gradescope test carries the kind as its tag;
* ``roster.csv`` every file: the student it belongs to (from Canvas's ``lastfirst_ID_SUBID_name``
  download names or a roster given to the grader), whether it was graded, superseded by a later
  resubmission, or is not a notebook (listed, never scored);
* ``written.md`` the written answers of every submission, grouped by exercise, and ``manual.csv``
  one row per written answer with empty ``points`` for the instructor to fill; ``merge`` adds them
  to the totals and writes the exports again, into a new folder.

Every maximum (a row's, Canvas's *Points Possible*, Gradescope's *Max Points* and question
columns) is the key's: the sum of the parts ``chalk.teaching.overview`` lists, never read off a
submission, so a student who deletes a cell does not lower it. A notebook that could not be graded,
and a student on the roster who handed nothing in, export as 0 with the reason in ``grades.csv``.
Every CSV cell a spreadsheet would read as a formula (a leading ``=``, ``+``, ``-``, ``@``, tab or
carriage return, a plain number aside) is written with a leading apostrophe (``safe``), which
spreadsheets show as text; the grader strips it again where it reads its own files back.
"""
import csv
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ChalkError
from .autograder import gradescope_test
from .exercises import RIGHT, STATUS_WORD, Result, markdown_literal

ROSTER_FIELDS = ("student", "id", "sis_user_id", "sis_login_id", "section", "email")
"""What a roster says of a student; ``id`` is the LMS's user id (Canvas's, in its file names)."""
_CANVAS = re.compile(r"^(?P<student>[^_/]+)_(?:LATE_)?(?P<id>\d+)_(?P<submission>\d+)_(?P<original>.+)$")
_RESUBMISSION = re.compile(r"-(\d+)(\.[^.]+)?$")


class GradebookError(ChalkError):
    """A bad folder, roster or manual-marks file; the message names it and the row."""


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def safe(value):
    """``value`` as a CSV cell no spreadsheet runs: text that opens like a formula gets a leading
    apostrophe (a number, even a negative one, is left as it is)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def unsafe(value: str) -> str:
    """The text ``safe`` was given, from the cell it wrote."""
    return value[1:] if value.startswith("'") and value[1:].startswith(_FORMULA) else value


# --- students -------------------------------------------------------------------------------
def canvas_name(path: str) -> dict | None:
    """``{"student", "id", "order"}`` from a Canvas download name, else None.

    Canvas names a downloaded submission ``lastfirst_USERID_SUBMISSIONID_original.ipynb``
    (``lastfirst_LATE_…`` when late) and a resubmitted file ``original-1.ipynb``, ``-2``, …;
    ``order`` sorts a student's files from first to latest.
    """
    m = _CANVAS.match(Path(path).name)
    if not m:
        return None
    again = _RESUBMISSION.search(Path(m.group("original")).stem + Path(m.group("original")).suffix)
    return {"student": m.group("student"), "id": m.group("id"),
            "order": (int(m.group("submission")), int(again.group(1)) if again else 0)}


def read_roster(path: Path) -> list[dict]:
    """Rows of a roster CSV with a ``file`` or an ``id`` column and any of ``ROSTER_FIELDS``
    (``roster.csv`` of an earlier batch, edited, is one)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            rows = [{k: unsafe(v or "") for k, v in r.items() if k} for r in csv.DictReader(f)]
    except OSError as err:
        raise GradebookError(f"ROSTER: cannot read {str(path)!r}: {err}") from None
    if not rows or not ({"file", "id"} & set(rows[0])):
        raise GradebookError(f"ROSTER: {str(path)!r} needs a header with a 'file' or an 'id' column "
                             f"and any of {', '.join(ROSTER_FIELDS)}")
    return rows


def student_of(file: str, roster: list[dict]) -> dict:
    """The student a submitted file belongs to: the roster row naming the file, else the one
    with its Canvas user id, else what the Canvas name says; empty fields when nothing does."""
    canvas = canvas_name(file) or {}
    for row in roster:
        if row.get("file") and row["file"] in (file, Path(file).name):
            break
    else:
        row = next((r for r in roster if canvas.get("id") and r.get("id") == canvas["id"]), {})
    out = {k: (row.get(k) or "").strip() for k in ROSTER_FIELDS}
    out["student"] = out["student"] or canvas.get("student", "")
    out["id"] = out["id"] or canvas.get("id", "")
    return out


# --- rows -----------------------------------------------------------------------------------
@dataclass
class Row:
    file: str
    status: str
    problem_set: str = ""
    student: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    """{exercise id: chalk.teaching.exercises.Result}, empty when no answer could be read."""
    points: dict = field(default_factory=dict)
    """{exercise id: points the key gives it}."""
    notes: list = field(default_factory=list)
    flags: list = field(default_factory=list)
    """Key material read or the grader's record tampered with: for the instructor to look at."""
    written: list = field(default_factory=list)
    """Written answers: {"exercise", "part", "text", "max_points"}, and "points", "comment" once marked."""
    seconds: float = 0.0

    @property
    def score(self) -> float:
        auto = sum(self.points[i] for i, r in self.results.items() if r.status == RIGHT)
        return auto + sum(w.get("points") or 0 for w in self.written)

    @property
    def maximum(self) -> float:
        """What this row's parts are worth; ``Batch.possible`` (the key's) is what the exports use."""
        return sum(self.points.values()) + sum(w["max_points"] for w in self.written if "points" in w)

    @property
    def unmarked(self) -> int:
        return sum(1 for w in self.written if w["max_points"] > 0 and "points" not in w)

    def to_json(self) -> dict:
        return {**asdict(self), "results": {i: asdict(r) for i, r in self.results.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "Row":
        return cls(**{**data, "results": {i: Result(**r) for i, r in data["results"].items()}})


@dataclass
class Batch:
    rows: list
    """Graded notebooks (and notebooks that could not be graded), one Row each."""
    titles: dict
    """{problem set: {exercise id: title}}, in key order: the columns of the exports."""
    others: list = field(default_factory=list)
    """{"file", "student"..., "graded"} of files not graded: superseded resubmissions, non-notebooks."""
    folder: Path | None = None
    """Where the batch was written."""
    exercises: dict = field(default_factory=dict)
    """{problem set: [{"exercise", "part", "kind", "judgement", "topic", "points"}]} (``chalk.teaching.overview``)."""
    setup_seconds: float = 0.0
    """Wall seconds spent before the first kernel (the keys, the student package, the kernels'
    Python): once per batch, whatever its size."""

    def possible(self, problem_set: str) -> float | None:
        """The points ``problem_set`` is out of, from the key (checked and written parts); for a
        batch that does not carry the key's parts, the largest row's."""
        if parts := self.exercises.get(problem_set):
            return float(sum(p["points"] for p in parts))
        rows = [r.maximum for r in self.rows if r.problem_set == problem_set and r.results]
        return max(rows) if rows else None

    def written_parts(self) -> list[tuple[str, str, str, float]]:
        """(problem set, exercise, part, points) of every written part the keys ask for."""
        return [(ps, p["exercise"], p["part"], p["points"]) for ps in self.titles
                for p in self.exercises.get(ps, ()) if p["kind"] == "written"]

    def kind(self, problem_set: str, ex_id: str) -> str:
        """The kind of an exercise's checked part ("number", "choice", "choices"; "" if the batch does not say)."""
        return next((r["kind"] for r in self.exercises.get(problem_set, ())
                     if r["exercise"] == ex_id and r["part"] == "check"), "")


def _number(x: float) -> str:
    return f"{x:g}"


# --- writing a batch ------------------------------------------------------------------------
def new_folder(out: Path | None, parent: Path, prefix: str = "") -> Path:
    """``out`` if given and empty or absent, else ``parent/<prefix><timestamp>``: grades are never
    overwritten."""
    if out is None:
        stamp = prefix + time.strftime("%Y-%m-%d_%H%M%S")
        out, n = parent / stamp, 1
        while out.exists():
            n += 1
            out = parent / f"{stamp}_{n}"
    elif out.exists() and any(out.iterdir()):
        raise GradebookError(f"OUT: {str(out)!r} is not empty; grades are never overwritten, "
                             f"choose a new folder (or leave OUT unset for a timestamped one)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # an account that cannot write there (the grader need not be root)
        raise GradebookError(f"OUT: cannot create {str(out)!r} ({err.strerror}); choose a folder this "
                             f"account can write") from None
    return out


def _ids(batch: Batch) -> list[str]:
    return [i for titles in batch.titles.values() for i in titles]


def write(batch: Batch, out: Path) -> Path:
    """Every file of a batch into ``out`` (a new folder)."""
    (out / "grades.json").write_text(json.dumps({"titles": batch.titles, "rows": [r.to_json() for r in batch.rows],
                                                 "others": batch.others, "exercises": batch.exercises}, indent=1),
                                     encoding="utf-8")
    _grades_csv(batch, out / "grades.csv")
    _exercises_csv(batch, out / "exercises.csv")
    for row in batch.rows:
        if not row.file:  # a student on the roster who handed nothing in
            continue
        dest = out / "feedback" / f"{row.file}.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(feedback(row, batch.titles.get(row.problem_set, {}), batch.possible(row.problem_set)),
                        encoding="utf-8")
    _roster_csv(batch, out / "roster.csv")
    _canvas_csv(batch, out / "canvas.csv")
    _gradescope(batch, out)
    _written(batch, out)
    return out


class _SafeWriter:
    """``csv.writer`` whose every cell goes through ``safe``."""

    def __init__(self, f):
        self._out = csv.writer(f)

    def writerow(self, row):
        self._out.writerow([safe(v) for v in row])


def _writer(path: Path):
    f = path.open("w", newline="", encoding="utf-8")
    return f, _SafeWriter(f)


def _grades_csv(batch: Batch, dest: Path) -> None:
    """One row per notebook: who, what, status, points per exercise (blank when not graded), total."""
    ids = _ids(batch)
    f, out = _writer(dest)
    with f:
        out.writerow(["file", "student", "student_id", "problem_set", "status", "score", "maximum", *ids,
                      "written_to_mark", "flags", "notes"])
        for r in batch.rows:
            marks = [(_number(r.points[i]) if r.results[i].status == RIGHT else "0") if i in r.results else ""
                     for i in ids]
            possible = batch.possible(r.problem_set)
            maximum = _number(possible) if possible is not None else ""
            out.writerow([r.file, r.student.get("student", ""), r.student.get("id", ""), r.problem_set, r.status,
                          _number(r.score), maximum, *marks, r.unmarked, "; ".join(r.flags), "; ".join(r.notes)])


EXERCISE_FIELDS = ("problem_set", "exercise", "title", "part", "kind", "judgement", "topic", "points")


def _exercises_csv(batch: Batch, dest: Path) -> None:
    """One row per part of each problem set in the batch: its kind, judgement, topic and points."""
    f, out = _writer(dest)
    with f:
        out.writerow(EXERCISE_FIELDS)
        for problem_set, parts in batch.exercises.items():
            for r in parts:
                out.writerow([problem_set, r["exercise"], batch.titles.get(problem_set, {}).get(r["exercise"], ""),
                              r["part"], r["kind"], "yes" if r["judgement"] else "no", r["topic"], _number(r["points"])])


def feedback(row: Row, titles: dict, maximum: float | None = None) -> str:
    """A short Markdown note for the student: the score (out of ``maximum``, the key's, else the
    row's), then each exercise's status, their value and a hint, then the grader's notes. Flags
    are the instructor's (``grades.csv``): a student reads verdicts and hints, never what the
    grader matched in their code."""
    lines = [f"# Feedback on {row.file}", ""]
    if not row.results:
        return "\n".join(lines + [f"This file could not be graded: {row.status}. It counts as 0 points.", ""])
    maximum = row.maximum if maximum is None else maximum
    lines.append(f"Problem set {row.problem_set}: **{_number(row.score)} of {_number(maximum)} points**.")
    if row.unmarked:
        lines.append(f"{row.unmarked} written answer(s) are still to be marked by hand.")
    if row.status != "ok":
        lines.append(f"The notebook did not run cleanly ({row.status}); every answer that could be read counts.")
    lines += [f"Note: {n}." for n in row.notes]
    lines += ["", "| status | exercise | points | what the check said |", "|---|---|---|---|"]
    for ex_id, r in row.results.items():
        earned = row.points[ex_id] if r.status == RIGHT else 0
        title = markdown_literal(titles.get(ex_id, ""))
        name = f"`{ex_id}`" + (f" ({title})" if title else "")
        lines.append(f"| {STATUS_WORD[r.status]} | {name} | {_number(earned)} of {_number(row.points[ex_id])} "
                     f"| {markdown_literal(r.message).replace('|', '/')} |")
    for w in row.written:
        if "points" in w:
            comment = f": {markdown_literal(w['comment'])}" if w.get("comment") else ""
            lines.append(f"| marked | `{w['exercise']}` ({w['part']}) | {_number(w['points'])} of "
                         f"{_number(w['max_points'])} | {comment.lstrip(': ') or 'marked by hand'} |")
    return "\n".join(lines + [""])


def _roster_csv(batch: Batch, dest: Path) -> None:
    f, out = _writer(dest)
    with f:
        out.writerow(["file", *ROSTER_FIELDS, "problem_set", "graded"])
        for r in batch.rows:
            out.writerow([r.file, *(r.student.get(k, "") for k in ROSTER_FIELDS), r.problem_set,
                          "yes" if r.results else r.status])
        for o in batch.others:
            out.writerow([o["file"], *(o["student"].get(k, "") for k in ROSTER_FIELDS), o.get("problem_set", ""),
                          o["graded"]])


def assignment_name(problem_set: str) -> str:
    """The column a problem set's points go to in the LMS: a new assignment on first import."""
    return f"Chalk problem set {problem_set}"


def _people(batch: Batch) -> dict[str, dict]:
    """{student: {"student": who, "scores": {problem set: points}}}: a graded notebook's score; 0
    for a notebook that could not be graded (in its problem set's column, or in every column the
    student has no score in when its problem set is unknown) and for a student the roster names
    who handed nothing in."""
    people: dict[str, dict] = {}
    sets = list(batch.titles)
    for r in sorted(batch.rows, key=lambda r: not r.results):  # graded rows first: they win
        who = r.student.get("id") or r.student.get("student") or r.file
        person = people.setdefault(who, {"student": r.student, "scores": {}})
        for problem_set in [r.problem_set] if r.problem_set in sets else sets:
            person["scores"].setdefault(problem_set, r.score if r.results else 0.0)
    return people


def _canvas_csv(batch: Batch, dest: Path) -> None:
    """Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one
    column per problem set and a Points Possible row (the key's). Canvas matches rows on ID; a
    student it cannot match (no Canvas id in the file name or the roster) is listed with an empty ID."""
    sets = list(batch.titles)
    maxima = {p: batch.possible(p) for p in sets}
    f, out = _writer(dest)
    with f:
        out.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *map(assignment_name, sets)])
        out.writerow(["Points Possible", "", "", "", "", *(_number(maxima[p]) if maxima[p] is not None else ""
                                                           for p in sets)])
        for who, p in _people(batch).items():
            s = p["student"]
            out.writerow([s.get("student") or who, s.get("id", ""), s.get("sis_user_id", ""), s.get("sis_login_id", ""),
                          s.get("section", ""), *(_number(p["scores"][x]) if x in p["scores"] else "" for x in sets)])


def _gradescope(batch: Batch, out: Path) -> None:
    """``gradescope.csv`` with the columns of Gradescope's score export (Name, SID, Email, Total
    Score, Max Points, Status, then one per question: each checked exercise, then each written
    part, its points blank until marked) and a ``results.json`` per graded submission in the
    Gradescope autograder's format (a test per exercise with its score and the check's text).
    A notebook that could not be graded scores 0 (Status *Graded*); a student the roster names
    who handed nothing in is *Missing*, as in Gradescope's own export."""
    ids = _ids(batch)
    titles = {i: t for ts in batch.titles.values() for i, t in ts.items()}
    points = {p["exercise"]: p["points"] for parts in batch.exercises.values() for p in parts if p["part"] == "check"}
    written = batch.written_parts()
    columns = [f"{i}: {ex_id} ({_number(points.get(ex_id, _points_of(batch, ex_id)))} pts)" for i, ex_id in enumerate(ids, 1)]
    columns += [f"{n}: {ex_id} {part} ({_number(p)} pts)" for n, (_, ex_id, part, p) in enumerate(written, len(ids) + 1)]
    f, csv_out = _writer(out / "gradescope.csv")
    with f:
        csv_out.writerow(["Name", "SID", "Email", "Total Score", "Max Points", "Status", *columns])
        for r in batch.rows:
            possible = batch.possible(r.problem_set)
            marks = [(_number(r.points[i]) if r.results[i].status == RIGHT else "0") if i in r.results else ""
                     for i in ids]
            given = {(w["exercise"], w["part"]): w.get("points") for w in r.written}
            marks += [_number(given[ex_id, part]) if ps == r.problem_set and given.get((ex_id, part)) is not None
                      else "" for ps, ex_id, part, _ in written]
            status = "Missing" if not r.file else "Graded" if not r.results or not r.unmarked else "Ungraded"
            csv_out.writerow([r.student.get("student") or r.file, r.student.get("id", ""), r.student.get("email", ""),
                              _number(r.score), _number(possible) if possible is not None else "", status, *marks])
            if r.results:
                _results_json(batch, r, titles, out)


def _results_json(batch: Batch, r: Row, titles: dict, out: Path) -> None:
    tests = [gradescope_test(n, i, titles.get(i, i), r.points[i], res, batch.kind(r.problem_set, i))
             for n, (i, res) in enumerate(r.results.items(), 1)]
    tests += [{"name": f"{w['exercise']}: written answer", "score": w["points"], "max_score": w["max_points"],
               "output": w.get("comment", ""), "tags": ["written"], "visibility": "visible"}
              for w in r.written if "points" in w]
    possible = batch.possible(r.problem_set)
    summary = [f"{_number(r.score)} of {_number(possible if possible is not None else r.maximum)} points",
               r.status, *r.notes]
    dest = out / "gradescope" / r.file / "results.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"score": r.score, "output": "\n".join(summary), "tests": tests}, indent=1),
                    encoding="utf-8")


def _points_of(batch: Batch, ex_id: str) -> float:
    return next((r.points[ex_id] for r in batch.rows if ex_id in r.points), 1.0)


MANUAL_FIELDS = ("file", "student", "problem_set", "exercise", "part", "text", "max_points", "points", "comment")


def _written(batch: Batch, out: Path) -> None:
    """``written.md`` (every written answer, grouped by exercise) and ``manual.csv`` to mark them in."""
    by_exercise: dict[tuple, list] = {}
    for r in batch.rows:
        for w in r.written:
            by_exercise.setdefault((r.problem_set, w["exercise"] or "(before the first exercise)"), []).append((r, w))
    lines = ["# Written answers", "", "Mark them in `manual.csv` (column `points`), then merge the marks "
             "back: `make grade MANUAL=<this folder>/manual.csv`.", ""]
    if not by_exercise:
        lines.append("No submission in this batch holds a written answer or an added note.")
    for (problem_set, exercise), answers in by_exercise.items():
        lines += [f"## {problem_set}: `{exercise}`", ""]
        for r, w in answers:
            who = r.student.get("student") or r.file
            kind = "written answer" if w["part"].startswith("written") else "note added by the student"
            lines += [f"**{who}** ({r.file}, {kind}, {_number(w['max_points'])} points):", "",
                      *(f"> {ln}" for ln in (w["text"] or "(no answer)").splitlines()), ""]
    (out / "written.md").write_text("\n".join(lines), encoding="utf-8")
    f, csv_out = _writer(out / "manual.csv")
    with f:
        csv_out.writerow(MANUAL_FIELDS)
        for r in batch.rows:
            for w in r.written:
                csv_out.writerow([r.file, r.student.get("student", ""), r.problem_set, w["exercise"] or "", w["part"],
                                  w["text"], _number(w["max_points"]), _number(w["points"]) if "points" in w else "",
                                  w.get("comment", "")])


# --- merging hand-given points --------------------------------------------------------------
def _points(text: str, maximum: float, line: int, where: str) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise GradebookError(f"{where} line {line}: points must be a number, got {text!r}") from None
    if not 0 <= value <= maximum:
        raise GradebookError(f"{where} line {line}: points must be between 0 and {_number(maximum)} "
                             f"(the part's max_points in the batch), got {text!r}")
    return value


def _number_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def merge(manual: Path, out: Path | None = None) -> Batch:
    """Add the points of a filled ``manual.csv`` to the batch beside it; write a new folder
    (``out``, else ``<batch>/merged-<timestamp>``) with every file recomputed.

    A line gives its points to the written part it names by (file, exercise, part), wherever it
    sits in the sheet, so a sorted sheet merges the same. The maximum is the batch's
    (``grades.json``): a sheet that changes ``max_points`` is refused, not believed, and so is a
    sheet that lacks a line for a written part worth points (rows deleted or filtered out).
    """
    manual = Path(manual)
    record = manual.parent / "grades.json"
    if not manual.is_file() or not record.is_file():
        raise GradebookError(f"MANUAL: {str(manual)!r} is not the manual.csv of a batch of grades "
                             f"(it must sit beside that batch's grades.json)")
    data = json.loads(record.read_text(encoding="utf-8"))
    batch = Batch([Row.from_json(r) for r in data["rows"]], data["titles"], data["others"],
                  exercises=data.get("exercises", {}))
    parts = {(r.file, w["exercise"] or "", w["part"]): w for r in batch.rows for w in r.written}
    with manual.open(newline="", encoding="utf-8-sig") as f:
        marks = [{k: unsafe(v or "") for k, v in m.items() if k} for m in csv.DictReader(f)]
    missing, merged = [], {}
    for line, m in enumerate(marks, 2):
        name = tuple((m.get(k) or "").strip() for k in ("file", "exercise", "part"))
        w = parts.get(name)
        if w is None:
            raise GradebookError(f"{manual} line {line}: this batch has no written part {name[2]!r} of exercise "
                                 f"{name[1]!r} in {name[0]!r} (columns file, exercise and part name it)")
        if name in merged:
            raise GradebookError(f"{manual} line {line}: {name[0]}, {name[1]}, {name[2]} is marked already "
                                 f"on line {merged[name]}")
        merged[name] = line
        sheet_max = (m.get("max_points") or "").strip()
        if sheet_max and _number_or_none(sheet_max) != w["max_points"]:
            raise GradebookError(f"{manual} line {line}: max_points is {_number(w['max_points'])} in the batch, "
                                 f"the sheet says {sheet_max!r}; a part's maximum comes from the problem set "
                                 f"(its free-text cell's points; 0 for a note), not from this sheet")
        points = _points(m.get("points", ""), w["max_points"], line, str(manual))
        if w["max_points"] > 0 and points is None:
            missing.append(str(line))
        if points is not None:
            w["points"], w["comment"] = points, (m.get("comment") or "").strip()
    if missing:
        raise GradebookError(f"{manual}: lines {', '.join(missing)} have no points; give each written answer "
                             f"its points (0 included) before merging")
    if absent := [name for name, w in parts.items() if w["max_points"] > 0 and name not in merged]:
        shown = "; ".join(f"{f}, {e or '(no exercise)'}, {p}" for f, e, p in absent[:5])
        raise GradebookError(f"{manual}: {len(absent)} written part(s) of the batch have no line in this sheet "
                             f"({shown}{'; ...' if len(absent) > 5 else ''}); every written answer needs its "
                             f"line back (rows deleted or filtered out?) before merging")
    for row in batch.rows:  # notes worth no points count as marked
        for w in row.written:
            if w["max_points"] == 0:
                w.setdefault("points", 0.0)
    batch.folder = write(batch, new_folder(out, manual.parent, "merged-"))
    return batch


# --- carrying marks into a re-grade ---------------------------------------------------------
def earlier_marks(source: Path) -> dict[tuple, dict]:
    """The written answers marked in an earlier batch: ``source`` is that batch's folder (its
    ``grades.json``, merged marks included) or a filled ``manual.csv``. Keyed by (file, exercise,
    part), each {"text", "points", "comment"}."""
    source = Path(source)
    marks = {}
    if source.is_dir() and (source / "grades.json").is_file():
        for r in json.loads((source / "grades.json").read_text(encoding="utf-8"))["rows"]:
            for w in r["written"]:
                if w.get("points") is not None and w["max_points"] > 0:
                    marks[r["file"], w["exercise"] or "", w["part"]] = {
                        "text": w["text"], "points": w["points"], "comment": w.get("comment", "")}
        return marks
    if not source.is_file() or source.suffix != ".csv":
        raise GradebookError(f"MARKS: {str(source)!r} is neither a batch of grades (a folder with grades.json) "
                             f"nor a filled manual.csv")
    with source.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not {"file", "exercise", "part", "text", "points"} <= set(reader.fieldnames or ()):
            raise GradebookError(f"MARKS: {str(source)!r} is neither a batch of grades (a folder with grades.json) "
                                 f"nor a filled manual.csv (columns {', '.join(MANUAL_FIELDS)})")
        for line, m in enumerate(reader, 2):
            m = {k: unsafe(v or "") for k, v in m.items() if k}
            maximum = _number_or_none(m.get("max_points", "")) or 0.0
            points = _points(m.get("points", ""), maximum, line, str(source))
            if points is not None and maximum > 0:
                marks[m.get("file", ""), m.get("exercise", ""), m.get("part", "")] = {
                    "text": m.get("text", ""), "points": points, "comment": m.get("comment", "").strip()}
    return marks


def carry_marks(rows: list[Row], marks: dict[tuple, dict]) -> int:
    """Give each written part of ``rows`` the points it was given in an earlier batch (``marks``),
    where its file, exercise, part and text are the same; a part whose text changed since is left
    to mark again, with a note. Returns how many parts were carried."""
    carried = 0
    for row in rows:
        for w in row.written:
            earlier = marks.get((row.file, w["exercise"] or "", w["part"]))
            if earlier is None or w["max_points"] <= 0:
                continue
            if earlier["text"].strip() != w["text"].strip():
                row.notes.append(f"the written answer {w['part']} of {w['exercise']} changed since it was marked: "
                                 f"it is to be marked again")
            elif earlier["points"] <= w["max_points"]:
                w["points"], w["comment"] = earlier["points"], earlier["comment"]
                carried += 1
    return carried
