"""Make the student edition of a problem set: solutions out, checks kept.

In the instructor's notebook a solution sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` inside an answer cell; it becomes ``<answer> = ...`` where ``<answer>`` is the
variable the solution assigned last. Cells tagged ``solution`` (worked explanations) are dropped.

    python -m chalk.teaching.student exercises/01_batching.ipynb --out _build/student/exercises
"""
import argparse
import re
import sys
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)")


class SolutionMarkerError(ValueError):
    pass


def _strip_source(source: str, where: str) -> str:
    out, block, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{where}: nested {BEGIN}")
            inside, block = True, []
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{where}: {END} without {BEGIN}")
            inside = False
            targets = [m.group(1) for ln in block if (m := _ASSIGN.match(ln))]
            out.append(f"{targets[-1]} = ...  # your answer" if targets else "...  # your code")
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
        cell.source = _strip_source(cell.source, f"{name} cell {i}")
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
