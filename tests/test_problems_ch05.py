"""The answer key of problem set 5: every check behaves, and the key agrees with calculations done
here from the papers' printed constants and the model card, not from chalk's catalog or formulas.

Each choice item's verdict is recomputed here (by hand from the printed constants, and with chalk),
and every wrong option is judged wrong with its own feedback."""
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from chalk import pricing, scaling
from chalk.teaching.exercises import judge, problem_set
from chalk.teaching.problems import ch05_overtraining

EXERCISES = problem_set("05_overtraining")
CHOICE_ITEMS = {k for k, e in EXERCISES.items() if e.kind in ("choice", "choices")}
NUMERIC_ITEMS = set(EXERCISES) - CHOICE_ITEMS


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


def _lifetime_on_curve(f, target, d_inf, eta):
    """(N, D) minimising 6 N D + 2 N D_inf / eta on the curve L(N, D) = target: D solved from the loss."""
    n = np.logspace(9, 12, 300_001)
    room = target - f["E"] - f["A"] / n ** f["alpha"]
    n = n[room > 0]
    d = (f["B"] / room[room > 0]) ** (1 / f["beta"])
    i = np.argmin(6 * n * d + 2 * n * d_inf / eta)
    return n[i], d[i]


def _penalty_by_grid(p, q):
    x = np.logspace(-3, 3, 600_001)
    f = x ** p + x ** -q
    return 100 * (2.0 / f.min() - 1)  # at x = 1 both terms are 1


INDEPENDENT = {
    "equal_terms_ratio": (2.0 / 0.5, 1e-9),
    "heuristic_penalty_pct": (_penalty_by_grid(0.5, 2.0), 0.001),
    # Per rollout token: generation 2 x 4, plus a quarter of the tokens trained at 6 + 2 x 2; over 6.
    "split_rl": ((2 * 4 + 0.25 * (6 + 2 * 2)) / 6, 1e-9),
    # Expected tokens 40 M/s x 90 days x 0.6; pre-training half of inference's 2 x 3 per token: D_pre = D_inf / 2.
    "fifty_fifty_discounted": (40e6 * 90 * 86_400 * 0.6 / 2 / (20 * 150e9), 1e-9),
    # The catalog's 70.55 B against the card's rounded 70.6 B: within 0.2%.
    "llama70_vs_optimal": (LLAMA3_70B["params"] / _grid_optimum(6 * LLAMA3_70B["params"] * LLAMA3_70B["tokens"],
                                                                   EPOCH)[0], 0.005),
    "lifetime_n": (_lifetime_grid(EPOCH, 2.0, 1e14, 1 / 3), 0.01),  # the grid's step is 0.23%
    # 300 B uncached prompt tokens at 2, 120 B output tokens at 2 x 3, cache hits free, over 620 B served;
    # the thirds: 6 D_pre = 2 D_inf / eta.
    "served_mix_split": ((2 * 300e9 + 2 * 3 * 120e9) / (2 * 620e9) / 3, 1e-9),
    "read_minimum": (2.5 ** (1 / 3.5), 1e-9),
}


def test_enough_exercises_and_judgement_items_each_with_a_topic():
    assert len(EXERCISES) >= 10
    assert sum(bool(e.judgement) for e in EXERCISES.values()) >= 5
    assert all(e.topic for e in EXERCISES.values())


def test_every_numeric_exercise_has_an_independent_check():
    assert set(INDEPENDENT) == NUMERIC_ITEMS


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_independent_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


# --- the choice items' verdicts, recomputed ---------------------------------------------------
def test_fit_verdict_flips_between_the_fits():
    v = ch05_overtraining.VERDICT
    budget = 6 * v["params"] * v["tokens"]
    by_hand = {name: v["params"] / _grid_optimum(budget, f)[0] for name, f in (("hoffmann", HOFFMANN),
                                                                               ("epoch", EPOCH))}
    assert by_hand["hoffmann"] > 1.1 and by_hand["epoch"] < 0.6      # (c): too large under one, too small under the other
    for fit, ratio in by_hand.items():
        assert close(v["params"] / scaling.compute_optimal(budget, fit)[0], ratio, 0.001)
    assert EXERCISES["fit_verdict"].answer == "c"


