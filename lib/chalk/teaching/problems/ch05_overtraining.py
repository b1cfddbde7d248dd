"""Answer key of problem set 5 (over-training): ``exercises/05_overtraining.ipynb``.

Expected values and typical wrong answers are computed from ``chalk.scaling`` when a check runs.
The scenario constants below are the inputs the problem set states; none is a scenario the chapter
works, so no answer is printed there.
"""
from ... import scaling
from ...catalog import models
from ...notation import D, N_act, a, b, eta_RL, kappa, p, q
from ..exercises import Exercise, Mistake

MOE = dict(active=30e9, total=200e9, tokens=20e12)
"""``moe_train_flops``: a made-up MoE, 30 B active of 200 B, trained on 20 T tokens."""
BUDGET_EPOCH = 3e25
"""``frontier_n_epoch``: a training budget in FLOPs, under Besiroglu et al.'s fit."""
BUDGET_TPP = 1e27
"""``tpp_hoffmann``: a budget for the tokens per parameter on Hoffmann et al.'s frontier."""
EXPONENTS = dict(p=0.5, q=2.0)
"""``equal_terms_ratio`` and ``heuristic_penalty_pct``: f = a x^p + b x^-q."""
RL_SPLIT = dict(kappa=4.0, rl_inefficiency=3.0)
"""``split_rl``: RL that trains on half its rollouts (kappa = 2 + 4/2), at a third of pre-training's efficiency."""
SERVE = dict(tokens_per_second=30e6, days=90, active_params=60e9)
"""``lecture_ratio_variant``: the lecture's arithmetic with other guesses."""
PUBLISHED = "llama-3-70b"
"""``llama70_vs_optimal``: the model card's parameters and tokens give its training budget."""
LIFE = dict(fit="epoch", target_loss=2.0, inference_tokens=1e14, inference_inefficiency=3.0)
"""``lifetime_n``: a lifetime optimum without RL."""
FIGURE = dict(p=1.0, q=2.5)
"""``read_minimum``: the heuristic figure drawn in the problem set, a = b = 1."""


def _moe_flops(n):
    return float(scaling.pretraining_flops.subs({N_act: n, D: MOE["tokens"]}))


def _split(k, ineff):
    return float(scaling.split_rl.subs({kappa: k, eta_RL: 1 / ineff}))


def _ratio_variant(seconds_per_day=scaling.SECONDS_PER_DAY, per_thirds=1.0):
    tokens = SERVE["tokens_per_second"] * SERVE["days"] * seconds_per_day * per_thirds
    return scaling.overtraining_ratio(SERVE["active_params"], tokens)


def _published_budget():
    m = models.get(PUBLISHED)
    return float(scaling.pretraining_flops.subs({N_act: m.active_params, D: m.training_tokens}))


def _size_over_optimal(fit):
    return models.get(PUBLISHED).active_params / scaling.compute_optimal(_published_budget(), fit)[0]


def _lifetime_n(inference_efficiency):
    return scaling.lifetime_optimal(LIFE["target_loss"], LIFE["inference_tokens"], LIFE["fit"],
                                    inference_efficiency)[0]


def _x(exponents):
    """x at the minimum of x^p + x^-q, and where the two terms are equal (a = b = 1)."""
    values = {a: 1, b: 1, p: exponents["p"], q: exponents["q"]}
    return float(scaling.heuristic_x_min.subs(values)), float(scaling.heuristic_x_equal.subs(values))


ACTIVE = "an MoE token meets only its routed experts: 6 N D uses the active parameters."
UNITS_B = "the answer is asked in parameters, not billions."

