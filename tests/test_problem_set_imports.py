"""What a graded problem set's kernel imports: the opening cells of all seven problem sets, run in a
fresh interpreter, must not load what only the chapters' live explorers use."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPLORERS_ONLY = ("ipywidgets",)
"""Imported where an explorer's widget is built (``chalk.figures.explorer``): about 0.1 CPU-s of every
kernel that imported a chapter's figure module to draw one static figure."""


def opening_cells() -> list[str]:
    """Each problem set's first code cell: its imports and its ``checker``."""
    cells = []
    for path in sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells.append(next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"))
    return cells


def test_the_problem_sets_opening_cells_load_no_widget_library(tmp_path):
    cells = opening_cells()
    assert len(cells) == 7 and all("checker(" in c for c in cells)
    probe = "\n".join(cells) + f"\nimport sys\nprint([m for m in {EXPLORERS_ONLY!r} if m in sys.modules])\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
