"""Answer key of problem set 5 (over-training): ``exercises/05_overtraining.ipynb``.

Expected values and typical wrong answers are computed from ``chalk.scaling`` when a check runs.
The scenario constants below are the inputs the problem set states; none is a scenario the chapter
works, so no answer is printed there. The choice items' keys are letters; tests/test_problems_ch05.py
recomputes the quantity each one turns on, with chalk and by hand, and asserts the letter.
"""

from ... import scaling
from ...catalog import models
from ...notation import D, N_act, a, b, eta_RL, kappa, p, q
from ..exercises import Choice, Choices, Exercise, Mistake

EXPONENTS = dict(p=0.5, q=2.0)
"""``equal_terms_ratio`` and ``heuristic_penalty_pct``: f = a x^p + b x^-q."""
RL_SPLIT = dict(decode_inefficiency=4.0, trained_fraction=0.25, extra_forwards=2.0)
"""``split_rl``: rollouts generated at a quarter of pre-training's efficiency, a quarter of them
trained on with two extra forward passes each, as the chapter's RL model counts them."""
FIFTY = dict(tokens_per_second=40e6, days=90, active_params=150e9, inference_inefficiency=3.0, frontier_odds=0.6)
"""``fifty_fifty_discounted``: Dwarkesh's 50/50 split, with the served tokens discounted by the
odds that the model stays frontier long enough to serve them."""
PUBLISHED = "llama-3-70b"
"""``llama70_vs_optimal``: the model card's parameters and tokens give its training budget."""
LIFE = dict(fit="epoch", target_loss=2.0, inference_tokens=1e14, inference_inefficiency=3.0)
"""``lifetime_n``: a lifetime optimum without RL."""
FIGURE = dict(p=1.0, q=2.5)
"""``read_minimum``: the heuristic figure drawn in the problem set, a = b = 1."""
VERDICT = dict(params=500e9, tokens=30e12)
"""``fit_verdict``: a made-up dense model and its pre-training tokens, judged under both fits."""
OWN = dict(params=30e9, tokens=40e12, inference_tokens=5e12, inference_inefficiency=3.0)
"""``lifetime_verdict``: a made-up small model, judged against the lifetime optimum at its own loss."""
MIX = dict(input_tokens=500e9, cached_share=0.4, output_tokens=120e9, decode_inefficiency=3.0)
"""``served_mix_split``: a provider's day of traffic (prompt tokens, the share of them read from
a prefix cache, output tokens)."""


def _split(rl_per_rollout_token):
    """D_pre / D_RL at equal costs, for RL costing ``rl_per_rollout_token`` (kappa / eta_RL)."""
    return float(scaling.split_rl.subs({kappa: rl_per_rollout_token, eta_RL: 1}))


def _rl(inefficiency=RL_SPLIT["decode_inefficiency"], fraction=RL_SPLIT["trained_fraction"],
        extra=RL_SPLIT["extra_forwards"]):
    return scaling.rl_flops_per_rollout_token(1 / inefficiency, fraction, extra)


def _rl_forward_reused():
    """The trained tokens' forward pass taken from the rollout: 4 + 2 r per trained token, not 6 + 2 r."""
    return _rl() - RL_SPLIT["trained_fraction"] * float(scaling.forward_flops.subs(N_act, 1))


def _rl_one_efficiency():
    """The lecture's form: generation and training together, all at the rollouts' efficiency."""
    return _rl(inefficiency=1.0) * RL_SPLIT["decode_inefficiency"]


def _fifty(shares=(1, 1, 2), odds=FIFTY["frontier_odds"]):
    """Times the 20:1 rule when the lifetime splits in ``shares`` (pre-training, RL, inference):
    Dwarkesh's 50/50 gives the training half to pre-training and RL equally."""
    f = FIFTY
    d_inf = scaling.served_tokens(f["tokens_per_second"], f["days"]) * odds
    d_pre = d_inf * scaling.token_split(inference_inefficiency=f["inference_inefficiency"], shares=shares)[1]
    return scaling.overtraining_ratio(f["active_params"], d_pre)


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


def _mix_split(prefill_inefficiency=1.0, cached_inefficiency=0.0, decode_inefficiency=MIX["decode_inefficiency"]):
    """D_pre / D_inf by the thirds (pre-training costs what inference costs), D_inf every served
    token, with each kind of token at its own inefficiency (cache hits free by default)."""
    m = MIX
    mix = scaling.served_mix(m["input_tokens"], m["input_tokens"] * m["cached_share"], m["output_tokens"],
                             decode_inefficiency, prefill_inefficiency, cached_inefficiency)
    return scaling.token_split(inference_inefficiency=mix.inefficiency)[1]


