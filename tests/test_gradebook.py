"""What the grader writes and the hand-given points merged back, without kernels: Canvas's file
names and rosters, the latest resubmission, weighted points, the LMS exports and the merge.

A batch is made here by hand (rows with results as the grader would make them), so every total
below is a hand sum of the points written into it.
"""
import csv
import json

import nbformat
import pytest

from chalk.errors import ChalkError
from chalk.teaching import gradebook, grading
from chalk.teaching.exercises import RIGHT, UNANSWERED, WRONG, Choice, Choices, Exercise, Result, answer_record
from chalk.teaching.gradebook import Batch, Row

TITLES = {"07_demo": {"a": "First", "b": "Second", "c": "Third"}}
POINTS = {"a": 1.0, "b": 2.0, "c": 1.0}
"""b weighs 2 (the key's ``points``): a full score is 4."""


def row(file, statuses, student=None, written=()):
    return Row(file, "ok", "07_demo", student or {}, points=dict(POINTS), written=[dict(w) for w in written],
               results={i: Result(i, s, f"{i} said {s}", 1.0) for i, s in zip(POINTS, statuses)})


PARTS = {"07_demo": [
    {"exercise": "a", "part": "check", "kind": "choice", "judgement": True, "topic": "does it hide", "points": 1.0},
    {"exercise": "b", "part": "check", "kind": "number", "judgement": True, "topic": "then its time", "points": 2.0},
    {"exercise": "b", "part": "written", "kind": "written", "judgement": True, "topic": "then its time", "points": 2.0},
    {"exercise": "c", "part": "check", "kind": "choices", "judgement": True, "topic": "", "points": 1.0}]}
"""What the key and the notebook say each part is (``chalk.teaching.overview.rows``)."""
WRITTEN = {"exercise": "b", "part": "written", "text": "Because the cache grows.", "max_points": 2.0}
NOTE = {"exercise": "a", "part": "note", "text": "I was unsure here.", "max_points": 0.0}


@pytest.fixture
def batch(tmp_path):
    rows = [row("jones_17_900_07_demo.ipynb", (RIGHT, RIGHT, WRONG), {"student": "jones", "id": "17"}, [WRITTEN, NOTE]),
            row("kim.ipynb", (RIGHT, UNANSWERED, RIGHT), {"student": "kim"}, [WRITTEN])]
    b = Batch(rows, TITLES, [{"file": "jones_17_800_07_demo.ipynb", "student": {"student": "jones", "id": "17"},
                              "graded": "no: superseded by jones_17_900_07_demo.ipynb"}], exercises=PARTS)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "week1", tmp_path))
    return b


def read(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_canvas_download_names_give_student_id_and_order():
    assert gradebook.canvas_name("sub/smithjane_12345_678_01_batching.ipynb") == \
        {"student": "smithjane", "id": "12345", "order": (678, 0)}
    assert gradebook.canvas_name("smithjane_LATE_12345_679_01_batching-2.ipynb")["order"] == (679, 2)
    assert gradebook.canvas_name("01_batching.ipynb") is None and gradebook.canvas_name("my homework.ipynb") is None


def test_a_roster_names_files_and_fills_canvas_ids(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("file,id,student,sis_user_id,section\nkim.ipynb,,Kim Lee,S9,B\n,12345,Jane Smith,S1,A\n")
    roster = gradebook.read_roster(path)
    assert gradebook.student_of("week1/kim.ipynb", roster)["student"] == "Kim Lee"
    jane = gradebook.student_of("smithjane_12345_678_x.ipynb", roster)
    assert (jane["student"], jane["id"], jane["sis_user_id"], jane["section"]) == ("Jane Smith", "12345", "S1", "A")
    assert gradebook.student_of("other.ipynb", roster) == dict.fromkeys(gradebook.ROSTER_FIELDS, "")
    (tmp_path / "bad.csv").write_text("name,grade\nx,1\n")
    with pytest.raises(ChalkError, match="needs a header with a 'file' or an 'id' column"):
        gradebook.read_roster(tmp_path / "bad.csv")


def test_the_latest_resubmission_wins_and_other_files_are_listed(tmp_path):
    for name, source in (("smithjane_12345_678_01_batching.ipynb", "x = 1"),
                         ("smithjane_12345_690_01_batching-2.ipynb", "x = 3"),
                         ("smithjane_12345_679_01_batching-1.ipynb", "x = 2"),
                         ("leejo_555_700_01_batching.ipynb", "x = 4")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)], metadata={"chalk": {"problem_set": "01_batching"}})
        nbformat.write(nb, tmp_path / name)
    (tmp_path / "smithjane_12345_691_notes.pdf").write_bytes(b"%PDF")
    graded, others = grading.plan(tmp_path, ["01_batching"], [])
    assert sorted(s.file for s in graded) == ["leejo_555_700_01_batching.ipynb", "smithjane_12345_690_01_batching-2.ipynb"]
    assert {o["file"]: o["graded"] for o in others} == {
        "smithjane_12345_678_01_batching.ipynb": "no: superseded by smithjane_12345_690_01_batching-2.ipynb",
        "smithjane_12345_679_01_batching-1.ipynb": "no: superseded by smithjane_12345_690_01_batching-2.ipynb",
        "smithjane_12345_691_notes.pdf": "no: not a notebook"}


