"""The instructors' guide: every command in its ```bash blocks runs, exactly as written, in order:
assign, publish, grade, merge the hand-marked points, clean up, export the decks.

The commands run in a scratch folder that holds the Makefile and a link to .venv, so their
outputs (``_build/``) stay out of the repository while other tests read it. Their sources are the
repository's (``chalk`` is installed editable), so `make student` reads and fills the repository's
edition cache (``edition.cache_folder``): a test run executes each page of the edition once, in
whichever test builds it first. Sample submissions
sit where the guide tells instructors to put them: the instructor's own problem set (every answer
right, the model answer as its written answer) and a student edition with no number answered, a
sentence in its written answer (Chapter 1's, under ``sparsity_k16``) and a note the student added.
Between grading and merging, the test does what the guide asks the instructor to do: it fills in
the points of manual.csv.
"""
import csv
import os
import re
import shutil
import subprocess

import nbformat
import pytest

from chalk.teaching import edition, overview
from chalk.teaching.edition import student_problem_set
from chalk.teaching.seal import known_problem_sets
from chalk.teaching.exercises import problem_set
from chalk.teaching.student import FREE_TEXT, PLACEHOLDER
from conftest import ROOT

GUIDE = ROOT / "book" / "instructors.md"
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
SOURCE = ROOT / "exercises" / "01_batching.ipynb"
TOTAL = sum(ex.points for ex in problem_set("01_batching").values())
WRITTEN = "Doubling k adds only routed experts to the active parameters, so s falls by less than half."
NOTE = "I was unsure which experts count as active."
GIVEN = 0.5
"""The points the test gives each written answer (ada's and ben's, worth 1 each) when it marks manual.csv."""


