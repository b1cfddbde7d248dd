"""Answer key of problem set 3 (pipelining): ``exercises/03_pipelining.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.pipeline``, ``chalk.memory`` and the catalog when a check runs; the
constants below are the scenario inputs the problem set states. The scenarios differ from the
chapter's (other stages, micro-batches, hops, models and systems), so no answer is printed there.
Half the set asks for a judgement (which assumption breaks, whether a transfer hides); the tests
check each verdict with chalk's numbers.
"""
import math

from ... import pipeline
from ...catalog import layouts, models, systems
from ..exercises import Choice, Choices, Exercise, Mistake

DECODE = dict(stages=6, microbatches=6, hop=0.25)
"""``decode_bubble`` and ``decode_microbatches``: a decode pipeline whose hops take 0.25 t_F."""
SWITCH = dict(stages=8, microbatches=16, chunks=4)
"""``interleave_costs``: 1F1B switched to interleaved 1F1B at the same micro-batches."""
TARGET = dict(stages=12, chunks=2, bubble=0.10)
"""``min_microbatches``: the fewest micro-batches that keep the interleaved bubble under 10%."""
RATIO = dict(model="jamba-v0.1", system="mi355x-8", layers=6, expert_parallel=8)
"""``rack_ratio_jamba``: the rack test for a stage of Jamba's MoE layers."""
MIN_LAYERS = dict(model="mixtral-8x7b", system="hgx-b200", expert_parallel=8)
"""``min_layers_mixtral``: fewest MoE layers per stage, experts spread over 8 GPUs."""
FORMATS = dict(model="mixtral-8x7b", system="hgx-h100", layers=3, expert_parallel=8,
               dispatch_bytes=1.0, combine_bytes=2.0, boundary_bytes=2.0)
"""``boundary_precision``: the rack test when dispatch, combine and the boundary carry different formats."""
UNEVEN = dict(stages=3, microbatches=9, t_forward=(1.0, 2.0, 1.0), t_backward=(2.0, 4.0, 2.0))
"""``uneven_idle``: 1F1B with a middle stage twice as slow as the others."""
LLAMA_LAYOUT = "llama-3.1-405b-8k-8192"
"""The published Llama 3 405B layout of ``llama_bubble`` (Llama Team 2024, Table 4)."""
LLAMA_BATCH_TOKENS = 16 * 2**20
"""The published global batch of that stage, 16M tokens (same table); an input, not derived."""
PLOT = dict(stages=5, microbatches=6, schedule="1f1b", ratio=2.0)
"""The chart of ``step_time_read``, drawn in the problem set from the simulator."""
PLOT_MICROBATCHES = 12
"""The micro-batches ``step_time_read`` asks about, read against the chart's."""
DATA = dict(model="llama-3.1-70b", system="hgx-h100", gpus=2048, tensor=8, pipeline=4, tokens=4 * 2**20)
"""``dp_traffic``: a data-parallel all-reduce in a combined training layout, FP32 gradients."""
CONTEXT = dict(model="llama-3.1-70b", system="hgx-h100", batch=16, context=65536, longer=131072)
"""``pipeline_context``: the same micro-batch at twice the context, by adding busy stages."""


def _decode_needed(hop=DECODE["hop"]) -> float:
    return float(pipeline.decode_microbatches_needed(DECODE["stages"], hop))


def _min_microbatches(chunks=TARGET["chunks"], multiple=True) -> float:
    """The scan the exercise asks for: the first m (a multiple of P when interleaving) under target;
    ``multiple=False`` scans plain 1F1B instead, the typical slip of forgetting the chunks."""
    P_, step = TARGET["stages"], TARGET["stages"] if multiple else 1
    m_ = step
    while pipeline.bubble_fraction(P_, m_, "interleaved" if multiple else "1f1b",
                                   chunks if multiple else 1) > TARGET["bubble"]:
        m_ += step
    return float(m_)


def _min_microbatches_unconstrained() -> float:
    """The interleaved bound solved for m without rounding up to a multiple of P."""
    P_, v_, f = TARGET["stages"], TARGET["chunks"], TARGET["bubble"]
    return float(math.ceil((P_ - 1) * (1 - f) / (f * v_)))


def _ratio(layers_per_stage=RATIO["layers"], rho=None, expert_parallel=RATIO["expert_parallel"]):
    mdl = models.get(RATIO["model"])
    rho = rho if rho is not None else systems.get(RATIO["system"]).scale_up_to_out
    return pipeline.rack_boundary_ratio(layers_per_stage, mdl.moe["experts_per_token"], rho, expert_parallel)