def test_weighted_points_and_totals(batch):
    grades = {r["file"]: r for r in read(batch.folder / "grades.csv")}
    jones = grades["jones_17_900_07_demo.ipynb"]
    # out of the key's 6 (a 1, b 2, b's written part 2, c 1), the written part not yet marked
    assert (jones["a"], jones["b"], jones["c"], jones["score"], jones["maximum"]) == ("1", "2", "0", "3", "6")
    assert jones["written_to_mark"] == "1"  # the written answer; the note is worth nothing
    kim = grades["kim.ipynb"]
    assert (kim["score"], kim["maximum"]) == ("2", "6")


def test_exports_have_the_lms_columns(batch):
    canvas = list(csv.reader((batch.folder / "canvas.csv").open()))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Chalk problem set 07_demo"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "6"]
    assert canvas[2] == ["jones", "17", "", "", "", "3"] and canvas[3] == ["kim", "", "", "", "", "2"]
    scope = read(batch.folder / "gradescope.csv")
    assert list(scope[0])[:6] == ["Name", "SID", "Email", "Total Score", "Max Points", "Status"]
    assert list(scope[0])[6:] == ["1: a (1 pts)", "2: b (2 pts)", "3: c (1 pts)", "4: b written (2 pts)"]
    assert (scope[0]["Max Points"], scope[0]["4: b written (2 pts)"]) == ("6", "")  # not marked yet
    assert (scope[0]["Name"], scope[0]["Total Score"], scope[0]["Status"]) == ("jones", "3", "Ungraded")
    results = json.loads((batch.folder / "gradescope" / "kim.ipynb" / "results.json").read_text())
    assert results["score"] == 2 and [t["max_score"] for t in results["tests"]] == [1, 2, 1]
    assert [t["status"] for t in results["tests"]] == ["passed", "failed", "passed"]
    assert [t["tags"] for t in results["tests"]] == [["choice"], ["number"], ["choices"]]
    roster = {r["file"]: r["graded"] for r in read(batch.folder / "roster.csv")}
    assert roster == {"jones_17_900_07_demo.ipynb": "yes", "kim.ipynb": "yes",
                      "jones_17_800_07_demo.ipynb": "no: superseded by jones_17_900_07_demo.ipynb"}


def test_the_batch_says_what_kind_each_part_is_and_keeps_it_through_a_merge(batch):
    parts = read(batch.folder / "exercises.csv")
    assert [(p["exercise"], p["title"], p["part"], p["kind"], p["judgement"], p["points"]) for p in parts] == [
        ("a", "First", "check", "choice", "yes", "1"), ("b", "Second", "check", "number", "yes", "2"),
        ("b", "Second", "written", "written", "yes", "2"), ("c", "Third", "check", "choices", "yes", "1")]
    fill(batch, ["1", "2"])
    merged = gradebook.merge(batch.folder / "manual.csv")
    assert read(merged.folder / "exercises.csv") == parts
    results = json.loads((merged.folder / "gradescope" / "kim.ipynb" / "results.json").read_text())
    assert results["tests"][-1]["tags"] == ["written"] and results["tests"][0]["tags"] == ["choice"]


