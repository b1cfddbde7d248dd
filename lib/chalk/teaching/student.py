"""Make the student edition of a problem set: solutions out, checks kept.

In the instructor's notebook a solution sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` inside an answer cell; it becomes ``<answer> = ...`` where ``<answer>`` is the
variable the solution assigned last. Cells tagged ``solution`` (worked explanations) are dropped.

A written answer is a Markdown cell tagged ``free-text`` under its exercise's heading; a model
answer between the markers there becomes a placeholder for the student to replace, and the grader
collects what students write in it for marking by hand (its points: ``{"chalk": {"points": 2}}``
in the cell's metadata, else 1). In Markdown a marker may sit in an HTML comment,
``<!-- ### BEGIN SOLUTION -->``, so that the instructor's site does not show it as a heading. An
exercise's heading is ``## <title>: `<id>```, or ``## <question>? `<id>``` for a question.

    python -m chalk.teaching.student exercises/01_batching.ipynb --out _build/student/exercises
"""
import argparse
import re
import sys
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
FREE_TEXT = "free-text"
"""The tag of a Markdown cell that asks for a written answer."""
PLACEHOLDER = "*Your answer here.*"
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)")
_HEADING = re.compile(r"^## (.+?)(?::|(?<=[?!]))\s*`(\w+)`\s*$", re.M)
_COMMENT = re.compile(r"^<!--\s*(.*?)\s*-->$")


class SolutionMarkerError(ValueError):
    pass


def exercise_of_cells(nb) -> list[str | None]:
    """For each cell, the id of the exercise whose heading it sits under (None before the first)."""
    current, out = None, []
    for c in nb.cells:
        if c.cell_type == "markdown" and (m := _HEADING.search(c.source)):
            current = m.group(2)
        out.append(current)
    return out


def titles(nb) -> dict[str, str]:
    """``{exercise id: title}`` from the headings ``## <title>: `<id>```."""
    return {m.group(2): m.group(1).strip() for c in nb.cells if c.cell_type == "markdown"
            for m in _HEADING.finditer(c.source)}


def free_text_points(cell) -> float:
    return float(cell.get("metadata", {}).get("chalk", {}).get("points", 1))


def _strip_source(source: str, where: str, markdown: bool = False) -> str:
    out, block, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if markdown and (m := _COMMENT.match(stripped)):
            stripped = m.group(1)
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{where}: nested {BEGIN}")
            inside, block = True, []
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{where}: {END} without {BEGIN}")
            inside = False
            targets = [m.group(1) for ln in block if (m := _ASSIGN.match(ln))]
            out.append(PLACEHOLDER if markdown else
                       f"{targets[-1]} = ...  # your answer" if targets else "...  # your code")
        elif inside:
            block.append(line)
        else:
            out.append(line)
    if inside:
        raise SolutionMarkerError(f"{where}: {BEGIN} without {END}")
    return "\n".join(out)


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """A copy of ``nb`` without solutions, outputs or execution counts."""
    nb = nbformat.from_dict(nb)
    cells = []
    for i, cell in enumerate(nb.cells):
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        cell.source = _strip_source(cell.source, f"{name} cell {i}", cell.cell_type == "markdown")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def write_student(src: Path, out_dir: Path) -> Path:
    nb = nbformat.read(src, as_version=4)
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / src.name
    nbformat.write(student_notebook(nb, str(src)), dest)
    return dest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write student editions of problem sets.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder for the student notebooks")
    args = parser.parse_args(argv)
    try:
        for src in args.notebooks:
            print(write_student(src, args.out))
    except (SolutionMarkerError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
