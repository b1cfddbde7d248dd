"""``python -m chalk --help`` and ``list`` load no SymPy, Matplotlib or ipywidgets (issue 23 §3).

A work count, not a stopwatch: each command runs in a fresh interpreter, which then reports the
heavy packages it imported. Their time is what ``make bench`` measures against ``import numpy``.
"""
import json
import subprocess
import sys

import pytest

from chalk import cli
from chalk.catalog import reference

HEAVY = ("sympy", "matplotlib", "ipywidgets")

# Every set: `list models` evaluates the catalog's formulas through model_numeric, `list deployments`
# chalk.moe's through moe_numeric.
LIST_SETS = list(reference.LISTS)


def _heavy_imports(*argv: str) -> tuple[int, list[str]]:
    """Run ``python -m chalk *argv`` in a fresh interpreter; its exit code and the heavy packages loaded."""
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['chalk', *{list(argv)!r}]\n"
            "try:\n"
            "    runpy.run_module('chalk', run_name='__main__')\n"
            "    code = 0\n"
            "except SystemExit as e:\n"
            "    code = e.code or 0\n"
            f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return tuple(json.loads(out.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [("--help",), *((command, "--help") for command in cli.COMMANDS)])
def test_help_loads_no_heavy_package(argv):
    assert _heavy_imports(*argv) == (0, [])


@pytest.mark.parametrize("what", LIST_SETS)
def test_list_loads_no_heavy_package(what):
    assert _heavy_imports("list", what) == (0, [])


def test_the_check_sees_sympy_when_it_is_loaded():
    # The probe must be able to fail: a command that computes a roofline does load SymPy.
    code, heavy = _heavy_imports("serve", "--model", "llama-3-70b", "--chip", "H100-SXM", "--chips", "8",
                                 "--batch", "8", "--context", "4096")
    assert code == 0 and "sympy" in heavy
