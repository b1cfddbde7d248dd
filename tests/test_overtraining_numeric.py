"""figures/overtraining_numeric.py (written from the SymPy expressions of
``chalk.figures.overtraining.numeric_forms``) stays equal to them: the file is what the generator
writes now, every function gives what its expression gives, as a number and over an array, and
importing the figures no longer solves for the heuristic's minimum or lambdifies anything."""
import json
import subprocess
import sys

import pytest
import sympy as sp

from chalk.figures import overtraining, overtraining_numeric
from conftest import assert_function_is_expression

FORMS = overtraining.numeric_forms()
NAMES = {value: name for name, value in vars(overtraining).items() if isinstance(value, sp.Symbol)}


def test_the_file_is_what_the_formulas_write():
    with open(overtraining_numeric.__file__, encoding="utf-8") as f:
        assert f.read() == overtraining.numeric_source(), \
            "overtraining_numeric.py is stale: run python -m chalk.figures.overtraining"


@pytest.mark.parametrize("name", list(FORMS))
def test_each_function_gives_its_expression(name):
    expr, function = FORMS[name], getattr(overtraining_numeric, name)
    assert_function_is_expression(expr, function, NAMES, name, [0.3, 0.5, 1, 1.5, 2, 2.5, 3, 7, 40], [0.5, 1.0, 2.5, 7.0])


def test_the_closed_forms_by_hand():
    # 6 N D = C: 6e23 FLOPs on 1e10 parameters is 1e13 tokens. a x^p + b x^-q has its minimum where
    # p a x^p = q b x^-q, x = (q b / (p a))^(1/(p+q)): (2.5)^(1/3.5) for a = b = p = 1, q = 2.5; the
    # terms are equal at (b/a)^(1/(p+q)) = 1.
    n = overtraining_numeric
    assert n.ISO_TOKENS(C_train=6e23, N_act=1e10) == pytest.approx(1e13, rel=1e-12)
    assert n.X_MIN(a=1.0, b=1.0, p=1.0, q=2.5) == pytest.approx(2.5 ** (1 / 3.5), rel=1e-12)
    assert n.X_EQUAL(a=1.0, b=1.0, p=1.0, q=2.5) == pytest.approx(1.0, rel=1e-12)
    assert n.F(a=2.0, b=3.0, p=1.0, q=2.0, x=2.0) == pytest.approx(2 * 2 + 3 / 4, rel=1e-12)


def test_importing_the_figures_neither_solves_the_heuristic_nor_lambdifies():
    """Problem set 5 imports the figures in its first cell, which every graded notebook runs:
    before the generated forms, that import solved for the heuristic's minimum and equal-cost point
    and lambdified six expressions (1.9 s of a kernel's CPU)."""
    code = ("import json, sympy\ncalls = []\n"
            "def counted(*a, **k):\n    calls.append(1)\n    return real(*a, **k)\n"
            "real, sympy.lambdify = sympy.lambdify, counted\n"
            "import chalk.figures.overtraining\nfrom chalk.lazy import REGISTRIES\n"
            "print(json.dumps({'lambdify': len(calls), 'built': REGISTRIES['chalk.scaling'].built}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                     .stdout.strip().splitlines()[-1])
    assert out["lambdify"] == 0
    assert not {"heuristic_x_min", "heuristic_x_equal"} & set(out["built"]), out["built"]
