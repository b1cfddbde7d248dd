"""Problem set 1 in both editions, and the generator of the student edition.

The instructor's notebook must pass its own checks; the student edition must hold no solution,
keep every check, run through, and report every exercise as not answered yet.
"""
import re

import nbformat
import pytest
from nbclient import NotebookClient

from chalk.teaching.exercises import problem_set
from chalk.teaching.student import (BEGIN, END, FREE_TEXT, PLACEHOLDER, SolutionMarkerError, exercise_of_cells,
                                    main, student_notebook, titles, write_student)
from conftest import ROOT
from key_answers import unanswered_words

SOURCE = ROOT / "exercises" / "01_batching.ipynb"
EXERCISES = problem_set("01_batching")
CHECK = re.compile(r'^check\("(\w+)", (\w+)\)$')


def check_cells(nb):
    """{exercise id: check cell} for every cell that is exactly one check call."""
    found = {}
    for cell in nb.cells:
        m = CHECK.match(cell.source.strip()) if cell.cell_type == "code" else None
        if m:
            assert m.group(1) == m.group(2), f"check of {m.group(1)} passes {m.group(2)}"
            found[m.group(1)] = cell
    return found


def run(nb):
    """Execute ``nb`` in the exercises folder; return {exercise id: check output text}."""
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(SOURCE.parent)}}).execute()
    results = {}
    for ex_id, cell in check_cells(nb).items():
        texts = [o.get("data", {}).get("text/plain", "") for o in cell.outputs
                 if o.output_type == "execute_result"]
        results[ex_id] = " ".join(texts)
    return results


def solution_lines(nb):
    """Distinctive lines of the instructor's solutions: inside the markers, never outside them."""
    inside, outside, current = set(), set(), False
    for cell in nb.cells:
        for line in cell.source.splitlines():
            s = line.strip()
            if s in (BEGIN, END):
                current = s == BEGIN
            elif len(s) > 12:
                (inside if current else outside).add(s)
    return inside - outside


@pytest.fixture(scope="module")
def instructor():
    return nbformat.read(SOURCE, as_version=4)


@pytest.fixture(scope="module")
def student(instructor):
    return student_notebook(instructor, str(SOURCE))


# --- the instructor's edition -----------------------------------------------------------------
def test_every_exercise_has_prompt_answer_and_check(instructor):
    checks = check_cells(instructor)
    assert set(checks) == set(EXERCISES)
    sources = [c.source for c in instructor.cells]
    for ex_id, ex in EXERCISES.items():
        prompt = next(s for s in sources if re.match(rf"## .+(:|\?) `{ex_id}`\n", s))
        # the unit and tolerance the student reads are the key's; a choice's options are the key's
        if ex.kind == "number":
            assert ex.unit.replace("$", r"\$") in prompt and ex.tolerance_text() in prompt, ex_id
        else:
            assert all(f"({x}) {text}" in " ".join(prompt.split()) for x, text in ex.options.items()), ex_id
        answer = sources[sources.index(checks[ex_id].source) - 1]
        assert BEGIN in answer and END in answer, ex_id
        last = [ln for ln in answer.split(BEGIN)[1].split(END)[0].splitlines()
                if re.match(r"^\w+\s*=", ln)][-1]
        assert last.startswith(f"{ex_id} ="), f"{ex_id}: the solution must end by assigning it"


def test_committed_clean_with_python3_kernel(instructor):
    assert instructor.metadata.kernelspec.name == "python3"
    for cell in instructor.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_instructor_solutions_pass_their_checks(instructor):
    results = run(nbformat.from_dict(instructor))
    for ex_id in EXERCISES:
        assert "[right]" in results[ex_id], results[ex_id]


# --- the student edition ----------------------------------------------------------------------
def test_student_edition_has_no_solution(instructor, student):
    text = "\n".join(c.source for c in student.cells)
    assert BEGIN not in text and END not in text
    lines = solution_lines(instructor)
    assert len(lines) >= len(EXERCISES)
    leaked = [line for line in lines if line in text]
    assert not leaked, leaked
    worked = [c.source for c in instructor.cells if "solution" in c.metadata.get("tags", [])]
    assert len(worked) == len(EXERCISES)
    assert not any(w in text for w in worked)
    assert not any("solution" in c.metadata.get("tags", []) for c in student.cells)


def test_student_edition_keeps_every_check_and_asks_for_each_answer(student):
    assert set(check_cells(student)) == set(EXERCISES)
    text = "\n".join(c.source for c in student.cells)
    for ex_id in EXERCISES:
        assert f"{ex_id} = ...  # your answer" in text


def test_student_edition_runs_and_reports_not_answered(student):
    results = run(nbformat.from_dict(student))
    for ex_id in EXERCISES:
        assert f"[unanswered] {ex_id}: {unanswered_words(EXERCISES[ex_id])}" in results[ex_id], results[ex_id]


# --- the generator ----------------------------------------------------------------------------
def notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


@pytest.mark.parametrize("source, problem", [
    (f"{BEGIN}\nx = 1", "without"),
    (f"x = 1\n{END}", "without"),
    (f"{BEGIN}\n{BEGIN}\nx = 1\n{END}\n{END}", "nested"),
])
def test_unbalanced_markers_raise_naming_the_cell(source, problem):
    with pytest.raises(SolutionMarkerError, match=rf"demo cell 1: .*{problem}"):
        student_notebook(notebook("y = 2", source), "demo")


def test_block_becomes_last_assignment_or_placeholder():
    nb = student_notebook(notebook(f"a = 1\n{BEGIN}\ntmp = 2\n    inner = 3\nanswer = tmp\n{END}",
                                   f"{BEGIN}\nprint('hi')\n{END}"))
    assert nb.cells[0].source == "a = 1\nanswer = ...  # your answer"
    assert nb.cells[1].source == "...  # your code"


def test_a_written_answers_model_answer_becomes_a_placeholder():
    nb = notebook("x = 1")
    nb.cells.append(nbformat.v4.new_markdown_cell(f"Why not 8?\n\n{BEGIN}\nBecause s counts parameters.\n{END}",
                                                  metadata={"tags": [FREE_TEXT]}))
    cell = student_notebook(nb).cells[1]
    assert cell.source == f"Why not 8?\n\n{PLACEHOLDER}" and cell.metadata.tags == [FREE_TEXT]


def test_titles_and_sections_come_from_the_headings(instructor):
    found = titles(instructor)
    assert list(found) == list(EXERCISES)  # one heading per exercise, in key order
    assert all(t and "`" not in t for t in found.values())
    sections = exercise_of_cells(instructor)
    for ex_id, cell in check_cells(instructor).items():
        assert sections[instructor.cells.index(cell)] == ex_id
    assert sections[0] is None  # the introduction belongs to no exercise


def test_output_is_deterministic(tmp_path):
    first = write_student(SOURCE, tmp_path / "a").read_bytes()
    second = write_student(SOURCE, tmp_path / "b").read_bytes()
    assert first == second


def test_cli_reports_marker_errors(tmp_path, capsys):
    bad = tmp_path / "bad.ipynb"
    nbformat.write(notebook(f"{BEGIN}\nx = 1"), bad)
    assert main([str(bad), "--out", str(tmp_path / "out")]) == 1
    assert "without" in capsys.readouterr().err
    assert main([str(SOURCE), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / SOURCE.name).is_file()