UNITS_B = "the answer is asked in parameters, not billions."

EXERCISES = (
    Choice(
        id="fit_verdict",
        topic="the compute-optimal frontier under two fits",
        options={
            "a": "over-trained (smaller than compute-optimal) under both fits",
            "b": "under-trained (larger than compute-optimal) under both fits",
            "c": "under-trained under Hoffmann et al.'s Approach 3, over-trained under Besiroglu et al.'s fit",
            "d": "over-trained under Hoffmann et al.'s Approach 3, under-trained under Besiroglu et al.'s fit",
        },
        answer="c",
        feedback={
            "a": "that is Besiroglu et al.'s verdict; Approach 3's tokens per parameter climb with the budget, "
                 "and at this budget it wants more tokens per parameter than this model got.",
            "b": "that is Approach 3's verdict only; Besiroglu et al.'s fit keeps the optimum near 20 tokens per "
                 "parameter, far below this model's.",
            "d": "the other way round: Approach 3 (alpha > beta) asks for more tokens per parameter at large "
                 "budgets than Besiroglu et al.'s fit, so it is the one that finds the model too large.",
        },
        hint="compute C = 6 N D, then N* under each fit (scaling.compute_optimal(C, fit)) and compare with N."),
    Exercise(
        id="equal_terms_ratio",
        topic="the equal-cost heuristic",
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
        topic="the equal-cost heuristic",
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
        topic="the cost of RL",
        expected=lambda: _split(_rl()),
        unit="dimensionless ratio D_pre / D_RL", rel_tol=0.01,
        hint="per rollout token RL costs 2/eta_dec (generation) + f (6 + 2 r) (training, at training's "
             "efficiency); set 6 N D_pre equal to that times N D_RL.",
        mistakes=(
            Mistake("the trainer cannot reuse the inference engine's forward pass (its activations are gone): "
                    "each trained token costs a full forward and backward, 6, plus the extra passes.",
                    value=lambda: _split(_rl_forward_reused())),
            Mistake("the extra forward passes (reference model, old policy) cost 2 each per trained token.",
                    value=lambda: _split(_rl(extra=0.0))),
            Mistake("only the generation runs at decode's efficiency; the trainer runs at training's.",
                    value=lambda: _split(_rl_one_efficiency())),
            Mistake("generation runs in the inference engine at a quarter of training's efficiency: "
                    "2/eta_dec, not 2.", value=lambda: _split(_rl(inefficiency=1.0))),
            Mistake("upside down: the ratio asked is D_pre / D_RL.", value=lambda: 1 / _split(_rl())),
        )),
    Exercise(
        id="fifty_fifty_discounted",
        topic="the lecture's arithmetic: the 50/50 split",
        expected=lambda: _fifty(),
        unit="times the 20:1 rule", rel_tol=0.01,
        hint="expected D_inf = rate x days x 86,400 s x the odds; work out pre-training's share of the lifetime "
             "under 50/50 against inference's, set the costs in that ratio, and divide D_pre by 20 N.",
        mistakes=(
            Mistake("that sets pre-training's cost equal to inference's (the thirds); under the 50/50 split "
                    "pre-training and RL share the training half, so pre-training costs half of inference.",
                    value=lambda: _fifty(shares=(1, 1, 1))),
            Mistake("a model that may not stay frontier serves only its expected tokens: discount D_inf by the odds.",
                    value=lambda: _fifty(odds=1.0)),
            Mistake("that is the thirds without the discount: both the split and the odds are asked for.",
                    value=lambda: _fifty(shares=(1, 1, 1), odds=1.0)),
            Mistake("the 20:1 rule asks for 20 N tokens: divide by 20 as well as by N.", factor=20),
        )),
    Exercise(
        id="llama70_vs_optimal",
        topic="real models against the frontier",
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
        topic="the lifetime optimum at a fixed loss",
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
    Choice(
        id="lifetime_verdict",
        topic="the lifetime optimum at a fixed loss",
        options={
            "a": "over-trained for its lifetime: a larger model on fewer tokens reaches the same loss for fewer "
                 "lifetime FLOPs",
            "b": "under-trained for its lifetime: a smaller model on more tokens reaches the same loss for fewer "
                 "lifetime FLOPs",
            "c": "at its lifetime optimum, to within 5% in parameters",
            "d": "over-training never costs lifetime FLOPs: any model past 20 tokens per parameter is cheaper to "
                 "serve, so it cannot be past its optimum",
        },
        answer="a",
        feedback={
            "b": "that would hold for a model that serves far more tokens than it was trained on; this one serves "
                 "an eighth of its pre-training tokens, too few to pay for so small a model.",
            "c": "compute the optimum at the model's own loss: it is far from this model's size.",
            "d": "a smaller model saves inference FLOPs only in proportion to the tokens it serves; past the "
                 "lifetime optimum the extra pre-training costs more than serving saves.",
        },
        hint="take the model's own loss as the target (scaling.loss) and find the lifetime optimum for its "
             "served tokens (scaling.lifetime_optimal); compare N."),
    Choice(
        id="extrapolation_bias",
        topic="the lifetime optimum: limits of the fits",
        options={
            "a": "a larger model at fewer tokens per parameter: the fit over-estimated what extra tokens buy, so "
                 "its optimum was biased toward over-training",
            "b": "a smaller model at more tokens per parameter: the fit under-estimated what extra tokens buy, so "
                 "its optimum was biased toward under-training",
            "c": "the same model: a power law has no preferred scale, so extrapolating it cannot bias the optimum",
            "d": "the same model on the same tokens, which will only reach a higher loss than planned",
        },
        answer="a",
        feedback={
            "b": "that would hold if the loss fell faster with data than the fit says; the runs at extreme ratios "
                 "show it falls more slowly.",
            "c": "the fit's exponent was measured at typical ratios; if the data term flattens beyond them, the "
                 "law that holds there is a different one, and so is its optimum.",
            "d": "the target loss is fixed: reaching it when tokens buy less takes a different mix, more parameters "
                 "and fewer tokens per parameter.",
        },
        hint="at a fixed loss, the optimum trades tokens for parameters at the rate the fit says tokens buy "
             "loss; ask which side of the trade got cheaper."),
    Choices(
        id="decode_rate_tokens",
        topic="inference efficiency: prefill, cache and decode",
        options={
            "a": "the output tokens of chat answers",
            "b": "the prompt tokens processed in prefill",
            "c": "prompt tokens read from a prefix cache",
            "d": "RL rollout tokens as the inference engine generates them",
            "e": "pre-training tokens",
        },
        answer={"a", "d"},
        feedback={
            "a": "output tokens are generated one per step: decode, memory-bound, at decode's efficiency.",
            "b": "a prefill pass carries thousands of tokens per weight read: it is compute-bound, near "
                 "training's efficiency, not decode's.",
            "c": "a cache hit skips the prefill: its FLOPs are nearly zero, not decode's.",
            "d": "rollouts are generated token by token in the inference engine: decode, at its efficiency.",
            "e": "training runs forward and backward on whole sequences at training's efficiency, the unit "
                 "the others are measured in.",
        },
        hint="a token pays decode's inefficiency when it is produced one step at a time, each step reading "
             "the weights for a handful of tokens."),
    Exercise(
        id="served_mix_split",
        topic="inference efficiency: prefill, cache and decode",
        judgement=True,
        expected=lambda: _mix_split(),
        unit="dimensionless ratio D_pre / D_inf", rel_tol=0.02,
        hint="ask which tokens are produced one step at a time; count each kind's FLOPs per parameter at its own "
             "efficiency, and set 6 D_pre equal to their sum, with D_inf every served token.",
        mistakes=(
            Mistake("decode's inefficiency belongs to output tokens only: a prefill is compute-bound, and most "
                    "served tokens are prompts.", value=lambda: _mix_split(prefill_inefficiency=3.0,
                                                                           cached_inefficiency=3.0)),
            Mistake("a prefix-cache hit skips the prefill: it costs (nearly) no FLOPs.",
                    value=lambda: _mix_split(cached_inefficiency=1.0)),
            Mistake("a prefill is compute-bound, near training's efficiency: charge it 2, not 2 x 3.",
                    value=lambda: _mix_split(prefill_inefficiency=3.0)),
        )),
    Exercise(
        id="read_minimum",
        topic="the equal-cost heuristic",
        expected=lambda: _x(FIGURE)[0],
        unit="x (the figure's axis)", rel_tol=0.05,
        hint="read where the black total curve is lowest (the green line), not where the dashed terms cross.",
        mistakes=(
            Mistake("that is where the two terms are equal (the red dotted line), not the minimum.",
                    value=lambda: _x(FIGURE)[1]),
        )),
)
