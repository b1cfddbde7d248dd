"""The grader, end to end, on submissions made here from the instructor's problem set.

Each submission's expected status and score follow from how it was built (which answers were
kept, broken, deleted or forged), never from the grader's own output. Kernels are few: six in
the main batch, two cheap ones (no chalk import) in the batch with a short time limit.
"""
import csv
import hashlib
import json

import nbformat
import pytest

import chalk.teaching.exercises
from chalk.teaching import grading
from chalk.teaching.edition import student_problem_set
from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch01_batching
from conftest import ROOT

CHAPTER = "01_batching"
SOURCE = ROOT / "exercises" / f"{CHAPTER}.ipynb"
EXERCISES = problem_set(CHAPTER)
N = len(EXERCISES)
KEY_FILE = ROOT / "lib" / "chalk" / "teaching" / "problems" / "ch01_batching.py"


def instructor():
    return nbformat.read(SOURCE, as_version=4)


def check_index(nb, ex_id):
    return next(i for i, c in enumerate(nb.cells) if c.source.strip() == f'check("{ex_id}", {ex_id})')


def insert_after_imports(nb, source):
    i = next(i for i, c in enumerate(nb.cells) if "checker(" in c.source)
    nb.cells.insert(i + 1, nbformat.v4.new_code_cell(source))
    return nb


def expected_of(ex_id):
    return EXERCISES[ex_id].expected()


# --- the submissions --------------------------------------------------------------------------
WRONG_MISTAKE, WRONG_PLAIN, DELETED = "sparsity_v3", "balance_h100", "tokens_per_s"
"""In the partial submission: a typical mistake, an arbitrary wrong number, a deleted variable."""
CRASH = "import a_module_that_does_not_exist\n"
TAMPER = f"""\
import os, chalk.teaching.exercises
from chalk.teaching.exercises import Result, problem_set
import chalk.teaching.problems.ch01_batching as key
leak = "balance_h100 = %r\\n" % problem_set("01_batching")["balance_h100"].expected()
for d in (get_ipython().profile_dir.startup_dir, os.path.expanduser("~/.ipython/profile_default/startup")):
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "00-leak.py"), "w").write(leak)
check = lambda exercise_id, answer: Result(exercise_id, "right", "right")
chalk.teaching.exercises.judge = lambda ex, answer: Result(ex.id, "right", "right")
open(key.__file__, "w").write("EXERCISES = ()\\n")
print('<<chalk-answers-0>>' + {json.dumps(json.dumps(dict.fromkeys(EXERCISES, 1.0)))} + '<<chalk-answers-0>>')
print("[right] sparsity_v3: right")
"""
"""Forgeries a student could try: a startup file meant for the next kernel, a fake check and
judge, an emptied key file, printed fake answer records. The answers stay blank but one, which
a last cell sets to the text "right"."""
FORGE = """\
import re
def forge(info):
    m = re.search(r"<<chalk-answers-\\w+>>", info.raw_cell)
    if m:
        print(m.group(0) + '{"sparsity_v3": 1}' + m.group(0))
get_ipython().events.register("pre_run_cell", forge)
"""
"""A hook that reads the extraction cell's marker and prints a forged record with it."""


