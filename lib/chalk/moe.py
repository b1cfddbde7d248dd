"""Chapter 2: how a mixture-of-experts model is laid out over the chips of a scale-up domain.

Expert parallelism puts different routed experts on different chips. Every MoE layer then sends
each token's activation to the chips holding its k experts (dispatch) and brings the k results
back (combine): an all-to-all, twice per layer. The formulas below give the experts each chip
holds, the bytes and seconds of that all-to-all on scale-up and scale-out links, the compute it
must hide behind, the memory per chip, how unevenly random routing loads the chips and what a
capacity factor trades for it, how much of a torus's links an all-to-all can use, and how the
scale-up domain grew (Hopper's 8 GPUs to the announced Rubin Ultra NVL576), with the published
DeepSeek-V3 deployments to check against.

The bytes are counted two ways. Flat: every expert choice travels on its own, as DeepEP's
low-latency (decode) kernels send it. Deduplicated: a token travels once to each chip of its own
domain that holds one of its experts and once to each other domain, where one chip forwards it over
the scale-up links, as DeepEP's normal (prefill and training) kernels send it; with node-limited
routing a token reaches at most M domains.

Link rates are per chip and per direction (``chalk.hardware``): in an all-to-all every chip sends
and receives at once, so its transfer time is the bytes it sends over its one-way bandwidth. The
nominal model stops there; the measured one (``MEASURED``) adds a fixed cost per call and the share
of the rate real kernels reach, both from DeepSeek's published measurements.
"""
import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from . import catalog
from .catalog import domains, hardware, layouts, memory_data, models, moe_numeric, systems
from .errors import ChalkError, in_range, lookup, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import (C, E, F, M_dom, S, W, W_out, W_up, alpha_link, b_act, b_w, d_ff, d_model, eta_link,
                       gamma, k, n_dim, n_exp, n_red, n_sh, n_side, n_step, z_E, z_gamma)
from .roofline import HEADROOM, Replica

n_mat = models.n_mat
EXPERT_PARAMS = models.FFN_PARAMS
"""One expert: n_mat = 3 matrices d_model x d_ff when gated (SwiGLU), 2 otherwise."""

# Simplified, solved and lambdified forms are built on first use (``chalk.lazy``): together they
# cost most of a second, paid by every interpreter that imports the module.
_derived = Lazy(__name__)

# --- formulas (one MoE layer) -------------------------------------------------------------------
experts_per_chip_expr = sp.ceiling((n_exp + n_red) / E)
"""The most expert copies any chip holds when n_exp routed experts and n_red redundant copies are
spread as evenly as they go over E chips."""

crossing_fraction = 1 - S / E
"""Share of a chip's routed tokens whose expert sits outside its scale-up domain, when E chips of
expert parallelism span E/S domains of S chips and routing is uniform (two racks: one half)."""

alltoall_bytes_expr = 2 * (n_step / E) * k * d_model * b_act * (1 - 1 / E)
"""Bytes one chip sends per MoE layer: its n_step/E tokens each go to k experts and come back
(dispatch + combine), except the 1/E of choices whose expert is on the chip itself."""

scale_out_bytes = 2 * (n_step / E) * k * d_model * b_act * crossing_fraction
"""The part of those bytes that leaves the sender's domain: the crossing share of its choices,
each sent on its own (flat, as DeepEP's low-latency kernels do)."""
scale_up_bytes = sp.factor(alltoall_bytes_expr - scale_out_bytes)
"""The rest, bound for the S - 1 other chips of the sender's own domain."""

# Deduplicated: each token once per chip and once per domain. Uniform routing with node-limited
# routing's shape: a token's experts lie in min(M, E/S) domains drawn at random, its k picks drawn
# without replacement from their experts. A set of x of those experts is missed by all k picks with
# probability C(pool - x, k) / C(pool, k).
domains_in_reach = sp.Min(M_dom, E / S)
"""Domains a token's experts may lie in: M with node-limited routing, all E/S without."""
_pool = domains_in_reach * n_exp * S / E


def _missed(x):
    return sp.binomial(_pool - x, k) / sp.binomial(_pool, k)


chips_reached_expr = domains_in_reach * S * (1 - _missed(n_exp / E))
"""Expected distinct chips holding one of a token's k experts (n_exp/E experts on each)."""
domains_reached_expr = domains_in_reach * (1 - _missed(n_exp * S / E))
"""Expected distinct domains holding one of them (n_exp S/E experts in each)."""

scale_out_bytes_dedup = 2 * (n_step / E) * d_model * b_act * domains_reached_expr * (1 - S / E)
"""Bytes one chip sends to other domains when a token crosses once per domain it needs (and one
reduced result comes back): the domains reached, less the sender's own, which is among them with
probability domains_reached/(E/S) by symmetry."""
scale_up_bytes_dedup = 2 * (n_step / E) * d_model * b_act * chips_reached_expr * (1 - 1 / S)
"""Bytes one chip sends over scale-up: one copy per chip reached, except the one chip of each
domain that needs none (the sender in its own domain, the chip the network delivers to in the
others), which is reached with the same probability as the rest. Averaged over chips, the copies a
chip forwards for other domains' tokens count as its own."""

crossover_rho_expr = chips_reached_expr * (1 - 1 / S) / (domains_reached_expr * (1 - S / E))
"""The ratio rho = W_up/W_out above which the scale-out link sets the pace of the deduplicated
all-to-all over E/S domains: its scale-up bytes over its scale-out bytes (about the chips a token
reaches, near k, per domain it crosses to). Below it a second domain costs these kernels nothing in
bandwidth; sending every choice on its own, half the bytes cross two domains, and any rho above
about 1 taxes the layer."""

