"""Chapter 1's roofline beside a real operator: DeepSeek's published V3/R1 serving statistics.

DeepSeek published (``chalk.catalog.operators``) its decode layout on H800s, the decode output
per node, the average context of an output token and one user's output speed. ``compare`` sets
Chapter 1's roofline for the same chips, number formats, batch and context beside the published
throughput and accounts for the gap term by term:

1. the roofline itself (``chalk.roofline.decode_point``): weights sharded evenly over all GPUs,
   no communication, compute and memory traffic overlapped;
2. attention data parallelism: every GPU reads its own copy of everything but its routed
   experts (``chalk.moe.placement``);
3. the expert-parallel all-to-all (``chalk.moe.layer_times``), either hidden behind the other
   micro-batch's work, which then costs a second read of the weights, or not hidden at all;
   the two are the optimistic and pessimistic bounds;
4. load imbalance: the busiest GPU's share of the routed tokens (``chalk.moe.simulate_routing``).

The batch is not published: Little's law gives it as the output rate over one user's speed.
The measured step is the time between one user's tokens. Nothing is fitted: what the terms do
not explain is reported as the residual, and the implied MFU is the roofline's compute time over
the measured step.
"""
from dataclasses import dataclass, replace
from functools import cache

from . import moe, roofline
from .catalog import hardware, operators
from .errors import ChalkError, positive

DEEPSEEK = "deepseek-v3-r1@2025-02-28"
"""DeepSeek's 'Inference System Overview' statistics (2025-03-01)."""

SECONDS_PER_DAY = 24 * 3600
ROUTING_TRIALS = 8
"""Simulated routing steps behind the imbalance term (its standard error is below 1%)."""


@dataclass(frozen=True)
class Term:
    """One step of the reconciliation: the step time once this effect is included."""
    name: str
    step: float
    """seconds per decode step (one token per sequence) with this and every earlier term"""
    factor: float
    """this step over the previous one (for the roofline: 1)"""
    why: str


@dataclass(frozen=True)
class Comparison:
    """The roofline for an operator's decode layout beside what the operator published."""
    operator: operators.Operator
    overlap: bool
    user_tokens_per_second: float
    batch_per_gpu: float
    """sequences decoding on each GPU at once: output per GPU over one user's speed"""
    context: float
    roofline: roofline.DecodePoint
    """Chapter 1's bound for the whole expert-parallel group"""
    weight_bytes_per_gpu: float
    """what each GPU reads per step with attention data parallel: its replicas and its experts"""
    alltoall: float
    """seconds of dispatch + combine per step, all MoE layers, mean GPU, not overlapped"""
    imbalance: float
    """busiest GPU's routed load over the mean GPU's"""
    terms: tuple[Term, ...]

    @property
    def gpus(self) -> int:
        return self.operator.decode_expert_parallel

    @property
    def measured_step(self) -> float:
        """Seconds between one user's tokens: the published speed, inverted."""
        return 1.0 / self.user_tokens_per_second

    @property
    def published_tokens_per_node(self) -> float:
        return self.operator.decode_tokens_per_second_per_node

    @property
    def roofline_tokens_per_node(self) -> float:
        return self.batch_per_gpu * self.operator.gpus_per_node / self.roofline.t_step

    @property
    def ratio(self) -> float:
        """Roofline throughput per node over the published one (the same batch, so also the
        measured step over the roofline's)."""
        return self.roofline_tokens_per_node / self.published_tokens_per_node

    @property
    def modelled_step(self) -> float:
        return self.terms[-1].step

    @property
    def residual(self) -> float:
        """Measured step over the step with every modelled term: what the terms leave unexplained."""
        return self.measured_step / self.modelled_step

    @property
    def implied_mfu(self) -> float:
        """The step's FLOPs (weight matmuls in the serving format, attention in BF16) at peak rate,
        over the measured step: the share of peak FLOP/s the operator's decode achieves."""
        return self.roofline.t_compute / self.measured_step


def _user_speed(op: operators.Operator, user_tokens_per_second) -> float:
    if user_tokens_per_second is None:
        return sum(op.user_tokens_per_second) / 2
    return float(positive("user_tokens_per_second", user_tokens_per_second))


@cache
def _imbalance(model: str, gpus: int, tokens: int, redundant: int) -> float:
    return moe.simulate_routing(model, gpus, tokens, redundant=redundant, trials=ROUTING_TRIALS).imbalance


