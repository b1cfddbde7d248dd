"""The Gradescope autograder (``make autograder``, ``chalk.teaching.autograder``): what its zip
carries, and its ``run_autograder`` run in a temporary folder laid out as Gradescope's
``/autograder`` (source/ holding the unpacked zip, submission/, results/) on a right, a wrong and
a broken submission.

The wheel is installed as setup.sh installs it, but offline: into a fresh virtual environment
with ``pip --no-index --no-deps``, its dependencies read from this checkout's .venv (setup.sh
fetches them from the package index). Run as root, as on Gradescope, the notebook runs as a spare
unprivileged uid. Expected scores come from how each submission was built (the instructor's
edition answers every exercise; the wrong one changes one answer to a listed mistake), and the
format from Gradescope's specification, https://gradescope-autograders.readthedocs.io/en/latest/specs/.
"""
import io
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from chalk.teaching import autograder, package
from chalk.teaching.exercises import NUMBER, problem_set
from conftest import ROOT
from key_answers import slip
from unprivileged import base_python, libraries, open_folder, reachable

CHAPTER = "01_batching"
SOURCE = ROOT / "exercises" / f"{CHAPTER}.ipynb"
EXERCISES = problem_set(CHAPTER)
TOTAL = sum(ex.points for ex in EXERCISES.values())
WRONG = next(i for i, ex in EXERCISES.items() if ex.kind == NUMBER)
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
              "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
"""results.json's top-level fields in Gradescope's specification."""
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
               "tags", "visibility", "extra_data"}
"""A test's fields in the specification; the brief's five (name, score, max_score, output,
visibility) are asserted present on every test."""
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
AS_ROOT = os.getuid() == 0


def spare_uid() -> int:
    """A uid no account uses, so that killing its processes touches nothing else on this machine."""
    uid = 64000 + os.getpid() % 900
    while True:
        try:
            pwd.getpwuid(uid)
            uid += 1
        except KeyError:
            return uid


@pytest.fixture(scope="module")
def top():
    """A world-traversable temporary folder (pytest's own is closed to other users)."""
    folder = open_folder("chalk-autograder-test-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def zipped(top):
    (path,) = autograder.build(top / "zips", [CHAPTER], timeout=240)
    return path


@pytest.fixture(scope="module")
def python(top, zipped):
    base = base_python(AS_ROOT)
    if base is None or (AS_ROOT and not all(reachable(p) for p in libraries())):
        pytest.skip("no Python of this version, or not this .venv's libraries, that an unprivileged user can reach")
    env = top / "python"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(env), "platbase": str(env)}))
    (site / "deps.pth").write_text("".join(f"{p}\n" for p in libraries()))
    with zipfile.ZipFile(zipped) as zf:
        wheel = top / package.wheel_name()
        wheel.write_bytes(zf.read(package.wheel_name()))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q",
                    "--no-index", "--no-deps", str(wheel)], check=True)
    return env / "bin" / "python"