def test_the_grader_scores_choices_and_exact_numbers_from_the_value_each_variable_holds():
    key = grading.Key({
        "hide": Choice("hide", {"a": "It hides", "b": "It does not"}, "b", {"a": "compute-bound only."}, "compare"),
        "which": Choices("which", {"a": "one", "b": "two", "c": "three"}, {"a", "c"},
                         {"a": "a applies.", "b": "b does not.", "c": "c applies."}, "think"),
        "fits": Exercise("fits", lambda: 357.0, "sequences", 0.005, "scan", exact=True)}, {})
    given = {"hide": " B ", "which": {"C", "A"}, "fits": 357}
    run = grading.Run(checks=[(i, answer_record(v)) for i, v in given.items()],
                      answers={i: answer_record(v) for i, v in given.items()})
    results, notes = grading.judged(key, run)
    assert {i: r.status for i, r in results.items()} == {"hide": RIGHT, "which": RIGHT, "fits": RIGHT} and not notes
    wrong = grading.Run(checks=[(i, answer_record(v)) for i, v in given.items()],  # the log says right: not believed
                        answers={"hide": answer_record("a"), "which": answer_record("a"), "fits": 358.0})
    results, _ = grading.judged(key, wrong)
    assert all(r.status == WRONG for r in results.values())
    assert "compute-bound only." in results["hide"].message and "Left out (c): c applies." in results["which"].message


def fill(batch, points, comment=""):
    """manual.csv with ``points`` written into its written answers, in order."""
    path = batch.folder / "manual.csv"
    rows = read(path)
    given = iter(points)
    for r in rows:
        if float(r["max_points"]) > 0:
            r["points"], r["comment"] = next(given), comment
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=gradebook.MANUAL_FIELDS)
        out.writeheader()
        out.writerows(rows)
    return path


def test_written_answers_are_collected_and_merged_back_into_a_new_folder(batch):
    manual = read(batch.folder / "manual.csv")
    assert [(m["file"], m["exercise"], m["part"], m["max_points"], m["points"]) for m in manual] == [
        ("jones_17_900_07_demo.ipynb", "b", "written", "2", ""), ("jones_17_900_07_demo.ipynb", "a", "note", "0", ""),
        ("kim.ipynb", "b", "written", "2", "")]
    assert "Because the cache grows." in (batch.folder / "written.md").read_text()
    before = (batch.folder / "grades.csv").read_bytes()
    merged = gradebook.merge(fill(batch, ["1.5", "2"], "clear"))
    assert merged.folder.parent == batch.folder and merged.folder.name.startswith("merged-")
    assert (batch.folder / "grades.csv").read_bytes() == before  # the batch itself is untouched
    grades = {r["file"]: r for r in read(merged.folder / "grades.csv")}
    assert (grades["jones_17_900_07_demo.ipynb"]["score"], grades["jones_17_900_07_demo.ipynb"]["maximum"]) == ("4.5", "6")
    assert (grades["kim.ipynb"]["score"], grades["kim.ipynb"]["maximum"]) == ("4", "6")
    canvas = list(csv.reader((merged.folder / "canvas.csv").open()))
    assert canvas[1][5] == "6" and canvas[2][5] == "4.5"
    text = (merged.folder / "feedback" / "kim.ipynb.md").read_text()
    assert "**4 of 6 points**" in text and "| marked | `b` (written) | 2 of 2 | clear |" in text
    again = gradebook.merge(batch.folder / "manual.csv")  # merging twice never overwrites either
    assert again.folder != merged.folder


@pytest.mark.parametrize("points, message", [
    (["", "2"], "lines 2 have no points"),
    (["3", "2"], r"points must be between 0 and 2 \(the part's max_points in the batch\), got '3'"),
    (["x", "2"], "points must be a number, got 'x'"),
])
def test_merge_refuses_marks_it_cannot_use(batch, points, message):
    with pytest.raises(ChalkError, match=message):
        gradebook.merge(fill(batch, points))


