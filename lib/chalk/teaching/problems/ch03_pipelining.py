"""Answer key of problem set 3 (pipelining): ``exercises/03_pipelining.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.pipeline`` and the catalog when a check runs; the constants below are
the scenario inputs the problem set states. The scenarios differ from the chapter's (other
stages, micro-batches, models and systems), so no answer is printed there.
"""
import math

from ... import pipeline
from ...catalog import hardware, layouts, models, systems
from ..exercises import Exercise, Mistake

GPIPE = dict(stages=6, microbatches=18)
"""``bubble_gpipe``: a GPipe step."""
INTERLEAVED = dict(stages=4, microbatches=12, chunks=3)
"""``bubble_interleaved``: an interleaved 1F1B step."""
TARGET = dict(stages=12, chunks=2, bubble=0.10)
"""``min_microbatches``: the fewest micro-batches that keep the interleaved bubble under 10%."""
RATIO = dict(model="jamba-v0.1", system="mi355x-8", layers=6, expert_parallel=8)
"""``rack_ratio_jamba``: the rack test for a stage of Jamba's MoE layers."""
MIN_LAYERS = dict(model="mixtral-8x7b", system="hgx-b200", expert_parallel=8)
"""``min_layers_mixtral``: fewest MoE layers per stage, experts spread over 8 GPUs."""
UNEVEN = dict(stages=3, microbatches=9, t_forward=(1.0, 2.0, 1.0), t_backward=(2.0, 4.0, 2.0))
"""``uneven_idle``: 1F1B with a middle stage twice as slow as the others."""
HOPS = dict(stages=4, stage_ms=5.0, hop_ms=2.0)
"""``inference_latency_ms``: one request through four racks, a rack-to-rack hop between each."""
LLAMA_LAYOUT = "llama-3.1-405b-8k-8192"
"""The published Llama 3 405B layout of ``llama_bubble`` (Llama Team 2024, Table 4)."""
LLAMA_BATCH_TOKENS = 16 * 2**20
"""The published global batch of that stage, 16M tokens (same table); an input, not derived."""
PLOT = dict(stages=5, microbatches=6, schedule="1f1b", ratio=2.0)
"""The chart of ``step_time_read``, drawn in the problem set from the simulator."""
PLOT_MICROBATCHES = 12
"""The micro-batches ``step_time_read`` asks about, read against the chart's."""
WEIGHTS = dict(model="llama-3.1-405b", stages=12, dtype="bf16")
"""``weights_per_stage_gb``: an inference pipeline's weights per stage (not 8 stages: Chapter 4
prints that one)."""
PEAK = dict(stages=4, microbatches=8, chunks=2)
"""``peak_interleaved``: the activations interleaved 1F1B keeps on its first stage."""


def _ratio(layers_per_stage=RATIO["layers"], rho=None, expert_parallel=RATIO["expert_parallel"]):
    mdl = models.get(RATIO["model"])
    rho = rho if rho is not None else systems.get(RATIO["system"]).scale_up_to_out
    return pipeline.rack_boundary_ratio(layers_per_stage, mdl.moe["experts_per_token"], rho, expert_parallel)


def _min_layers(rho=None, expert_parallel=MIN_LAYERS["expert_parallel"], k_factor=1.0) -> float:
    mdl = models.get(MIN_LAYERS["model"])
    rho = rho if rho is not None else systems.get(MIN_LAYERS["system"]).scale_up_to_out
    return float(pipeline.min_layers_per_stage(k_factor * mdl.moe["experts_per_token"], rho, expert_parallel))


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


def _uneven(**override):
    u = {**UNEVEN, **override}
    return pipeline.simulate(u["stages"], u["microbatches"], "1f1b", t_forward=list(u["t_forward"]),
                             t_backward=list(u["t_backward"])).idle_fraction


def _latency_ms(hops=None) -> float:
    h = HOPS
    n_hops = h["stages"] - 1 if hops is None else hops
    return pipeline.simulate(h["stages"], 1, "inference", t_forward=h["stage_ms"],
                             t_hop=h["hop_ms"]).makespan + (n_hops - (h["stages"] - 1)) * h["hop_ms"]


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


def _weights_gb(dtype=WEIGHTS["dtype"], stages=WEIGHTS["stages"]) -> float:
    return models.get(WEIGHTS["model"]).total_params * hardware.bytes_per_weight(dtype) / stages / 1e9


OVERHEAD = ("that is the bubble over the ideal compute time, (P-1)/(v m); the fraction of the whole "
            "step divides by the step, (P-1)/(v m + P - 1).")