t_up_expr = scale_up_bytes / (eta_link * W_up)
"""Seconds to send the flat scale-up bytes at a share eta_link of the per-direction rate."""
t_out_expr = scale_out_bytes / (eta_link * W_out)
t_up_dedup_expr = scale_up_bytes_dedup / (eta_link * W_up)
t_out_dedup_expr = scale_out_bytes_dedup / (eta_link * W_out)
alltoall_fixed_expr = 2 * alpha_link
"""The fixed part of one layer's all-to-all: one dispatch call and one combine call."""

t_alltoall_up = alltoall_bytes_expr / W_up
"""Seconds for the whole all-to-all inside one domain (E = S), at the per-direction scale-up rate."""
t_alltoall_out = alltoall_bytes_expr / W_out
"""The same bytes pushed through the chip's scale-out NIC instead."""

t_expert_compute = 2 * n_step * (k + n_sh) * n_mat * d_model * d_ff / F
"""Matmul seconds of the layer's experts with uniform routing: n_step tokens, each through k routed
and n_sh shared experts, 2 FLOPs per weight, on E chips whose FLOP/s add up to F."""

experts_touched_expr = n_exp * (1 - (1 - k / n_exp) ** n_step)
"""Distinct routed experts a step of n_step tokens reads, each token picking k of n_exp uniformly:
each expert is missed by one token with probability 1 - k/n_exp, independently across tokens."""

t_expert_weights = (E * (experts_per_chip_expr * experts_touched_expr / n_exp + n_sh) * n_mat * d_model * d_ff
                    * b_w / W)
"""Seconds for each chip to read the weights of the experts its tokens use, W being the E chips'
HBM together: the expected share experts_touched/n_exp of its routed experts (all of them once
n_step is a few times n_exp/k) and its own copy of the n_sh shared experts, which every token
passes through (the busiest chip holds a token at any batch). Redundant copies are counted like
experts."""



@_derived
def _comm_to_compute():
    """All-to-all time over expert matmul time. The token count cancels, but only against the
    matmuls: with a second micro-batch in flight the all-to-all hides behind the larger of that
    micro-batch's matmuls and weight reads (``LayerTimes.hidden``), and below ``compute_bound_tokens``
    the weight reads are the larger, so there the batch decides."""
    return sp.simplify(t_alltoall_up / t_expert_compute)


t_expert_weights_all = E * (experts_per_chip_expr + n_sh) * n_mat * d_model * d_ff * b_w / W
"""Reading every routed expert copy's weights and the shared experts' once: ``t_expert_weights``
once every expert is touched."""


@_derived
def _compute_bound_tokens():
    """The step n_step at which the expert matmuls (routed and shared) take as long as reading every
    routed and shared expert's weights."""
    return sp.solve(sp.Eq(t_expert_compute, t_expert_weights_all), n_step)[0]


imbalance_expr = 1 + z_E * sp.sqrt(E * (n_exp - k) / ((n_exp - 1) * n_step * k))
"""Busiest chip's routed load over the mean chip's, normal approximation (derived in
``imbalance_estimate``), for n_exp experts split evenly over E chips and uniform routing."""

max_total_params_expr = S * C / b_w
"""The most parameters whose weights fit in a domain of S chips of C usable bytes each."""

# Capacity factor: an expert copy takes at most gamma times its mean load; the rest is dropped (or
# deferred). One expert's load over n_step tokens is Binomial(n_step, p), p = k/n_exp.
_p = k / n_exp
capacity_z_expr = (gamma - 1) * sp.sqrt(n_step * _p / (1 - _p))
"""How far the capacity gamma times the mean load sits above the mean, in standard deviations."""
dropped_given_z = sp.sqrt((1 - _p) / (n_step * _p)) * (sp.exp(-z_gamma**2 / 2) / sp.sqrt(2 * sp.pi)
                                                       - z_gamma * sp.erfc(z_gamma / sp.sqrt(2)) / 2)
"""Expected share of token choices beyond capacity, normal approximation: E[(X - gamma mu)^+] / mu
for X normal with the binomial's mean mu and spread sigma is (sigma/mu) (phi(z) - z Q(z)), phi the
normal density and Q its upper tail. Uniform routing; it reads low when an expert's mean load is a
few tokens and far in the tail, where the binomial's right skew puts more mass."""
dropped_fraction_expr = dropped_given_z.subs(z_gamma, capacity_z_expr)

torus_alltoall_share = 4 / (n_dim * n_side)
"""The most of a chip's scale-up bandwidth a uniform all-to-all can use on a torus with
wraparound (even sides): messages travel n_side/4 hops on average along the longest side, and its
links, 2 per chip per dimension, are shared by every message crossing them. A switched domain
(NVLink) has share 1."""

def _binomial(a, count):
    """C(a, count) for a whole ``count`` and any real ``a`` (an array): the falling factorial over
    count!, with a factor below zero read as zero so that fewer than ``count`` experts give 0."""
    out = np.ones_like(np.asarray(a, float))
    for i in range(int(np.max(count))):
        out = out * np.maximum(np.asarray(a, float) - i, 0) / (i + 1)
    return out


_ARGS = (n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out,
         M_dom, eta_link)
@_derived
def _numeric():
    """Vectorised NumPy versions, all taking the arguments in ``_ARGS`` order (see ``_values``):
    ``moe_layer_numeric``'s functions, written from ``layer_numeric_forms``."""
    from . import moe_layer_numeric
    return {name: getattr(moe_layer_numeric, name) for name in _LAYER_NUMERIC}


_LAYER_NUMERIC = ("alltoall_bytes", "scale_up_bytes", "scale_out_bytes", "t_alltoall_up", "t_alltoall_out",
                  "t_expert_compute", "t_expert_weights", "comm_to_compute", "experts_touched",
                  "scale_up_bytes_dedup", "scale_out_bytes_dedup", "chips_reached", "domains_reached", "t_up",
                  "t_out", "t_up_dedup", "t_out_dedup", "compute_bound_tokens", "crossover_rho")


