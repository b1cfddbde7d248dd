"""Chapter 1's roofline beside a real operator: DeepSeek's published V3/R1 serving statistics.

DeepSeek published (``chalk.catalog.operators``) its decode layout on H800s, the decode output
per node, the average context of an output token and one user's output speed. ``compare`` sets
Chapter 1's roofline for the same chips, number formats, batch and context beside the published
throughput and accounts for the gap term by term:

1. the roofline itself (``chalk.roofline.decode_point``): weights sharded evenly over all GPUs,
   no communication, compute and memory traffic overlapped;
2. attention data parallelism: every GPU reads its own copy of everything but its routed
   experts (``params_per_gpu``, the same bytes as ``chalk.moe.placement``);
3. micro-batches: the step is split in m parts that take turns computing and communicating, and
   each part reads the weights again;
4. the expert-parallel all-to-all of every micro-batch, with ``chalk.moe``'s measured link model
   (a fixed cost per call and the share of the links' rate DeepSeek's DeepEP kernels reach),
   either hidden behind the other micro-batch or not hidden;
5. load imbalance: the busiest GPU's share of one micro-batch's routed tokens
   (``chalk.moe.simulate_routing``).

The two choices in 4 bracket a schedule of m micro-batches whose kernels run at the roofline:
everything that can overlap does (a lower bound), or no communication overlaps anything (the
upper end, with attention and matmul kernels one after the other). Both take the all-to-all from
the same measured link model; imbalance lengthens its transfer, not its calls' fixed cost.

The batch is not published: Little's law gives it as the output rate over one user's speed.
The measured step is the time between one user's tokens, which holds only if each step emits one
token per sequence (no speculative decoding). Nothing is fitted: what the terms do not explain is
reported as the residual.

``layout_balance_batch`` is the balance batch of such a layout per GPU: with copies on every GPU,
the roofline's B* divided by the GPU count understates it.
"""
import math
from dataclasses import dataclass, replace
from functools import cache

import sympy as sp

from . import moe, roofline
from .catalog import hardware, operators
from .errors import ChalkError, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import B, E, F, F_att, L, N_act, N_rout, N_tot, W, b_kv, b_w, f_att, m, n_exp, n_red

DEEPSEEK = "deepseek-v3-r1@2025-02-28"
"""DeepSeek's 'Inference System Overview' statistics (2025-03-01)."""

SECONDS_PER_DAY = 24 * 3600
ROUTING_TRIALS = 8
"""Simulated routing steps behind the imbalance term (its standard error is below 1%)."""

# --- formulas -----------------------------------------------------------------------------------
# The solved balance and its lambdified form are built on first use (``chalk.lazy``), so that
# importing the module does not pay for them.
_derived = Lazy(__name__)

params_per_gpu = (N_tot - N_rout) + moe.experts_per_chip_expr * N_rout / n_exp
"""Parameters each GPU holds and reads when everything but the routed experts (attention, shared
experts, dense layers, embeddings, routers) is copied on every GPU and the routed experts, with
n_red redundant copies, are spread over the E GPUs (attention data parallel, expert parallel)."""

t_weights_layout = roofline.t_weights_all.xreplace({N_tot: m * E * params_per_gpu})
"""The roofline's weight read for that layout: each of the E GPUs reads its own parameters once
per micro-batch, m times a step, W being the E GPUs' bandwidth together."""



@_derived
def _layout_balance_batch_expr():
    """b*: sequences per GPU at which the layout's compute time equals its memory time. It is the
    roofline's B* times m params_per_gpu / N_tot, which is B*/E only when every weight is sharded
    (params_per_gpu = N_tot/E) and read once."""
    return sp.solve(sp.Eq(roofline.t_compute, t_weights_layout + roofline.t_kv), B)[0] / E


@_derived
def __layout_balance():
    return sp.lambdify((L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, n_exp, n_red, E, m),
                       _layout_balance_batch_expr(), modules=[{"ceiling": math.ceil}, "math"])


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