@pytest.mark.parametrize("name, fit", [("hoffmann", HOFFMANN), ("epoch", EPOCH)])
def test_lifetime_verdict_is_over_trained_under_either_fit(name, fit):
    o = ch05_overtraining.OWN
    target = _loss(o["params"], o["tokens"], fit)
    n_opt, d_opt = _lifetime_on_curve(fit, target, o["inference_tokens"], 1 / o["inference_inefficiency"])
    # (a): the optimum is a larger model on fewer tokens, and (c)'s 5% band is far off.
    assert n_opt > 1.3 * o["params"] and d_opt < o["tokens"] / 2
    n_chalk, d_chalk, _ = scaling.lifetime_optimal(scaling.loss(o["params"], o["tokens"], name), o["inference_tokens"],
                                                   name, 1 / o["inference_inefficiency"])
    assert close(n_chalk, n_opt, 0.01) and close(d_chalk, d_opt, 0.02)
    # (d) is false: the model's own lifetime FLOPs exceed the optimum's.
    own = 6 * o["params"] * o["tokens"] + 2 * o["params"] * o["inference_tokens"] * o["inference_inefficiency"]
    best = 6 * n_opt * d_opt + 2 * n_opt * o["inference_tokens"] * o["inference_inefficiency"]
    assert own > 1.1 * best
    assert EXERCISES["lifetime_verdict"].answer == "a"


@pytest.mark.parametrize("flatter", [0.9, 0.95])
def test_tokens_that_buy_less_move_the_lifetime_optimum_to_a_larger_model(flatter):
    """A law whose data term agrees with the fit at 2 T tokens but falls more slowly past it (a smaller
    beta): at the same target and traffic its optimum has more parameters and fewer tokens per
    parameter, so the fit's own optimum was biased toward over-training (option a)."""
    fit = scaling.get_fit("epoch")
    beta = fit.beta * flatter
    slower = replace(fit, name="slower", beta=beta, B0=fit.B0 * 2e12 ** (beta - fit.beta))
    assert scaling.loss(1e11, 2e12, slower) == pytest.approx(scaling.loss(1e11, 2e12, fit), rel=1e-12)
    assert scaling.loss(1e11, 2e13, slower) > scaling.loss(1e11, 2e13, fit)   # tokens buy less past 2 T
    for target, d_inf in ((2.0, 1e14), (1.95, 3e14)):
        n_fit, d_fit, _ = scaling.lifetime_optimal(target, d_inf, fit, 1 / 3)
        n_true, d_true, _ = scaling.lifetime_optimal(target, d_inf, slower, 1 / 3)
        assert d_fit / n_fit > 1000                        # the extreme ratios the item is about
        assert n_true > 1.02 * n_fit and d_true / n_true < d_fit / n_fit
    assert EXERCISES["extrapolation_bias"].answer == "a"


def test_prefill_runs_near_training_efficiency_and_decode_far_below():
    # The per-token time of one decode step is many times a long prefill's (compute-bound, the
    # training-like regime): decode's inefficiency belongs to tokens made one step at a time (a, d).
    pt = pricing.pass_times("llama-3.1-70b", "hgx-h100", [1, 8192], dtype="fp8")
    assert pt.compute[1] >= pt.memory[1]                  # the prefill is compute-bound
    assert pt.per_token[0] / pt.per_token[1] > 20
    assert EXERCISES["decode_rate_tokens"].answer == frozenset({"a", "d"})