def layer_numeric_forms() -> dict:
    """The expressions ``numeric`` evaluates, each a function of ``_ARGS`` in that order, by the
    name of its plain-Python form in ``moe_layer_numeric.py``. A function, not a table: the
    simplified ratios are built on first use, which the generated file spares a kernel."""
    exprs = {"alltoall_bytes": alltoall_bytes_expr, "scale_up_bytes": scale_up_bytes,
             "scale_out_bytes": scale_out_bytes, "t_alltoall_up": t_alltoall_up,
             "t_alltoall_out": t_alltoall_out, "t_expert_compute": t_expert_compute,
             "t_expert_weights": t_expert_weights, "comm_to_compute": _comm_to_compute(),
             "experts_touched": experts_touched_expr, "scale_up_bytes_dedup": scale_up_bytes_dedup,
             "scale_out_bytes_dedup": scale_out_bytes_dedup, "chips_reached": chips_reached_expr,
             "domains_reached": domains_reached_expr, "t_up": t_up_expr, "t_out": t_out_expr,
             "t_up_dedup": t_up_dedup_expr, "t_out_dedup": t_out_dedup_expr,
             "compute_bound_tokens": _compute_bound_tokens(), "crossover_rho": crossover_rho_expr}
    return {name: (_ARGS, exprs[name]) for name in _LAYER_NUMERIC}


@_derived
def __imbalance():
    return sp.lambdify((n_step, E, k, n_exp, z_E), imbalance_expr, "numpy")


@_derived
def __dropped():
    return sp.lambdify((n_step, k, n_exp, gamma), dropped_fraction_expr,
                       modules=[{"erfc": np.vectorize(math.erfc, otypes=[float])}, "numpy"])


@_derived
def __torus_share():
    return sp.lambdify((n_dim, n_side), torus_alltoall_share)


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir

LINKS = ("scale-up", "scale-out")


# --- inputs -------------------------------------------------------------------------------------
def _moe_model(model) -> models.Model:
    if not isinstance(model, (str, models.Model)):
        raise ChalkError(f"model must be a catalog model name or a chalk Model, got {model!r}")
    model = models.get(model) if isinstance(model, str) else model
    if not model.moe:
        moe_names = [m.name for m in models.catalog_models().values() if m.moe]
        raise ChalkError(f"model: {model.display} is dense (no routed experts); MoE models: "
                         f"{', '.join(moe_names)}")
    return model


def _system(system) -> systems.System:
    if not isinstance(system, (str, systems.System)):
        raise ChalkError(f"system must be a catalog system name or a chalk System (known: "
                         f"{', '.join(systems.catalog_systems())}), got {system!r}")
    return systems.get(system) if isinstance(system, str) else system


def _whole(name: str, value) -> float:
    """A whole number >= 0 given as an int or a float (a context of 4096.0 tokens is fine, 4096.5 not)."""
    non_negative(name, value)
    if np.ndim(value) or not float(value).is_integer():
        raise ChalkError(f"{name} must be a whole number >= 0, got {value!r}")
    return float(value)


def _chips(system: systems.System, chips) -> int:
    """The chips of ``system`` that hold experts: all of them by default, else 1 to its count."""
    if chips is None:
        return system.count
    chips = positive_int("chips", chips)
    if chips > system.count:
        raise ChalkError(f"chips must be between 1 and {system.count} (the chips of {system.display}), "
                         f"got {chips}")
    return chips


def _redundant(redundant) -> int:
    if isinstance(redundant, bool) or not isinstance(redundant, (int, np.integer)) or redundant < 0:
        raise ChalkError(f"redundant must be a whole number >= 0, got {redundant!r}")
    return int(redundant)


def _values(model: models.Model, chips, *, tokens=1, domain=None, redundant=0, bytes_per_element=2,
            dtype="bf16", chip: hardware.Chip | None = None, max_domains=None, eta=1.0) -> tuple:
    """The arguments of ``numeric`` for a model on ``chips`` chips of ``chip``, in domains of
    ``domain`` chips (all of them by default), a token reaching at most ``max_domains`` of them."""
    moe = model.moe
    flops = chips * chip.flops(dtype) if chip else np.nan
    hbm = chips * chip.hbm_bandwidth if chip else np.nan
    domain = domain or chips
    return (tokens, chips, domain, moe["experts_per_token"], moe.get("n_shared_experts", 0),
            moe["n_routed_experts"], redundant, model.d_model, moe["d_ff_expert"],
            3 if model.ffn_gated else 2, bytes_per_element, hardware.bytes_per_weight(dtype),
            flops, hbm, chip.scale_up_bandwidth if chip else np.nan,
            chip.scale_out_bandwidth if chip else np.nan, max_domains or chips / domain, eta)


def _scalar(x):
    return float(x) if np.ndim(x) == 0 else x


# --- placement ----------------------------------------------------------------------------------
def experts_per_chip(model, chips, redundant=0) -> int:
    """The most routed experts (with redundant copies) any of ``chips`` chips holds."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    redundant = _redundant(redundant)
    return int(moe_numeric.EXPERTS_PER_CHIP(E=chips, n_exp=model.moe["n_routed_experts"], n_red=redundant))


def experts_on_chips(model, chips, count=None, redundant=0) -> list[int]:
    """Expert copies held by each of ``count`` chips (``chips`` by default) when the routed experts
    and ``redundant`` copies go as evenly as they can over the first ``chips``, the rest idle: the
    first (n_exp + n_red) mod E chips hold one more, the busiest ``experts_per_chip``."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    count = chips if count is None else positive_int("count", count)
    if count < chips:
        raise ChalkError(f"count must be at least chips ({chips}), got {count}")
    base, extra = divmod(model.moe["n_routed_experts"] + _redundant(redundant), chips)
    return [base + (c < extra) if c < chips else 0 for c in range(count)]


def expert_params(model) -> float:
    """Parameters of one routed expert (one layer): ``EXPERT_PARAMS`` at the model's shape, as the
    catalog counts it in every MoE layer."""
    model = _moe_model(model)
    return model.routed_expert_params / (model.n_moe_layers * model.moe["n_routed_experts"])


