"""Chapter 5: training far past Chinchilla once RL and inference are paid for.

Three pieces, each a SymPy expression first and a NumPy function lambdified from it:

* the Chinchilla loss ``L(N, D) = E0 + A/N^alpha + B0/D^beta`` and its compute-optimal frontier at
  ``C = 6 N D`` (the fits' constants live in ``catalog/data/overtraining.toml``);
* the equal-cost heuristic and its exact form: the minimum of ``a x^p + b x^-q`` has its terms in
  ratio ``q/p``;
* the lifetime cost ``6 N D_pre + kappa N D_RL / eta_RL + 2 N D_inf / eta_inf`` minimised at a fixed
  loss (Sardana et al. 2024), and the lecture's "thirds" solution (or any other shares, such as
  Dwarkesh's 50/50), with served tokens split into prefill, cache hits and decode (``served_mix``).

``N`` is always the active parameter count: for an MoE, applying a dense fit to it is an assumption
(the lecture's own), not a result.
"""
import contextvars
import warnings
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import sympy as sp

from .catalog import models
from .catalog.overtraining import FITS, LECTURE, Fit
from .errors import ChalkError, RangeWarning, in_range, lookup, non_negative, positive
from .lazy import Lazy
from .notation import (A, B_0, C_train, D, D_RL, D_inf, E_0, N_act, a, alpha, b, beta, eta_RL, eta_inf,
                       ell, kappa, p, q, u, x)

SECONDS_PER_DAY = 86_400

# Every solved, differentiated, simplified and lambdified form is built on first use
# (``chalk.lazy``): together they cost the module seconds of import, the slowest of the chapters.
_derived = Lazy(__name__)

# --- where 6ND comes from ---------------------------------------------------------------------
forward_flops = 2 * N_act
"""Forward FLOPs per token: one multiply and one add per active weight."""
backward_flops = 2 * forward_flops
"""Backward FLOPs per token: gradients with respect to activations and to weights, each a forward's worth."""
pretraining_flops = models.TRAINING_FLOPS
"""6 N D: (forward + backward) FLOPs per token, times the pre-training tokens."""

def _tidy(expr):
    """Gather powers (every symbol is positive): G (C/6)^a rather than a nest of roots."""
    return sp.powsimp(sp.powdenest(sp.expand_power_base(expr, force=True), force=True), force=True)


# --- the equal-cost heuristic and its exact form -------------------------------------------------
heuristic_f = a * x**p + b * x**-q
"""A rising cost plus a falling one; the lecture's a x + b/x is p = q = 1."""


@_derived
def _heuristic_x_min():
    return sp.solve(sp.diff(heuristic_f, x), x)[0]


@_derived
def _heuristic_term_ratio():
    """Rising term over falling term at the minimum: q/p, so "equal costs" is exact only when p = q."""
    return sp.simplify((a * x**p / (b * x**-q)).subs(x, _heuristic_x_min()))


heuristic_exp_f = a * sp.exp(x) + b * sp.exp(-x)
"""The lecture's other exact case: y = e^x turns it into a y + b/y, so p = q = 1."""


@_derived
def _heuristic_exp_term_ratio():
    """Rising over falling term at the minimum of a e^x + b e^-x: exactly 1."""
    x_min = sp.solve(sp.diff(heuristic_exp_f, x), x)[0]
    return sp.simplify((a * sp.exp(x) / (b * sp.exp(-x))).subs(x, x_min))


@_derived
def _heuristic_x_equal():
    return sp.solve(sp.Eq(a * x**p, b * x**-q), x)[0]


@_derived
def _heuristic_penalty_expr():
    """f at the equal-cost guess over the true minimum: 2 p^(p/(p+q)) q^(q/(p+q)) / (p + q), a weighted
    geometric mean over the arithmetic mean of p and q, so never below 1 and free of a and b."""
    return sp.simplify(_tidy(heuristic_f.subs(x, _heuristic_x_equal()) / heuristic_f.subs(x, _heuristic_x_min())))


# --- the Chinchilla loss and its compute-optimal frontier -----------------------------------------
parameter_term = A / N_act**alpha
data_term = B_0 / D**beta
loss_expr = E_0 + parameter_term + data_term
"""Hoffmann et al. (2022) eq. (2): irreducible loss + finite-model term + finite-data term."""