def layout_balance_batch(chip, model, gpus, context=0, dtype="fp8", redundant=0, micro_batches=1,
                         kv_bytes_per_element=2, attention_dtype=None) -> float:
    """Sequences per GPU at which compute equals memory time when ``model``'s routed experts are
    spread over ``gpus`` GPUs and everything else is copied on each (attention data parallel),
    every one of ``micro_batches`` micro-batches reading the weights again.

    Returns ``inf`` at or beyond the balance context L*, where KV reads alone outlast the compute
    at any batch."""
    rep = roofline.replica(chip, model, dtype, positive_int("gpus", gpus), kv_bytes_per_element, attention_dtype)
    moe.experts_per_chip(rep.model, rep.chips, redundant)  # an MoE model, a whole number of copies
    non_negative("context", context)
    micro_batches = positive_int("micro_batches", micro_batches)
    if context >= rep.balance_context():
        return math.inf
    n_act, n_tot, b_w, b_kv, flops, bw, f, f_rate, n_routed, _, n_e = rep.params(context)
    return float(__layout_balance()(float(context), n_act, n_tot, b_w, float(b_kv), flops, bw, float(f), f_rate,
                                 n_routed, n_e, redundant, rep.chips, micro_batches))


# --- the comparison -------------------------------------------------------------------------------
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
    """what each GPU reads per micro-batch with attention data parallel: its copies and its experts"""
    alltoall: float
    """seconds of dispatch + combine per step, every micro-batch and MoE layer, mean GPU, not
    overlapped, with the measured link model (``chalk.moe.MEASURED``)"""
    alltoall_line_rate: float
    """the same traffic at the NICs' and NVLink's nominal rates, no fixed cost (``chalk.moe.NOMINAL``)"""
    alltoall_fixed: float
    """the part of ``alltoall`` that is the calls' fixed cost, whatever their tokens"""
    imbalance: float
    """busiest GPU's routed load over the mean GPU's, in one micro-batch"""
    balance_batch_per_gpu: float
    """the layout's balance batch per GPU with every micro-batch reading the weights"""
    balance_batch_per_gpu_one_read: float
    """the same with the weights read once per step"""
    max_batch_per_gpu: float
    """the most sequences of this context whose KV cache fits beside a GPU's weights (10% kept free)"""
    terms: tuple[Term, ...]

    @property
    def gpus(self) -> int:
        return self.operator.decode_expert_parallel

    @property
    def measured_step(self) -> float:
        """Seconds between one user's tokens: the published speed, inverted. The step itself if
        each step emits one token per sequence; with speculative decoding a step emits more, and
        lasts that many times longer."""
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
        """Measured step over the step with every modelled term: what the terms leave unexplained
        (below 1: the model's step is longer than the measured one)."""
        return self.measured_step / self.modelled_step

    @property
    def step_flops_per_gpu(self) -> float:
        """FLOPs of one step on one GPU: its sequences' weight matmuls (2 N_act each) and attention
        over their cached tokens."""
        attention = self.roofline.t_attn * self.operator.chip.flops(self.operator.attention_dtype)
        return self.matmul_flops_per_gpu + attention

    @property
    def matmul_flops_per_gpu(self) -> float:
        """The weight-matmul part of ``step_flops_per_gpu`` alone."""
        p = self.roofline
        return (p.t_compute - p.t_attn) * self.operator.chip.flops(self.operator.dtype)

    @property
    def implied_mfu(self) -> float:
        """Time-weighted MFU: the step's matmuls at the FP8 peak plus its attention at the BF16 peak
        (the formats they run in), over the measured step. ``DecodePoint.mfu``'s convention."""
        return self.roofline.t_compute / self.measured_step

    def mfu_at(self, dtype: str, matmuls_only: bool = False) -> float:
        """The step's FLOPs (or its weight matmuls' alone) over ``dtype``'s peak FLOP/s for the
        measured step: MFU against one stated peak."""
        flops = self.matmul_flops_per_gpu if matmuls_only else self.step_flops_per_gpu
        return flops / (self.operator.chip.flops(dtype) * self.measured_step)

    @property
    def layout_mfu_bound(self) -> float:
        """The most the layout allows before communication: compute time over the step with copies
        and micro-batches (the third term)."""
        return self.roofline.t_compute / self.terms[2].step


