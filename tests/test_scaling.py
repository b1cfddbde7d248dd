"""chalk.scaling: closed forms against brute force, the derivations behind them, and bad input."""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from chalk import ChalkError, scaling
from chalk.catalog.overtraining import FITS
from chalk.errors import RangeWarning
from chalk.notation import A, B_0, C_train, D, E_0, N_act, a, alpha, b, beta, p, q, x

FIT_NAMES = sorted(FITS)


def _constants(name):
    f = FITS[name]
    return f.E0, f.A, f.B0, f.alpha, f.beta


def _loss(n, d, name):
    """The Chinchilla loss typed out again, so the checks below do not lean on the module's."""
    e0, a_, b0, al, be = _constants(name)
    return e0 + a_ / n**al + b0 / d**be


# --- derivations --------------------------------------------------------------------------------
def test_six_nd_is_forward_plus_backward():
    assert sp.simplify(scaling.pretraining_flops - (scaling.forward_flops + scaling.backward_flops) * D) == 0
    assert scaling.pretraining_flops == 6 * N_act * D


def test_heuristic_terms_stand_in_ratio_q_over_p():
    assert sp.simplify(scaling.heuristic_term_ratio - q / p) == 0
    # Equal terms are the minimum when p = q (the lecture's a x + b/x), not otherwise.
    assert sp.simplify(scaling.heuristic_term_ratio.subs(p, q)) == 1


def test_iso_flop_loss_is_the_heuristic_with_x_equal_n():
    iso = (scaling.loss_expr - E_0).subs(D, C_train / (6 * N_act))
    as_heuristic = scaling.heuristic_f.subs(scaling._ISO_FLOP).subs(x, N_act)
    assert sp.simplify(iso - as_heuristic) == 0


def test_frontier_is_hoffmann_equation_4():
    # Hoffmann et al. (2022) eq. (4): N_opt = G (C/6)^a, G = (alpha A/(beta B))^(1/(alpha+beta)), a = beta/(alpha+beta).
    G = (alpha * A / (beta * B_0))**(1 / (alpha + beta))
    hoffmann = G * (C_train / 6)**(beta / (alpha + beta))
    values = {A: 406.4, B_0: 410.7, alpha: 0.3392, beta: 0.2849, C_train: 3.7e24}
    assert float((scaling.n_star / hoffmann).subs(values)) == pytest.approx(1, rel=1e-12)
    assert sp.simplify(scaling.frontier_term_ratio - alpha / beta) == 0
    assert sp.simplify(scaling.u_compute_optimal - beta / (alpha + beta)) == 0


def test_equal_cost_at_the_lifetime_optimum_only_when_u_matches():
    # The heuristic "training cost = RL + inference cost" is exact at u = 2 beta / (alpha + 2 beta).
    u_equal = 2 * beta / (alpha + 2 * beta)
    assert sp.simplify(scaling.cost_ratio_at_optimum.subs(scaling.u, u_equal) - 1) == 0