# On the iso-FLOP line D = C/(6N) the data term rises with N as B0 (6/C)^beta N^beta and the
# parameter term falls as A N^-alpha: the heuristic's f with x = N, p = beta, q = alpha
# (tests/test_scaling.py checks the substitution).
_ISO_FLOP = {a: B_0 * (6 / C_train)**beta, p: beta, b: A, q: alpha}


@_derived
def _n_star():
    """N*(C): the parameter count minimising the loss on the iso-FLOP line 6 N D = C."""
    return _tidy(_heuristic_x_min().subs(_ISO_FLOP))


@_derived
def _d_star():
    """D*(C) = C / (6 N*)."""
    return _tidy(C_train / (6 * _n_star()))


@_derived
def _tokens_per_param_star():
    """D*/N* on the frontier: constant only when alpha = beta."""
    return _tidy(_d_star() / _n_star())


@_derived
def _frontier_term_ratio():
    """Data term over parameter term on the frontier: alpha/beta."""
    return _heuristic_term_ratio().subs(_ISO_FLOP)


@_derived
def _frontier_tokens():
    """D on the frontier for a model of N parameters: the tokens that make N compute-optimal."""
    return sp.solve(sp.Eq(data_term, _frontier_term_ratio() * parameter_term), D)[0]


# --- a fixed loss, parametrised by how the reducible loss is shared ------------------------------
# u is the parameter term's share of ell - E0, so N and D follow from u alone and every point of the
# curve L(N, D) = ell is one u in (0, 1). v stands for 1 - u, kept apart so that u near 1 keeps its
# precision when NumPy evaluates it.
v = sp.Symbol("v", positive=True)
n_of_u = (A / (u * (ell - E_0)))**(1 / alpha)
d_of_u = (B_0 / (v * (ell - E_0)))**(1 / beta)


@_derived
def _u_compute_optimal():
    """The share beta/(alpha + beta) on the frontier, which also minimises 6 N D at a fixed loss."""
    return sp.simplify(1 / (1 + _frontier_term_ratio()))


rl_flops = kappa * N_act * D_RL / eta_RL
"""RL as the lecture writes it: kappa FLOPs per parameter per rollout token, all at the efficiency
eta_RL. A simplification: see ``rl_flops_structured``."""

eta_dec = sp.Symbol(r"\eta_\text{dec}", positive=True)
"""Efficiency of rollout generation in the inference engine, relative to pre-training's."""
trained_fraction = sp.Symbol("f", nonnegative=True)
"""Fraction of the rollout tokens the trainer learns from."""
extra_forwards = sp.Symbol("r", nonnegative=True)
"""Extra forward passes per trained token (reference model, old-policy log-probs)."""
rl_flops_structured = N_act * D_RL * (forward_flops / N_act / eta_dec
                                      + trained_fraction * (pretraining_flops / (N_act * D)
                                                            + extra_forwards * forward_flops / N_act))
"""RL as real stacks run it: every rollout token generated at decode efficiency (2/eta_dec), and the
trained fraction f costing forward + backward (6) plus r extra forward passes (2 each) at training
efficiency: 8 to 10 FLOPs per parameter per trained token for r = 1 or 2."""


@_derived
def _rl_kappa_over_eta():
    """The structured form's FLOPs per parameter per rollout token: what the lecture's kappa/eta_RL stands for."""
    return sp.simplify(rl_flops_structured / (N_act * D_RL))


KAPPA_RANGE = (2, 10)
"""kappa from generation alone (2) to generating and training on every rollout with one extra forward pass (2 + 6 + 2)."""
inference_flops = forward_flops * D_inf / eta_inf
"""Serving: a forward pass per token, at a lower efficiency than training (decode is memory bound)."""
lifetime_flops_expr = pretraining_flops + rl_flops + inference_flops

_K = sp.Symbol("K", positive=True)
"""RL + inference FLOPs per parameter: they cost K N whatever D_pre is."""
_linear_in_n = sp.expand((rl_flops + inference_flops) / N_act)
"""FLOPs per parameter that do not depend on D_pre: the RL and inference terms."""
_cost_of_u = (pretraining_flops + _K * N_act).subs({N_act: n_of_u, D: d_of_u})


@_derived
def __slope():
    """d cost / du along the curve (v = 1 - u): linear in K, zero at the optimum."""
    return sp.diff(_cost_of_u, u) - sp.diff(_cost_of_u, v)