def run_autograder(top, zipped, python, name, notebook):
    """Lay out ``top/name`` as Gradescope's /autograder with ``notebook`` (bytes) submitted, run
    its run_autograder as Gradescope does; (results.json, the root folder, the uid code ran as)."""
    root = top / name
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
        (root / folder).chmod(0o755)
    with zipfile.ZipFile(zipped) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission" / f"{CHAPTER}.ipynb").write_bytes(notebook)
    uid = spare_uid() if AS_ROOT else os.getuid()
    env = {"PATH": os.defpath, "CHALK_PYTHON": str(python), "CHALK_AUTOGRADER_USER": str(uid)}
    proc = subprocess.run(["bash", str(root / "run_autograder"), str(root)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((root / "results" / "results.json").read_text()), root, uid


def instructor():
    return nbformat.read(SOURCE, as_version=4)


def check_index(nb, ex_id):
    return next(i for i, c in enumerate(nb.cells) if c.source.strip() == f'check("{ex_id}", {ex_id})')


FORGED = {"score": 1000, "tests": []}


def wrong_notebook(results: Path) -> bytes:
    """The instructor's edition with WRONG's answer replaced by its first listed mistake and, run
    as root (where the code runs as another user), a cell that writes a full score into
    results.json, now and from a process left running after it."""
    nb = instructor()
    i = check_index(nb, WRONG)
    nb.cells[i - 1].source += f"\n{WRONG} = {slip(EXERCISES[WRONG])[0]!r}"
    if not AS_ROOT:
        return nbformat.writes(nb).encode()
    forged = json.dumps(json.dumps(FORGED))
    nb.cells.insert(1, nbformat.v4.new_code_cell(f"""\
import subprocess
try:
    open({str(results)!r}, "w").write({forged})
except OSError as err:
    print("refused:", type(err).__name__)
subprocess.Popen(["/bin/sh", "-c", "sleep 3; printf '%s' " + repr({forged}) + " > {results}; sleep 600"],
                 start_new_session=True)
"""))
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def graded(top, zipped, python):
    right = run_autograder(top, zipped, python, "right", nbformat.writes(instructor()).encode())
    wrong_root = top / "wrong"
    wrong = run_autograder(top, zipped, python, "wrong", wrong_notebook(wrong_root / "results" / "results.json"))
    broken = run_autograder(top, zipped, python, "broken", b'{"cells": [')
    return {"right": right, "wrong": wrong, "broken": broken}


def valid(data: dict) -> None:
    """results.json as Gradescope's specification has it, tests scored consistently."""
    assert set(data) <= TOP_FIELDS and isinstance(data["score"], (int, float))
    assert [t["name"].split(":")[0] for t in data["tests"]] == list(EXERCISES)
    for t in data["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(t) <= TEST_FIELDS, t
        assert t["visibility"] in VISIBILITY and t["status"] in ("passed", "failed")
        assert 0 <= t["score"] <= t["max_score"] and isinstance(t["output"], str)
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert sum(t["max_score"] for t in data["tests"]) == TOTAL


# --- the zip -----------------------------------------------------------------------------------
def test_the_zip_holds_two_scripts_the_student_wheel_and_pins_never_a_plain_key(zipped):
    with zipfile.ZipFile(zipped) as zf:
        assert set(zf.namelist()) == {"setup.sh", "run_autograder", "requirements.txt", package.wheel_name()}
        assert {zf.getinfo(n).external_attr >> 16 & 0o777 for n in ("setup.sh", "run_autograder")} == {0o755}
        scripts = {n: zf.read(n).decode() for n in ("setup.sh", "run_autograder")}
        pins = zf.read("requirements.txt").decode().split()
        wheel = zf.read(package.wheel_name())
    for name, text in [*scripts.items(), ("requirements.txt", " ".join(pins))]:
        assert str(ROOT) not in text, name  # nothing points back at the repository
    for name, text in scripts.items():
        assert text.startswith("#!/usr/bin/env bash\n"), name
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0, name
    assert f"--problem-set {CHAPTER}" in scripts["run_autograder"]
    assert all("==" in p for p in pins) and {"ipykernel", "nbclient"} <= {p.split("==")[0] for p in pins}
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        names = whl.namelist()
        assert f"chalk/teaching/sealed/{CHAPTER}.json" in names
        assert "chalk/teaching/autograder.py" in names and "chalk/teaching/runner.py" in names
        for name in names:
            rel = name.removeprefix("chalk/")
            assert not any(rel == x or rel.startswith(x + "/") for x in package.INSTRUCTOR_ONLY), name
            assert not Path(rel).match(package.CARD_MODULES), name
            assert str(ROOT).encode() not in whl.read(name), name


def test_build_refuses_an_unknown_problem_set(tmp_path):
    with pytest.raises(SystemExit, match="PROBLEM_SET: no problem set 'nope'"):
        autograder.build(tmp_path, ["nope"])


# --- run_autograder ---------------------------------------------------------------------------
def test_a_right_submission_gets_full_marks(graded):
    data = graded["right"][0]
    valid(data)
    assert data["score"] == TOTAL and all(t["status"] == "passed" for t in data["tests"])


def test_a_wrong_answer_loses_its_points_with_its_hint(graded):
    data = graded["wrong"][0]
    valid(data)
    assert data["score"] == TOTAL - EXERCISES[WRONG].points
    (test,) = [t for t in data["tests"] if t["status"] == "failed"]
    assert test["name"].startswith(WRONG) and slip(EXERCISES[WRONG])[1] in test["output"]


@pytest.mark.skipif(not AS_ROOT, reason="run as a user, the autograder has no other user to run the students' "
                                          "code as; Gradescope runs it as root")
def test_the_students_code_cannot_write_the_results_or_outlive_the_run(graded):
    data, root, uid = graded["wrong"]
    time.sleep(5)  # past the left-behind process's "sleep 3", had it survived
    assert json.loads((root / "results" / "results.json").read_text()) == data != FORGED
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid]
    assert not alive


def _owner(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def test_a_broken_submission_scores_zero_with_a_note(graded):
    data = graded["broken"][0]
    valid(data)
    assert data["score"] == 0 and "could not be read as a notebook" in data["output"]
    assert all(t["output"].startswith("not answered") for t in data["tests"])
