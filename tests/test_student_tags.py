"""Every problem set follows the tagging rule of ``chalk.teaching.tags``: on the site each solution
sits in a "Show solution" fold, no check prints its verdict, every worked solution is a dropdown.

A helper adding an exercise reruns ``python -m chalk.teaching.tags``; this test names any cell left out.
"""
import nbformat
import pytest

from chalk.teaching import tags
from chalk.teaching.edition import problem_sets, student_problem_set
from chalk.teaching.student import BEGIN, END

SETS = problem_sets()


def test_there_are_seven_problem_sets():
    assert len(SETS) == 7


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_every_cell_of_the_problem_set_follows_the_rule(path):
    nb = nbformat.read(path, as_version=4)
    assert tags.problems(nb, path.name) == []
    roles = [tags.role(c) for c in nb.cells]
    assert roles.count(tags.ANSWER) >= 4 and roles.count(tags.CHECK) == roles.count(tags.ANSWER)
    for cell, kind in zip(nb.cells, roles):
        if kind == tags.ANSWER:
            assert "hide-cell" in cell.metadata.tags
            assert cell.metadata.mystnb["code_prompt_show"] == "Show solution"
        if kind == tags.CHECK:
            assert "remove-output" in cell.metadata.tags


def _set(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


ANSWER = f"x = ...\n{BEGIN}\nx = 3\n{END}"
WORKED = ":::{admonition} Worked solution\n:class: dropdown\nIt is 3.\n:::"


def test_untagged_cells_are_reported_and_normalise_fixes_them():
    nb = _set(nbformat.v4.new_markdown_cell("## A: `x`"),
              nbformat.v4.new_code_cell(ANSWER, metadata={"tags": ["hide-input", "keep-me"]}),
              nbformat.v4.new_code_cell('check("x", x)'),
              nbformat.v4.new_code_cell("import math"))
    found = tags.problems(nb)
    assert len(found) == 2 and "cell 1 (answer)" in found[0] and "cell 2 (check)" in found[1]
    assert tags.normalise(nb) == 2
    assert nb.cells[1].metadata.tags == ["keep-me", "hide-cell"]
    assert nb.cells[1].metadata.mystnb == {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
    assert nb.cells[2].metadata.tags == ["remove-output"]
    assert "tags" not in nb.cells[3].metadata  # not an exercise's cell: left alone
    assert tags.problems(nb) == [] and tags.normalise(nb) == 0  # idempotent


def test_a_check_that_shows_its_verdict_is_reported():
    nb = _set(nbformat.v4.new_code_cell('check("x", x)', metadata={"tags": ["hide-output"]}))
    assert tags.problems(nb) and tags.normalise(nb) == 1 and nb.cells[0].metadata.tags == ["remove-output"]


def test_a_worked_solution_or_model_answer_shown_unfolded_is_reported():
    open_worked = nbformat.v4.new_markdown_cell(":::{admonition} Worked solution\nIt is 3.\n:::",
                                                metadata={"tags": ["solution"]})
    open_model = nbformat.v4.new_markdown_cell(f"**Written answer**\n<!-- {BEGIN} -->\nBecause.\n<!-- {END} -->",
                                               metadata={"tags": ["free-text"]})
    folded = nbformat.v4.new_markdown_cell(WORKED, metadata={"tags": ["solution"]})
    found = tags.problems(_set(open_worked, open_model, folded))
    assert len(found) == 2 and "dropdown" in found[0] and "model answer" in found[1]


def test_the_student_edition_has_no_solution_fold_and_shows_its_checks():
    nb = student_problem_set(SETS[0])
    answers = [c for c in nb.cells if c.cell_type == "code" and "# your answer" in c.source]
    assert answers
    for cell in answers:
        assert not set(cell.metadata.get("tags", [])) & tags.HIDE_TAGS and "mystnb" not in cell.metadata
    checks = [c for c in nb.cells if tags.role(c) == tags.CHECK]
    assert checks and not any(set(c.metadata.get("tags", [])) & tags.HIDE_TAGS for c in checks)


def test_the_command_checks_without_changing(tmp_path, capsys):
    path = tmp_path / "01_x.ipynb"
    nbformat.write(_set(nbformat.v4.new_code_cell(ANSWER)), path)
    assert tags.main(["--check", str(path)]) == 1
    assert "run python -m chalk.teaching.tags" in capsys.readouterr().err
    assert "tags" not in nbformat.read(path, as_version=4).cells[0].metadata
    assert tags.main([str(path)]) == 0
    assert nbformat.read(path, as_version=4).cells[0].metadata.tags == ["hide-cell"]