def routed_expert_params(model) -> float:
    """All routed experts of all MoE layers: the part of N_tot that expert parallelism shards."""
    return _moe_model(model).routed_expert_params


@dataclass(frozen=True)
class Placement:
    """Memory of one chip when a model's routed experts are sharded over ``chips`` chips and
    everything else (attention, dense layers, shared experts, embeddings, routers) is copied on
    every chip, each chip holding the KV cache of its own sequences (data-parallel attention: a
    sequence's cache lives whole on one chip). Bytes are those of the busiest chip."""
    model: models.Model
    chip: hardware.Chip
    chips: int
    experts_per_chip: int
    expert_bytes: float
    replicated_bytes: float
    kv_bytes: float
    kv_bytes_per_sequence: float
    headroom: float

    @property
    def weight_bytes(self) -> float:
        return self.expert_bytes + self.replicated_bytes

    @property
    def used(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def usable(self) -> float:
        return self.chip.hbm_capacity * (1 - self.headroom)

    @property
    def margin(self) -> float:
        """Usable HBM left on each chip after weights and KV (negative when it does not fit)."""
        return self.usable - self.used

    @property
    def fits(self) -> bool:
        return self.margin >= 0

    @property
    def max_batch(self) -> float:
        """Most sequences of this context the chips together hold beside the weights: each chip
        holds whole sequences, as many as its own free HBM takes, so the chips times that (0 if
        none, inf at context 0)."""
        free = self.usable - self.weight_bytes
        if free <= 0:
            return 0
        if not self.kv_bytes_per_sequence:
            return math.inf
        return self.chips * math.floor(free / self.kv_bytes_per_sequence)


def placement(model, system, batch, context, dtype="bf16", chips=None, redundant=0,
              kv_bytes_per_element=2, headroom=HEADROOM) -> Placement:
    """Per-chip memory of ``model`` served by ``chips`` chips of ``system`` (all of them by default;
    the lecture uses 64 of an NVL72's 72), with ``batch`` sequences of ``context`` tokens dealt out
    whole, the busiest chip holding ceil(batch / chips) of them."""
    model = _moe_model(model)
    sys_ = _system(system)
    chips = _chips(sys_, chips)
    non_negative("batch", batch)
    context = _whole("context", context)
    in_range("headroom", headroom, 0, 0.99)
    g = experts_per_chip(model, chips, redundant)
    b = hardware.bytes_per_weight(dtype)
    one_expert_all_layers = model.n_moe_layers * expert_params(model) * b
    replicated = (model.total_params - routed_expert_params(model)) * b
    rep = Replica(sys_.chip, model, hardware.dtype_name(dtype), chips,
                  float(positive("kv_bytes_per_element", kv_bytes_per_element)))
    per_sequence = float(rep.kv_bytes(1, context)) if context else 0.0
    # Rounded first so that a batch that divides evenly is not pushed up a sequence by float error.
    busiest = math.ceil(round(float(batch) / chips, 9))
    return Placement(model, sys_.chip, chips, g, g * one_expert_all_layers, replicated,
                     busiest * per_sequence, per_sequence, float(headroom))


def max_total_params(system, dtype="bf16", headroom=HEADROOM) -> float:
    """The most parameters whose weights fit in the system's HBM (no KV): N_tot bounded by domain size."""
    sys_ = _system(system)
    in_range("headroom", headroom, 0, 0.99)
    return float(moe_numeric.MAX_TOTAL_PARAMS(C=sys_.chip.hbm_capacity * (1 - headroom), S=sys_.count,
                                              b_w=hardware.bytes_per_weight(dtype)))


# --- all-to-all ---------------------------------------------------------------------------------
def alltoall_bytes(model, tokens, chips, bytes_per_element=2):
    """Bytes one chip sends per MoE layer (dispatch + combine), ``tokens`` spread over ``chips``."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    positive("tokens", tokens)
    positive("bytes_per_element", bytes_per_element)
    return _scalar(_numeric()["alltoall_bytes"](*_values(model, chips, tokens=np.asarray(tokens, float),
                                                     bytes_per_element=bytes_per_element)))


def is_slice(system) -> bool:
    """True when ``system`` is part of a larger scale-up domain (a v5p cube of a pod joined by
    optical circuit switches): traffic leaving it still travels over the scale-up links, so its
    scale-up to scale-out ratio does not price a domain boundary."""
    sys_ = _system(system)
    return sys_.count < sys_.chip.scale_up_domain


def boundary_ratios() -> dict[str, float]:
    """Scale-up over scale-out bandwidth per direction (``scale_up_to_out``) of every catalog system
    that is a whole scale-up domain, by name: what crossing its edge costs. Slices are left out
    (``is_slice``)."""
    return {s.name: s.scale_up_to_out for s in systems.catalog_systems().values() if not is_slice(s)}


def _link(link) -> str:
    return lookup("link", link, {name: name for name in LINKS}, param="link", plural="links")


def alltoall_time(model, system, tokens, bytes_per_element=2, link="scale-up"):
    """Seconds for one MoE layer's all-to-all over the system's chips, every byte on ``link``
    ("scale-up" or "scale-out") at the chip's per-direction rate."""
    model = _moe_model(model)
    sys_ = _system(system)
    name = _link(link)
    positive("tokens", tokens)
    positive("bytes_per_element", bytes_per_element)
    args = _values(model, sys_.count, tokens=np.asarray(tokens, float),
                   bytes_per_element=bytes_per_element, chip=sys_.chip)
    return _scalar(_numeric()["t_alltoall_up" if name == "scale-up" else "t_alltoall_out"](*args))


def reach(model, chips, domain=None, max_domains=None) -> tuple[float, float]:
    """(chips, domains) one token's k experts lie on, expected under uniform routing, when the
    model's routed experts are split evenly over ``chips`` chips in domains of ``domain`` (all of
    them by default) and a token's experts lie in at most ``max_domains`` domains (node-limited
    routing; unlimited by default)."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    domain = chips if domain is None else positive_int("domain", domain)
    if chips % domain:
        raise ChalkError(f"domain must divide chips ({chips}) evenly, got {domain}")
    if max_domains is not None:
        positive_int("max_domains", max_domains)
    args = _values(model, chips, domain=domain, max_domains=max_domains)
    return float(_numeric()["chips_reached"](*args)), float(_numeric()["domains_reached"](*args))


@dataclass(frozen=True)
class Links:
    """How the all-to-all's seconds are counted: each dispatch and each combine call costs a fixed
    ``alpha`` plus its bytes over ``eta_up`` (``eta_out``) times the chip's nominal per-direction
    scale-up (scale-out) rate."""
    name: str
    alpha: float
    """seconds per call, whatever its bytes"""
    eta_up: float
    eta_out: float
    source: str = ""


NOMINAL = Links("nominal", 0.0, 1.0, 1.0, "bandwidth only, at the links' nominal rates")

DEEPEP = memory_data.latency("deepep-low-latency")
DEEPEP_MIN_EP = 64
"""The fit below uses DeepEP's timings from this expert-parallel degree up: 8 nodes and more, where
its bandwidth column has levelled off at about the network card's rate (below, part of a rank's
traffic stays inside its node)."""


def deepep_fit(min_ep: int = DEEPEP_MIN_EP) -> tuple[float, float]:
    """(alpha in seconds, rate in bytes/s): the straight line t = alpha + bytes/rate through
    DeepEP's low-latency dispatch and combine timings at expert-parallel degrees >= ``min_ep``.

    A dispatch carries the FP8 activations and their scales, a combine the BF16 results, of every
    (token, expert) choice, as DeepEP counts its bytes; their different sizes at the same degree
    separate the fixed cost from the rate. That takes the two for one transfer at two sizes, which
    they are not: they are different kernels, and the combine's receiver also weights and sums the k
    results. Whatever extra time the combine's own work takes is charged to its larger byte count,
    lowering the fitted rate and moving the fixed cost: both are estimates of the split, not
    measurements of it."""
    ep = DEEPEP
    if min_ep not in ep["ep"]:
        raise ChalkError(f"min_ep must be one of DeepEP's degrees {', '.join(map(str, ep['ep']))}, got {min_ep!r}")
    choices = ep["tokens"] * ep["experts_per_token"] * ep["hidden"]
    dispatch = choices * (ep["dispatch_bytes_per_element"] + ep["dispatch_scale_bytes_per_128"] / 128)
    combine = choices * ep["combine_bytes_per_element"]
    points = [(b, 1e-6 * t) for i, degree in enumerate(ep["ep"]) if degree >= min_ep
              for b, t in ((dispatch, ep["dispatch_us"][i]), (combine, ep["combine_us"][i]))]
    slope, intercept = np.polyfit(*zip(*points), 1)
    return float(intercept), float(1 / slope)


def _measured() -> Links:
    """Fixed cost and network share from DeepEP (H800, 400 Gb/s ConnectX-7); NVLink's share from
    the DeepSeek-V3 report's achievable 160 GB/s on the same H800s."""
    alpha, rate = deepep_fit()
    h800, v3 = hardware.get("H800"), layouts.get("deepseek-v3")
    return Links("measured", alpha, 1e9 * v3["nvlink_GBps"] / h800.scale_up_bandwidth,
                 rate / h800.scale_out_bandwidth,
                 f"DeepEP low-latency timings ({DEEPEP['source']}) and DeepSeek-V3 report ({v3['source']})")