def _min_layers(rho=None, expert_parallel=MIN_LAYERS["expert_parallel"], k_factor=1.0) -> float:
    mdl = models.get(MIN_LAYERS["model"])
    rho = rho if rho is not None else systems.get(MIN_LAYERS["system"]).scale_up_to_out
    return float(pipeline.min_layers_per_stage(k_factor * mdl.moe["experts_per_token"], rho, expert_parallel))


def _uneven(**override):
    u = {**UNEVEN, **override}
    return pipeline.simulate(u["stages"], u["microbatches"], "1f1b", t_forward=list(u["t_forward"]),
                             t_backward=list(u["t_backward"])).idle_fraction


def _llama_microbatches(data=None) -> int:
    lay = layouts.get(LLAMA_LAYOUT)
    dp = data or pipeline.data_parallel_degree(lay["chips"], tensor=int(lay["tensor"]),
                                               context=int(lay["context"]), pipeline=int(lay["pipeline"]))
    return LLAMA_BATCH_TOKENS // int(lay["seq_len"]) // dp


def _llama_bubble(microbatches=None, form=pipeline.bubble_fraction) -> float:
    stages = int(layouts.get(LLAMA_LAYOUT)["pipeline"])
    return form(stages, microbatches or _llama_microbatches(), "1f1b")


def _plot_step(microbatches=PLOT_MICROBATCHES, ratio=PLOT["ratio"]) -> float:
    return pipeline.simulate(PLOT["stages"], microbatches, PLOT["schedule"], t_forward=1.0,
                             t_backward=ratio).makespan


OVERHEAD = ("that is the bubble over the ideal compute time, (P-1)/(v m); the fraction of the whole "
            "step divides by the step, (P-1)/(v m + P - 1).")

