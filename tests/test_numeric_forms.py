"""The chapter modules' generated numeric forms (roofline_numeric, moe_layer_numeric,
memory_numeric, pipeline_numeric, scaling_numeric, pricing_numeric and reversible_numeric: plain
Python written from each module's ``numeric_forms``) stay equal to the SymPy expressions: each file
is what its generator writes now, every function gives what its expression gives, as a number and
over arrays, a few closed forms by hand, and what a problem set evaluates through them solves,
simplifies and lambdifies nothing (#28: a graded notebook's kernel paid 0.2-2.3 CPU-s building
them)."""
import importlib
import inspect
import json
import subprocess
import sys

import pytest
import sympy as sp

from conftest import assert_function_is_expression

# module: (generated module, forms, source); the generator is `python -m <module>`
GENERATED = {
    "chalk.roofline": ("chalk.roofline_numeric", "numeric_forms", "numeric_source"),
    "chalk.moe": ("chalk.moe_layer_numeric", "layer_numeric_forms", "layer_numeric_source"),
    "chalk.memory": ("chalk.memory_numeric", "numeric_forms", "numeric_source"),
    "chalk.pipeline": ("chalk.pipeline_numeric", "numeric_forms", "numeric_source"),
    "chalk.scaling": ("chalk.scaling_numeric", "numeric_forms", "numeric_source"),
    "chalk.pricing": ("chalk.pricing_numeric", "numeric_forms", "numeric_source"),
    "chalk.reversible": ("chalk.reversible_numeric", "numeric_forms", "numeric_source"),
}

# MoE's pools of experts are whole and hold at least k experts (n_exp S min(M, E/S) / E >= 8), and
# a domain is not the whole grid (S < E): there the grid's product form of a binomial and SymPy's
# agree, and no ratio is 0/0. k <= n_exp keeps a power of (1 - k/n_exp) real; other symbols take
# values whose products seldom cancel a denominator exactly.
ODD = [0.37, 1.3, 2.9, 7.1, 41.0]
CHOICES = {
    "chalk.roofline": {"k": [1, 2, 8], "n_exp": [8, 64], "W": [0.53, 3.7, 11.0], "f_att": [0.21, 5.3, 17.0], "*": ODD},
    "chalk.moe": {"n_exp": [128, 256], "E": [8, 16], "S": [1, 2, 4], "M_dom": [1, 2, 8, 72],
                  "k": [1, 2, 4, 8], "n_red": [0, 8, 32], "*": ODD},
    "chalk.memory": {"k": [1, 2, 8], "n_exp": [8, 64], "*": ODD},
    "chalk.pipeline": ODD,
    "chalk.scaling": {"E_0": [0.37, 1.3], "ell": [2.9, 7.1, 41.0], "*": ODD},  # a target loss above E_0
    "chalk.pricing": ODD,
    "chalk.reversible": ODD,
}
SWEEP = {module: [1.0, 2.0, 4.0, 8.0] for module in GENERATED}
SWEEP["chalk.roofline"] = {"W": [0.5, 3.0, 5.0, 11.0], "f_att": [0.2, 0.3, 0.7, 1.1], "*": [1.0, 2.0, 4.0, 8.0]}
# the grid's binomial takes one count of experts per token (a model's k), not an array of them
SWEEP["chalk.scaling"] = {"E_0": [0.37, 1.3, 1.3, 0.37], "ell": [2.9, 7.1, 41.0, 50.0], "*": [1.0, 2.0, 4.0, 8.0]}
SWEEP["chalk.moe"] = {"k": 8, "n_exp": [128, 128, 256, 256], "E": [8, 8, 16, 16], "S": [1, 2, 4, 4],
                      "M_dom": [1, 2, 8, 72], "*": [1.0, 2.0, 4.0, 8.0]}