MEASURED = _measured()
"""DeepSeek's kernels on H800s: about 15 µs per call and 88% of the network card's rate (DeepEP),
80% of NVLink's nominal rate (the V3 report). Applied to other chips as the shares they are."""
LINK_MODELS = {"nominal": NOMINAL, "measured": MEASURED}


@dataclass(frozen=True)
class LayerTimes:
    """One MoE layer on an expert-parallel group: the all-to-all against the expert work it must
    hide behind (attention not included). Seconds, per chip, with uniform routing."""
    scale_up: float
    """sending the bytes bound for chips of the sender's own domain"""
    scale_out: float
    """sending the bytes bound for other domains (0 inside one domain)"""
    compute: float
    """expert matmuls (routed and shared)"""
    weights: float
    """reading the chip's expert weights from HBM"""
    fixed: float = 0.0
    """the fixed cost of the dispatch and combine calls (0 in the nominal model)"""

    @property
    def communication(self) -> float:
        """Both links run at once, so the slower one sets the all-to-all time, after the calls'
        fixed cost."""
        return self.fixed + max(self.scale_up, self.scale_out)

    @property
    def work(self) -> float:
        """The experts' roofline: matmuls and weight reads overlap."""
        return max(self.compute, self.weights)

    @property
    def hidden(self) -> bool:
        """True when the all-to-all is no longer than the expert work, so that it can overlap
        entirely with another micro-batch's expert work. Within one micro-batch it cannot (dispatch
        precedes the experts, combine follows them; in series the layer takes ``communication +
        work``): hiding assumes two micro-batches in flight, as DeepSeek runs them, each reading the
        expert weights. Attention, which the other micro-batch also offers as cover, not counted."""
        return self.communication <= self.work


def _links(links) -> Links:
    if isinstance(links, Links):
        return links
    return lookup("link model", links, LINK_MODELS, param="links", plural="link models")