def write_sheet(path, rows):
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=gradebook.MANUAL_FIELDS)
        out.writeheader()
        out.writerows(rows)
    return path


WRITTEN_C = {"exercise": "c", "part": "written", "text": "It reads the cache.", "max_points": 1.0}


@pytest.fixture
def lee(tmp_path):
    """One notebook with two written parts of different maxima (b: 2, c: 1) and a note (a: 0)."""
    b = Batch([row("lee.ipynb", (RIGHT, WRONG, WRONG), {"student": "lee"}, [WRITTEN, WRITTEN_C, NOTE])], TITLES)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "week2", tmp_path))
    return b.folder / "manual.csv"


def test_a_sorted_sheet_gives_each_part_its_own_points(lee):
    rows = read(lee)
    for r in rows:
        r["points"] = {"b": "1.5", "c": "1", "a": ""}[r["exercise"]]
    rows.sort(key=lambda r: r["exercise"], reverse=True)  # c, b, a: the sheet sorted in a spreadsheet
    merged = gradebook.merge(write_sheet(lee, rows))
    [grades] = read(merged.folder / "grades.csv")
    # a right (1 of 1), b and c wrong (0 of 2, 0 of 1); written b 1.5 of 2 and c 1 of 1: 3.5 of 7
    assert (grades["score"], grades["maximum"]) == ("3.5", "7")
    text = (merged.folder / "feedback" / "lee.ipynb.md").read_text()
    assert "| marked | `b` (written) | 1.5 of 2 |" in text and "| marked | `c` (written) | 1 of 1 |" in text


@pytest.mark.parametrize("change, message", [
    ({"exercise": "a", "max_points": "1", "points": "1"}, "max_points is 0 in the batch, the sheet says '1'"),
    ({"exercise": "c", "max_points": "3", "points": "3"}, "max_points is 1 in the batch, the sheet says '3'"),
    ({"exercise": "c", "max_points": "", "points": "3"}, r"between 0 and 1 \(the part's max_points in the batch\)"),
    ({"exercise": "c", "part": "written 2", "points": "1"}, "no written part 'written 2' of exercise 'c' in 'lee.ipynb'"),
])
def test_merge_takes_the_maximum_from_the_batch_not_the_sheet(lee, change, message):
    rows = read(lee)
    for r in rows:
        r["points"] = "0" if r["exercise"] != "a" else ""
    target = next(r for r in rows if r["exercise"] == change["exercise"])
    target.update(change)
    with pytest.raises(ChalkError, match=message):
        gradebook.merge(write_sheet(lee, rows))


def test_a_part_marked_twice_is_refused(lee):
    rows = read(lee)
    for r in rows:
        r["points"] = "0"
    with pytest.raises(ChalkError, match="is marked already on line 2"):
        gradebook.merge(write_sheet(lee, rows + rows[:1]))


def test_a_second_part_of_one_kind_gets_its_own_name():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## First: `a`"),
        nbformat.v4.new_markdown_cell("I was unsure."), nbformat.v4.new_markdown_cell("Still unsure."),
        nbformat.v4.new_markdown_cell("Why?\n\n*Your answer here.*", metadata={"tags": ["free-text"]}),
        nbformat.v4.new_markdown_cell("How?\n\nBecause.", metadata={"tags": ["free-text"], "chalk": {"points": 2}})])
    key = grading.Key({"a": None}, {"a": "First"}, {"## First: `a`"}, ["Why?", "How?"])
    assert [(w["exercise"], w["part"], w["text"], w["max_points"]) for w in grading.written_parts(nb, key)] == [
        ("a", "note", "I was unsure.", 0.0), ("a", "note 2", "Still unsure.", 0.0),
        ("a", "written", "", 1.0), ("a", "written 2", "Because.", 2.0)]


def test_a_folder_that_holds_grades_is_never_reused(tmp_path):
    first = gradebook.new_folder(None, tmp_path)
    (first / "grades.csv").write_text("x")
    second = gradebook.new_folder(None, tmp_path)
    assert second != first and second.parent == tmp_path
    with pytest.raises(ChalkError, match="is not empty; grades are never overwritten"):
        gradebook.new_folder(first, tmp_path)