@_derived
def _per_param_cost_at_optimum():
    """The RL + inference FLOPs per parameter (K) for which the share u is the lifetime optimum."""
    slope = __slope()
    return sp.simplify(-slope.subs(_K, 0) / sp.diff(slope, _K))


@_derived
def _cost_ratio_at_optimum():
    """(RL + inference FLOPs) / pre-training FLOPs at the lifetime optimum: alpha u/(beta (1-u)) - 1."""
    return sp.simplify((_per_param_cost_at_optimum() * N_act / pretraining_flops)
                       .subs({N_act: n_of_u, D: d_of_u}).subs(v, 1 - u))


# --- the lecture's thirds ------------------------------------------------------------------------
@_derived
def __equal():
    return sp.solve([sp.Eq(pretraining_flops, rl_flops), sp.Eq(pretraining_flops, inference_flops)],
                    [D_RL, D_inf], dict=True)[0]


s_pre, s_RL, s_inf = sp.symbols(r"s_\text{pre} s_\text{RL} s_\text{inf}", positive=True)
"""Shares of the lifetime compute: the thirds are 1 : 1 : 1, Dwarkesh's 50/50 is 1 : 1 : 2."""


@_derived
def __shared():
    return sp.solve([sp.Eq(pretraining_flops / s_pre, rl_flops / s_RL),
                     sp.Eq(pretraining_flops / s_pre, inference_flops / s_inf)], [D_RL, D_inf], dict=True)[0]


@_derived
def _split_rl_shares():
    """D_pre/D_RL when pre-training and RL cost in the ratio s_pre : s_RL."""
    return sp.simplify(D / __shared()[D_RL])


@_derived
def _split_inf_shares():
    """D_pre/D_inf when pre-training and inference cost in the ratio s_pre : s_inf."""
    return sp.simplify(D / __shared()[D_inf])


@_derived
def _split_rl():
    """D_pre/D_RL when pre-training and RL cost the same: kappa / (6 eta_RL)."""
    return sp.simplify(D / __equal()[D_RL])


@_derived
def _split_inf():
    """D_pre/D_inf when pre-training and inference cost the same: 1 / (3 eta_inf)."""
    return sp.simplify(D / __equal()[D_inf])


# --- numeric functions --------------------------------------------------------------------------
# Private numeric forms, registered like the expressions (``__x`` serves the module's ``_x``), read
# from ``scaling_numeric`` (``numeric_forms``): plain Python, so that a kernel solves nothing.
_FIT_ARGS = (E_0, A, B_0, alpha, beta)


@_derived
def __loss():
    return _numeric().loss


@_derived
def __n_star_numeric():
    return _numeric().n_star


@_derived
def __frontier_tokens_numeric():
    return _numeric().frontier_tokens


@_derived
def __n_of_u():
    return _numeric().n_of_u


@_derived
def __d_of_u():
    return _numeric().d_of_u


@_derived
def __per_param():
    return _numeric().per_param


@_derived
def __penalty():
    return _numeric().penalty


@_derived
def __place():
    return _numeric().place


FIT_ENVELOPE = {"N": (1e6, 1e14), "D": (1e8, 1e15), "C": (1e15, 1e30)}
"""Parameters, tokens and FLOPs within a few orders of magnitude of the data every catalog fit was
made on (Hoffmann et al.: 70M to 16B parameters, 5B to 500B tokens). Outside it a fit's number is
an extrapolation far past its data, and the functions say so with a RangeWarning."""


_EXTRAPOLATING = contextvars.ContextVar("extrapolating", default=False)


@contextmanager
def extrapolating():
    """Within it (``with scaling.extrapolating():``, or as a decorator), numbers past
    ``FIT_ENVELOPE`` are asked for on purpose and carry no RangeWarning: a figure's plane or sweep
    that runs past every fit's data. A lone call outside it still warns."""
    token = _EXTRAPOLATING.set(True)
    try:
        yield
    finally:
        _EXTRAPOLATING.reset(token)