EXERCISES = (
    Choice(
        id="decode_bubble", topic="Decode's loop back: the decode bubble",
        options={
            "a": "None: with as many micro-batches as stages, every stage always has one to work on.",
            "b": "None: inference runs no backward pass, so there is no fill or drain.",
            "c": "(P - 1)/(m + P - 1) of it, the fill and drain of a GPipe step.",
            "d": "A fifth of it: a micro-batch's round trip, hops included, outlasts the work each stage "
                 "gets from all six.",
        },
        answer="d",
        feedback={
            "a": "that holds only if hops were free: with t_hop = 0 a round trip lasts P t_F, exactly the "
                 "m t_F of work each stage gets. Every hop lengthens the round trip, not the work.",
            "b": "that holds for a stream of independent requests (prefill). In decode a micro-batch's next "
                 "token cannot enter the first stage until its last one has left the last stage.",
            "c": "that holds for a training step, which stops at the optimizer step and refills; decode loops "
                 "without end, and its idle time comes from the round trip, not from a fill and drain.",
        },
        hint="compare one micro-batch's round trip, P (t_F + t_hop), with the work each stage gets per "
             "round, m t_F."),
    Exercise(
        id="decode_microbatches", topic="Decode's loop back: micro-batches in flight", judgement=True,
        exact=True, expected=_decode_needed,
        unit="micro-batches (a whole number)", rel_tol=0.01,
        hint="the work each stage gets per round, m t_F, must last a whole round trip, P (t_F + t_hop): "
             "m >= P (1 + t_hop / t_F), rounded up.",
        mistakes=(
            Mistake("m = P keeps every stage busy only if hops were free; each hop lengthens the round trip.",
                    value=lambda: _decode_needed(hop=0.0)),
            Mistake("a fraction of a micro-batch cannot be in flight: round P (1 + t_hop / t_F) up, not down.",
                    value=lambda: float(math.floor(DECODE["stages"] * (1 + DECODE["hop"])))),
        )),
    Choices(
        id="interleave_costs", topic="Schedules: the price of interleaving",
        options={
            "a": "The fraction of each step the stages sit idle (hops free).",
            "b": "The stage-boundary crossings each micro-batch makes and the hops it pays.",
            "c": "The activations the first device holds at its peak.",
            "d": "The weight memory on each device.",
        },
        answer={"b", "c"},
        feedback={
            "a": "it falls: the fill and drain are made of chunks 1/v as long, (P-1)/(v m + P-1) against "
                 "(P-1)/(m + P-1).",
            "b": "a micro-batch visits each device v times, so it crosses about v times as many stage "
                 "boundaries: interleaving's price, paid in hops.",
            "c": "the deeper warm-up runs more chunk forwards before the first backward: the first device "
                 "holds 1 + (P-1)/(P v) times 1F1B's P micro-batches.",
            "d": "each device still holds 1/P of the layers, now as v non-adjacent chunks: the same bytes.",
        },
        hint="compare pipeline.bubble_fraction and pipeline.simulate(...).peak_activations for both "
             "schedules, and count the devices one micro-batch visits."),
    Exercise(
        id="min_microbatches", topic="Schedules: micro-batches for a bubble target", exact=True,
        expected=_min_microbatches,
        unit="micro-batches (a whole number)", rel_tol=0.005,
        hint="scan m = P, 2P, 3P, ... (interleaving needs a multiple of P) and stop at the first m "
             "whose bubble fraction is at most the target.",
        mistakes=(
            Mistake("interleaving needs m to be a multiple of P: round up to the next multiple.",
                    value=_min_microbatches_unconstrained),
            Mistake("that is plain 1F1B; with v chunks the bubble is v times smaller for the same m.",
                    value=lambda: _min_microbatches(multiple=False)),
        )),
    Exercise(
        id="rack_ratio_jamba", topic="The rack test: a finite expert-parallel group",
        expected=_ratio,
        unit="dimensionless ratio (scale-up time / scale-out time)", rel_tol=0.02,
        hint="2 k L_stage (E-1) / (E rho), with rho the system's own per-direction ratio "
             "(systems.get(name).scale_up_to_out).",
        mistakes=(
            Mistake("that is the lecture's limit E -> infinity; with 8 chips 1/8 of the copies stay on "
                    "the token's own chip: multiply by (E-1)/E.", value=lambda: _ratio(expert_parallel=None)),
            Mistake("that uses the lecture's rho = 8; use the system's own per-direction ratio.",
                    value=lambda: _ratio(rho=pipeline.LECTURE_RHO)),
            Mistake("each MoE layer sends a token out to k experts and gathers k results back: 2 k.",
                    factor=0.5),
        )),
    Exercise(
        id="min_layers_mixtral", topic="The rack test: fewest layers per stage", exact=True,
        expected=_min_layers,
        unit="MoE layers (a whole number)", rel_tol=0.005,
        hint="solve 2 k L (E-1) / (E rho) >= 1 for L and round up: L >= rho E / (2 k (E-1)).",
        mistakes=(
            Mistake("that is the lecture's limit E -> infinity; with experts over 8 GPUs only 7/8 of the "
                    "copies leave the chip, so more layers are needed.", value=lambda: _min_layers(expert_parallel=None)),
            Mistake("that uses the lecture's rho = 8; use the system's own per-direction ratio.",
                    value=lambda: _min_layers(rho=pipeline.LECTURE_RHO)),
            Mistake("each MoE layer dispatches to k experts and combines k results: the factor is 2 k.",
                    value=lambda: _min_layers(k_factor=0.5)),
        )),
    Choice(
        id="boundary_precision", topic="The rack test: formats that do not cancel",
        options={
            "a": "Yes: 2 k L (E-1)/(E rho) is above 1, and the bytes per token cancel from the ratio.",
            "b": "No: the all-to-all carries fewer bytes per element than the boundary, which pulls the "
                 "ratio below 1; a stage needs one more MoE layer.",
            "c": "Yes, with more margin than in BF16: FP8 dispatch shortens the all-to-all.",
            "d": "It cannot be told without d_model and the network's bandwidth in GB/s.",
        },
        answer="b",
        feedback={
            "a": "the bytes cancel only when dispatch, combine and boundary carry one format. Here scale-up "
                 "moves (1 + 2)/2 = 1.5 bytes per element against the boundary's 2: the BF16 ratio times 0.75.",
            "c": "that would hold if the test asked which stage finishes first; it asks whether the all-to-all "
                 "lasts long enough to hide the crossing, and a shorter one hides less: the ratio falls.",
            "d": "d_model multiplies both transfers and cancels, and the links enter only through rho; what "
                 "is left is each transfer's bytes per element.",
        },
        hint="weigh each transfer by its bytes per element: scale-up time grows with 2 k L (E-1)/E times "
             "(b_dispatch + b_combine)/2, scale-out time with rho b_boundary."),
    Exercise(
        id="uneven_idle", topic="Unequal stages", expected=lambda: _uneven(),
        unit="fraction of stage-time (0 to 1)", rel_tol=0.02,
        hint="run pipeline.simulate(..., '1f1b', t_forward=[...], t_backward=[...]) and read .idle_fraction.",
        mistakes=(
            Mistake("that is the closed form for equal stages; the slow stage sets the pace and the "
                    "others wait on it.", value=lambda: pipeline.bubble_fraction(UNEVEN["stages"], UNEVEN["microbatches"], "1f1b")),
            Mistake("only the middle stage is slow in both passes: give it t_F = 2 and t_B = 4.",
                    value=lambda: _uneven(t_backward=(2.0, 2.0, 2.0))),
        )),
    Exercise(
        id="llama_bubble", topic="The bubble of a published layout", expected=lambda: _llama_bubble(),
        unit="fraction of the step (0 to 1)", rel_tol=0.01,
        hint="the replicas = GPUs / (tensor x context x pipeline); each replica's micro-batches = its "
             "share of the batch's sequences; then (P-1)/(m+P-1).",
        mistakes=(
            Mistake("the batch is shared by the data-parallel replicas: each pipeline sees only its share.",
                    value=lambda: _llama_bubble(microbatches=LLAMA_BATCH_TOKENS // int(layouts.get(LLAMA_LAYOUT)["seq_len"]))),
            Mistake(OVERHEAD, value=lambda: _llama_bubble(form=pipeline.bubble_overhead)),
            Mistake("tensor parallelism also divides the GPUs: replicas = GPUs / (8 x 16), not GPUs / 16.",
                    value=lambda: _llama_bubble(microbatches=_llama_microbatches(
                        data=layouts.get(LLAMA_LAYOUT)["chips"] // int(layouts.get(LLAMA_LAYOUT)["pipeline"])))),
        )),
    Exercise(
        id="step_time_read", topic="Reading a schedule", expected=lambda: _plot_step(),
        unit="units of t_F", rel_tol=0.03,
        hint="read P, m and t_B / t_F off the chart; the step lasts (m + P - 1)(t_F + t_B).",
        mistakes=(
            Mistake("doubling m does not double the step: the fill and drain stay the same.",
                    value=lambda: 2 * _plot_step(PLOT["microbatches"])),
            Mistake("a backward box is twice as long as a forward one on the chart: t_B = 2 t_F.",
                    value=lambda: _plot_step(ratio=1.0)),
            Mistake("that is the work alone, m (t_F + t_B); the fill and drain add P-1 slots.",
                    value=lambda: PLOT_MICROBATCHES * (1 + PLOT["ratio"])),
        )),
    Choice(
        id="dp_traffic", topic="What each kind of parallelism sends: data parallelism in a layout",
        options={
            "a": "No: at 2,048 tokens per GPU, all-reducing a 70B model's gradients over the network takes "
                 "several times the step's compute.",
            "b": "Yes: each GPU reduces only the gradients of its share of the model while doing the same "
                 "share of its replica's compute, so what decides is the tokens each replica processes.",
            "c": "Only if the 64 replicas share one scale-up domain.",
            "d": "Yes, at any batch: the gradients cross the network once per step, whatever the tokens.",
        },
        answer="b",
        feedback={
            "a": "that would hold if every GPU were a whole replica reducing all N_tot gradients, as when data "
                 "parallelism is used alone. Here tensor and pipeline parallelism cut both a GPU's gradients "
                 "and its compute by 32.",
            "c": "that would hold if the all-reduce outlasted the compute on the network links; per GPU it takes "
                 "a small fraction of it, because the verdict turns on tokens per replica, not per GPU.",
            "d": "the bytes are fixed per step but the compute grows with the tokens: below a threshold in "
                 "tokens per replica (the tokens times the data row's scale-out time over its compute time) "
                 "the all-reduce would not hide.",
        },
        hint="pipeline.parallelism_table treats each chip as a whole replica. In this layout a GPU holds "
             "1/(TP x PP) of the model: what happens to its gradient bytes, and to its compute?"),
    Choice(
        id="pipeline_context", topic="What pipelining buys in inference: context",
        options={
            "a": "Two stages suffice: each stage then keeps the cache of only half the layers.",
            "b": "Enough stages suffice: the weights' share of each GPU vanishes as P grows, leaving room "
                 "for the longer cache.",
            "c": "No number of busy stages fits it: the cache per GPU stays B L b_kv / E, more than a GPU's "
                 "usable HBM. Only idling stages (fewer micro-batches than stages) or more GPUs per stage would.",
            "d": "It fits once P passes P*, where the cache outweighs the weights.",
        },
        answer="c",
        feedback={
            "a": "each stage keeps half the layers' cache, but for the two micro-batches in flight: P cancels. "
                 "It would hold with one micro-batch in flight (m = 1), one stage working at a time.",
            "b": "that would hold if the cache alone fitted. The weights' room is freed, but at 131,072 tokens "
                 "the cache, B L b_kv / E per GPU, is more than the usable HBM: the ceiling C E / (L b_kv) is "
                 "below 16 sequences.",
            "d": "that would hold if passing P* freed room for the cache; P* only says which part is larger, "
                 "and past it the cache per GPU is still B L b_kv / E, which does not fit here.",
        },
        hint="with m = P, write the cache per GPU and let P grow; compare its limit with a GPU's usable "
             "HBM (memory.max_batch(..., stages=P))."),
)