def build_main_batch(folder):
    """{file name: (status prefix, score)} of the notebooks written to ``folder``."""
    expected = {}
    for who in ("alice", "bob", "carol", "dan", "eve", "frank", "gina"):
        (folder / who).mkdir()
    nbformat.write(instructor(), folder / "alice" / f"{CHAPTER}.ipynb")
    expected[f"alice/{CHAPTER}.ipynb"] = ("ok", N)

    nb = instructor()
    wrong = EXERCISES[WRONG_MISTAKE].mistakes[0].wrong_answer(expected_of(WRONG_MISTAKE))
    nb.cells[check_index(nb, WRONG_MISTAKE) - 1].source += f"\n{WRONG_MISTAKE} = {wrong!r}"
    nb.cells[check_index(nb, WRONG_PLAIN) - 1].source += f"\n{WRONG_PLAIN} = -1.0"
    nb.cells.append(nbformat.v4.new_code_cell(f"del {DELETED}"))
    nbformat.write(nb, folder / "bob" / f"{CHAPTER}.ipynb")
    expected[f"bob/{CHAPTER}.ipynb"] = ("ok", N - 3)

    nbformat.write(student_problem_set(SOURCE), folder / "carol" / f"{CHAPTER}.ipynb")
    expected[f"carol/{CHAPTER}.ipynb"] = ("ok", 0)

    nb = insert_after_imports(instructor(), CRASH)
    nb.cells.append(nbformat.v4.new_code_cell('check("balance_h200", balance_h100)'))
    nb.cells.append(nbformat.v4.new_code_cell('check("lstar_h100", lstar_h100)'))
    nbformat.write(nb, folder / "dan" / f"{CHAPTER}.ipynb")
    expected[f"dan/{CHAPTER}.ipynb"] = ("error: ModuleNotFoundError in cell", N)

    nb = insert_after_imports(student_problem_set(SOURCE), TAMPER)
    nb.cells.append(nbformat.v4.new_code_cell('sparsity_v3 = "right"'))
    nbformat.write(nb, folder / "eve" / f"{CHAPTER}.ipynb")
    expected[f"eve/{CHAPTER}.ipynb"] = ("ok", 0)

    nb = instructor()  # renamed, last exercise deleted, cells shuffled: found by its checker() call
    last = list(EXERCISES)[-1]
    i = check_index(nb, last)
    del nb.cells[i - 1:i + 1]
    first_check = nb.cells.pop(check_index(nb, list(EXERCISES)[0]))
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells = code + [first_check] + markdown[::-1]
    nbformat.write(nb, folder / "frank" / "my homework (final).ipynb")
    expected["frank/my homework (final).ipynb"] = ("ok", N - 1)

    (folder / "gina" / f"{CHAPTER}.ipynb").write_text('{"cells": [{"cell_type": "code", "sour')
    expected[f"gina/{CHAPTER}.ipynb"] = ("invalid: not valid JSON", 0)
    (folder / "gina" / "answers.pdf").write_bytes(b"%PDF-1.4\n\x00\xff")
    expected["gina/answers.pdf"] = ("invalid: not a notebook", 0)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, folder / "gina" / "essay.ipynb")
    expected["gina/essay.ipynb"] = ("invalid: problem set unknown", 0)
    nb.metadata["chalk"] = {"problem_set": "99_nothing"}
    nbformat.write(nb, folder / "gina" / "other.ipynb")
    expected["gina/other.ipynb"] = ("invalid: no problem set '99_nothing'", 0)
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
    out = tmp_path_factory.mktemp("grades")
    rows = grading.grade(folder, out, timeout=300, workers=2)
    return dict(expected=expected, rows={r.file: r for r in rows}, out=out, csv=read_csv(out / "grades.csv"),
                key_before=key_before)


@pytest.fixture(scope="module")
def short_batch(tmp_path_factory, main_batch):
    """Run after the main batch, so a leak from it into later kernels would show here."""
    folder = tmp_path_factory.mktemp("short")
    right = expected_of("sparsity_v3")
    nbformat.write(tiny_notebook(f"sparsity_v3 = {right!r}", "while True: pass", "lstar_h100 = 1.0"),
                   folder / "loop.ipynb")
    nbformat.write(tiny_notebook(FORGE, "x = 1"), folder / "forge.ipynb")
    out = tmp_path_factory.mktemp("short-grades")
    assert grading.main([str(folder), "--out", str(out), "--timeout", "10"]) == 0
    return read_csv(out / "grades.csv")


# --- end to end -------------------------------------------------------------------------------
def test_every_file_gets_a_row_with_the_status_and_score_its_construction_implies(main_batch):
    table = main_batch["csv"]
    assert set(table) == set(main_batch["expected"])
    for name, (status, score) in main_batch["expected"].items():
        assert table[name]["status"].startswith(status), (name, table[name]["status"])
        assert int(table[name]["score"]) == score, (name, table[name])


def test_csv_has_one_column_per_exercise_with_each_mark(main_batch):
    bob = main_batch["csv"][f"bob/{CHAPTER}.ipynb"]
    assert int(bob["maximum"]) == N and bob["problem_set"] == CHAPTER
    for ex_id in EXERCISES:
        assert bob[ex_id] == ("0" if ex_id in (WRONG_MISTAKE, WRONG_PLAIN, DELETED) else "1"), ex_id
    assert main_batch["csv"]["gina/answers.pdf"][list(EXERCISES)[0]] == ""