def compare(name: str = DEEPSEEK, overlap: bool = True, user_tokens_per_second=None) -> Comparison:
    """Roofline against the operator ``name``'s published decode throughput, term by term.

    ``overlap`` chooses the bound: True hides the all-to-all behind the other micro-batch (whose
    weights are then read once more per step), False adds it to the step.
    ``user_tokens_per_second`` defaults to the middle of the published range."""
    op = operators.get(name)
    if not isinstance(overlap, bool):
        raise ChalkError(f"overlap must be True or False, got {overlap!r}")
    speed = _user_speed(op, user_tokens_per_second)
    gpus, model, chip = op.decode_expert_parallel, op.model, op.chip
    if op.decode_nodes * op.gpus_per_node != gpus:
        raise ChalkError(f"operator {op.name}: {op.decode_nodes} nodes of {op.gpus_per_node} GPUs "
                         f"are not EP{gpus}")
    batch_per_gpu = op.decode_tokens_per_second_per_node / op.gpus_per_node / speed
    batch, context = batch_per_gpu * gpus, float(op.kv_tokens_per_output_token)

    point = roofline.decode_point(chip, model, batch, context, op.dtype, gpus, op.usd_per_gpu_hour)
    t_compute, t_kv = point.t_compute, point.t_kv

    # placement() lays experts over one scale-up system; the expert-parallel group spans
    # decode_nodes of them, which for per-GPU memory is the same as one system of all its GPUs.
    group = replace(op.system, name=f"{op.decode_nodes}x{op.system.name}", count=gpus,
                    display=f"{op.decode_nodes} x {op.system.display}")
    place = moe.placement(model, group, batch, context, op.dtype, redundant=op.decode_redundant_experts)
    if not place.fits:
        raise ChalkError(f"operator {op.name}: its published layout needs {place.used / 1e9:,.0f} GB per "
                         f"{chip.name}, more than the {place.usable / 1e9:,.0f} GB usable")
    t_weights_dp = place.weight_bytes / chip.hbm_bandwidth

    # Dispatch travels in FP8 and combine in BF16; the all-to-all formula charges each routed
    # choice 2 b_act, so their mean is the b_act that gives the sum.
    b_act = (hardware.bytes_per_weight(op.dispatch_dtype) + hardware.bytes_per_weight(op.combine_dtype)) / 2
    layer = moe.layer_times(model, op.system, batch, op.dtype, domains=op.decode_nodes,
                            bytes_per_element=b_act, redundant=op.decode_redundant_experts)
    k, shared = model.moe["experts_per_token"], model.moe.get("n_shared_experts", 0)
    t_comm = model.n_moe_layers * layer.communication
    t_routed = model.n_moe_layers * layer.compute * k / (k + shared)
    imbalance = _imbalance(model.name, gpus, round(batch), op.decode_redundant_experts)

    m = op.decode_micro_batches
    if overlap:
        def step(comm, compute=t_compute):
            return max(compute, m * t_weights_dp + t_kv, comm)
        comm_name = "all-to-all, overlapped"
        comm_why = (f"{m} micro-batches: one's dispatch and combine hide behind the other's work, "
                    f"but every micro-batch reads the weights again")
    else:
        def step(comm, compute=t_compute):
            return max(compute, t_weights_dp + t_kv) + comm
        comm_name = "all-to-all, not overlapped"
        comm_why = "dispatch and combine wait for the experts and the experts for them: their time adds"
    steps = [
        ("roofline", point.t_step,
         f"Chapter 1's bound for {gpus} {chip.name}s: weights sharded evenly, no communication"),
        ("attention data parallel", max(t_compute, t_weights_dp + t_kv),
         f"each GPU reads its own copy of attention, shared expert and dense layers beside its "
         f"{place.experts_per_chip} routed experts, not 1/{gpus} of all weights"),
        (comm_name, step(t_comm), comm_why),
        ("load imbalance", step(imbalance * t_comm, t_compute + (imbalance - 1) * t_routed),
         "the GPU that receives the most routed tokens sets the end of every all-to-all and "
         "expert matmul (uniform routing over the redundant copies)"),
    ]
    terms, previous = [], steps[0][1]
    for term_name, t, why in steps:
        terms.append(Term(term_name, t, t / previous, why))
        previous = t
    return Comparison(op, overlap, speed, batch_per_gpu, context, point, place.weight_bytes, t_comm,
                      imbalance, tuple(terms))


def bounds(name: str = DEEPSEEK, user_tokens_per_second=None) -> tuple[Comparison, Comparison]:
    """(overlapped, not overlapped): the optimistic and the pessimistic reconciliation."""
    return (compare(name, True, user_tokens_per_second), compare(name, False, user_tokens_per_second))


# --- the published economics, recomputed from the published counts --------------------------
def cost_per_day(name: str = DEEPSEEK) -> float:
    """Mean nodes x GPUs per node x rental x 24 h."""
    op = operators.get(name)
    return op.mean_nodes * op.gpus_per_node * op.usd_per_gpu_hour * 24


def revenue_per_day(name: str = DEEPSEEK) -> float:
    """Every token billed at the operator's chosen list prices, cache hits at the cache price."""
    op = operators.get(name)
    price = op.priced_at
    miss = op.input_tokens - op.input_tokens_cache_hit
    return (op.input_tokens_cache_hit * price.cache_read + miss * price.input
            + op.output_tokens * price.output) / 1e6


def cache_hit_share(name: str = DEEPSEEK) -> float:
    op = operators.get(name)
    return op.input_tokens_cache_hit / op.input_tokens


def fleet_output_tokens_per_second(name: str = DEEPSEEK) -> float:
    """The whole fleet's output, averaged over the published day."""
    return operators.get(name).output_tokens / SECONDS_PER_DAY


def decode_unit_tokens_per_second(name: str = DEEPSEEK) -> float:
    """Output of one decode deployment unit (one expert-parallel group: a replica)."""
    op = operators.get(name)
    return op.decode_nodes * op.decode_tokens_per_second_per_node


def decode_usd_per_million_tokens(name: str = DEEPSEEK) -> float:
    """Rental of the decode GPUs per million output tokens at the published throughput per node:
    decode only, no prefill, idle capacity, networking, power or margin."""
    op = operators.get(name)
    return 1e6 * op.gpus_per_node * op.usd_per_gpu_hour / 3600 / op.decode_tokens_per_second_per_node
