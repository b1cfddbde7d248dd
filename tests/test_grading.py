"""The grader, end to end, on submissions made here from the instructor's problem set, as the
students of a class would hand them in: a correct one, a half-correct one, one with every typical
mistake, a blank one, a renamed-and-reordered one, a JupyterLab save with outputs, one whose kernel
dies, and two cheaters (one importing key material, one searching the check for the answers).

Each submission's expected status and points follow from how it was built (which answers were
kept, broken, deleted or forged), never from the grader's own output. Kernels are few: nine in
the main batch, two cheap ones (no chalk import) in the batch with a short time limit.
"""
import asyncio
import concurrent.futures
import csv
import hashlib
import importlib.util
import json
import math
import os
import pathlib
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import chalk.teaching.exercises
from chalk.teaching.exercises import markdown_literal
from chalk.errors import ChalkError
from chalk.teaching import grading, leaks, runner, seal
from chalk.teaching.edition import student_problem_set
from chalk.teaching.exercises import NUMBER, RIGHT, UNANSWERED, WRONG, problem_set
from chalk.teaching.gradebook import assignment_name
from chalk.teaching.student import titles
from conftest import ROOT
import unprivileged
from key_answers import right_answer, slip, wrong_words

CHAPTER = "01_batching"
SOURCE = ROOT / "exercises" / f"{CHAPTER}.ipynb"
EXERCISES = problem_set(CHAPTER)
IDS = list(EXERCISES)
N = len(IDS)
POINTS = {i: ex.points for i, ex in EXERCISES.items()}
TOTAL = sum(POINTS.values())
POSSIBLE = TOTAL + 1
"""What a submission is out of: the checked points and Chapter 1's one written answer, worth the
default 1 point, whether or not it is marked yet or still in the notebook."""
KEY_FILE = ROOT / "lib" / "chalk" / "teaching" / "problems" / f"ch{CHAPTER}.py"
TITLES = titles(nbformat.read(SOURCE, as_version=4))


def expected_of(ex_id):
    return right_answer(EXERCISES[ex_id])


def points_of(ids):
    return sum(POINTS[i] for i in ids)


def instructor():
    return nbformat.read(SOURCE, as_version=4)


def check_index(nb, ex_id):
    return next(i for i, c in enumerate(nb.cells) if c.source.strip() == f'check("{ex_id}", {ex_id})')


def insert_after_imports(nb, source):
    i = next(i for i, c in enumerate(nb.cells) if "checker(" in c.source)
    nb.cells.insert(i + 1, nbformat.v4.new_code_cell(source))
    return nb


def answer(nb, ex_id, value):
    """Set the answer cell of ``ex_id`` (the cell before its check) to ``value``, solution or not."""
    i = check_index(nb, ex_id)
    nb.cells[i - 1].source += f"\n{ex_id} = {value!r}"
    return nb




# --- the submissions --------------------------------------------------------------------------
SEARCHED = next(i for i, ex in EXERCISES.items() if ex.kind == NUMBER and not ex.exact)
"""fay's search runs over values on a grid, which an exact or a choice exercise would not meet."""
LEAKED = next(i for i in IDS[1:] if EXERCISES[i].kind == NUMBER)
"""eve reads this exercise's expected value from the key (only a number has one)."""
HALF = IDS[::2]
"""The exercises bob gets wrong (arbitrary numbers); the others he keeps right."""
REASSIGNED = IDS[1]
"""bob sets this right answer to -1 in a scratch cell after its check, then deletes another."""
DELETED = IDS[3]
BOB_WRONG = [*HALF, REASSIGNED, DELETED]
"""What bob loses: a run from the top ends with HALF and REASSIGNED wrong and DELETED gone."""
KEPT_BEFORE_DEATH = 3
"""ivan's kernel dies after the check cell of his third exercise."""
CRASH = "import a_module_that_does_not_exist\n"
TAMPER = f"""\
import os, chalk.teaching.exercises
from chalk.teaching.exercises import Result, problem_set
for d in (get_ipython().profile_dir.startup_dir, os.path.expanduser("~/.ipython/profile_default/startup")):
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "00-leak.py"), "w").write("{IDS[1]} = {expected_of(IDS[1])!r}\\n")
check = lambda exercise_id, answer: Result(exercise_id, "right", "right")
chalk.teaching.exercises.judge = lambda ex, answer: Result(ex.id, "right", "right")
print('<<chalk-answers-0>>' + {json.dumps(json.dumps(dict.fromkeys(EXERCISES, 1.0)))} + '<<chalk-answers-0>>')
print("[right] {IDS[0]}: right")
leak = problem_set("{CHAPTER}")["{LEAKED}"].expected()
"""
"""eve's first cheat: a startup file meant for the next kernel, a fake check and judge, printed fake
answer records, then the expected value read from the key (which raises in the student package)."""
TAMPER_IMPORT = (f"import chalk.teaching.problems.ch{CHAPTER} as key\n"
                 f"{LEAKED} = next(e for e in key.EXERCISES if e.id == {LEAKED!r}).expected()")
