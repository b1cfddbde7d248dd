"""Notebooks are committed clean: no outputs, no execution counts."""
import json
import subprocess

import pytest

from conftest import ROOT


def tracked_notebooks():
    try:
        out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [str(p.relative_to(ROOT)) for p in ROOT.glob("[ne]*/**/*.ipynb")]
    return out


@pytest.mark.parametrize("path", tracked_notebooks())
def test_notebook_has_no_outputs(path):
    nb = json.loads((ROOT / path).read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path}: a cell has outputs"
            assert cell.get("execution_count") is None, f"{path}: a cell has an execution count"