def layer_times(model, system, tokens, dtype="bf16", domains=1, bytes_per_element=2, redundant=0,
                chips=None, dedup=False, max_domains=None, links="nominal") -> LayerTimes:
    """The all-to-all and expert times of one MoE layer when its experts span ``domains`` copies of
    ``system`` (2 = two racks, about half of the tokens crossing the slow network), using ``chips``
    chips of each copy (all by default; the lecture puts DeepSeek-V3 on 64 of an NVL72's 72).

    ``dedup`` sends a token once per chip and once per domain instead of once per expert choice,
    a token's experts lying in at most ``max_domains`` domains (node-limited routing; DeepSeek-V3
    uses 4); ``links`` is ``"nominal"`` (bandwidth only), ``"measured"`` or a ``Links``."""
    model = _moe_model(model)
    sys_ = _system(system)
    domains = positive_int("domains", domains)
    chips = _chips(sys_, chips)
    positive("tokens", tokens)
    positive("bytes_per_element", bytes_per_element)
    if not isinstance(dedup, bool):
        raise ChalkError(f"dedup must be True or False, got {dedup!r}")
    if max_domains is not None:
        positive_int("max_domains", max_domains)
        if not dedup:
            raise ChalkError("max_domains needs dedup=True: sending every choice on its own, a token "
                             "crosses as often whatever domains its experts lie in")
    lk = _links(links)
    args = _values(model, chips * domains, tokens=float(tokens), domain=chips,
                   redundant=_redundant(redundant), bytes_per_element=bytes_per_element, dtype=dtype,
                   chip=sys_.chip, max_domains=max_domains)
    suffix = "_dedup" if dedup else ""

    def seconds(name, eta):
        return float(_numeric()[name + suffix](*args[:-1], eta))

    up, out = seconds("t_up", lk.eta_up), seconds("t_out", lk.eta_out)
    fixed = float(alltoall_fixed_expr.subs(alpha_link, lk.alpha)) if chips * domains > 1 else 0.0
    return LayerTimes(up, out, float(_numeric()["t_expert_compute"](*args)),
                      float(_numeric()["t_expert_weights"](*args)), fixed)


def compute_bound_step(model, system, dtype="bf16", chips=None, redundant=0) -> float:
    """Tokens per step above which one MoE layer's expert matmuls outlast the reads of all its
    expert weights on ``chips`` chips of ``system`` (``compute_bound_tokens``): only above it does
    the batch cancel out of whether the all-to-all hides."""
    model = _moe_model(model)
    sys_ = _system(system)
    chips = _chips(sys_, chips)
    args = _values(model, chips, redundant=_redundant(redundant), dtype=dtype, chip=sys_.chip)
    return float(_numeric()["compute_bound_tokens"](*args))


def decode_moe_time(model, system, tokens_per_chip, dtype="bf16", domains=1, chips=None, micro_batches=2,
                    links="nominal", bytes_per_element=2, attention=0.0) -> float:
    """Seconds the MoE layers of one decode step take when ``chips`` chips of each of ``domains``
    copies of ``system`` hold the experts, each chip carrying ``tokens_per_chip`` tokens in each of
    ``micro_batches`` micro-batches, every expert choice sent on its own (decode kernels); attention
    and the dense layers left out.

    One micro-batch takes each layer's all-to-all and expert work in series. With two or more in
    flight, one's all-to-all overlaps another's expert work, the links and the experts each serving
    the micro-batches in turn: a layer takes ``micro_batches`` times the longer of the two, each
    micro-batch reading the expert weights again. ``attention`` (seconds per layer and micro-batch on
    each chip, 0 by default) runs beside the experts' work: in series with one micro-batch, and as
    cover for another's all-to-all with several. The difference between ``domains=2`` and 1 is what
    a second domain adds to a decode step."""
    model = _moe_model(model)
    sys_ = _system(system)
    chips = _chips(sys_, chips)
    domains = positive_int("domains", domains)
    micro = positive_int("micro_batches", micro_batches)
    positive("tokens_per_chip", tokens_per_chip)
    non_negative("attention", attention)
    t = layer_times(model, sys_, tokens_per_chip * chips * domains, dtype, domains=domains, chips=chips,
                    bytes_per_element=bytes_per_element, links=links)
    work = t.work + attention
    per_layer = t.communication + work if micro == 1 else micro * max(t.communication, work)
    return model.n_moe_layers * per_layer


def crossover_ratio(model, chips, domain, max_domains=None) -> float:
    """``crossover_rho_expr``: the scale-up over scale-out ratio above which the network sets the
    pace of the deduplicated all-to-all (prefill and training kernels) when ``model``'s experts span
    ``chips`` chips in domains of ``domain``, a token's experts lying in at most ``max_domains``
    domains (unlimited by default)."""
    model = _moe_model(model)
    chips, domain = positive_int("chips", chips), positive_int("domain", domain)
    if chips % domain or chips == domain:
        raise ChalkError(f"domain must divide chips ({chips}) into two or more domains, got {domain}")
    if max_domains is not None:
        positive_int("max_domains", max_domains)
    return float(_numeric()["crossover_rho"](*_values(model, chips, domain=domain, max_domains=max_domains)))


# --- routing and load balance -------------------------------------------------------------------
def expected_experts_touched(model, tokens):
    """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens, uniform routing.

    At small batch an MoE does not read every expert: Chapter 1's weight-read term N_tot b_w
    is then too high, and this says by how much."""
    model = _moe_model(model)
    non_negative("tokens", tokens)
    return _scalar(_numeric()["experts_touched"](*_values(model, 1, tokens=np.asarray(tokens, float))))


@cache
def expected_max_standard_normal(count: int) -> float:
    """z_E: the mean of the largest of ``count`` independent N(0, 1) draws, by quadrature of
    E[max] = integral of x count phi(x) Phi(x)^(count-1) dx."""
    count = positive_int("count", count)
    x = np.linspace(-12.0, 12.0, 48_001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.frompyfunc(math.erf, 1, 1)(x / math.sqrt(2)).astype(float))
    integrand = x * count * phi * cdf ** (count - 1)
    return float(np.sum((integrand[1:] + integrand[:-1]) / 2) * (x[1] - x[0]))