def test_feedback_prints_dollars_as_dollars_not_maths():
    # "$2 per hour ... $0.50" between two dollars is inline maths in JupyterLab and most Markdown viewers.
    r = Row("kim.ipynb", "ok", "07_demo", {}, points=dict(POINTS),
            results={"a": Result("a", WRONG, "1 ($ per million tokens) is not within 2%: at $2 per hour", 1.0)})
    text = gradebook.feedback(r, TITLES["07_demo"])
    line = next(ln for ln in text.splitlines() if "`a`" in ln)
    assert r"(\$ per million tokens)" in line and r"at \$2 per hour" in line
    assert "$" not in line.replace("\\$", "")


# --- exports an instructor can trust (issue 28, section 3) -----------------------------------
def test_points_possible_comes_from_the_key_even_when_the_first_row_lacks_a_part(tmp_path):
    # lee deleted the written-answer cell and is listed first; kim's is marked 2 of 2
    rows = [row("lee.ipynb", (RIGHT, RIGHT, RIGHT), {"student": "lee", "id": "5"}),
            row("kim.ipynb", (RIGHT, RIGHT, RIGHT), {"student": "kim", "id": "6"}, [WRITTEN])]
    b = Batch(rows, TITLES, exercises=PARTS)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "week3", tmp_path))
    merged = gradebook.merge(fill(b, ["2"]))
    canvas = list(csv.reader((merged.folder / "canvas.csv").open()))
    assert canvas[1][5] == "6" and canvas[2][:2] == ["lee", "5"] and canvas[2][5] == "4"
    grades = {r["file"]: r for r in read(merged.folder / "grades.csv")}
    assert (grades["lee.ipynb"]["score"], grades["lee.ipynb"]["maximum"]) == ("4", "6")
    assert (grades["kim.ipynb"]["score"], grades["kim.ipynb"]["maximum"]) == ("6", "6")
    scope = {r["Name"]: r for r in read(merged.folder / "gradescope.csv")}
    assert scope["lee"]["Max Points"] == "6" and scope["kim"]["4: b written (2 pts)"] == "2"
    assert scope["lee"]["4: b written (2 pts)"] == ""


def test_a_notebook_that_cannot_be_graded_exports_as_zero(tmp_path):
    rows = [row("kim.ipynb", (RIGHT, RIGHT, RIGHT), {"student": "kim", "id": "6"}),
            Row("jo_7_1_07_demo.ipynb", "invalid: not valid JSON (Expecting value)", "07_demo", {"student": "jo", "id": "7"}),
            Row("ann_8_1_essay.ipynb", "invalid: problem set unknown (no chalk metadata)", "", {"student": "ann", "id": "8"})]
    b = Batch(rows, TITLES, exercises=PARTS)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "w", tmp_path))
    canvas = {r[1]: r for r in csv.reader((b.folder / "canvas.csv").open())}
    assert canvas["7"][5] == "0" and canvas["8"][5] == "0" and canvas["6"][5] == "4"
    scope = {r["SID"]: r for r in read(b.folder / "gradescope.csv")}
    assert (scope["7"]["Total Score"], scope["7"]["Max Points"], scope["7"]["Status"]) == ("0", "6", "Graded")
    grades = {r["file"]: r for r in read(b.folder / "grades.csv")}
    assert grades["jo_7_1_07_demo.ipynb"]["status"].startswith("invalid: not valid JSON")
    assert "counts as 0 points" in (b.folder / "feedback" / "jo_7_1_07_demo.ipynb.md").read_text()