def test_deleted_variable_is_unanswered_and_mistakes_get_their_hint(main_batch):
    results = main_batch["rows"][f"bob/{CHAPTER}.ipynb"].results
    assert results[DELETED].status == "unanswered"
    text = (main_batch["out"] / "feedback" / "bob" / f"{CHAPTER}.ipynb.md").read_text()
    assert f"{N - 3} of {N}" in text
    assert EXERCISES[WRONG_MISTAKE].mistakes[0].hint in text
    assert EXERCISES[WRONG_PLAIN].hint in text
    assert f"- {DELETED}: not answered" in text
    passed = text.split("Passed: ")[1].split("\n")[0]
    assert "lstar_h100" in passed and WRONG_PLAIN not in passed


def test_crash_keeps_later_answers_and_reports_unknown_and_repeated_ids(main_batch):
    row = main_batch["rows"][f"dan/{CHAPTER}.ipynb"]
    assert "a_module_that_does_not_exist" in row.status
    assert any("balance_h200" in n and "no exercise" in n for n in row.notes)
    assert any("lstar_h100" in n and "2 times" in n for n in row.notes)


def test_tampering_changes_nothing_outside_the_kernel(main_batch):
    assert hashlib.sha256(KEY_FILE.read_bytes()).hexdigest() == main_batch["key_before"]
    assert chalk.teaching.exercises.judge.__module__ == "chalk.teaching.exercises"
    assert len(ch01_batching.EXERCISES) == N
    eve = main_batch["rows"][f"eve/{CHAPTER}.ipynb"].results
    assert eve["sparsity_v3"].status == "wrong"  # the string "right", judged as an answer
    assert all(r.status == "unanswered" for i, r in eve.items() if i != "sparsity_v3")


def test_no_state_crosses_between_submissions(short_batch):
    loop = short_batch["loop.ipynb"]  # eve's startup file would have answered balance_h100
    assert loop["balance_h100"] == "0"


def test_time_limit_keeps_answers_given_before_it(short_batch):
    loop = short_batch["loop.ipynb"]
    assert loop["status"] == "timeout"
    assert int(loop["score"]) == 1 and loop["sparsity_v3"] == "1"


def test_a_forged_answer_record_is_not_believed(short_batch):
    forge = short_batch["forge.ipynb"]
    assert forge["status"].startswith("error: the answers could not be read")
    assert int(forge["score"]) == 0


# --- the parts, without kernels ---------------------------------------------------------------
CHAPTERS = grading.known_problem_sets()


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
        value = ex.expected()
        answers = [value, None, -1.0] + [m.wrong_answer(value) for m in ex.mistakes]
        for answer in answers:
            assert chalk.teaching.exercises.judge(frozen[ex_id], answer) == chalk.teaching.exercises.judge(ex, answer)


def test_answer_record_must_appear_exactly_once_with_every_id():
    marker, ids = "<<m>>", ["a", "b"]
    cell = nbformat.v4.new_code_cell()
    record = marker + json.dumps({"a": 1.0, "b": None}) + marker

    def stdout(text):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        return grading._read_answers(cell, marker, ids)

    assert stdout(record + "\n") == {"a": 1.0, "b": None}
    assert stdout(record + "\n" + record) is None
    assert stdout(marker + '{"a": 1.0}' + marker) is None
    assert stdout("<<other>>" + json.dumps({"a": 1, "b": 2}) + "<<other>>") is None


def test_an_id_shared_by_two_problem_sets_is_an_error():
    with pytest.raises(grading.GradingError, match="'x' is in problem sets 01_a and 02_b"):
        grading.columns({"01_a": {"x": 1}, "02_b": {"x": 2}})


@pytest.mark.parametrize("args, message", [
    (["/no/such/folder"], "SUBMISSIONS: '/no/such/folder' is not a folder"),
    (["{tmp}", "--timeout", "0"], "timeout: must be > 0"),
    (["{tmp}", "--workers", "0"], "workers: must be a whole number >= 1"),
    (["{tmp}"], "holds no files"),
])
def test_bad_invocations_exit_nonzero_with_one_line(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert grading.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
