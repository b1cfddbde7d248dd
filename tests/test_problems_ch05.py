"""The answer key of problem set 5: every check behaves, and the key agrees with calculations done
here from the papers' printed constants and the model card, not from chalk's catalog or formulas."""
import math
import re

import numpy as np
import pytest

from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch05_overtraining

EXERCISES = problem_set("05_overtraining")


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


# --- independent checks -----------------------------------------------------------------------
# Printed constants, typed from the papers (not read from chalk):
HOFFMANN = dict(E=1.6934, A=406.4, B=410.7, alpha=0.3392, beta=0.2849)  # arXiv 2203.15556 source digits
EPOCH = dict(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)  # Besiroglu et al. 2024, Table 1
LLAMA3_70B = dict(params=70.6e9, tokens=15e12)  # Llama 3 model card


def _loss(n, d, f):
    return f["E"] + f["A"] / n ** f["alpha"] + f["B"] / d ** f["beta"]


def _grid_optimum(budget, f):
    """(N, D) minimising the loss along 6 N D = budget, by a dense log grid."""
    n = np.logspace(8, 14, 400_001)
    i = np.argmin(_loss(n, budget / (6 * n), f))
    return n[i], budget / (6 * n[i])


def _lifetime_grid(f, target, d_inf, eta):
    """N minimising 6 N D + 2 N D_inf / eta over a grid of feasible (N, D) pairs."""
    n = np.logspace(9.5, 11.5, 2001)[None, :]
    d = np.logspace(11, 15, 4001)[:, None]
    cost = np.where(_loss(n, d, f) <= target, 6 * n * d + 2 * n * d_inf / eta, np.inf)
    return n[0, np.unravel_index(np.argmin(cost), cost.shape)[1]]


def _penalty_by_grid(p, q):
    x = np.logspace(-3, 3, 600_001)
    f = x ** p + x ** -q
    return 100 * (2.0 / f.min() - 1)  # at x = 1 both terms are 1


INDEPENDENT = {
    "moe_train_flops": (6 * 30e9 * 20e12, 1e-9),
    "frontier_n_epoch": (_grid_optimum(3e25, EPOCH)[0], 0.001),
    "tpp_hoffmann": ((lambda n, d: d / n)(*_grid_optimum(1e27, HOFFMANN)), 0.001),
    "equal_terms_ratio": (2.0 / 0.5, 1e-9),
    "heuristic_penalty_pct": (_penalty_by_grid(0.5, 2.0), 0.001),
    "split_rl": (4 * 3 / 6, 1e-9),
    "lecture_ratio_variant": (30e6 * 90 * 86_400 / (20 * 60e9), 1e-9),
    # The catalog's 70.55 B against the card's rounded 70.6 B: within 0.2%.
    "llama70_vs_optimal": (LLAMA3_70B["params"] / _grid_optimum(6 * LLAMA3_70B["params"] * LLAMA3_70B["tokens"],
                                                                   EPOCH)[0], 0.005),
    "lifetime_n": (_lifetime_grid(EPOCH, 2.0, 1e14, 1 / 3), 0.01),  # the grid's step is 0.23%
    "read_minimum": (2.5 ** (1 / 3.5), 1e-9),
}


def test_every_exercise_has_an_independent_check():
    assert set(INDEPENDENT) == set(EXERCISES)


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_independent_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


def _prompts():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "05_overtraining.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_prompts_state_the_scenario_the_key_uses():
    k = ch05_overtraining
    stated = {
        "moe_train_flops": [f"{k.MOE['total'] / 1e9:.0f} B parameters", f"{k.MOE['active'] / 1e9:.0f} B are active",
                            f"{k.MOE['tokens'] / 1e12:.0f} T tokens"],
        "frontier_n_epoch": [r"$3 \times 10^{25}$"],
        "tpp_hoffmann": ["$10^{27}$"],
        "equal_terms_ratio": [f"x^{{{k.EXPONENTS['p']:g}}}", f"x^{{-{k.EXPONENTS['q']:g}}}"],
        "split_rl": [f"= {k.RL_SPLIT['kappa']:g}$ FLOPs", f"= {k.RL_SPLIT['rl_inefficiency']:g}$"],
        "lecture_ratio_variant": [f"{k.SERVE['tokens_per_second'] / 1e6:.0f} M tokens/s",
                                  f"{k.SERVE['days']:.0f} days", f"{k.SERVE['active_params'] / 1e9:.0f} B active"],
        "llama70_vs_optimal": [f'models.get("{k.PUBLISHED}")', '("epoch")'],
        "lifetime_n": [f"loss of {k.LIFE['target_loss']:.1f} nats", "$10^{14}$", "a third of"],
        "read_minimum": [f"x^{{-{k.FIGURE['q']:g}}}"],
    }
    assert k.BUDGET_EPOCH == 3e25 and k.BUDGET_TPP == 1e27 and k.LIFE["inference_tokens"] == 1e14
    assert k.LIFE["fit"] == "epoch" and k.LIFE["inference_inefficiency"] == 3 and k.FIGURE["p"] == 1
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)


def test_no_answer_is_printed_in_the_chapter():
    """The chapter's tables must not hand out a key: none of its printed numbers is an answer."""
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "notebooks" / "05_overtraining.ipynb", as_version=4)
    text = " ".join(c.source for c in nb.cells)
    for scenario in ("3e25", "1e27", "30e9 * 20e12", "llama70"):
        assert scenario not in text, scenario