def _in_envelope(name: str, value, fit) -> None:
    if _EXTRAPOLATING.get():
        return
    low, high = FIT_ENVELOPE[name]
    arr = np.asarray(value, float)
    if np.any(arr < low) or np.any(arr > high):
        warnings.warn(RangeWarning(f"{name} = {value!r} is far outside what fit {get_fit(fit).name!r} was made for "
                                   f"({low:.0e} to {high:.0e}): the number is an extrapolation"), stacklevel=3)


def _scalar_or_array(value):
    return float(value) if np.ndim(value) == 0 else value


def get_fit(fit: str | Fit = "hoffmann") -> Fit:
    """The published fit called ``fit`` (``hoffmann``, ``hoffmann-rounded``, ``epoch``)."""
    if isinstance(fit, Fit):
        return fit
    return lookup("fit", fit, FITS, param="fit")


class Optimum(tuple):
    """An optimum as the tuple it has always been, ``(N, D)`` or ``(N, D_pre, total)``, that also
    says which fit it came from: each number by name (``opt.N``), the catalog fit as ``opt.fit``,
    and the fit's name in its repr."""

    def __new__(cls, fit, **values):
        self = super().__new__(cls, values.values())
        self.names, self.fit = tuple(values), get_fit(fit)
        return self

    def __getattr__(self, name):
        names = self.__dict__.get("names", ())
        if name not in names:
            raise AttributeError(name)
        return self[names.index(name)]

    def __getnewargs_ex__(self):  # copy and pickle rebuild it through __new__
        return (self.fit,), dict(zip(self.names, self))

    def __repr__(self):
        values = ", ".join(f"{k}={v!r}" for k, v in zip(self.names, self))
        return f"Optimum({values}; fit: {self.fit.display})"


def _constants(fit) -> tuple[float, ...]:
    f = get_fit(fit)
    return f.E0, f.A, f.B0, f.alpha, f.beta


def loss(N, D, fit: str = "hoffmann"):
    """Predicted pre-training loss in nats per token of a model of ``N`` parameters trained on
    ``D`` tokens (NumPy arrays broadcast)."""
    positive("N", N)
    positive("D", D)
    _in_envelope("N", N, fit)
    _in_envelope("D", D, fit)
    return _scalar_or_array(__loss()(np.asarray(N, float), np.asarray(D, float), *_constants(fit)))


def compute_optimal(C, fit: str = "hoffmann"):
    """(N, D) minimising the loss at a training budget of ``C`` FLOPs, with 6 N D = C: an ``Optimum``
    naming ``fit``."""
    positive("C", C)
    _in_envelope("C", C, fit)
    n = __n_star_numeric()(np.asarray(C, float), *_constants(fit))
    return Optimum(fit, N=_scalar_or_array(n), D=_scalar_or_array(np.asarray(C, float) / (6 * n)))


def optimal_tokens(N, fit: str = "hoffmann"):
    """Training tokens that put a model of ``N`` parameters on the fit's compute-optimal frontier."""
    positive("N", N)
    _in_envelope("N", N, fit)
    return _scalar_or_array(__frontier_tokens_numeric()(np.asarray(N, float), *_constants(fit)))


def _check_target(target_loss, fit) -> None:
    positive("target_loss", target_loss)
    f = get_fit(fit)
    if np.any(np.asarray(target_loss, float) <= f.E0):
        raise ChalkError(f"target_loss must be > {f.E0:g}, the irreducible loss E0 of fit {f.name!r} "
                         f"(no finite model reaches it), got {target_loss!r}")


def loss_optimal(target_loss, fit: str = "hoffmann"):
    """(N, D) reaching ``target_loss`` with the fewest training FLOPs: the frontier seen from the loss
    (an ``Optimum`` naming ``fit``)."""
    _check_target(target_loss, fit)
    c = _constants(fit)
    share = float(_numeric().u_compute_optimal(c[3], c[4]))
    target = np.asarray(target_loss, float)
    return Optimum(fit, N=_scalar_or_array(__n_of_u()(share, target, *c)),
                   D=_scalar_or_array(__d_of_u()(1 - share, target, *c)))


def _efficiency(name: str, value):
    positive(name, value)
    return in_range(name, value, 0, 1)


_LIFE_ARGS = (N_act, D, D_inf, eta_inf, D_RL, kappa, eta_RL)


@_derived
def __phases():
    return list(_numeric().phases.values())


@_derived
def __linear():
    return _numeric().linear