def test_a_student_on_the_roster_who_handed_nothing_in_exports_as_zero_with_a_note(tmp_path):
    rows = [row("kim.ipynb", (RIGHT, RIGHT, RIGHT), {"student": "kim", "id": "6"})]
    roster = [{"id": "6", "student": "kim"}, {"id": "9", "student": "max"}, {"file": "ann.ipynb", "student": ""}]
    absent = grading.missing(roster, rows, ["07_demo"])
    assert [(r.student["id"], r.problem_set, r.file) for r in absent] == [("9", "07_demo", "")]
    assert absent[0].status.startswith("missing: no notebook of problem set 07_demo")
    b = Batch(rows + absent, TITLES, exercises=PARTS)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "w", tmp_path))
    canvas = {r[1]: r for r in csv.reader((b.folder / "canvas.csv").open())}
    assert canvas["9"][0] == "max" and canvas["9"][5] == "0"
    scope = {r["SID"]: r for r in read(b.folder / "gradescope.csv")}
    assert (scope["9"]["Total Score"], scope["9"]["Status"]) == ("0", "Missing")
    grades = read(b.folder / "grades.csv")
    assert [g["status"][:8] for g in grades if g["student_id"] == "9"] == ["missing:"]


def test_a_marks_sheet_with_rows_removed_is_refused(batch, capsys):
    rows = [r for r in read(fill(batch, ["1", "2"])) if r["file"] != "kim.ipynb"]
    sheet = write_sheet(batch.folder / "manual.csv", rows)
    with pytest.raises(ChalkError, match=r"1 written part\(s\) of the batch have no line in this sheet \(kim.ipynb, b, written\)"):
        gradebook.merge(sheet)
    assert grading.main(["--merge", str(sheet)]) == 2
    assert "kim.ipynb, b, written" in capsys.readouterr().err


FORMULAS = ("=HYPERLINK(\"http://x\",\"see\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "=cmd|' /C calc'!A0")


def test_no_csv_cell_reads_as_a_formula_and_merging_reads_them_back(tmp_path):
    written = [{**WRITTEN, "text": FORMULAS[0]}]
    rows = [row("=evil.ipynb", (RIGHT, WRONG, RIGHT), {"student": "@SUM(A1)", "id": "17", "email": "-2+3"}, written),
            row("kim.ipynb", (RIGHT, RIGHT, RIGHT), {"student": "+1+1"}, [{**WRITTEN, "text": FORMULAS[5]}])]
    rows[0].notes.append(FORMULAS[4])
    b = Batch(rows, TITLES, exercises=PARTS)
    b.folder = gradebook.write(b, gradebook.new_folder(tmp_path / "w", tmp_path))
    cells = [c for path in b.folder.glob("*.csv") for line in csv.reader(path.open(newline="")) for c in line]
    assert any(c == "'" + FORMULAS[0] for c in cells) and any(c == "'@SUM(A1)" for c in cells)
    for c in cells:
        if c.startswith(("=", "+", "-", "@", "\t", "\r")):
            float(c)  # only a plain number may open like a formula
    merged = gradebook.merge(fill(b, ["2", "1"]))
    by_file = {r.file: r for r in merged.rows}
    assert by_file["=evil.ipynb"].written[0]["points"] == 2 and by_file["kim.ipynb"].written[0]["points"] == 1
    assert gradebook.earlier_marks(b.folder / "manual.csv")["=evil.ipynb", "b", "written"]["text"] == FORMULAS[0]


def test_a_regrade_carries_the_hand_marks_over_to_unchanged_answers(batch):
    merged = gradebook.merge(fill(batch, ["1.5", "2"], "clear"))
    for source in (merged.folder, batch.folder / "manual.csv"):
        again = [row("jones_17_900_07_demo.ipynb", (RIGHT, RIGHT, WRONG), {"student": "jones", "id": "17"}, [WRITTEN, NOTE]),
                 row("kim.ipynb", (RIGHT, UNANSWERED, RIGHT), {"student": "kim"},
                     [{**WRITTEN, "text": "Because the cache grows, and I changed this."}])]
        assert gradebook.carry_marks(again, gradebook.earlier_marks(source)) == 1
        assert (again[0].written[0]["points"], again[0].written[0]["comment"]) == (1.5, "clear")
        assert "points" not in again[1].written[0]
        assert any("changed since it was marked" in n for n in again[1].notes)
    with pytest.raises(ChalkError, match="MARKS: .* is neither a batch of grades"):
        gradebook.earlier_marks(batch.folder / "grades.csv")