def _user_speed(op: operators.Operator, user_tokens_per_second) -> float:
    if user_tokens_per_second is None:
        return sum(op.user_tokens_per_second) / 2
    return float(positive("user_tokens_per_second", user_tokens_per_second))


@cache
def _imbalance(model: str, gpus: int, tokens: int, redundant: int) -> float:
    return moe.simulate_routing(model, gpus, tokens, redundant=redundant, trials=ROUTING_TRIALS).imbalance


def roofline_point(name: str = DEEPSEEK, user_tokens_per_second=None) -> tuple[float, float, roofline.DecodePoint]:
    """(sequences per GPU, context, Chapter 1's bound) at the operator's published decode operating
    point: the batch from Little's law (output per GPU over one user's speed), the published
    context, the whole expert-parallel group as one replica."""
    op = operators.get(name)
    speed = _user_speed(op, user_tokens_per_second)
    gpus = op.decode_expert_parallel
    if op.decode_nodes * op.gpus_per_node != gpus:
        raise ChalkError(f"operator {op.name}: {op.decode_nodes} nodes of {op.gpus_per_node} GPUs "
                         f"are not EP{gpus}")
    batch_per_gpu = op.decode_tokens_per_second_per_node / op.gpus_per_node / speed
    context = float(op.kv_tokens_per_output_token)
    point = roofline.decode_point(op.chip, op.model, batch_per_gpu * gpus, context, op.dtype, gpus,
                                  op.usd_per_gpu_hour, attention_dtype=op.attention_dtype)
    return batch_per_gpu, context, point


def decode_efficiency(name: str = DEEPSEEK, user_tokens_per_second=None) -> float:
    """Published decode throughput over the bound's at the same batch and context (``Comparison.ratio``
    inverted, without the terms): equally, the bound's step over the measured one."""
    batch_per_gpu, _, point = roofline_point(name, user_tokens_per_second)
    op = operators.get(name)
    return op.decode_tokens_per_second_per_node / (batch_per_gpu * op.gpus_per_node / point.t_step)