@given(st.floats(0.05, 3), st.floats(0.05, 3), st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_heuristic_penalty_free_of_a_and_b_and_at_least_one(p_, q_, a_, b_):
    f = sp.lambdify(x, scaling.heuristic_f.subs({a: a_, b: b_, p: p_, q: q_}))
    x_min = float(scaling.heuristic_x_min.subs({a: a_, b: b_, p: p_, q: q_}))
    x_eq = float(scaling.heuristic_x_equal.subs({a: a_, b: b_, p: p_, q: q_}))
    grid = x_min * np.exp(np.linspace(-3, 3, 20001))
    assert f(grid).min() >= f(x_min) * (1 - 1e-9)
    assert f(x_eq) / f(x_min) == pytest.approx(scaling.heuristic_penalty(p_, q_), rel=1e-9)
    assert scaling.heuristic_penalty(p_, q_) >= 1 - 1e-12


@given(st.floats(0.05, 3), st.floats(0.05, 3), st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_heuristic_place_against_a_bisection_whatever_a_and_b(p_, q_, a_, b_):
    # The minimum by bisection on df/dlog x = p a x^p - q b x^-q (a grid's argmin is too coarse where
    # the minimum is flat), the equal-terms point by hand: a x^p = b x^-q.
    lo, hi = -200.0, 200.0  # the derivative rises with log x: bisect its sign change
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_ * a_ * np.exp(p_ * mid) < q_ * b_ * np.exp(-q_ * mid) else (lo, mid)
    log_x_min = (lo + hi) / 2
    x_eq = (b_ / a_) ** (1 / (p_ + q_))
    assert scaling.heuristic_place(p_, q_) == pytest.approx(x_eq / np.exp(log_x_min), rel=1e-9)


def test_heuristic_place_at_chinchilla_exponents():
    # Hoffmann et al.'s alpha = 0.3392, beta = 0.2849 by hand: (beta/alpha)^(1/(alpha+beta)) = 0.7561.
    assert scaling.heuristic_place(0.2849, 0.3392) == pytest.approx((0.2849 / 0.3392) ** (1 / 0.6241), rel=1e-12)
    assert scaling.heuristic_place(0.2849, 0.3392) == pytest.approx(0.7561, abs=1e-4)
    assert scaling.heuristic_place(1.0, 1.0) == 1.0


# --- closed forms against brute force -----------------------------------------------------------
@pytest.mark.parametrize("fit", FIT_NAMES)
@pytest.mark.parametrize("budget", [1e19, 5.76e23, 1e27])
def test_compute_optimal_against_a_dense_grid_on_the_iso_flop_line(fit, budget):
    n = np.exp(np.linspace(np.log(1e6), np.log(1e15), 400_001))
    best = n[np.argmin(_loss(n, budget / (6 * n), fit))]
    n_star, d_star = scaling.compute_optimal(budget, fit)
    assert n_star == pytest.approx(best, rel=1e-3)
    assert 6 * n_star * d_star == pytest.approx(budget, rel=1e-12)


@pytest.mark.parametrize("fit", FIT_NAMES)
def test_optimal_tokens_inverts_the_frontier(fit):
    n, d = scaling.compute_optimal(np.array([1e20, 1e23, 1e26]), fit)
    np.testing.assert_allclose(scaling.optimal_tokens(n, fit), d, rtol=1e-9)


@pytest.mark.parametrize("fit", FIT_NAMES)
def test_loss_optimal_is_the_frontier_seen_from_the_loss(fit):
    n, d = scaling.compute_optimal(2e24, fit)
    n2, d2 = scaling.loss_optimal(_loss(n, d, fit), fit)
    assert (n2, d2) == (pytest.approx(n, rel=1e-9), pytest.approx(d, rel=1e-9))


def _brute_lifetime(target, per_param, fit):
    """Minimise 6 N D(N) + K N over a dense grid of N, with D solved from the loss by hand."""
    e0, a_, b0, al, be = _constants(fit)
    n_min = (a_ / (target - e0))**(1 / al)
    n = n_min * np.exp(np.linspace(1e-6, 12, 600_001))
    d = (b0 / (target - e0 - a_ / n**al))**(1 / be)
    cost = 6 * n * d + per_param * n
    i = np.argmin(cost)
    return n[i], d[i], cost[i]


@pytest.mark.parametrize("fit", FIT_NAMES)
@pytest.mark.parametrize("target, inference", [(2.05, 1e11), (2.0, 2e12), (1.95, 1e15)])
def test_lifetime_optimum_against_brute_force(fit, target, inference):
    n, d, total = scaling.lifetime_optimal(target, inference, fit)
    bn, bd, btotal = _brute_lifetime(target, 2 * inference, fit)
    assert total == pytest.approx(btotal, rel=1e-6)
    assert total <= btotal * (1 + 1e-9)
    assert n == pytest.approx(bn, rel=2e-3)
    assert _loss(n, d, fit) == pytest.approx(target, rel=1e-12)


def test_lifetime_with_rl_and_efficiencies_against_brute_force():
    kw = dict(inference_efficiency=0.3, rl_tokens=3e12, rl_flops_per_param_token=4, rl_efficiency=0.5)
    n, d, total = scaling.lifetime_optimal(2.0, 5e12, "epoch", **kw)
    per_param = 2 * 5e12 / 0.3 + 4 * 3e12 / 0.5
    bn, bd, btotal = _brute_lifetime(2.0, per_param, "epoch")
    assert total == pytest.approx(btotal, rel=1e-6)
    assert n == pytest.approx(bn, rel=2e-3)
    costs = scaling.lifetime_flops(n, d, 5e12, **kw)
    assert costs.total == pytest.approx(total, rel=1e-12)
    assert costs.inference == pytest.approx(2 * n * 5e12 / 0.3, rel=1e-12)
    assert costs.rl == pytest.approx(4 * n * 3e12 / 0.5, rel=1e-12)


def test_lifetime_cost_ratio_matches_the_closed_form():
    n, d, _ = scaling.lifetime_optimal(2.0, 1e13)
    costs = scaling.lifetime_flops(n, d, 1e13)
    f = FITS["hoffmann"]
    share = f.A / n**f.alpha / (2.0 - f.E0)
    predicted = float(scaling.cost_ratio_at_optimum.subs({alpha: f.alpha, beta: f.beta, scaling.u: share}))
    assert (costs.rl + costs.inference) / costs.pretraining == pytest.approx(predicted, rel=1e-6)


def test_lifetime_optimal_broadcasts():
    n, d, total = scaling.lifetime_optimal(np.array([2.0, 2.1]), np.array([[1e11], [1e14]]))
    assert n.shape == (2, 2)
    for i, inf in enumerate([1e11, 1e14]):
        for j, tgt in enumerate([2.0, 2.1]):
            assert n[i, j] == pytest.approx(scaling.lifetime_optimal(tgt, inf)[0], rel=1e-12)


@given(st.floats(1.9, 3.0), st.floats(1e9, 1e16), st.floats(1.5, 100))
def test_more_inference_means_a_smaller_longer_trained_model(target, inference, factor):
    n1, d1, _ = scaling.lifetime_optimal(target, inference)
    n2, d2, _ = scaling.lifetime_optimal(target, inference * factor)
    assert n2 < n1 and d2 > d1
    # Never below Chinchilla's D/N at the same loss.
    nc, dc = scaling.loss_optimal(target)
    assert d1 / n1 >= dc / nc * (1 - 1e-9)


@given(st.floats(1e6, 1e13), st.floats(1e8, 1e15))
@scaling.extrapolating()  # doubling the envelope's largest D steps past it, on purpose
def test_loss_falls_with_n_and_d(n, d):
    assert scaling.loss(n * 2, d) < scaling.loss(n, d)
    assert scaling.loss(n, d * 2) < scaling.loss(n, d)
    assert scaling.loss(n, d) > FITS["hoffmann"].E0


def test_loss_is_vectorised():
    out = scaling.loss(np.array([1e9, 1e10]), np.array([2e10, 2e11]), "epoch")
    np.testing.assert_allclose(out, [_loss(1e9, 2e10, "epoch"), _loss(1e10, 2e11, "epoch")], rtol=1e-14)


def test_token_split_solves_equal_costs():
    d_pre = 1e13
    ratio_rl, ratio_inf = scaling.token_split(4, 2.5, 5)
    # 6 D_pre = kappa rho_RL D_RL = 2 rho_inf D_inf
    assert 6 * d_pre == pytest.approx(4 * 2.5 * d_pre / ratio_rl)
    assert 6 * d_pre == pytest.approx(2 * 5 * d_pre / ratio_inf)


def test_catalog_overtraining_uses_active_parameters():
    rows = {r.model: r for r in scaling.catalog_overtraining()}
    v3 = rows["deepseek-v3"]
    assert v3.tokens_per_param == pytest.approx(14.8e12 / v3.active_params)
    assert v3.active_params < v3.total_params
    assert "mixtral-8x7b" not in rows  # no reported training tokens


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("call, param", [
    (lambda: scaling.loss(0, 1e12), "N"),
    (lambda: scaling.loss(1e9, -1), "D"),
    (lambda: scaling.loss(1e9, 1e12, fit="kaplan"), "fit"),
    (lambda: scaling.compute_optimal(0), "C"),
    (lambda: scaling.compute_optimal(1e24, fit="chinchila"), "fit"),
    (lambda: scaling.optimal_tokens(-5), "N"),
    (lambda: scaling.loss_optimal(1.5), "target_loss"),
    (lambda: scaling.lifetime_optimal(1.6934, 1e12), "target_loss"),
    (lambda: scaling.lifetime_optimal(1.8, 1e12, fit="epoch"), "target_loss"),
    (lambda: scaling.lifetime_optimal(2.0, 0), "inference_tokens"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, inference_efficiency=0), "inference_efficiency"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, inference_efficiency=1.5), "inference_efficiency"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, rl_tokens=-1), "rl_tokens"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, rl_flops_per_param_token=11), "rl_flops_per_param_token"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, rl_efficiency=-0.1), "rl_efficiency"),
    (lambda: scaling.lifetime_optimal(2.0, 1e12, fit="nope"), "fit"),
    (lambda: scaling.lifetime_flops(0, 1e12, 1e12), "N"),
    (lambda: scaling.lifetime_flops(1e9, 0, 1e12), "D_pre"),
    (lambda: scaling.token_split(rl_flops_per_param_token=1), "rl_flops_per_param_token"),
    (lambda: scaling.token_split(rl_inefficiency=0.5), "rl_inefficiency"),
    (lambda: scaling.token_split(inference_inefficiency=-3), "inference_inefficiency"),
    (lambda: scaling.served_tokens(0, 60), "tokens_per_second"),
    (lambda: scaling.served_tokens(5e7, float("nan")), "days"),
    (lambda: scaling.overtraining_ratio(1e11, 1e13, tokens_per_param=0), "tokens_per_param"),
    (lambda: scaling.heuristic_penalty(0, 1), "p_rise"),
    (lambda: scaling.heuristic_place(1, -1), "q_fall"),
    (lambda: scaling.catalog_overtraining(fit="x"), "fit"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError, match=rf"\b{param}\b"):
        call()


def test_unknown_fit_lists_the_known_ones():
    with pytest.raises(ChalkError) as err:
        scaling.loss(1e9, 1e12, fit="kaplan")
    for name in FIT_NAMES:
        assert name in str(err.value)


def test_target_loss_error_gives_the_irreducible_loss():
    with pytest.raises(ChalkError, match="1.8172"):
        scaling.lifetime_optimal(1.8, 1e12, fit="epoch")


def test_structured_rl_cost_counts_each_pass():
    # One rollout token at decode efficiency 1/4: generation 2 * 4 = 8; half the tokens trained on,
    # each 6 + 2 * 2 (two extra forward passes) = 10, so 5 per rollout token: 13 in all.
    assert scaling.rl_flops_per_rollout_token(0.25, 0.5, 2) == pytest.approx(13)
    # Generation alone at training efficiency is the lecture's lower end, kappa = 2.
    assert scaling.rl_flops_per_rollout_token(1, 0, 0) == pytest.approx(scaling.KAPPA_RANGE[0])
    # Generated and trained on every rollout with one extra forward, all at training efficiency:
    # 2 + 6 + 2 = 10, the upper end chalk accepts.
    assert scaling.rl_flops_per_rollout_token(1, 1, 1) == pytest.approx(scaling.KAPPA_RANGE[1])


@pytest.mark.parametrize("kwargs, param", [
    (dict(decode_efficiency=0, trained_fraction=0.5), "decode_efficiency"),
    (dict(decode_efficiency=0.3, trained_fraction=1.5), "trained_fraction"),
    (dict(decode_efficiency=0.3, trained_fraction=0.5, extra_forward_passes=-1), "extra_forward_passes"),
])
def test_structured_rl_cost_names_bad_input(kwargs, param):
    with pytest.raises(ChalkError, match=rf"\b{param}\b"):
        scaling.rl_flops_per_rollout_token(**kwargs)


# --- every optimum says which fit it came from ------------------------------------------------------
@pytest.mark.parametrize("fit, paper", [("hoffmann", "Hoffmann et al. 2022, Approach 3"),
                                        ("epoch", "Besiroglu et al. 2024 (Epoch AI)")])
def test_every_optimum_names_its_fit(fit, paper):
    optima = {"compute_optimal": scaling.compute_optimal(5.76e23, fit),
              "loss_optimal": scaling.loss_optimal(2.0, fit),
              "lifetime_optimal": scaling.lifetime_optimal(2.0, 1e14, fit)}
    for name, opt in optima.items():
        assert paper in repr(opt), name
        assert opt.fit is FITS[fit]
        other = "epoch" if fit == "hoffmann" else "hoffmann"
        assert FITS[other].display not in repr(opt)
    # Still the tuples they were: unpacked, indexed and compared as before, each number also by name.
    n, d = optima["compute_optimal"]
    assert (optima["compute_optimal"].N, optima["compute_optimal"].D) == (n, d) == tuple(optima["compute_optimal"])
    assert 6 * n * d == pytest.approx(5.76e23)
    n, d_pre, total = optima["lifetime_optimal"]
    assert optima["lifetime_optimal"].total == total and optima["lifetime_optimal"][1] == d_pre
    with pytest.raises(AttributeError):
        optima["loss_optimal"].D_pre
    import copy
    import pickle
    for opt in optima.values():
        for again in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
            assert again == opt and again.fit == opt.fit and repr(again) == repr(opt)
    rows = scaling.catalog_overtraining(fit)
    assert rows and all(paper in r.fit for r in rows)


# --- extrapolating on purpose ----------------------------------------------------------------------
def test_a_lone_call_past_the_fit_warns_and_a_declared_sweep_does_not():
    import warnings
    from chalk.errors import ChalkWarning
    with pytest.warns(RangeWarning, match="extrapolation"):
        scaling.loss(1e9, 1e17)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChalkWarning)
        with scaling.extrapolating():
            scaling.loss(np.array([1e9, 1e15]), 1e17)
            scaling.compute_optimal(1e31)
            scaling.optimal_tokens(1e16)
    with pytest.warns(RangeWarning):  # the declaration ends with its block
        scaling.compute_optimal(1e31)


def test_chapter_5_figures_cards_and_explorer_raise_no_chalk_warning():
    """Chapter 5's own sweeps run past the fits' data on purpose (the plane to 1e17 tokens) and say
    so: drawing every figure, card value and explorer view emits no ChalkWarning."""
    import warnings
    from chalk.errors import ChalkWarning
    from chalk.figures import overtraining
    from chalk.teaching.cards import ch05_overtraining as cards
    for cached in (overtraining.loss_grid, overtraining.contour, overtraining.curves):
        cached.cache_clear()  # computed afresh here, not served from an earlier test's cache
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChalkWarning)
        explorer = overtraining.Explorer()
        explorer.update(fit="epoch", target_loss=2.1)
        for fit in overtraining.SHOWN_FITS:
            overtraining.scenario_figure(fit)
            overtraining.catalog_figure(fit)
            overtraining.lecture_lifetime(fit)
        overtraining.heuristic_figure()
        overtraining.twin_data()
        for value in cards.VALUES.values():
            value()
        for figure in cards.FIGURES.values():
            figure()
    with pytest.warns(RangeWarning, match="extrapolation"):  # the same plane's corner, asked for alone
        scaling.loss(overtraining.N_RANGE[0], overtraining.D_RANGE[1])


# --- served tokens by kind, and lifetime shares other than thirds -------------------------------
def test_served_mix_weights_each_kind_by_its_flops():
    # DeepSeek's published day (2025-02-28): 608 B input tokens, 342 B of them cache hits, 168 B
    # output. Uncached prompts at training's rate (1), hits free (0), outputs at decode's 3:
    # (266 + 3 x 168) / 776 = 0.9923.
    mix = scaling.served_mix(608e9, 342e9, 168e9, 3.0)
    assert mix.tokens == pytest.approx(776e9)
    assert mix.inefficiency == pytest.approx((266e9 + 3 * 168e9) / 776e9, rel=1e-12)
    # Everything charged at decode's rate is the lecture's single eta.
    assert scaling.served_mix(608e9, 342e9, 168e9, 3.0, 3.0, 3.0).inefficiency == pytest.approx(3.0)
    # The thirds with that mix: 6 D_pre = 2 x 0.9923 D_inf, a third of the lecture's D_pre = D_inf.
    assert scaling.token_split(inference_inefficiency=mix.inefficiency)[1] == pytest.approx(0.9923 / 3, rel=1e-4)


def test_fifty_fifty_shares_halve_the_pretraining_tokens():
    # Dwarkesh's split: pre-training and RL a quarter each, inference a half. 6 D_pre = (2 x 3 D_inf) / 2
    # gives D_pre = D_inf / 2; 6 D_pre = 3 x 3 D_RL still gives D_pre = 1.5 D_RL (equal shares).
    assert scaling.token_split(shares=(1, 1, 2)) == (pytest.approx(1.5), pytest.approx(0.5))
    assert scaling.token_split(shares=(2, 1, 1)) == (pytest.approx(3.0), pytest.approx(2.0))


def test_exponential_case_is_exact():
    # The lecture's a e^x + b e^-x: at the minimum a e^x = b e^-x.
    assert scaling.heuristic_exp_term_ratio == 1


@pytest.mark.parametrize("call, param", [
    (lambda: scaling.served_mix(100, 150, 10), "cached_tokens"),
    (lambda: scaling.served_mix(100, -1, 10), "cached_tokens"),
    (lambda: scaling.served_mix(0, 0, 10), "input_tokens"),
    (lambda: scaling.served_mix(100, 10, 10, decode_inefficiency=0), "decode_inefficiency"),
    (lambda: scaling.token_split(shares=(1, 0, 1)), "shares"),
    (lambda: scaling.token_split(shares=(1, 1)), "shares"),
])
def test_served_mix_and_shares_name_bad_input(call, param):
    with pytest.raises(ChalkError, match=rf"\b{param}\b"):
        call()