def _flat(forms: dict, prefix=()):
    for key, value in forms.items():
        if isinstance(value, dict):
            yield from _flat(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def _cases() -> list:
    return [pytest.param(module, path, value, id=f"{module.rpartition('.')[2]}:{'.'.join(map(str, path))}")
            for module in GENERATED
            for path, value in _flat(getattr(importlib.import_module(module), GENERATED[module][1])())]


def _names(module) -> dict:
    """The generator's names for the symbols: the module's own ``_names`` where it has one."""
    mod = importlib.import_module(module)
    return mod._names() if hasattr(mod, "_names") else {v: n for n, v in vars(mod).items() if isinstance(v, sp.Symbol)}


@pytest.mark.parametrize("module", list(GENERATED))
def test_each_file_is_what_its_formulas_write(module):
    generated, _, source = GENERATED[module]
    path = importlib.import_module(generated).__file__
    with open(path, encoding="utf-8") as f:
        assert f.read() == getattr(importlib.import_module(module), source)(), \
            f"{path} is stale: run python -m {module}"


@pytest.mark.parametrize("module, path, value", _cases())
def test_each_function_gives_its_expression(module, path, value):
    function = importlib.import_module(GENERATED[module][0])
    for step in path:
        function = getattr(function, step) if isinstance(step, str) and not isinstance(function, dict) else function[step]
    symbols, expr = value if isinstance(value, tuple) else (None, value)
    names = _names(module)
    if symbols is not None:
        # a positional form takes every argument of its signature, in that order, used or not
        assert list(inspect.signature(function).parameters) == [names[s] for s in symbols]
        unused = [names[s] for s in symbols if s not in expr.free_symbols]
        given = function
        function = lambda **kw: given(**kw, **dict.fromkeys(unused, 3.0))  # noqa: E731
    assert_function_is_expression(expr, function, names, "/".join(map(str, path)), CHOICES[module], SWEEP[module])


def test_closed_forms_by_hand():
    from chalk import memory_numeric as mem, pipeline_numeric as pipe, roofline_numeric as roof
    # GPipe's bubble (P - 1)/(m v + P - 1): P = 4, m = 12, v = 1 gives 3/15; decode needs P (1 + hop)
    # micro-batches in flight, 6 x 1.25 = 7.5, and with 6 of 7.5 it idles 1 - 6/7.5 = 0.2.
    assert pipe.bubble_fraction(4, 12, 1) == pytest.approx(0.2, rel=1e-12)
    assert pipe.decode_min_microbatches(P=6, t_hop=0.25) == pytest.approx(7.5, rel=1e-12)
    assert pipe.decode_idle(6, 6, 0.25) == pytest.approx(0.2, rel=1e-12)
    # Dense, no attention FLOPs, no context: B* = F b_w N_tot / (2 N_act W), r b_w / 2 = 300 at
    # r = 300, b_w = 2; L* = 2 N_act / (r b_kv) when attention runs at F and costs no FLOPs: 2e9 /
    # (300 x 1e5) = 66.67 tokens.
    args = dict(N_act=1e9, N_tot=1e9, b_w=2, b_kv=1e5, F=300e12, W=1e12, f_att=0, F_att=300e12, N_rout=0, k=1, n_exp=1)
    assert roof.balance_batch(0, 0, **args) == pytest.approx(300, rel=1e-12)
    assert roof.balance_context(F_att=300e12, N_act=1e9, W=1e12, b_kv=1e5, f_att=0, r=300) == pytest.approx(2e9 / 3e7, rel=1e-12)
    # 8 chips of 80 GB, one stage, 16 GB of weights: (640 - 16) GB over 4096 tokens x 1 MB x m = 1.
    assert mem.max_batch(80e9, 8, 1, 1, 8e9, 2, 4096, 1e6) == pytest.approx(624e9 / 4096e6, rel=1e-12)


def test_what_a_problem_set_evaluates_solves_and_lambdifies_nothing():
    """The calls the problem sets make (all seven chapters), in a fresh interpreter: before the generated
    forms, each module's first call solved, simplified and lambdified (0.3-1.1 s of a kernel's CPU)."""
    code = """
import json, sympy
calls = {}
def counting(name):
    real = getattr(sympy, name)
    def counted(*a, **k):
        calls[name] = calls.get(name, 0) + 1
        return real(*a, **k)
    setattr(sympy, name, counted)
for name in ("lambdify", "solve", "simplify", "limit"):
    counting(name)
from chalk import memory, moe, pipeline, roofline
roofline.balance_batch("H200", "deepseek-v3", "fp8", context=4096)
roofline.balance_context_for("H100-SXM", "llama-3.1-70b")
roofline.decode_point("H200", "llama-3.1-405b", 128, 4096, "fp8", 8)
moe.layer_times("qwen3-235b-a22b", "hgx-b200", 4096, "fp8")
moe.alltoall_bytes("qwen3-235b-a22b", 4096, 8)
memory.max_batch("llama-3.1-70b", "hgx-h100", 4096)
pipeline.bubble_fraction(8, 16, "interleaved", chunks=4)
pipeline.bubble_fraction(4, 12, hop=0.1)
pipeline.rack_boundary_ratio(3, 8, 8.0)
pipeline.rack_boundary_ratio(3, 8, 8.0, 64)
pipeline.decode_microbatches_needed(6, 0.25)
pipeline.decode_idle_fraction(6, 4, 0.25)
pipeline.experts_per_crossing(3.2)
from chalk import scaling
scaling.compute_optimal(1e23)
scaling.token_split()
scaling.heuristic_penalty(0.5, 0.3)
scaling.heuristic_place(0.5, 0.3)
scaling.lifetime_optimal(2.0, inference_tokens=1e12)
scaling.rl_flops_per_rollout_token(0.3, 0.5)
scaling.loss_optimal(2.0, "epoch")
from chalk import pricing
pricing.kv_bytes_from_crossover(100_000, 37e9, 300)
pricing.decode_mfu_from_prices(1.0, 4.0)
from chalk import reversible
reversible.activation_bytes(4096, 4096, 32, "full", heads=32, seq_len=4096, peak=True, vocab=128000)
reversible.step_overhead("llama-3.1-8b", "block", 4096)
print(json.dumps(calls))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}
