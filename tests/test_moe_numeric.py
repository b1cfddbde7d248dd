"""catalog/moe_numeric.py (written from chalk.moe's SymPy expressions) stays equal to them: the file is
what the generator writes now, every function gives what its expression gives at random points, as a
number and over an array, and the catalog's SymPy-free tables use it."""

import pytest
import sympy as sp

from chalk import moe
from chalk.catalog import domains, moe_numeric
from conftest import assert_function_is_expression

NAMES = {value: name for name, value in vars(moe).items() if isinstance(value, sp.Symbol)}


def test_the_file_is_what_the_formulas_write():
    with open(moe_numeric.__file__, encoding="utf-8") as f:
        assert f.read() == moe.numeric_source(), "moe_numeric.py is stale: run python -m chalk.moe"


@pytest.mark.parametrize("name", list(moe.NUMERIC))
def test_each_function_gives_its_expression(name):
    expr, function = moe.NUMERIC[name], getattr(moe_numeric, name)
    assert_function_is_expression(expr, function, NAMES, name, [1, 2, 3, 7, 8, 32, 64, 72, 144, 256, 320, 8e10], [1.0, 7.0, 64.0, 320.0])


def test_the_ceiling_rounds_up_as_a_placement_does():
    # 256 routed experts and 32 redundant copies over 32 GPUs: 9 each; over 36: 8; over 35: 9 (288/35 = 8.2).
    assert [moe_numeric.EXPERTS_PER_CHIP(E=e, n_exp=256, n_red=32) for e in (32, 36, 35)] == [9, 8, 9]


def test_the_sympy_free_tables_agree_with_chalk_moe():
    for d in domains.deployments():
        assert d.experts_per_chip == moe.experts_per_chip("deepseek-v3", d.chips, d.redundant)
    box = domains.domain_growth()[0]
    assert box.max_total_params("fp8") == pytest.approx(moe.max_total_params("hgx-h100", "fp8"), rel=1e-12)
    assert moe.deployments is domains.deployments and moe.Domain is domains.Domain