GUESSES = math.ceil(math.log(100) / math.log1p(EXERCISES[SEARCHED].rel_tol)) + 1
"""Steps of one tolerance over two decades around the answer: the search cannot step over it."""
SEARCH = f"""\
import numpy as np
for guess in np.geomspace({expected_of(SEARCHED) / 10!r}, {expected_of(SEARCHED) * 10!r}, {GUESSES}):
    if check("{SEARCHED}", float(guess)).status == "right":
        {SEARCHED} = float(guess)
        break
"""
"""fay's cheat: try values against the check until one is accepted (the oracle every self-check is)."""
SILENT_SEARCH = f"""\
import os
os.environ.clear()  # no log of the checks any more
import numpy as np
from chalk.teaching.exercises import checker
check = checker("{CHAPTER}")
for guess in np.geomspace({expected_of(SEARCHED) / 1.5!r}, {expected_of(SEARCHED) * 1.5!r}, {GUESSES // 5}):
    if check("{SEARCHED}", float(guess)).status == "right":
        {SEARCHED} = float(guess)
        break
"""
"""The same search with the check's log switched off first: the grader reads the loop from the code."""
FORGE = """\
import re
def forge(info):
    m = re.search(r"<<chalk-answers-\\w+>>", info.raw_cell)
    if m:
        print(m.group(0) + '{"sparsity": 1}' + m.group(0))
get_ipython().events.register("pre_run_cell", forge)
"""
"""A hook that reads the extraction cell's marker and prints a forged record with it."""
NOTE = "I think the answer is not 8 because s counts parameters, not experts."
WRITE_KEY = """\
import os, sys
from pathlib import Path
rel = Path("lib/chalk/teaching/problems/ch{chapter}.py")
starts = [os.getcwd(), os.environ.get("PWD", ""), sys.executable]
found = [d / rel for v in starts if v for d in (Path(v), *Path(v).parents) if (d / rel).is_file()]
for path in found:
    open(path, "a").write("# a submission was here\\n")
if found:
    {answer} = {right!r}
"""
"""A submission that walks up from the working folder, $PWD and the kernel's Python to the
repository's plain key and appends to it what it finds; a right answer says it found it."""
PROBES = """\
import os, socket, sys
from pathlib import Path

def processes():
    return [p for p in Path("/proc").iterdir() if p.name.isdigit()]

def anyway(probe):  # a way that is shut may raise: that is the sandbox at work
    try:
        return probe()
    except OSError:
        return False

def found_key():  # the grader's working folder, and every process's, walked up to the plain key
    for p in processes():
        try:
            cwd = Path(os.readlink(p / "cwd"))
        except OSError:
            continue
        if any((d / "lib/chalk/teaching/problems").is_dir() for d in (cwd, *cwd.parents)):
            return True
    return Path({root!r}, "lib/chalk/teaching/problems").is_dir()

def found_classmates():  # the submissions folder, from any process's command line, or by name
    for p in processes():
        try:
            args = (p / "cmdline").read_bytes().split(b"\\0")
        except OSError:
            continue
        for a in args:
            d = Path(a.decode(errors="replace"))
            if d.is_absolute() and d.is_dir() and not any(s in str(d) for s in ("site-packages", "python", "/usr")) \\
                    and any(d.rglob("walk.ipynb")):
                return True
    return Path({submissions!r}).is_dir()

def reached_network():  # a server the test opened on this machine's loopback
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        return True
    except OSError:
        return False

def beyond_limits():  # 5 GiB of address space, a 100 MiB file, 300 processes
    import mmap, subprocess
    got = []
    try:
        mmap.mmap(-1, 5 * 2 ** 30)
        got.append("memory")
    except (OSError, MemoryError, ValueError):
        pass
    try:
        with open("big", "wb") as f:
            f.write(bytes(100 * 2 ** 20))
        got.append("file")
    except OSError:
        pass
    children = []
    try:
        for _ in range(300):
            children.append(subprocess.Popen(["sleep", "5"]))
        got.append("processes")
    except OSError:
        pass
    return got

if anyway(found_key):
    {a} = {ra!r}
if anyway(found_classmates):
    {b} = {rb!r}
if anyway(reached_network):
    {c} = {rc!r}
if anyway(beyond_limits):
    {d} = {rd!r}
"""
"""Each way out of the sandbox, guarded by an answer: a right answer means the way was open."""
DAEMON = """\
import subprocess, sys
code = "import time; time.sleep(3); open({canvas!r}, 'w').write('rewritten')"
subprocess.Popen([sys.executable, "-c", code, "{marker}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""
"""A process that outlives its kernel and rewrites the batch's canvas.csv once it is written."""
FORGED_LOG = f"""\
import json, os
open(os.environ["CHALK_" + "CHECK_LOG"], "a").write(json.dumps({{"id": "{IDS[1]}", "answer": {expected_of(IDS[1])!r}}}) + "\\n")
"""
"""A line written into the check log as if the check had been given the right answer."""


def jupyterlab_save(nb, folder):
    """``nb`` as JupyterLab saves it after a run: outputs, counts, cell ids and widget state."""
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                             "version_minor": 0}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    return nb