def compare(name: str = DEEPSEEK, overlap: bool = True, user_tokens_per_second=None) -> Comparison:
    """Roofline against the operator ``name``'s published decode throughput, term by term.

    ``overlap`` chooses the end of the bracket: True hides the all-to-all behind the other
    micro-batch's work (a lower bound on the step), False hides none of it.
    ``user_tokens_per_second`` defaults to the middle of the published range."""
    op = operators.get(name)
    if not isinstance(overlap, bool):
        raise ChalkError(f"overlap must be True or False, got {overlap!r}")
    speed = _user_speed(op, user_tokens_per_second)
    gpus, model, chip, m_ = op.decode_expert_parallel, op.model, op.chip, op.decode_micro_batches
    batch_per_gpu, context, point = roofline_point(name, speed)
    batch = batch_per_gpu * gpus
    t_compute, t_attn, t_kv = point.t_compute, point.t_attn, point.t_kv
    t_matmul = t_compute - t_attn

    # placement() lays experts over one scale-up system; the expert-parallel group spans
    # decode_nodes of them, which for per-GPU memory is the same as one system of all its GPUs.
    group = replace(op.system, name=f"{op.decode_nodes}x{op.system.name}", count=gpus,
                    display=f"{op.decode_nodes} x {op.system.display}")
    place = moe.placement(model, group, batch, context, op.dtype, redundant=op.decode_redundant_experts)
    if not place.fits:
        raise ChalkError(f"operator {op.name}: its published layout needs {place.used / 1e9:,.0f} GB per "
                         f"{chip.name}, more than the {place.usable / 1e9:,.0f} GB usable")
    t_w = place.weight_bytes / chip.hbm_bandwidth

    # Each micro-batch runs its own dispatch and combine in every MoE layer. Dispatch travels in FP8
    # and combine in BF16; the all-to-all formula charges each routed choice 2 b_act, so their mean
    # is the b_act that gives the sum.
    b_act = (hardware.bytes_per_weight(op.dispatch_dtype) + hardware.bytes_per_weight(op.combine_dtype)) / 2
    calls = m_ * model.n_moe_layers
    layer = {links: moe.layer_times(model, op.system, batch / m_, op.dtype, domains=op.decode_nodes,
                                    bytes_per_element=b_act, redundant=op.decode_redundant_experts, links=links)
             for links in ("nominal", "measured")}
    t_comm, t_fixed = calls * layer["measured"].communication, calls * layer["measured"].fixed
    k, shared = model.moe["experts_per_token"], model.moe.get("n_shared_experts", 0)
    t_routed = calls * layer["nominal"].compute * k / (k + shared)
    imbalance = _imbalance(model.name, gpus, round(batch / m_), op.decode_redundant_experts)

    if overlap:
        def step(reads, comm=0.0, matmul=t_matmul):
            return max(matmul + t_attn, reads * t_w + t_kv, comm)
        comm_name, comm_why = "all-to-all, hidden", (
            "one micro-batch's dispatch and combine run while the other computes: the step is the "
            "longest of compute, memory traffic and communication (a lower bound)")
    else:
        def step(reads, comm=0.0, matmul=t_matmul):
            return max(t_attn, t_kv) + max(matmul, reads * t_w) + comm
        comm_name, comm_why = "all-to-all, not hidden", (
            "every dispatch and combine waits for the work before it and holds up the work after it; "
            "attention and matmul kernels run one after the other, each at its roofline")
    extra_matmul = (imbalance - 1) * t_routed
    steps = [
        ("roofline", point.t_step,
         f"Chapter 1's bound for {gpus} {chip.name}s: weights sharded evenly, no communication"),
        ("attention data parallel", step(1),
         f"each GPU reads its own copy of attention, shared expert and dense layers beside its "
         f"{place.experts_per_chip} routed experts, not 1/{gpus} of all weights"),
        (f"{m_} micro-batches", step(m_), "each micro-batch reads the weights again"),
        (comm_name, step(m_, t_comm), comm_why),
        ("load imbalance", step(m_, t_fixed + imbalance * (t_comm - t_fixed), t_matmul + extra_matmul),
         "the GPU that receives the most routed tokens of a micro-batch sets the end of its all-to-all "
         "and expert matmuls (uniform routing over the redundant copies)"),
    ]
    terms, previous = [], steps[0][1]
    for term_name, t, why in steps:
        terms.append(Term(term_name, t, t / previous, why))
        previous = t
    balance = [layout_balance_batch(chip, model, gpus, context, op.dtype, op.decode_redundant_experts, reads,
                                    attention_dtype=op.attention_dtype) for reads in (m_, 1)]
    return Comparison(op, overlap, speed, batch_per_gpu, context, point, place.weight_bytes, t_comm,
                      calls * layer["nominal"].communication, t_fixed, imbalance, *balance,
                      place.max_batch / gpus, tuple(terms))


def bounds(name: str = DEEPSEEK, user_tokens_per_second=None) -> tuple[Comparison, Comparison]:
    """(all-to-all hidden, not hidden): the two ends of the bracket."""
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


def fleet_tokens_per_second(name: str = DEEPSEEK) -> float:
    """The whole fleet's input and output together, averaged over the published day: the count
    that totals of 'tokens processed' (Google's) are made of."""
    op = operators.get(name)
    return (op.input_tokens + op.output_tokens) / SECONDS_PER_DAY


def decode_unit_tokens_per_second(name: str = DEEPSEEK) -> float:
    """Output of one decode deployment unit (one expert-parallel group: a replica)."""
    op = operators.get(name)
    return op.decode_nodes * op.decode_tokens_per_second_per_node


def decode_usd_per_million_tokens(name: str = DEEPSEEK) -> float:
    """Rental of the decode GPUs per million output tokens at the published throughput per node:
    decode only, no prefill, idle capacity, networking, power or margin."""
    op = operators.get(name)
    return 1e6 * op.gpus_per_node * op.usd_per_gpu_hour / 3600 / op.decode_tokens_per_second_per_node
