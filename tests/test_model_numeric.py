"""The catalog's numeric formulas (model_numeric.py, written from model_formulas's SymPy expressions)
stay equal to the expressions: the file is what the generator writes now, and every function gives
what its expression gives at random shapes, with the context as a number or an array."""
import random

import numpy as np
import pytest
import sympy as sp

from chalk.catalog import model_formulas, model_numeric


def leaves(node, path=()):
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in leaves(value, (*path, key))]
    return [(path, node)]


CASES = [(name, path, expr) for name, value in model_formulas.NUMERIC.items() for path, expr in leaves(value)]
NAMES = {value: name for name, value in vars(model_formulas).items() if isinstance(value, sp.Symbol)}


def test_the_file_is_what_the_formulas_write():
    with open(model_numeric.__file__, encoding="utf-8") as f:
        assert f.read() == model_formulas.numeric_source(), (
            "model_numeric.py is stale: run python -m chalk.catalog.model_formulas")


@pytest.mark.parametrize("name, path, expr", CASES, ids=[f"{n}{''.join(f'[{k}]' for k in p)}" for n, p, _ in CASES])
def test_each_function_gives_its_expression(name, path, expr):
    function = model_numeric.__dict__[name]
    for key in path:
        function = function[key]
    rng = random.Random(f"{name}{path}")
    for _ in range(3):
        values = {s: rng.choice([1, 2, 3, 7, 64, 128, 4096, 16384]) for s in expr.free_symbols}
        exact = float(expr.subs(values))
        assert function(**{NAMES[s]: v for s, v in values.items()}) == pytest.approx(exact, rel=1e-12)
    if model_formulas.L in expr.free_symbols:  # a context sweep, as the figures pass it
        contexts = np.array([1.0, 100.0, 5000.0, 200000.0])
        values = {s: 4096 if s == model_formulas.w else 8 for s in expr.free_symbols if s != model_formulas.L}
        swept = function(L=contexts, **{NAMES[s]: v for s, v in values.items()})
        exact = [float(expr.subs(values | {model_formulas.L: c})) for c in contexts]
        assert np.allclose(swept, exact, rtol=1e-12)