def commands():
    """Each command line of the page's bash blocks (comments and blank lines aside)."""
    return [line.strip() for block in BLOCK.findall(GUIDE.read_text())
            for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def files(folder):
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


def mark(manual):
    """Give every written answer in ``manual`` GIVEN points, as an instructor does in a
    spreadsheet; the notes students added are worth nothing and are left blank."""
    with manual.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if r["part"] == "written":
            r["points"], r["comment"] = str(GIVEN), "half right"
    with manual.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    top = tmp_path_factory.mktemp("guide")
    repo = top / "course"
    (repo / "lib").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", repo)
    for name in ("requirements.txt", "lib/pyproject.toml"):
        shutil.copy(ROOT / name, repo / name)
        os.utime(repo / name, (0, 0))  # older than .venv's stamp: make must not reinstall into it
    (repo / ".venv").symlink_to(ROOT / ".venv")
    week = top / "submissions" / "week1"
    week.mkdir(parents=True)
    nbformat.write(nbformat.read(SOURCE, as_version=4), week / "ada.ipynb")
    ben = student_problem_set(SOURCE)
    written = next(c for c in ben.cells if FREE_TEXT in c.metadata.get("tags", []))
    written.source = written.source.replace(PLACEHOLDER, WRITTEN)
    heading = next(i for i, c in enumerate(ben.cells) if c.cell_type == "markdown" and c.source.startswith("## "))
    ben.cells.insert(heading + 2, nbformat.v4.new_markdown_cell(NOTE))
    nbformat.write(ben, week / "ben.ipynb")
    return repo


CLASS_PAGE = "_build/html-student/exercises/01_batching.html"


@pytest.fixture(scope="module")
def ran(scratch, built_site):
    """(scratch folder, {command: (exit status, its output's end, the files under _build after it)},
    the class site's problem-set page as built), each command run in the guide's order (``make
    clean`` removes the site later). A failing command fails the tests that need it, not the others.
    The default site is built first (``built_site``), as an instructor's `make book` would have, so
    `make book STUDENT=1` starts from its environment."""
    results, page = {}, None
    for command in commands():
        manual = re.search(r"MANUAL=(\S+)", command)
        if manual and (scratch / manual.group(1)).is_file():
            mark(scratch / manual.group(1))
        proc = subprocess.run(command, shell=True, cwd=scratch, capture_output=True, text=True, timeout=3600)  # a hang, not a loaded machine
        results[command] = (proc.returncode, (proc.stdout + proc.stderr)[-3000:], files(scratch / "_build"))
        if page is None and (scratch / CLASS_PAGE).is_file():
            page = (scratch / CLASS_PAGE).read_text()
    return scratch, results, page


def after(ran, prefix):
    """The files under _build after the command starting with ``prefix``, which must have succeeded."""
    command, (status, output, built) = next((k, v) for k, v in ran[1].items() if k.startswith(prefix))
    assert status == 0, f"{command}\n{output}"
    return built


def test_every_command_of_the_guide_succeeds(ran):
    failed = {c: out for c, (status, out, _) in ran[1].items() if status != 0}
    assert not failed, "\n\n".join(f"$ {c}\n{out}" for c, out in failed.items())


def grades(ran, folder):
    with (ran[0] / "_build" / "grades" / folder / "grades.csv").open(newline="") as f:
        return {r["file"]: r for r in csv.DictReader(f)}


def test_guide_walks_through_every_step_in_order():
    steps = [c.split()[0:2] for c in commands()]
    order = [s[1] for s in steps if s[0] == "make"]
    assert order == ["student", "book", "grade", "grade", "clean", "deck"]
    assert any("chalk.teaching.leaks" in c for c in commands())
    assert "MANUAL=" in commands()[4] and "SUBMISSIONS=" in commands()[3]


def test_assign_writes_the_edition_the_wheel_and_the_zip(ran):
    built = after(ran, "make student")
    assert {"student.zip", "student/README.md", f"student/exercises/{SOURCE.name}"} <= built
    assert [f for f in built if f.startswith("student/chalk-") and f.endswith("+student-py3-none-any.whl")]


def test_the_class_site_is_built_without_solutions(ran):
    assert CLASS_PAGE.removeprefix("_build/") in after(ran, "make book STUDENT=1")
    assert "not answered" in ran[2] and "Worked solution" not in ran[2]


def test_grade_writes_scores_feedback_and_exports(ran):
    after(ran, "make grade SUBMISSIONS=")
    rows = grades(ran, "week1")
    assert (rows["ada.ipynb"]["status"], float(rows["ada.ipynb"]["score"])) == ("ok", TOTAL)
    assert (rows["ben.ipynb"]["status"], float(rows["ben.ipynb"]["score"])) == ("ok", 0)
    batch = ran[0] / "_build" / "grades" / "week1"
    assert "0 of" in (batch / "feedback" / "ben.ipynb.md").read_text()
    assert {"canvas.csv", "gradescope.csv", "roster.csv", "written.md", "manual.csv"} <= set(os.listdir(batch))
    written = (batch / "written.md").read_text()
    assert WRITTEN in written and NOTE in written
    with (batch / "manual.csv").open(newline="") as f:
        parts = {(r["file"], r["exercise"], r["part"]): r["max_points"] for r in csv.DictReader(f)}
    assert parts[("ben.ipynb", "sparsity_k16", "written")] == parts[("ada.ipynb", "sparsity_k16", "written")] == "1"
    assert parts[("ben.ipynb", "sparsity_k16", "note")] == "0"


def test_merge_adds_the_hand_given_points_into_a_new_folder(ran):
    after(ran, "make grade MANUAL=")
    rows = grades(ran, "week1-final")
    # each written answer is worth 1: ben gets GIVEN of TOTAL + 1, ada every number and GIVEN
    assert float(rows["ben.ipynb"]["score"]) == GIVEN and float(rows["ben.ipynb"]["maximum"]) == TOTAL + 1
    assert float(rows["ada.ipynb"]["score"]) == TOTAL + GIVEN and float(rows["ada.ipynb"]["maximum"]) == TOTAL + 1
    assert float(grades(ran, "week1")["ben.ipynb"]["score"]) == 0  # the first batch is kept as it was
    text = (ran[0] / "_build" / "grades" / "week1-final" / "feedback" / "ben.ipynb.md").read_text()
    assert f"{GIVEN:g} of {TOTAL + 1:g} points" in text
    assert f"| marked | `sparsity_k16` (written) | {GIVEN:g} of 1 | half right |" in text


def test_clean_keeps_the_grades(ran):
    kept = after(ran, "make clean")
    assert kept and all(f.startswith("grades/") for f in kept)
    assert "grades/week1-final/canvas.csv" in kept and "student.zip" not in kept


def test_decks_are_exported(ran):
    assert {"decks/chalk.apkg", "decks/chalk_cards.tsv"} <= after(ran, "make deck")


def test_make_student_there_shares_the_repositorys_edition_cache(scratch):
    # Else the guide's `make student` would run every page of the edition a second time in a test run.
    proc = subprocess.run([".venv/bin/python", "-c", "from chalk.teaching import edition; print(edition.cache_folder())"],
                          cwd=scratch, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == str(edition.cache_folder(ROOT))


def test_grade_without_submissions_fails_with_one_line(scratch):
    proc = subprocess.run("make grade", shell=True, cwd=scratch, capture_output=True, text=True)
    assert proc.returncode != 0 and "set SUBMISSIONS=" in proc.stderr
    proc = subprocess.run("make grade SUBMISSIONS=nowhere", shell=True, cwd=scratch, capture_output=True, text=True)
    assert proc.returncode != 0 and "SUBMISSIONS: 'nowhere' is not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- what each problem set asks (no commands run) ----------------------------------------------------
def test_the_guide_tables_every_problem_set_from_the_keys():
    text = GUIDE.read_text()
    assert "kernelspec:" in text.split("---")[1]  # executed, so the tables are the keys' of the build
    assert re.search(r"```\{code-cell\} ipython3\n:tags: \[remove-input\]\n(.*\n)*?Markdown\(overview\.tables\(\)\)",
                     text)
    tables = overview.tables()
    for chapter in known_problem_sets():
        for ex in problem_set(chapter).values():
            assert re.search(rf"^\| `{ex.id}` \| {ex.kind} \| {'yes' if ex.judgement else 'no'} \|", tables, re.M), ex.id
    assert "| `sparsity_k16` (written) | written | yes |" in tables


def test_written_parts_are_rows_of_their_exercise(tmp_path):
    nb = nbformat.read(SOURCE, as_version=4)
    first = next(c for c in nb.cells if FREE_TEXT in c.metadata.get("tags", []))
    second = nbformat.v4.new_markdown_cell("**Written answer** (2 points): and why?", metadata={"tags": [FREE_TEXT],
                                                                                              "chalk": {"points": 2}})
    nb.cells.insert(nb.cells.index(first) + 1, second)
    (tmp_path / "exercises").mkdir()
    nbformat.write(nb, tmp_path / "exercises" / SOURCE.name)
    rows = overview.rows("01_batching", tmp_path)
    written = [(r["exercise"], r["part"], r["kind"], r["points"]) for r in rows if r["kind"] == "written"]
    assert written == [("sparsity_k16", "written", "written", 1.0), ("sparsity_k16", "written 2", "written", 2.0)]
    checked = [r for r in rows if r["part"] == "check"]
    assert [r["exercise"] for r in checked] == list(problem_set("01_batching"))
    total = sum(ex.points for ex in problem_set("01_batching").values()) + 3
    assert overview.table("01_batching", tmp_path).endswith(f"{total:g} points in all.")
