"""The instructors' guide: every command in its ```bash blocks runs, exactly as written.

The commands run in a scratch folder that holds the Makefile and a link to .venv, so their
outputs (``_build/``) stay out of the repository while other tests read it. Sample submissions
sit where the guide tells instructors to put them.
"""
import csv
import os
import re
import shutil
import subprocess

import nbformat
import pytest

from chalk.teaching.edition import student_problem_set
from chalk.teaching.exercises import problem_set
from conftest import ROOT

GUIDE = ROOT / "book" / "instructors.md"
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
SOURCE = ROOT / "exercises" / "01_batching.ipynb"


def commands():
    """Each command line of the page's bash blocks (comments and blank lines aside)."""
    return [line.strip() for block in BLOCK.findall(GUIDE.read_text())
            for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


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
    nbformat.write(student_problem_set(SOURCE), week / "ben.ipynb")
    return repo


@pytest.fixture(scope="module")
def ran(scratch):
    for command in commands():
        proc = subprocess.run(command, shell=True, cwd=scratch, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{command}\n{(proc.stdout + proc.stderr)[-3000:]}"
    return scratch


def test_guide_has_the_commands_it_documents():
    targets = {c.split()[1] for c in commands() if c.startswith("make ")}
    assert {"student", "grade", "deck", "book"} <= targets


def test_assign_writes_the_edition_and_zip(ran):
    assert (ran / "_build" / "student.zip").is_file()
    assert (ran / "_build" / "student" / "exercises" / SOURCE.name).is_file()


def test_grade_writes_scores_and_feedback(ran):
    with (ran / "_build" / "grades" / "grades.csv").open(newline="") as f:
        rows = {r["file"]: r for r in csv.DictReader(f)}
    n = len(problem_set("01_batching"))
    assert (rows["ada.ipynb"]["status"], int(rows["ada.ipynb"]["score"])) == ("ok", n)
    assert (rows["ben.ipynb"]["status"], int(rows["ben.ipynb"]["score"])) == ("ok", 0)
    assert "0 of" in (ran / "_build" / "grades" / "feedback" / "ben.ipynb.md").read_text()


def test_decks_and_student_site_are_built(ran):
    assert (ran / "_build" / "decks" / "chalk.apkg").is_file()
    page = (ran / "_build" / "html-student" / "exercises" / "01_batching.html").read_text()
    assert "not answered yet" in page and "Worked solution" not in page


def test_grade_without_submissions_fails_with_one_line(scratch):
    proc = subprocess.run("make grade", shell=True, cwd=scratch, capture_output=True, text=True)
    assert proc.returncode != 0 and "set SUBMISSIONS=" in proc.stderr
    proc = subprocess.run("make grade SUBMISSIONS=nowhere", shell=True, cwd=scratch, capture_output=True, text=True)
    assert proc.returncode != 0 and "SUBMISSIONS: 'nowhere' is not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr
