"""Chapter 5 (over-training): the numbers its flashcards quote and the figures they show.

Every number is computed from ``chalk.scaling`` and the chapter's figures module, as the chapter's
are; none is an answer of the problem set, whose scenarios differ.
"""
from collections.abc import Callable

from functools import cache

from ... import scaling
from ...catalog import operators
from ...catalog.overtraining import LECTURE
from ...figures import overtraining
from ...notation import D, N_act, eta_RL, kappa
from ...operator import DEEPSEEK

GOPHER_BUDGET = overtraining.GOPHER_BUDGET


def _per_param_token(expr) -> float:
    return float(expr.subs({N_act: 1, D: 1}))


def _tpp(fit: str) -> float:
    n, d = scaling.compute_optimal(GOPHER_BUDGET, fit)
    return d / n


def _row(model: str):
    return next(r for r in scaling.catalog_overtraining() if r.model == model)


def _lecture_ratio(tokens) -> float:
    return scaling.overtraining_ratio(LECTURE["active_params"], tokens)


@cache
def _life(fit: str) -> dict:
    """The chapter's lifetime optimum: the lecture's own model's loss as the target."""
    return overtraining.lecture_lifetime(fit)


def _life_ratio(fit: str) -> float:
    return scaling.overtraining_ratio(_life(fit)["N"], _life(fit)["D_pre"])


def _mix() -> scaling.ServedMix:
    op = operators.get(DEEPSEEK)
    return scaling.served_mix(op.input_tokens, op.input_tokens_cache_hit, op.output_tokens,
                              LECTURE["inference_inefficiency"])


_FIT = {f: scaling.get_fit(f) for f in ("hoffmann", "epoch")}


def _place() -> float:
    """The equal-terms model over the compute-optimal one on Hoffmann's iso-FLOP line."""
    return scaling.heuristic_place(_FIT["hoffmann"].beta, _FIT["hoffmann"].alpha)

VALUES: dict[str, Callable[[], str]] = {
    "ot_fwd": lambda: f"{_per_param_token(scaling.forward_flops):g}",
    "ot_bwd": lambda: f"{_per_param_token(scaling.backward_flops):g}",
    "ot_train": lambda: f"{_per_param_token(scaling.pretraining_flops):g}",
    "ot_hoff_alpha": lambda: f"{_FIT['hoffmann'].alpha:g}",
    "ot_hoff_beta": lambda: f"{_FIT['hoffmann'].beta:g}",
    "ot_hoff_e0": lambda: f"{_FIT['hoffmann'].E0:g}",
    "ot_epoch_alpha": lambda: f"{_FIT['epoch'].alpha:g}",
    "ot_epoch_beta": lambda: f"{_FIT['epoch'].beta:g}",
    "ot_gopher_budget": lambda: overtraining.power10(GOPHER_BUDGET, 3),
    "ot_gopher_tpp_hoff": lambda: f"{_tpp('hoffmann'):.0f}",
    "ot_gopher_tpp_epoch": lambda: f"{_tpp('epoch'):.0f}",
    "ot_penalty_13": lambda: f"{100 * (scaling.heuristic_penalty(1, 3) - 1):.0f}",
    "ot_penalty_chin": lambda: f"{100 * (scaling.heuristic_penalty(_FIT['hoffmann'].beta, _FIT['hoffmann'].alpha) - 1):.2f}",
    "ot_place_n": lambda: f"{100 * (1 - _place()):.0f}",
    "ot_place_tpp": lambda: f"{_place() ** -2:.2f}",
    "ot_split_rl": lambda: f"{scaling.token_split()[0]:g}",
    "ot_split_inf": lambda: f"{scaling.token_split()[1]:g}",
    "ot_board_split": lambda: f"{float(scaling.split_rl.subs({kappa: LECTURE['rl_flops_per_param_token'], eta_RL: LECTURE['rl_inefficiency']})):.2g}",
    "ot_kappa": lambda: f"{LECTURE['rl_flops_per_param_token']:g}",
    "ot_ineff": lambda: f"{LECTURE['rl_inefficiency']:g}",
    "ot_tps": lambda: f"{LECTURE['tokens_per_second_all_models'] / LECTURE['models_per_family'] / 1e6:.0f}",
    "ot_days": lambda: f"{LECTURE['days_live']:.0f}",
    "ot_d_inf": lambda: overtraining.power10(overtraining.LECTURE_INFERENCE),
    "ot_n_lecture": lambda: f"{LECTURE['active_params'] / 1e9:.0f}",
    "ot_rule_tokens": lambda: f"{LECTURE['tokens_per_param'] * LECTURE['active_params'] / 1e12:.0f}",
    "ot_lecture_ratio": lambda: f"{_lecture_ratio(overtraining.LECTURE_INFERENCE):.0f}",
    "ot_rumour": lambda: f"{LECTURE['rumoured_pretraining_tokens'] / 1e12:.0f}",
    "ot_rumour_ratio": lambda: f"{_lecture_ratio(LECTURE['rumoured_pretraining_tokens']):.0f}",
    "ot_llama8_tpp": lambda: f"{_row('llama-3-8b').tokens_per_param:,.0f}",
    "ot_llama8_tokens": lambda: f"{_row('llama-3-8b').tokens / 1e12:.0f}",
    "ot_ds_tpp_active": lambda: f"{_row('deepseek-v3').tokens_per_param:.0f}",
    "ot_ds_tpp_total": lambda: f"{_row('deepseek-v3').tokens / _row('deepseek-v3').total_params:.0f}",
    "ot_llama8_rule": lambda: f"{_row('llama-3-8b').vs_rule:.0f}",
    "ot_kappa_hi": lambda: f"{scaling.KAPPA_RANGE[1]:.0f}",
    "ot_life_excess_h": lambda: f"{100 * (_life('hoffmann')['life_ref'].total / _life('hoffmann')['life'].total - 1):.1f}",
    "ot_life_n_h": lambda: f"{_life('hoffmann')['N'] / 1e9:.0f}",
    "ot_life_d_h": lambda: f"{_life('hoffmann')['D_pre'] / 1e12:.0f}",
    "ot_life_ratio_e": lambda: f"{_life_ratio('epoch'):.0f}",
    "ot_life_ratio_h": lambda: f"{_life_ratio('hoffmann'):.0f}",
    "ot_mix_ineff": lambda: f"{_mix().inefficiency:.2f}",
    "ot_mix_ratio": lambda: f"{overtraining.lecture_tokens(inference_inefficiency=_mix().inefficiency)['ratio']:.0f}",
    "ot_fifty_ratio": lambda: f"{overtraining.lecture_tokens(shares=(1, 1, 2))['ratio']:.0f}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""


FIGURES: dict[str, Callable] = {
    "ot_heuristic": lambda: overtraining.heuristic_figure(((1.0, 3.0),), width=4.6, height=3.2),
    "ot_catalog": lambda: overtraining.catalog_figure(width=5.8, height=3.9),
}
"""Figures a card may name: the equal-cost picture and the catalog's tokens per parameter."""