EXERCISES = (
    Exercise(
        id="moe_train_flops",
        expected=lambda: _moe_flops(MOE["active"]),
        unit="FLOPs", rel_tol=0.01,
        hint="6 FLOPs per active parameter per token: 2 forward, 4 backward.",
        mistakes=(
            Mistake(ACTIVE, value=lambda: _moe_flops(MOE["total"])),
            Mistake("that is the forward pass alone (2 N D); training adds a backward pass twice as costly.",
                    factor=1 / 3),
            Mistake("the backward pass costs twice the forward, not the same: 6 N D, not 4 N D.", factor=2 / 3),
        )),
    Exercise(
        id="frontier_n_epoch",
        expected=lambda: scaling.compute_optimal(BUDGET_EPOCH, "epoch")[0],
        unit="parameters", rel_tol=0.02,
        hint="minimise L(N, C/(6N)) over N, or use scaling.compute_optimal(C, fit='epoch').",
        mistakes=(
            Mistake("that is Hoffmann et al.'s fit; the question asks for Besiroglu et al.'s ('epoch').",
                    value=lambda: scaling.compute_optimal(BUDGET_EPOCH, "hoffmann")[0]),
            Mistake("that is the 20-tokens-per-parameter rule, sqrt(C / 120); the question asks for the fit's optimum.",
                    value=lambda: (BUDGET_EPOCH / (6 * 20)) ** 0.5),
            Mistake(UNITS_B, factor=1e-9),
        )),
    Exercise(
        id="tpp_hoffmann",
        expected=lambda: (lambda n, d: d / n)(*scaling.compute_optimal(BUDGET_TPP, "hoffmann")),
        unit="tokens per parameter", rel_tol=0.02,
        hint="D*/N* grows as C^((alpha - beta)/(alpha + beta)) on Hoffmann's Approach 3 frontier.",
        mistakes=(
            Mistake("20 is the rule of Hoffmann's Approaches 1 and 2; Approach 3's ratio grows with the budget.",
                    value=lambda: 20.0),
            Mistake("that is Besiroglu et al.'s fit; the question asks for Hoffmann et al.'s Approach 3.",
                    value=lambda: (lambda n, d: d / n)(*scaling.compute_optimal(BUDGET_TPP, "epoch"))),
            Mistake("tokens over parameters, D/N, not N/D.",
                    value=lambda: (lambda n, d: n / d)(*scaling.compute_optimal(BUDGET_TPP, "hoffmann"))),
        )),
    Exercise(
        id="equal_terms_ratio",
        expected=lambda: float(scaling.heuristic_term_ratio.subs({p: EXPONENTS["p"],
                                                                  q: EXPONENTS["q"]})),
        unit="dimensionless ratio (rising term / falling term)", rel_tol=0.01,
        hint="set f'(x) = 0: p a x^p = q b x^-q.",
        mistakes=(
            Mistake("that is the equal-cost heuristic; it is exact only when p = q.", value=lambda: 1.0),
            Mistake("upside down: p a x^p = q b x^-q gives rising / falling = q / p.",
                    value=lambda: EXPONENTS["p"] / EXPONENTS["q"]),
        )),
    Exercise(
        id="heuristic_penalty_pct",
        expected=lambda: 100 * (scaling.heuristic_penalty(EXPONENTS["p"], EXPONENTS["q"]) - 1),
        unit="percent", rel_tol=0.02,
        hint="evaluate f where a x^p = b x^-q and at the minimum; the ratio does not depend on a and b.",
        mistakes=(
            Mistake("the answer is asked in percent, not as a fraction.",
                    value=lambda: scaling.heuristic_penalty(EXPONENTS["p"], EXPONENTS["q"]) - 1),
            Mistake("that is the ratio f(x_equal)/f(x_min) itself; the question asks how much more, in percent.",
                    value=lambda: 100 * scaling.heuristic_penalty(EXPONENTS["p"], EXPONENTS["q"])),
        )),
    Exercise(
        id="split_rl",
        expected=lambda: _split(RL_SPLIT["kappa"], RL_SPLIT["rl_inefficiency"]),
        unit="dimensionless ratio D_pre / D_RL", rel_tol=0.01,
        hint="set 6 N D_pre = kappa N D_RL / eta_RL and solve for D_pre / D_RL.",
        mistakes=(
            Mistake("that multiplies by the efficiency, the board's slip: inefficiency raises the RL cost.",
                    value=lambda: _split(RL_SPLIT["kappa"], 1 / RL_SPLIT["rl_inefficiency"])),
            Mistake("that ignores the RL inefficiency.", value=lambda: _split(RL_SPLIT["kappa"], 1.0)),
            Mistake("upside down: the ratio asked is D_pre / D_RL.",
                    value=lambda: 1 / _split(RL_SPLIT["kappa"], RL_SPLIT["rl_inefficiency"])),
        )),
    Exercise(
        id="lecture_ratio_variant",
        expected=lambda: _ratio_variant(),
        unit="times the 20:1 rule", rel_tol=0.01,
        hint="D_inf = rate x days x 86,400 s; by the thirds D_pre = D_inf; divide by 20 N.",
        mistakes=(
            Mistake("a day has 86,400 seconds, not 3,600.", value=lambda: _ratio_variant(3600)),
            Mistake("the thirds give D_pre = D_inf (it is D_RL that is D_pre / 1.5).",
                    value=lambda: _ratio_variant(per_thirds=1 / 1.5)),
            Mistake("the 20:1 rule asks for 20 N tokens: divide by 20 as well as by N.", factor=20),
        )),
    Exercise(
        id="llama70_vs_optimal",
        expected=lambda: _size_over_optimal("epoch"),
        unit="dimensionless ratio N / N*", rel_tol=0.02,
        hint="C = 6 N D from the model card; then N* = scaling.compute_optimal(C, fit='epoch')[0].",
        mistakes=(
            Mistake("that is Hoffmann et al.'s fit; the question asks for Besiroglu et al.'s ('epoch').",
                    value=lambda: _size_over_optimal("hoffmann")),
            Mistake("upside down: the ratio asked is the model's size over the optimal size.",
                    value=lambda: 1 / _size_over_optimal("epoch")),
        )),
    Exercise(
        id="lifetime_n",
        expected=lambda: _lifetime_n(1 / LIFE["inference_inefficiency"]),
        unit="parameters", rel_tol=0.02,
        hint="minimise 6 N D + 2 N D_inf / eta over the curve L(N, D) = 2.0, e.g. with scaling.lifetime_optimal.",
        mistakes=(
            Mistake("that is Chinchilla's model for this loss; inference makes a smaller model cheaper over its life.",
                    value=lambda: scaling.loss_optimal(LIFE["target_loss"], LIFE["fit"])[0]),
            Mistake("decode runs at a third of training's efficiency: inference_efficiency = 1/3.",
                    value=lambda: _lifetime_n(1.0)),
            Mistake(UNITS_B, factor=1e-9),
        )),
    Exercise(
        id="read_minimum",
        expected=lambda: _x(FIGURE)[0],
        unit="x (the figure's axis)", rel_tol=0.05,
        hint="read where the black total curve is lowest (the green line), not where the dashed terms cross.",
        mistakes=(
            Mistake("that is where the two terms are equal (the red dotted line), not the minimum.",
                    value=lambda: _x(FIGURE)[1]),
        )),
)