def test_numeric_mistakes_are_told_apart_with_their_hints():
    # The slips the judgement items are about: decode's factor on every token, a reused forward pass.
    mix = EXERCISES["served_mix_split"]
    assert "output tokens only" in judge(mix, 1.0).message
    rl = EXERCISES["split_rl"]
    assert "cannot reuse" in judge(rl, (2 * 4 + 0.25 * (4 + 2 * 2)) / 6).message
    fifty = EXERCISES["fifty_fifty_discounted"]
    assert "the thirds" in judge(fifty, 40e6 * 90 * 86_400 * 0.6 / (20 * 150e9)).message


# --- the prompts ------------------------------------------------------------------------------
def _prompts():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "05_overtraining.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_every_exercise_has_a_prompt_and_the_title_is_right():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "05_overtraining.ipynb", as_version=4)
    assert nb.cells[0].source.splitlines()[0] == "# Problem set 5: over-training"
    assert set(_prompts()) == set(EXERCISES)


def test_choice_prompts_list_every_option():
    prompts = _prompts()
    for ex_id in CHOICE_ITEMS:
        for letter, text in EXERCISES[ex_id].options.items():
            assert f"({letter}) {' '.join(text.split())}" in prompts[ex_id], (ex_id, letter)


def test_prompts_state_the_scenario_the_key_uses():
    k = ch05_overtraining
    stated = {
        "fit_verdict": [f"{k.VERDICT['params'] / 1e9:.0f} B parameters", f"{k.VERDICT['tokens'] / 1e12:.0f} T tokens"],
        "equal_terms_ratio": [f"x^{{{k.EXPONENTS['p']:g}}}", f"x^{{-{k.EXPONENTS['q']:g}}}"],
        "split_rl": [f"= {k.RL_SPLIT['decode_inefficiency']:g}$", f"$f = {k.RL_SPLIT['trained_fraction']:g}$",
                     f"$r = {k.RL_SPLIT['extra_forwards']:g}$"],
        "fifty_fifty_discounted": [f"{k.FIFTY['active_params'] / 1e9:.0f} B active", f"{k.FIFTY['tokens_per_second'] / 1e6:.0f} M tokens/s",
                                   f"{k.FIFTY['days']} days", f"{k.FIFTY['frontier_odds']:.0%} chance", "a third of"],
        "llama70_vs_optimal": [f'models.get("{k.PUBLISHED}")', '("epoch")'],
        "lifetime_n": [f"loss of {k.LIFE['target_loss']:.1f} nats", "$10^{14}$", "a third of"],
        "lifetime_verdict": [f"{k.OWN['params'] / 1e9:.0f} B-parameter", f"{k.OWN['tokens'] / 1e12:.0f} T tokens",
                             r"$5 \times 10^{12}$", "a third of", '("epoch")'],
        "served_mix_split": [f"{k.MIX['input_tokens'] / 1e9:.0f} B prompt tokens", f"{k.MIX['cached_share']:.0%}",
                             f"{k.MIX['output_tokens'] / 1e9:.0f} B output tokens", "a third of"],
        "read_minimum": [f"x^{{-{k.FIGURE['q']:g}}}"],
    }
    assert k.LIFE["inference_tokens"] == 1e14 and k.OWN["inference_tokens"] == 5e12
    assert k.LIFE["fit"] == "epoch" and k.LIFE["inference_inefficiency"] == 3 and k.FIGURE["p"] == 1
    assert k.OWN["inference_inefficiency"] == 3 and k.MIX["decode_inefficiency"] == 3
    assert k.FIFTY["inference_inefficiency"] == 3
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)


def test_no_answer_is_printed_in_the_chapter():
    """The chapter's tables must not hand out a key: none of its scenarios is an exercise's."""
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "notebooks" / "05_overtraining.ipynb", as_version=4)
    text = " ".join(c.source for c in nb.cells)
    for scenario in ("500e9", "30e9, 40e12", "llama70", "40e6", "500e9 * 0.4"):
        assert scenario not in text, scenario