def imbalance_estimate(model, chips, tokens):
    """Busiest chip's routed load over the mean, uniform routing, normal approximation.

    Derivation: a chip holding g = n_exp/E experts receives from one token a hypergeometric count
    of its k picks, mean k/E; summed over n_step tokens the loads of the E chips are, to second
    order, n_step k/E plus independent normal noise of variance c = n_step k (n_exp - k) /
    (E (n_exp - 1)) recentred on their mean (the total is fixed). The largest then exceeds the mean
    by z_E sqrt(c). Good once each chip receives a few hundred token choices; it ignores the
    skew of small counts, so it reads low at tiny batches. Needs E to divide n_exp evenly."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    positive("tokens", tokens)
    n, kk = model.moe["n_routed_experts"], model.moe["experts_per_token"]
    if chips < 2 or n % chips:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        raise ChalkError(f"chips must divide the {n} routed experts evenly and be >= 2 (one of "
                         f"{', '.join(map(str, divisors))}), got {chips!r}")
    return _scalar(__imbalance()(np.asarray(tokens, float), chips, kk, n, expected_max_standard_normal(chips)))


def expected_dropped_fraction(model, tokens, capacity_factor):
    """Expected share of token choices an MoE layer drops (or defers) when each expert takes at
    most ``capacity_factor`` times its mean load of ``tokens`` k / n_exp, uniform routing, normal
    approximation (``dropped_fraction_expr``). No redundant copies."""
    model = _moe_model(model)
    positive("tokens", tokens)
    in_range("capacity_factor", capacity_factor, 1, 100)
    return _scalar(__dropped()(np.asarray(tokens, float), model.moe["experts_per_token"],
                            model.moe["n_routed_experts"], np.asarray(capacity_factor, float)))


@dataclass(frozen=True)
class Routing:
    """Loads from simulated routing of one MoE layer, ``trials`` steps of ``tokens`` tokens."""
    chip_loads: np.ndarray
    """token choices each chip received, shape (trials, chips)"""
    copy_loads: np.ndarray
    """token choices each expert copy received, shape (trials, copies)"""
    experts_touched: np.ndarray
    """distinct routed experts chosen in each trial"""
    copy_chip: np.ndarray
    """the chip each expert copy sits on"""

    @property
    def imbalance(self) -> float:
        """Busiest chip's load over the mean chip's, averaged over trials."""
        return float(np.mean(self.chip_loads.max(axis=1) / self.chip_loads.mean(axis=1)))

    @property
    def imbalance_stderr(self) -> float:
        ratios = self.chip_loads.max(axis=1) / self.chip_loads.mean(axis=1)
        return float(np.std(ratios, ddof=1) / math.sqrt(len(ratios))) if len(ratios) > 1 else math.nan

    def dropped_fraction(self, capacity_factor) -> float:
        """Share of token choices beyond a capacity of ``capacity_factor`` times the mean load of
        an expert copy (what a fixed-capacity MoE drops or defers)."""
        positive("capacity_factor", capacity_factor)
        cap = capacity_factor * self.copy_loads.mean(axis=1, keepdims=True)
        return float(np.sum(np.maximum(self.copy_loads - cap, 0)) / np.sum(self.copy_loads))

    def capped_imbalance(self, capacity_factor) -> float:
        """Busiest chip's load over the mean chip's when each copy processes at most
        ``capacity_factor`` times the mean copy load: what sets the step once overflow is dropped.
        It never exceeds the capacity factor (nor the uncapped imbalance); the price is
        ``dropped_fraction``."""
        positive("capacity_factor", capacity_factor)
        cap = capacity_factor * self.copy_loads.mean(axis=1, keepdims=True)
        kept = np.minimum(self.copy_loads, cap)
        chips = self.chip_loads.shape[1]
        per_chip = np.stack([np.bincount(self.copy_chip, weights=row, minlength=chips) for row in kept])
        return float(np.mean(per_chip.max(axis=1) / self.chip_loads.mean(axis=1)))


def _popularity(n: int, skew: float) -> np.ndarray:
    """Zipf-like expert popularity, 1/rank^skew normalised: 0 is uniform routing."""
    weights = 1.0 / np.arange(1, n + 1) ** skew
    return weights / weights.sum()


def _place(load: np.ndarray, chips: int) -> np.ndarray:
    """Chip of each expert copy: heaviest first onto the least-loaded chip with a free slot (the
    longest-processing-time rule DeepSeek's balancer also follows)."""
    slots = math.ceil(len(load) / chips)
    chip_load, chip_used = np.zeros(chips), np.zeros(chips, int)
    where = np.empty(len(load), int)
    for i in np.argsort(-load, kind="stable"):
        free = np.flatnonzero(chip_used < slots)
        c = free[np.argmin(chip_load[free])]
        where[i], chip_load[c], chip_used[c] = c, chip_load[c] + load[i], chip_used[c] + 1
    return where


def _route(rng, log_pop: np.ndarray, tokens: int, k_: int) -> np.ndarray:
    """Choices each expert receives from ``tokens`` tokens, each picking ``k_`` distinct experts
    (Gumbel top-k over the log popularities)."""
    counts = np.zeros(len(log_pop), int)
    for start in range(0, tokens, 4096):
        rows = min(4096, tokens - start)
        keys = log_pop + rng.gumbel(size=(rows, len(log_pop)))
        counts += np.bincount(np.argpartition(-keys, k_ - 1, axis=1)[:, :k_].ravel(), minlength=len(log_pop))
    return counts


def _drifted(rng, log_pop: np.ndarray, drift: float) -> np.ndarray:
    """The popularities after a share ``drift`` of the experts, chosen at random, trade their
    popularities among themselves at random: what the balancer's statistics no longer know."""
    moved = rng.choice(len(log_pop), size=round(drift * len(log_pop)), replace=False)
    out = log_pop.copy()
    out[moved] = log_pop[rng.permutation(moved)]
    return out


def simulate_routing(model, chips, tokens, redundant=0, skew=0.0, trials=16, seed=0, drift=0.0) -> Routing:
    """Route ``tokens`` tokens, each to k distinct experts of the model's n_exp, over ``chips``.

    Each token draws its k experts without replacement with probabilities ``_popularity(skew)``
    (Gumbel top-k; ``skew=0`` is uniform routing). With skew or redundant copies, the experts are
    placed from the loads of one earlier calibration step, as DeepSeek's balancer works from recent
    statistics: the ``redundant`` extra copies go to the busiest experts, a token routed to an expert
    with copies picks one at random, and copies go to chips by observed load (``_place``). Uniform
    routing without copies spreads the experts evenly, n_exp/E per chip. With ``drift`` > 0 the
    steps measured route by a popularity that has moved since the calibration step (``_drifted``):
    0 keeps it, 1 reshuffles every expert's."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    tokens = positive_int("tokens", tokens)
    redundant = _redundant(redundant)
    trials = positive_int("trials", trials)
    in_range("skew", skew, 0, 4)
    in_range("drift", drift, 0, 1)
    n, kk = model.moe["n_routed_experts"], model.moe["experts_per_token"]
    log_pop = np.log(_popularity(n, skew))
    rng = np.random.default_rng(seed)
    load = _route(rng, log_pop, tokens, kk).astype(float) if (skew or redundant) else np.ones(n)
    if drift:
        log_pop = _drifted(rng, log_pop, drift)
    copies_of = np.ones(n, int)
    for extra in range(redundant):
        copies_of[np.argsort(-load, kind="stable")[extra % n]] += 1
    owner = np.repeat(np.arange(n), copies_of)
    copy_chip = _place(load[owner] / copies_of[owner], chips)
    first_copy = np.concatenate([[0], np.cumsum(copies_of)[:-1]])
    chip_loads, copy_loads, touched = [], [], []
    for _ in range(trials):
        counts = _route(rng, log_pop, tokens, kk)
        per_copy = np.zeros(len(owner))
        for e in range(n):
            r = copies_of[e]
            per_copy[first_copy[e]:first_copy[e] + r] = (rng.multinomial(counts[e], np.full(r, 1 / r))
                                                         if r > 1 else counts[e])
        copy_loads.append(per_copy)
        chip_loads.append(np.bincount(copy_chip, weights=per_copy, minlength=chips))
        touched.append(np.count_nonzero(counts))
    return Routing(np.array(chip_loads), np.array(copy_loads), np.array(touched), copy_chip)


# --- published deployments and the growth of the scale-up domain ----------------------------------
# SymPy-free, in chalk.catalog.domains (``python -m chalk list deployments`` prints them); re-exported.
from .catalog.domains import (COPPER_REACH, LECTURE, NVLINK_SIGNALLING, ROADMAP, Deployment,  # noqa: E402
                              Domain, deployments, domain_growth)


def lane_rate(system) -> float:
    """Bits per second one differential pair of the system's scale-up links carries, per direction:
    the per-direction bandwidth over NVLink's links and pairs (NVIDIA systems of NVLink 4 and 5)."""
    sys_ = _system(system)
    if sys_.chip.vendor != "NVIDIA" or sys_.chip.status != "shipping":
        raise ChalkError(f"system: lane rates are known for shipping NVIDIA systems, got {sys_.name}")
    pairs = NVLINK_SIGNALLING["links_per_gpu"] * NVLINK_SIGNALLING["pairs_per_link_direction"]
    return 8 * sys_.chip.scale_up_bandwidth / pairs


def torus_shape(system) -> tuple[int, int] | None:
    """(dimensions, longest side) of ``system``'s torus; None for a switched or fully connected
    domain (NVLink, Infinity Fabric). Google's ICI pods are tori: one without a published shape is
    an error."""
    sys_ = _system(system)
    name = f"torus-{sys_.name}"
    if name in domains.QUOTED:
        t = domains.quoted(name)
        return int(t["dims"]), int(t["side"])
    if sys_.chip.vendor == "Google":
        raise ChalkError(f"system: no published torus shape for {sys_.name}; known: "
                         f"{', '.join(n.removeprefix('torus-') for n in domains.QUOTED if n.startswith('torus-'))}")
    return None


def torus_share(system) -> float:
    """The share of a chip's scale-up bandwidth a uniform all-to-all gets on ``system``
    (``torus_alltoall_share``); 1 for a switched or fully connected domain."""
    shape = torus_shape(system)
    return 1.0 if shape is None else float(__torus_share()(*shape))


# --- the numeric forms ---------------------------------------------------------------------------
NUMERIC = {"EXPERTS_PER_CHIP": experts_per_chip_expr, "MAX_TOTAL_PARAMS": max_total_params_expr}
"""The formulas the catalog's tables evaluate (``chalk.catalog.domains``), written out as Python in
``catalog/moe_numeric.py`` (``numeric_source``) so that ``python -m chalk list deployments`` needs no SymPy."""


def numeric_source() -> str:
    """The text of ``catalog/moe_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.moe", NUMERIC, symbol_names(globals()),
                            "The formulas of ``chalk.moe`` that the catalog's tables evaluate, as "
                            "plain Python, so that ``python -m chalk list deployments`` needs no "
                            "SymPy.")


def layer_numeric_source() -> str:
    """The text of ``moe_layer_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.moe", layer_numeric_forms(), symbol_names(globals()),
                            "The formulas of an MoE layer ``chalk.moe`` evaluates as numbers "
                            "(``chalk.moe.layer_numeric_forms``), as plain Python, so that a kernel"
                            " evaluates them without simplifying or lambdifying.",
                            {"binomial": "from .moe import _binomial as binomial"})


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "catalog/moe_numeric.py")
    write_numeric(layer_numeric_source(), __file__, "moe_layer_numeric.py")