def build_main_batch(folder):
    """{file name: (status prefix, points)} of the notebooks written to ``folder``."""
    expected = {}
    for who in ("alice", "bob", "carol", "dan", "eve", "fay", "frank", "gina", "hugo", "ivan"):
        (folder / who).mkdir()
    # Canvas names: alice resubmitted, so only her latest file counts.
    nbformat.write(student_problem_set(SOURCE), folder / "alice" / f"smithalice_1001_5000_{CHAPTER}.ipynb")
    nb = instructor()
    nb.cells.insert(check_index(nb, IDS[0]) + 1, nbformat.v4.new_markdown_cell(NOTE))
    nbformat.write(nb, folder / "alice" / f"smithalice_1001_5007_{CHAPTER}-1.ipynb")
    expected[f"alice/smithalice_1001_5007_{CHAPTER}-1.ipynb"] = ("ok", TOTAL)

    nb = instructor()  # half-correct, a right answer changed after its check, another deleted after it
    for ex_id in HALF:
        answer(nb, ex_id, -1.0)
    nb.cells.append(nbformat.v4.new_code_cell(f"{REASSIGNED} = -1.0\ndel {DELETED}"))
    nbformat.write(nb, folder / "bob" / f"jonesbob_1002_5001_{CHAPTER}.ipynb")
    expected[f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb"] = ("ok", TOTAL - points_of(BOB_WRONG))

    nbformat.write(student_problem_set(SOURCE), folder / "carol" / f"{CHAPTER}.ipynb")
    expected[f"carol/{CHAPTER}.ipynb"] = ("ok", 0)

    nb = insert_after_imports(student_problem_set(SOURCE), CRASH)  # every answer a typical mistake
    for ex_id, ex in EXERCISES.items():
        answer(nb, ex_id, slip(ex)[0])
    nb.cells.append(nbformat.v4.new_code_cell(f'check("no_such_exercise", 1.0)\ncheck("{IDS[1]}", {IDS[1]})'))
    nbformat.write(nb, folder / "dan" / f"{CHAPTER}.ipynb")
    expected[f"dan/{CHAPTER}.ipynb"] = ("error: ModuleNotFoundError in the opening cells", 0)

    nb = insert_after_imports(student_problem_set(SOURCE), TAMPER)
    nb.cells.insert(check_index(nb, IDS[1]), nbformat.v4.new_code_cell(TAMPER_IMPORT))
    nb.cells.append(nbformat.v4.new_code_cell(f'{IDS[2]} = "right"'))
    nbformat.write(nb, folder / "eve" / f"{CHAPTER}.ipynb")
    expected[f"eve/{CHAPTER}.ipynb"] = ("error: AttributeError in the opening cells", 0)

    nb = student_problem_set(SOURCE)
    nb.cells.insert(check_index(nb, SEARCHED), nbformat.v4.new_code_cell(SEARCH))
    nbformat.write(nb, folder / "fay" / f"{CHAPTER}.ipynb")
    expected[f"fay/{CHAPTER}.ipynb"] = ("ok", POINTS[SEARCHED])

    nb = instructor()  # renamed, last exercise deleted, cells shuffled: found by its checker() call
    del nb.metadata["kernelspec"]
    i = check_index(nb, IDS[-1])
    del nb.cells[i - 1:i + 1]
    first_check = nb.cells.pop(check_index(nb, IDS[0]))
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells = code + [first_check] + markdown[::-1]
    nbformat.write(nb, folder / "frank" / "my homework (final).ipynb")
    expected["frank/my homework (final).ipynb"] = ("ok", TOTAL - POINTS[IDS[-1]])

    (folder / "gina" / f"{CHAPTER}.ipynb").write_text('{"cells": [{"cell_type": "code", "sour')
    expected[f"gina/{CHAPTER}.ipynb"] = ("invalid: not valid JSON", 0)
    (folder / "gina" / "answers.pdf").write_bytes(b"%PDF-1.4\n\x00\xff")  # listed, not graded
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, folder / "gina" / "essay.ipynb")
    expected["gina/essay.ipynb"] = ("invalid: problem set unknown", 0)
    nb.metadata["chalk"] = {"problem_set": "99_nothing"}
    nbformat.write(nb, folder / "gina" / "other.ipynb")
    expected["gina/other.ipynb"] = ("invalid: no problem set '99_nothing'", 0)

    nbformat.write(jupyterlab_save(instructor(), folder), folder / "hugo" / f"{CHAPTER}.ipynb")
    expected[f"hugo/{CHAPTER}.ipynb"] = ("ok", TOTAL)

    nb = instructor()
    nb.cells.insert(check_index(nb, IDS[KEPT_BEFORE_DEATH - 1]) + 1, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    nbformat.write(nb, folder / "ivan" / f"{CHAPTER}.ipynb")
    expected[f"ivan/{CHAPTER}.ipynb"] = ("error: the kernel died in exercise", points_of(IDS[:KEPT_BEFORE_DEATH]))
    return expected


def tiny_notebook(*sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["chalk"] = {"problem_set": CHAPTER}
    return nb


def read_csv(path):
    with path.open(newline="") as f:
        return {row["file"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def main_batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    expected = build_main_batch(folder)
    key_before = hashlib.sha256(KEY_FILE.read_bytes()).hexdigest()
    out = tmp_path_factory.mktemp("grades") / "week1"
    batch = grading.grade(folder, out, timeout=300, workers=2)
    return dict(expected=expected, rows={r.file: r for r in batch.rows}, out=out, batch=batch,
                csv=read_csv(out / "grades.csv"), roster=read_csv(out / "roster.csv"), key_before=key_before)


@pytest.fixture(scope="module")
def short_batch(tmp_path_factory, main_batch):
    """Run after the main batch, so a leak from it into later kernels would show here."""
    folder = tmp_path_factory.mktemp("short")
    right = expected_of(IDS[0])
    nbformat.write(tiny_notebook(f"{IDS[0]} = {right!r}", "while True: pass", f"{IDS[1]} = 1.0"),
                   folder / "loop.ipynb")
    nbformat.write(tiny_notebook(FORGE, "x = 1"), folder / "forge.ipynb")
    out = tmp_path_factory.mktemp("short-grades") / "batch"
    assert grading.main([str(folder), "--out", str(out), "--timeout", "10"]) == 0
    return read_csv(out / "grades.csv")


def right_line(ex_id):
    return {"answer": ex_id, "right": right_answer(EXERCISES[ex_id])}


@pytest.fixture(scope="module")
def cheats(tmp_path_factory, short_batch):
    """The issue's cheats as submissions, in one batch of their own: each way out of the sandbox
    is guarded by an answer the notebook sets right only if the way was open."""
    folder = tmp_path_factory.mktemp("cheats")
    out = tmp_path_factory.mktemp("cheat-grades") / "batch"
    marker = f"chalk-daemon-{secrets.token_hex(8)}"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    a, b, c, d = IDS[:4]
    probes = PROBES.format(root=str(ROOT), submissions=str(folder), port=server.getsockname()[1], a=a, b=b, c=c, d=d,
                           ra=right_answer(EXERCISES[a]), rb=right_answer(EXERCISES[b]),
                           rc=right_answer(EXERCISES[c]), rd=right_answer(EXERCISES[d]))
    nbformat.write(tiny_notebook(probes), folder / "probes.ipynb")
    nbformat.write(tiny_notebook(WRITE_KEY.format(chapter=CHAPTER, **right_line(IDS[1]))), folder / "walk.ipynb")
    nbformat.write(tiny_notebook(DAEMON.format(canvas=str(out / "canvas.csv"), marker=marker)), folder / "daemon.ipynb")
    nbformat.write(tiny_notebook(FORGED_LOG), folder / "log.ipynb")
    nbformat.write(tiny_notebook(SILENT_SEARCH), folder / "silent.ipynb")
    key_before = hashlib.sha256(KEY_FILE.read_bytes()).hexdigest()
    try:
        assert grading.main([str(folder), "--out", str(out), "--timeout", "120"]) == 0
    finally:
        server.close()
    alive = [p for p in pathlib.Path("/proc").iterdir() if p.name.isdigit() and marker.encode() in _cmdline(p)]
    canvas_written = (out / "canvas.csv").read_bytes()
    time.sleep(4)  # the daemon's delay: were it alive, it would rewrite canvas.csv now
    return {**read_csv(out / "grades.csv"), "alive": alive, "canvas": canvas_written == (out / "canvas.csv").read_bytes(),
            "key": key_before == hashlib.sha256(KEY_FILE.read_bytes()).hexdigest()}


def _cmdline(process):
    try:
        return (process / "cmdline").read_bytes()
    except OSError:
        return b""


def feedback_of(main_batch, name):
    return (main_batch["out"] / "feedback" / f"{name}.md").read_text()


# --- end to end -------------------------------------------------------------------------------
def test_every_notebook_gets_a_row_with_the_status_and_points_its_construction_implies(main_batch):
    table = main_batch["csv"]
    assert set(table) == set(main_batch["expected"])
    for name, (status, points) in main_batch["expected"].items():
        assert table[name]["status"].startswith(status), (name, table[name]["status"])
        assert float(table[name]["score"]) == points, (name, table[name])


def test_other_files_are_listed_not_scored(main_batch):
    roster = main_batch["roster"]
    assert roster["gina/answers.pdf"]["graded"] == "no: not a notebook"
    earlier = f"alice/smithalice_1001_5000_{CHAPTER}.ipynb"
    assert roster[earlier]["graded"] == f"no: superseded by alice/smithalice_1001_5007_{CHAPTER}-1.ipynb"
    assert earlier not in main_batch["csv"] and "gina/answers.pdf" not in main_batch["csv"]
    assert set(roster) == set(main_batch["csv"]) | {earlier, "gina/answers.pdf"}


def test_canvas_names_give_the_student(main_batch):
    row = main_batch["csv"][f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb"]
    assert (row["student"], row["student_id"]) == ("jonesbob", "1002")
    assert main_batch["csv"][f"carol/{CHAPTER}.ipynb"]["student_id"] == ""


def test_csv_has_one_column_per_exercise_with_its_points(main_batch):
    bob = main_batch["csv"][f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb"]
    assert float(bob["maximum"]) == POSSIBLE and bob["problem_set"] == CHAPTER
    for ex_id in EXERCISES:
        assert float(bob[ex_id]) == (0 if ex_id in BOB_WRONG else POINTS[ex_id]), ex_id
    assert main_batch["csv"][f"gina/{CHAPTER}.ipynb"][IDS[0]] == ""


def test_the_value_after_a_run_from_the_top_is_graded_and_a_differing_check_noted(main_batch):
    row = main_batch["rows"][f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb"]
    assert row.results[REASSIGNED].status == WRONG and row.results[DELETED].status == UNANSWERED
    notes = "; ".join(row.notes)
    assert f"{REASSIGNED} was last checked as" in notes and "holds -1 after the run from the top" in notes
    assert f"{DELETED} was last checked as" in notes and "holds nothing after the run from the top" in notes


def test_answers_checked_before_the_kernel_died_keep_their_result(main_batch):
    row = main_batch["rows"][f"ivan/{CHAPTER}.ipynb"]
    kept, lost = IDS[:KEPT_BEFORE_DEATH], IDS[KEPT_BEFORE_DEATH:]
    assert [row.results[i].status for i in kept] == [RIGHT] * len(kept)
    assert {row.results[i].status for i in lost} == {UNANSWERED}
    assert f"in exercise {IDS[KEPT_BEFORE_DEATH - 1]} ({TITLES[IDS[KEPT_BEFORE_DEATH - 1]]})" in row.status


def test_feedback_shows_value_unit_tolerance_and_hint_never_the_key(main_batch):
    text = feedback_of(main_batch, f"dan/{CHAPTER}.ipynb")
    assert f"0 of {POSSIBLE:g} points" in text
    for ex_id, ex in EXERCISES.items():
        line = next(ln for ln in text.splitlines() if f"`{ex_id}` ({markdown_literal(TITLES[ex_id])})" in ln)
        assert line.startswith("| wrong |") and markdown_literal(slip(ex)[1]).replace("|", "/") in line, line
        assert markdown_literal(wrong_words(ex)).replace("|", "/") in line, line
    found = [a for a in leaks.answers([CHAPTER]) if a.searchable]
    assert not leaks.find(text, found, "dan's feedback")  # the answers are not given away
    bob = feedback_of(main_batch, f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb")
    wrong = next(ln for ln in bob.splitlines() if f"`{HALF[0]}`" in ln)
    assert "-1 (" in wrong and "is not within" in wrong and markdown_literal(EXERCISES[HALF[0]].hint).replace("|", "/") in wrong
    assert "not answered: not answered" not in bob and "wrong: not quite" not in bob and "cell 3" not in bob


def test_error_status_names_the_exercise_or_the_opening_cells(main_batch):
    row = main_batch["rows"][f"dan/{CHAPTER}.ipynb"]
    assert "a_module_that_does_not_exist" in row.status and "opening cells" in row.status
    assert any("no_such_exercise" in n and "no exercise" in n for n in row.notes)
    assert any(f"{IDS[1]}" in n and "2 times" in n for n in row.notes)


def test_key_material_readers_are_flagged_and_get_nothing(main_batch):
    assert hashlib.sha256(KEY_FILE.read_bytes()).hexdigest() == main_batch["key_before"]
    assert chalk.teaching.exercises.judge.__module__ == "chalk.teaching.exercises"
    eve = main_batch["rows"][f"eve/{CHAPTER}.ipynb"]
    flags = " ".join(eve.flags)
    assert "imports or opens the instructor's answer keys" in flags and "reads the answer key" in flags
    assert eve.results[IDS[2]].status == WRONG  # the string "right", judged as an answer
    assert all(r.status == UNANSWERED for i, r in eve.results.items() if i != IDS[2])
    row = main_batch["csv"][f"eve/{CHAPTER}.ipynb"]
    assert "answer keys" in row["flags"]
    student_sees = feedback_of(main_batch, f"eve/{CHAPTER}.ipynb")  # verdicts and hints, not what was matched
    assert "answer keys" not in student_sees and "chalk.teaching.problems" not in student_sees
    assert "Flagged" not in student_sees
    scope = json.loads((main_batch["out"] / "gradescope" / f"eve/{CHAPTER}.ipynb" / "results.json").read_text())
    assert "answer keys" not in json.dumps(scope) and "chalk.teaching.problems" not in json.dumps(scope)
    assert not main_batch["rows"][f"hugo/{CHAPTER}.ipynb"].flags


def test_a_search_against_the_check_finds_the_answer_and_is_flagged(main_batch):
    fay = main_batch["rows"][f"fay/{CHAPTER}.ipynb"]
    assert fay.results[SEARCHED].status == RIGHT  # the check is an oracle: the guide says so
    assert any(f"check of {SEARCHED} was called" in f for f in fay.flags), fay.flags


def test_a_note_the_student_added_is_collected_for_reading(main_batch):
    alice = main_batch["rows"][f"alice/smithalice_1001_5007_{CHAPTER}-1.ipynb"]
    assert [w for w in alice.written if w["part"] == "note"] == \
        [{"exercise": IDS[0], "part": "note", "text": NOTE, "max_points": 0.0}]
    assert NOTE in (main_batch["out"] / "written.md").read_text()
    manual = list(csv.DictReader((main_batch["out"] / "manual.csv").open()))
    assert [(m["file"], m["exercise"], m["text"]) for m in manual if m["part"] == "note"] == [(alice.file, IDS[0], NOTE)]


def test_the_written_answer_of_every_submission_is_collected_for_marking(main_batch):
    # Chapter 1's one written answer, under sparsity_k16, worth the default 1 point: the model
    # answer in the instructor's edition (alice), the placeholder left blank in the student's (carol).
    manual = {m["file"]: m for m in csv.DictReader((main_batch["out"] / "manual.csv").open()) if m["part"] == "written"}
    alice, carol = manual[f"alice/smithalice_1001_5007_{CHAPTER}-1.ipynb"], manual[f"carol/{CHAPTER}.ipynb"]
    assert (alice["exercise"], alice["max_points"]) == ("sparsity_k16", "1") and "counts parameters" in alice["text"]
    assert (carol["exercise"], carol["max_points"], carol["text"]) == ("sparsity_k16", "1", "")
    assert main_batch["csv"][f"carol/{CHAPTER}.ipynb"]["written_to_mark"] == "1"


def test_exports_for_canvas_and_gradescope(main_batch):
    out = main_batch["out"]
    rows = list(csv.reader((out / "canvas.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment_name(CHAPTER)]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == POSSIBLE
    assert [r[5] for r in rows if r[0] == f"gina/{CHAPTER}.ipynb"] == ["0"]  # invalid: 0, not a blank
    by_id = {r[1]: r for r in rows[2:] if r[1]}
    assert float(by_id["1001"][5]) == TOTAL and by_id["1001"][0] == "smithalice"
    assert float(by_id["1002"][5]) == TOTAL - points_of(BOB_WRONG)
    scope = read_csv_by(out / "gradescope.csv", "Name")
    assert float(scope["jonesbob"]["Total Score"]) == TOTAL - points_of(BOB_WRONG)
    assert float(scope["jonesbob"]["Max Points"]) == POSSIBLE
    results = json.loads((out / "gradescope" / f"bob/jonesbob_1002_5001_{CHAPTER}.ipynb" / "results.json").read_text())
    assert results["score"] == TOTAL - points_of(BOB_WRONG) and len(results["tests"]) == N
    assert sum(t["score"] for t in results["tests"]) == results["score"]
    assert {t["status"] for t in results["tests"]} == {"passed", "failed"}


def read_csv_by(path, key):
    with path.open(newline="") as f:
        return {row[key]: row for row in csv.DictReader(f)}


def test_grades_are_never_overwritten(main_batch, tmp_path):
    with pytest.raises(ChalkError, match="is not empty; grades are never overwritten"):
        grading.grade(main_batch["out"].parent, main_batch["out"])


def test_no_state_crosses_between_submissions(short_batch):
    loop = short_batch["loop.ipynb"]  # eve's startup file would have answered this one right
    assert loop[IDS[1]] == "0"


def test_time_limit_keeps_answers_given_before_it(short_batch):
    loop = short_batch["loop.ipynb"]
    assert loop["status"].startswith("timeout")
    assert float(loop["score"]) == POINTS[IDS[0]] and float(loop[IDS[0]]) == POINTS[IDS[0]]


def test_the_kernel_finds_no_way_from_its_folder_or_python_to_the_key(cheats):
    walk = cheats["walk.ipynb"]
    assert float(walk["score"]) == 0 and cheats["key"]
    assert "opens the instructor's answer keys" in walk["flags"] and "looks for the repository's files" in walk["flags"]


@pytest.mark.parametrize("ex_index, way", [(0, "the repository, through /proc/<pid>/cwd or its path"),
                                           (1, "the other submissions, through /proc/<pid>/cmdline or their path"),
                                           (2, "the network"), (3, "more memory, file size or processes than the limits")])
def test_the_sandbox_shuts_each_way_out(cheats, ex_index, way):
    assert float(cheats["probes.ipynb"][IDS[ex_index]]) == 0, f"the sandbox let a notebook reach {way}"
    assert cheats["probes.ipynb"]["status"] == "ok"


def test_nothing_a_notebook_started_outlives_the_batch(cheats):
    assert cheats["alive"] == [] and cheats["canvas"]
    assert cheats["daemon.ipynb"]["status"] == "ok"


def test_a_line_written_into_the_check_log_changes_no_grade(cheats):
    assert float(cheats["log.ipynb"]["score"]) == 0


def test_the_grader_stops_with_a_clear_message_without_bubblewrap(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grading.sandbox.shutil, "which", lambda name: None)
    nbformat.write(tiny_notebook("x = 1"), tmp_path / "a.ipynb")
    assert grading.main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "bubblewrap (bwrap) is not installed" in err and "apt-get install bubblewrap" in err
    assert not (tmp_path / "out").exists()


FILL = """\
import errno
files, chunk, stopped = {files}, b"\\0" * 2 ** 23, None
try:
    for i in range(files):
        with open(f"fill{{i}}", "wb") as f:
            for _ in range(4):  # 32 MiB a file: each under the sandbox's 64 MiB file-size limit
                f.write(chunk)
except OSError as err:
    stopped = err.errno
{a} = {ra!r} if stopped is None else None
{b} = {rb!r} if stopped == errno.ENOSPC else None
"""
"""Writes past the scratch quota in files each under the file-size limit: the first answer is set
right only if every write succeeded, the second only if the writes stopped for lack of space."""
FILL_SOCKETS = """\
import errno, json, os
from ipykernel.connect import get_connection_file
folder = os.path.dirname(json.load(open(get_connection_file()))["ip"])  # where the kernel's sockets are
written, stopped = 0, None
try:
    for i in range({files}):
        with open(os.path.join(folder, f"fill{{i}}"), "wb") as f:
            f.write(b"\\0" * 2 ** 18)
        written += 1
except OSError as err:
    stopped = err.errno
{a} = {ra!r} if written else None
{b} = {rb!r} if stopped == errno.ENOSPC else None
"""
"""Writes files into the kernel's sockets' folder, the one folder besides the scratch it must be able
to write: the first answer is right if a file could be written there at all, the second only if the
writes stopped for lack of space before twice ``SOCKETS_BYTES``."""


def sockets_filler(a: str, b: str) -> str:
    files = 2 * grading.sandbox.SOCKETS_BYTES // 2 ** 18  # 256 KiB each: twice the folder's quota
    return FILL_SOCKETS.format(files=files, a=a, b=b, ra=expected_of(a), rb=expected_of(b))


def test_a_notebook_that_fills_its_scratch_space_or_sockets_folder_is_stopped_and_the_others_are_graded(tmp_path):
    if not grading.sandbox.sized(grading.sandbox.bwrap()):
        pytest.skip("this bubblewrap cannot size a tmpfs (--size, 0.7 and later): the scratch is bounded per file only")
    files = grading.sandbox.SCRATCH_BYTES // 2 ** 25 + 4  # 32 MiB each: 128 MiB past the quota
    a, b = IDS[0], IDS[1]
    folder = tmp_path / "in"
    folder.mkdir()
    nbformat.write(tiny_notebook(FILL.format(files=files, a=a, b=b, ra=expected_of(a), rb=expected_of(b))),
                   folder / "fill.ipynb")
    nbformat.write(tiny_notebook(sockets_filler(a, b)), folder / "sockets.ipynb")
    nbformat.write(tiny_notebook(f"{a} = {expected_of(a)!r}"), folder / "honest.ipynb")
    assert grading.main([str(folder), "--out", str(tmp_path / "out"), "--timeout", "120"]) == 0
    rows = read_csv(tmp_path / "out" / "grades.csv")
    assert rows["fill.ipynb"]["status"] == "ok"
    assert (float(rows["fill.ipynb"][a]), float(rows["fill.ipynb"][b])) == (0, POINTS[b])
    assert rows["sockets.ipynb"]["status"] == "ok"
    assert (float(rows["sockets.ipynb"][a]), float(rows["sockets.ipynb"][b])) == (POINTS[a], POINTS[b])
    assert float(rows["honest.ipynb"]["score"]) == POINTS[a]


def _drop_to_nobody() -> list[str] | None:
    nobody = pwd.getpwnam("nobody")
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--"]
    return None


@pytest.mark.skipif(os.getuid() != 0, reason="the suite runs unprivileged: every grading test here is the non-root path")
def test_the_sandbox_holds_when_the_grader_is_not_root():
    """The ways out, the disk quota and the key, with the grader run as ``nobody`` (bubblewrap then
    makes its own user namespace, and there is no drop to another user) on a world-readable copy of
    the submissions, its libraries in a virtual environment ``nobody`` can read."""
    drop, base = _drop_to_nobody(), unprivileged.base_python(as_root=True)
    if drop is None:
        pytest.skip("neither setpriv nor runuser is installed to run the grader as nobody")
    if base is None or not unprivileged.reachable(ROOT / "lib"):
        pytest.skip(f"no python{sys.version_info.major}.{sys.version_info.minor}, or not this checkout, "
                    f"that nobody can reach")
    top = unprivileged.open_folder("chalk-unprivileged-")
    server = socket.socket()
    try:
        python = unprivileged.environment(base, top / "python", ROOT)
        folder, out = top / "in", top / "grades" / "batch"
        for d in (folder, out.parent, top / "home", top / "cache"):
            d.mkdir(parents=True)
        shutil.copytree(seal.CACHE, top / "cache" / "chalk" / "seal")  # the sealed tables, not sealed again
        server.bind(("127.0.0.1", 0))
        server.listen()
        a, b, c, d = IDS[:4]
        probes = PROBES.format(root=str(ROOT), submissions=str(folder), port=server.getsockname()[1], a=a, b=b, c=c,
                               d=d, ra=expected_of(a), rb=expected_of(b), rc=expected_of(c), rd=expected_of(d))
        nbformat.write(tiny_notebook(probes), folder / "probes.ipynb")
        nbformat.write(tiny_notebook(WRITE_KEY.format(chapter=CHAPTER, **right_line(IDS[4]))), folder / "walk.ipynb")
        files = grading.sandbox.SCRATCH_BYTES // 2 ** 25 + 4
        nbformat.write(tiny_notebook(FILL.format(files=files, a=a, b=b, ra=expected_of(a), rb=expected_of(b))),
                       folder / "fill.ipynb")
        nbformat.write(tiny_notebook(sockets_filler(a, b)), folder / "sockets.ipynb")
        for path in [p for d in (folder, out.parent, top / "home", top / "cache") for p in (d, *d.rglob("*"))]:
            path.chmod(0o777 if path.is_dir() else 0o666)  # not the environment: its files are linked
        key_before = hashlib.sha256(KEY_FILE.read_bytes()).hexdigest()
        env = {"PATH": os.defpath, "HOME": str(top / "home"), "XDG_CACHE_HOME": str(top / "cache")}
        proc = subprocess.run([*drop, str(python), "-m", "chalk.teaching.grading", str(folder), "--out", str(out),
                               "--timeout", "120"], cwd=top, env=env, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = read_csv(out / "grades.csv")
    finally:
        server.close()
        shutil.rmtree(top, ignore_errors=True)
    assert rows["probes.ipynb"]["status"] == "ok" and float(rows["probes.ipynb"]["score"]) == 0
    assert float(rows["walk.ipynb"]["score"]) == 0 and hashlib.sha256(KEY_FILE.read_bytes()).hexdigest() == key_before
    assert rows["fill.ipynb"]["status"] == "ok"
    assert (float(rows["fill.ipynb"][a]), float(rows["fill.ipynb"][b])) == (0, POINTS[b])
    assert (float(rows["sockets.ipynb"][a]), float(rows["sockets.ipynb"][b])) == (POINTS[a], POINTS[b])


def test_a_notebook_cannot_write_the_key_and_a_batch_in_which_it_changes_fails_loudly(tmp_path, monkeypatch):
    key = tmp_path / "key"  # a copy stands in for the repository's key, which no test may write
    shutil.copytree(grading.KEY_FOLDER, key, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(grading, "KEY_FOLDER", key)
    target = key / f"ch{CHAPTER}.py"
    before = target.read_bytes()
    (tmp_path / "in").mkdir()
    nbformat.write(tiny_notebook(f"open({str(target)!r}, 'a').write('# rewritten')"), tmp_path / "in" / "w.ipynb")
    batch = grading.grade(tmp_path / "in", tmp_path / "out", timeout=60, workers=1)
    assert target.read_bytes() == before and batch.rows[0].status.startswith("error: FileNotFoundError")
    # the sandbox aside, the checksums around each notebook still catch a change (here made by the test)
    real = grading.key_files
    calls = iter(range(1, 100))
    monkeypatch.setattr(grading, "key_files", lambda: {**real(), "x.py": "changed"} if next(calls) > 2 else real())
    with pytest.raises(grading.GradingError, match=r"key changed while the batch ran \(x.py in .*\), "
                                                   r"while w.ipynb ran"):
        grading.grade(tmp_path / "in", tmp_path / "out2", timeout=60, workers=1)
    row = read_csv(tmp_path / "out2" / "grades.csv")["w.ipynb"]  # the grades are written first
    assert "key files changed while this notebook ran" in row["flags"]


def test_a_search_with_the_check_log_switched_off_is_still_flagged(cheats):
    silent = cheats["silent.ipynb"]
    assert float(silent[SEARCHED]) == POINTS[SEARCHED]  # found: the check is an oracle
    assert "calls check inside a loop" in silent["flags"]


def test_a_forged_answer_record_is_not_believed(short_batch):
    forge = short_batch["forge.ipynb"]
    assert forge["status"].startswith("error: the answers could not be read")
    assert float(forge["score"]) == 0 and "grader" in forge["flags"]


# --- the parts, without kernels ---------------------------------------------------------------
CHAPTERS = grading.known_problem_sets()


def test_a_notebook_run_out_of_order_is_noted_and_loops_over_check_flagged():
    nb = tiny_notebook("a = 1", "b = 2", "c = 3")
    assert not grading.out_of_order(nb)
    for cell, count in zip(nb.cells, (1, 5, 3)):
        cell.execution_count = count
    assert grading.out_of_order(nb)
    nb = tiny_notebook("%matplotlib inline\nx = [check('a', v) for v in range(9)]", "check('a', 1)",
                       "while True:\n    if check('b', 2): break", "for v in range(3): print(v)")
    assert [f.split(" calls")[0] for f in grading.loop_checks(nb)] == ["cell 1", "cell 3"]


def test_problem_set_found_from_metadata_then_checker_then_file_name():
    nb = tiny_notebook("x = 1")
    assert grading.identify(nb, "whatever.ipynb", CHAPTERS) == (CHAPTER, "notebook metadata")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"check = checker('{CHAPTER}')")])
    assert grading.identify(nb, "whatever.ipynb", CHAPTERS) == (CHAPTER, "checker() call")
    nb = nbformat.v4.new_notebook()
    assert grading.identify(nb, f"jo_{CHAPTER} (2).ipynb", CHAPTERS) == (CHAPTER, "file name")
    chapter, why = grading.identify(nb, "essay.ipynb", CHAPTERS)
    assert chapter is None and "no checker" in why


def test_frozen_key_judges_like_the_live_key():
    frozen = grading.frozen_key(CHAPTER)
    for ex_id, ex in EXERCISES.items():
        answers = [right_answer(ex), None, -1.0, slip(ex)[0], "b"]
        if ex.kind == NUMBER:
            answers += [m.wrong_answer(ex.expected()) for m in ex.mistakes]
        for a in answers:
            assert chalk.teaching.exercises.judge(frozen[ex_id], a) == chalk.teaching.exercises.judge(ex, a)


def test_answer_record_must_appear_exactly_once_with_every_id():
    marker, ids = "<<m>>", ["a", "b"]
    cell = nbformat.v4.new_code_cell()
    record = marker + json.dumps({"a": 1.0, "b": None}) + marker

    def stdout(text):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        return runner.read_answers(cell, marker, ids)

    assert stdout(record + "\n") == {"a": 1.0, "b": None}
    assert stdout(record + "\n" + record) is None
    assert stdout(marker + '{"a": 1.0}' + marker) is None
    assert stdout("<<other>>" + json.dumps({"a": 1, "b": 2}) + "<<other>>") is None


def test_an_id_shared_by_two_problem_sets_is_an_error():
    key = grading.Key({"x": 1}, {})
    with pytest.raises(grading.GradingError, match="'x' is in problem sets 01_a and 02_b"):
        grading.check_ids_unique({"01_a": key, "02_b": key})


@pytest.mark.parametrize("args, message", [
    (["/no/such/folder"], "SUBMISSIONS: '/no/such/folder' is not a folder"),
    (["{tmp}", "--timeout", "0"], "timeout: must be > 0"),
    (["{tmp}", "--workers", "0"], "workers: must be a whole number >= 1"),
    (["{tmp}"], "holds no files"),
    ([], "SUBMISSIONS: give a folder"),
    (["--merge", "{tmp}/manual.csv"], "is not the manual.csv of a batch"),
])
def test_bad_invocations_exit_nonzero_with_one_line(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert grading.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_grading_runs_inside_a_running_event_loop():
    # Instructors call grade() from Jupyter, whose kernel keeps an event loop running in the main thread.
    async def inside():
        return grading._run_coroutine(asyncio.sleep(0, result="graded"))

    # The outer loop runs in a thread of its own: this test's thread may hold Playwright's loop already.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(asyncio.run, inside()).result() == "graded"


def test_the_batch_package_is_compiled_so_no_kernel_compiles_it_again(tmp_path):
    """Kernels import the package read-only with PYTHONDONTWRITEBYTECODE: each module must arrive
    compiled, and a kernel that imports it reads the compiled file and names the module's source."""
    tree = tmp_path / "package"
    (tree / "pkg" / "sub").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "sub" / "__init__.py").write_text("")
    (tree / "pkg" / "sub" / "mod.py").write_text("def where():\n    return where.__code__.co_filename\n")
    assert grading.compiled(tree) == tree
    for source in tree.rglob("*.py"):
        assert pathlib.Path(importlib.util.cache_from_source(str(source))).is_file(), source
    for path in [*tree.rglob("*"), tree]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        probe = ("import importlib.util, pkg.sub.mod as m; print(m.where()); "
                 "print(importlib.util.cache_from_source(m.__file__))")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}).stdout.split()
        assert out[0] == str(tree / "pkg" / "sub" / "mod.py")
        assert pathlib.Path(out[1]).is_file()
    finally:
        for path in [tree, *tree.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    (tree / "pkg" / "broken.py").write_text("def (:\n")
    with pytest.raises(grading.GradingError, match="does not compile"):
        grading.compiled(tree)


FONT_PROBE = """\
import glob, os
import matplotlib, matplotlib.font_manager
lists = glob.glob(os.path.join(matplotlib.get_cachedir(), "fontlist-*.json"))
batch_list = len(lists) == 1 and not os.access(lists[0], os.W_OK)
{a} = {ra!r} if batch_list else -1.0
"""


def test_kernels_read_the_batch_font_list_instead_of_scanning_the_fonts(tmp_path):
    """Each kernel's MPLCONFIGDIR starts empty; its matplotlib finds there the font list the grader
    wrote once for the batch (read-only to the kernel), not one it scanned the fonts to write itself."""
    a = IDS[0]
    folder = tmp_path / "in"
    folder.mkdir()
    nbformat.write(tiny_notebook(FONT_PROBE.format(a=a, ra=expected_of(a))), folder / "fonts.ipynb")
    assert grading.main([str(folder), "--out", str(tmp_path / "out"), "--timeout", "120"]) == 0
    row = read_csv(tmp_path / "out" / "grades.csv")["fonts.ipynb"]
    assert row["status"] == "ok" and float(row[a]) == POINTS[a]


def test_the_font_list_is_written_without_importing_from_where_the_grader_was_started(tmp_path, monkeypatch):
    """``font_list`` runs the kernels' Python outside the sandbox: a ``matplotlib.py`` in the folder
    the grader was started from (a submissions folder, say) must not be what it imports."""
    started = tmp_path / "started_here"
    started.mkdir()
    (started / "matplotlib.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    monkeypatch.chdir(started)
    written = grading.font_list(tmp_path / "mpl", Path(sys.prefix))
    assert not (tmp_path / "ran").exists(), "the planted matplotlib.py ran outside the sandbox"
    assert written is not None and written.name.startswith("fontlist-")