def _check_use(inference_tokens, inference_efficiency, rl_tokens, rl_flops_per_param_token, rl_efficiency):
    """Check the RL and inference inputs and return them as arrays, in ``_LIFE_ARGS`` order."""
    positive("inference_tokens", inference_tokens)
    _efficiency("inference_efficiency", inference_efficiency)
    non_negative("rl_tokens", rl_tokens)
    in_range("rl_flops_per_param_token", rl_flops_per_param_token, *KAPPA_RANGE)
    _efficiency("rl_efficiency", rl_efficiency)
    return tuple(np.asarray(v, float) for v in (inference_tokens, inference_efficiency, rl_tokens,
                                                 rl_flops_per_param_token, rl_efficiency))


class Lifetime(NamedTuple):
    """FLOPs over a model's life, split by phase."""
    pretraining: float
    rl: float
    inference: float

    @property
    def total(self):
        return self.pretraining + self.rl + self.inference


def lifetime_flops(N, D_pre, inference_tokens, inference_efficiency=1.0, *, rl_tokens=0.0,
                   rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"], rl_efficiency=1.0) -> Lifetime:
    """Pre-training, RL and inference FLOPs of a model of ``N`` active parameters: 6 N D_pre,
    kappa N D_RL / eta_RL and 2 N D_inf / eta_inf. Efficiencies are relative to pre-training's."""
    positive("N", N)
    positive("D_pre", D_pre)
    use = _check_use(inference_tokens, inference_efficiency, rl_tokens, rl_flops_per_param_token, rl_efficiency)
    args = (np.asarray(N, float), np.asarray(D_pre, float)) + use
    return Lifetime(*(_scalar_or_array(phase(*args) * np.ones(np.broadcast(*args).shape)) for phase in __phases()))


def _bisect(f, lo, hi, steps: int = 100):
    """The root of ``f``, increasing from negative at ``lo`` to positive at ``hi`` (arrays elementwise)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        above = f(mid) > 0
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return (lo + hi) / 2


_T_MAX = 36.0
"""Upper end of the search in t = log(u/(1-u)): 1 - u = 2e-16, where D outgrows any budget."""


def lifetime_optimal(target_loss, inference_tokens, fit: str = "hoffmann", inference_efficiency=1.0, *,
                     rl_tokens=0.0, rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"],
                     rl_efficiency=1.0):
    """(N, D_pre, total FLOPs) reaching ``target_loss`` with the fewest lifetime FLOPs
    6 N D_pre + kappa N D_RL / eta_RL + 2 N D_inf / eta_inf (Sardana et al. 2024, with RL added).

    RL and inference cost K FLOPs per parameter whatever D_pre is, so the optimum is the share u of
    the reducible loss in the parameter term at which the stationarity condition gives that K. K
    rises with u from 0 at Chinchilla's u = beta/(alpha + beta), so the root is found by bisection
    on t = log(u/(1 - u)). Broadcasts over array inputs. An ``Optimum`` naming ``fit``.
    """
    _check_target(target_loss, fit)
    use = _check_use(inference_tokens, inference_efficiency, rl_tokens, rl_flops_per_param_token, rl_efficiency)
    c = _constants(fit)
    target = np.asarray(target_loss, float)
    per_param = __linear()(*use)

    def excess(t):
        return __per_param()(1 / (1 + np.exp(-t)), 1 / (1 + np.exp(t)), target, *c) - per_param

    start = float(_numeric().u_compute_optimal(c[3], c[4]))
    lo = np.full(np.broadcast(target, per_param).shape, np.log(start / (1 - start)))
    t = _bisect(excess, lo, np.full_like(lo, _T_MAX))
    n = __n_of_u()(1 / (1 + np.exp(-t)), target, *c)
    d_pre = __d_of_u()(1 / (1 + np.exp(t)), target, *c)
    total = lifetime_flops(n, d_pre, *use[:2], rl_tokens=use[2], rl_flops_per_param_token=use[3],
                           rl_efficiency=use[4]).total
    return Optimum(fit, N=_scalar_or_array(n), D_pre=_scalar_or_array(d_pre), total=_scalar_or_array(total))


def token_split(rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"],
                rl_inefficiency=LECTURE["rl_inefficiency"], inference_inefficiency=LECTURE["inference_inefficiency"],
                shares=(1, 1, 1)):
    """(D_pre/D_RL, D_pre/D_inf) when pre-training, RL and inference cost in the ratio ``shares``
    (default equal: the lecture's thirds; Dwarkesh's 50/50 is (1, 1, 2)). Inefficiencies are 1/eta
    (3 = a third of pre-training's efficiency); the lecture's inputs give (1.5, 1).

    ``inference_inefficiency`` is the FLOP-weighted 1/eta of every served token (``served_mix``): it
    may fall below 1, since prefix-cache hits cost next to nothing."""
    in_range("rl_flops_per_param_token", rl_flops_per_param_token, *KAPPA_RANGE)
    positive("rl_inefficiency", rl_inefficiency)
    in_range("rl_inefficiency", rl_inefficiency, 1, np.inf)
    positive("inference_inefficiency", inference_inefficiency)
    if len(shares) != 3:
        raise ChalkError(f"shares must be three numbers (pre-training, RL, inference), got {shares!r}")
    for name, value in zip(("shares[0]", "shares[1]", "shares[2]"), shares):
        positive(name, value)
    n = _numeric()
    return (float(n.split_rl_shares(kappa=rl_flops_per_param_token, eta_RL=1 / rl_inefficiency, s_pre=shares[0],
                                    s_RL=shares[1])),
            float(n.split_inf_shares(eta_inf=1 / inference_inefficiency, s_pre=shares[0], s_inf=shares[2])))


class ServedMix(NamedTuple):
    """A day (or a life) of served tokens by kind, and what they cost together."""
    tokens: float
    """every served token: prompts (cached or not) and outputs"""
    inefficiency: float
    """FLOP-weighted 1/eta over all of them, relative to pre-training's efficiency"""


def served_mix(input_tokens, cached_tokens, output_tokens, decode_inefficiency=LECTURE["inference_inefficiency"],
               prefill_inefficiency=1.0, cached_inefficiency=0.0) -> ServedMix:
    """Served tokens split by how they are processed: uncached prompt tokens in a compute-bound
    prefill (near training's efficiency, 1/eta = 1), prompt tokens read from a prefix cache (no
    forward pass: 0) and output tokens in memory-bound decode (``decode_inefficiency``). Returns the
    total and the 1/eta that charges it the same FLOPs as the three kinds at their own rates: what
    ``inference_flops``' single eta_inf stands for."""
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        positive(name, value)
    non_negative("cached_tokens", cached_tokens)
    in_range("cached_tokens", cached_tokens, 0, input_tokens)
    positive("decode_inefficiency", decode_inefficiency)
    positive("prefill_inefficiency", prefill_inefficiency)
    non_negative("cached_inefficiency", cached_inefficiency)
    total = input_tokens + output_tokens
    weighted = ((input_tokens - cached_tokens) * prefill_inefficiency + cached_tokens * cached_inefficiency
                + output_tokens * decode_inefficiency)
    return ServedMix(float(total), float(weighted / total))




@_derived
def __rl_per_token():
    return _numeric().rl_per_token



def rl_flops_per_rollout_token(decode_efficiency, trained_fraction, extra_forward_passes=1.0):
    """FLOPs per parameter per rollout token of RL run as real stacks run it, in units of training
    efficiency: 2/eta_dec + f (6 + 2 r). It plays the part of the lecture's kappa/eta_RL."""
    _efficiency("decode_efficiency", decode_efficiency)
    in_range("trained_fraction", trained_fraction, 0, 1)
    non_negative("extra_forward_passes", extra_forward_passes)
    return _scalar_or_array(__rl_per_token()(*(np.asarray(v, float) for v in
                                            (decode_efficiency, trained_fraction, extra_forward_passes))))


def served_tokens(tokens_per_second, days):
    """Tokens served at ``tokens_per_second`` for ``days``: the lecture's D_inf."""
    positive("tokens_per_second", tokens_per_second)
    positive("days", days)
    return _scalar_or_array(np.asarray(tokens_per_second, float) * np.asarray(days, float) * SECONDS_PER_DAY)


def overtraining_ratio(N, D, tokens_per_param=LECTURE["tokens_per_param"]):
    """D over the tokens a rule of ``tokens_per_param`` per parameter asks for: the lecture's "100x"."""
    positive("N", N)
    positive("D", D)
    positive("tokens_per_param", tokens_per_param)
    return _scalar_or_array(np.asarray(D, float) / (np.asarray(tokens_per_param, float) * np.asarray(N, float)))


def heuristic_penalty(p_rise, q_fall):
    """How much the equal-cost guess overpays: f(x where the terms are equal) / f(x at the minimum)
    for f = a x^p + b x^-q; 1 exactly when p = q, whatever a and b."""
    positive("p_rise", p_rise)
    positive("q_fall", q_fall)
    return _scalar_or_array(__penalty()(np.asarray(p_rise, float), np.asarray(q_fall, float)))


def heuristic_place(p_rise, q_fall):
    """Where the equal-cost guess lands: x where the terms are equal over x at the minimum of
    f = a x^p + b x^-q, (p/q)^(1/(p+q)) whatever a and b. A flat minimum keeps the penalty small
    while this ratio, and any ratio of places such as tokens per parameter, can be well off."""
    positive("p_rise", p_rise)
    positive("q_fall", q_fall)
    return _scalar_or_array(__place()(np.asarray(p_rise, float), np.asarray(q_fall, float)))


class Overtraining(NamedTuple):
    """One catalog model's training tokens against Chinchilla's."""
    model: str
    active_params: float
    total_params: float
    tokens: float
    tokens_per_param: float
    vs_rule: float
    """D / (20 N_act): the lecture's measure."""
    vs_fit: float
    """D / D_opt(N_act) under the fit: how far past its own frontier."""
    fit: str = ""
    """the fit behind ``vs_fit``, by its display name"""


def catalog_overtraining(fit: str = "hoffmann") -> list[Overtraining]:
    """Every catalog model with reported training tokens, measured against Chinchilla (active parameters)."""
    name = get_fit(fit).display
    rows = []
    for m in models.catalog_models().values():
        if m.training_tokens is None or m.checkpoint_of is not None:  # a checkpoint is its base's run
            continue
        n, d = m.active_params, m.training_tokens
        rows.append(Overtraining(m.name, n, m.total_params, d, d / n, overtraining_ratio(n, d),
                                 d / optimal_tokens(n, fit), name))
    return rows


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


# --- the numeric forms ---------------------------------------------------------------------------
def _numeric():
    """``scaling_numeric``: the formulas this module evaluates, as plain Python (``numeric_forms``)."""
    from . import scaling_numeric
    return scaling_numeric


def numeric_forms() -> dict:
    """The expressions this module evaluates as numbers, each with its arguments in order (the
    token split's by keyword), by the name of its plain-Python form in ``scaling_numeric.py``. A
    function, not a table: the optima, the heuristic's penalty and the splits are solved on first
    use, which the generated file spares a kernel."""
    return {
        "loss": ((N_act, D) + _FIT_ARGS, loss_expr),
        "n_star": ((C_train,) + _FIT_ARGS, _n_star()),
        "frontier_tokens": ((N_act,) + _FIT_ARGS, _frontier_tokens()),
        "n_of_u": ((u, ell) + _FIT_ARGS, n_of_u),
        "d_of_u": ((v, ell) + _FIT_ARGS, d_of_u),
        "per_param": ((u, v, ell) + _FIT_ARGS, _per_param_cost_at_optimum()),
        "u_compute_optimal": ((alpha, beta), _u_compute_optimal()),
        "penalty": ((p, q), _heuristic_penalty_expr()),
        "place": ((p, q), sp.simplify(_tidy((_heuristic_x_equal() / _heuristic_x_min()).subs({a: 1, b: 1})))),
        "phases": {phase: (_LIFE_ARGS, e) for phase, e in
                   (("pretraining", pretraining_flops), ("rl", rl_flops), ("inference", inference_flops))},
        "linear": (_LIFE_ARGS[2:], _linear_in_n),
        "rl_per_token": ((eta_dec, trained_fraction, extra_forwards), _rl_kappa_over_eta()),
        "split_rl_shares": _split_rl_shares(),
        "split_inf_shares": _split_inf_shares(),
    }


def numeric_source() -> str:
    """The text of ``scaling_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.scaling", numeric_forms(), symbol_names(globals()),
                            "The formulas ``chalk.scaling`` evaluates as numbers "
                            "(``chalk.scaling.numeric_forms``), as plain Python, so that a kernel "
                            "evaluates them without solving or lambdifying.")


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "scaling_numeric.py")