EXERCISES = (
    Exercise(
        id="bubble_gpipe",
        expected=lambda: pipeline.bubble_fraction(GPIPE["stages"], GPIPE["microbatches"], "gpipe"),
        unit="fraction of the step (0 to 1)", rel_tol=0.01,
        hint="each stage idles for P-1 forward and P-1 backward slots: (P-1)/(m+P-1).",
        mistakes=(
            Mistake(OVERHEAD, value=lambda: pipeline.bubble_overhead(GPIPE["stages"], GPIPE["microbatches"], "gpipe")),
            Mistake("the fill takes P-1 slots, not P: the first stage starts at once.",
                    value=lambda: GPIPE["stages"] / (GPIPE["microbatches"] + GPIPE["stages"])),
            Mistake("give a fraction between 0 and 1, not a percentage.",
                    value=lambda: 100 * pipeline.bubble_fraction(GPIPE["stages"], GPIPE["microbatches"], "gpipe")),
        )),
    Exercise(
        id="bubble_interleaved",
        expected=lambda: pipeline.bubble_fraction(**INTERLEAVED, schedule="interleaved"),
        unit="fraction of the step (0 to 1)", rel_tol=0.01,
        hint="with v chunks per device the fill and drain are made of chunks 1/v as long: (P-1)/(v m + P-1).",
        mistakes=(
            Mistake("that is plain 1F1B; interleaving divides the fill and drain by v.",
                    value=lambda: pipeline.bubble_fraction(INTERLEAVED["stages"], INTERLEAVED["microbatches"], "1f1b")),
            Mistake(OVERHEAD, value=lambda: pipeline.bubble_overhead(**INTERLEAVED, schedule="interleaved")),
        )),
    Exercise(
        id="min_microbatches",
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
        id="rack_ratio_jamba",
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
        id="min_layers_mixtral",
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
    Exercise(
        id="uneven_idle",
        expected=lambda: _uneven(),
        unit="fraction of stage-time (0 to 1)", rel_tol=0.02,
        hint="run pipeline.simulate(..., '1f1b', t_forward=[...], t_backward=[...]) and read .idle_fraction.",
        mistakes=(
            Mistake("that is the closed form for equal stages; the slow stage sets the pace and the "
                    "others wait on it.", value=lambda: pipeline.bubble_fraction(UNEVEN["stages"], UNEVEN["microbatches"], "1f1b")),
            Mistake("only the middle stage is slow in both passes: give it t_F = 2 and t_B = 4.",
                    value=lambda: _uneven(t_backward=(2.0, 2.0, 2.0))),
        )),
    Exercise(
        id="inference_latency_ms",
        expected=lambda: _latency_ms(),
        unit="ms", rel_tol=0.01,
        hint="a request passes every stage in order and hops between racks once per stage boundary.",
        mistakes=(
            Mistake("there are P-1 stage boundaries between P racks, not P.", value=lambda: _latency_ms(HOPS["stages"])),
            Mistake("the hops add to the latency: pipelining is neutral for latency only apart from them.",
                    value=lambda: _latency_ms(0)),
        )),
    Exercise(
        id="llama_bubble",
        expected=lambda: _llama_bubble(),
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
        id="step_time_read",
        expected=lambda: _plot_step(),
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
    Exercise(
        id="weights_per_stage_gb",
        expected=lambda: _weights_gb(),
        unit="GB", rel_tol=0.02,
        hint="all N_tot weights at b_w bytes each, divided over the P stages.",
        mistakes=(
            Mistake("the weights are BF16, 2 bytes each.", value=lambda: _weights_gb(dtype="fp8")),
            Mistake("each stage holds only its own layers: divide by P.", value=lambda: _weights_gb(stages=1)),
        )),
    Exercise(
        id="peak_interleaved",
        expected=lambda: pipeline.simulate(**PEAK, schedule="interleaved").peak_activations,
        unit="micro-batches of activations", rel_tol=0.02,
        hint="simulate the schedule and read .peak_activations (a chunk holds 1/v of a micro-batch's "
             "activations on its device).",
        mistakes=(
            Mistake("that is plain 1F1B's P; interleaving's deeper warm-up holds a little more.",
                    value=lambda: float(PEAK["stages"])),
            Mistake("that is GPipe's m: 1F1B-style schedules start backwards before all forwards are done.",
                    value=lambda: float(PEAK["microbatches"])),
        )),
)
