"""Chapter 2: how a mixture-of-experts model is laid out over the chips of a scale-up domain.

Expert parallelism puts different routed experts on different chips. Every MoE layer then sends
each token's activation to the chips holding its k experts (dispatch) and brings the k results
back (combine): an all-to-all, twice per layer. The formulas below give the experts each chip
holds, the bytes and seconds of that all-to-all on scale-up and scale-out links, the compute it
must hide behind, the memory per chip, and how unevenly random routing loads the chips.

Link rates are per chip and per direction (``chalk.hardware``): in an all-to-all every chip sends
and receives at once, so its transfer time is the bytes it sends over its one-way bandwidth.
"""
import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from .catalog import hardware, models, systems
from .errors import ChalkError, in_range, lookup, non_negative, positive, positive_int
from .notation import (C, E, F, S, W, W_out, W_up, b_act, b_w, d_ff, d_model, k, n_exp, n_red, n_sh,
                       n_step, z_E)
from .roofline import HEADROOM, Replica

n_mat = models.n_mat
EXPERT_PARAMS = models.FFN_PARAMS
"""One expert: n_mat = 3 matrices d_model x d_ff when gated (SwiGLU), 2 otherwise."""

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
"""The part of those bytes that leaves the sender's domain: the crossing share of its choices.
Uniform routing; DeepSeek's node-limited routing, which sends a token once per node and fans it
out over NVLink, would cut this and is not modelled."""
scale_up_bytes = sp.factor(alltoall_bytes_expr - scale_out_bytes)
"""The rest, bound for the S - 1 other chips of the sender's own domain."""

t_alltoall_up = alltoall_bytes_expr / W_up
"""Seconds for the whole all-to-all inside one domain (E = S), at the per-direction scale-up rate."""
t_alltoall_out = alltoall_bytes_expr / W_out
"""The same bytes pushed through the chip's scale-out NIC instead."""

t_expert_compute = 2 * n_step * (k + n_sh) * n_mat * d_model * d_ff / F
"""Matmul seconds of the layer's experts with uniform routing: n_step tokens, each through k routed
and n_sh shared experts, 2 FLOPs per weight, on E chips whose FLOP/s add up to F."""

t_expert_weights = E * experts_per_chip_expr * n_mat * d_model * d_ff * b_w / W
"""Seconds for each chip to read its experts' weights once, W being the E chips' HBM together."""

comm_to_compute = sp.simplify(t_alltoall_up / t_expert_compute)
"""All-to-all time over expert matmul time. The token count cancels: whether the all-to-all hides
behind the matmuls depends on the link, the chip and the expert's width, not on the batch."""

experts_touched_expr = n_exp * (1 - (1 - k / n_exp) ** n_step)
"""Distinct routed experts a step of n_step tokens reads, each token picking k of n_exp uniformly:
each expert is missed by one token with probability 1 - k/n_exp, independently across tokens."""

imbalance_expr = 1 + z_E * sp.sqrt(E * (n_exp - k) / ((n_exp - 1) * n_step * k))
"""Busiest chip's routed load over the mean chip's, normal approximation (derived in
``imbalance_estimate``), for n_exp experts split evenly over E chips and uniform routing."""

max_total_params_expr = S * C / b_w
"""The most parameters whose weights fit in a domain of S chips of C usable bytes each."""

_ARGS = (n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out)
_max_ceiling = [{"ceiling": np.ceil}, "numpy"]
numeric = {name: sp.lambdify(_ARGS, expr, modules=_max_ceiling) for name, expr in {
    "alltoall_bytes": alltoall_bytes_expr, "scale_up_bytes": scale_up_bytes,
    "scale_out_bytes": scale_out_bytes, "t_alltoall_up": t_alltoall_up,
    "t_alltoall_out": t_alltoall_out, "t_expert_compute": t_expert_compute,
    "t_expert_weights": t_expert_weights, "comm_to_compute": comm_to_compute,
    "experts_touched": experts_touched_expr}.items()}
"""Vectorised NumPy versions, all taking the arguments in ``_ARGS`` order (see ``_values``)."""
_imbalance = sp.lambdify((n_step, E, k, n_exp, z_E), imbalance_expr, "numpy")
_experts_per_chip = sp.lambdify((n_exp, n_red, E), experts_per_chip_expr, modules=_max_ceiling)

LINKS = ("scale-up", "scale-out")


# --- inputs -------------------------------------------------------------------------------------
def _moe_model(model) -> models.Model:
    model = models.get(model) if isinstance(model, str) else model
    if not model.moe:
        moe_names = [m.name for m in models.catalog_models().values() if m.moe]
        raise ChalkError(f"model: {model.display} is dense (no routed experts); MoE models: "
                         f"{', '.join(moe_names)}")
    return model


def _system(system) -> systems.System:
    return systems.get(system) if isinstance(system, str) else system


def _redundant(redundant) -> int:
    if isinstance(redundant, bool) or not isinstance(redundant, (int, np.integer)) or redundant < 0:
        raise ChalkError(f"redundant must be a whole number >= 0, got {redundant!r}")
    return int(redundant)


def _values(model: models.Model, chips, *, tokens=1, domain=None, redundant=0, bytes_per_element=2,
            dtype="bf16", chip: hardware.Chip | None = None) -> tuple:
    """The arguments of ``numeric`` for a model on ``chips`` chips of ``chip``."""
    moe = model.moe
    flops = chips * chip.flops(dtype) if chip else np.nan
    hbm = chips * chip.hbm_bandwidth if chip else np.nan
    return (tokens, chips, domain or chips, moe["experts_per_token"], moe.get("n_shared_experts", 0),
            moe["n_routed_experts"], redundant, model.d_model, moe["d_ff_expert"],
            3 if model.ffn_gated else 2, bytes_per_element, hardware.bytes_per_weight(dtype),
            flops, hbm, chip.scale_up_bandwidth if chip else np.nan,
            chip.scale_out_bandwidth if chip else np.nan)


def _scalar(x):
    return float(x) if np.ndim(x) == 0 else x


# --- placement ----------------------------------------------------------------------------------
def experts_per_chip(model, chips, redundant=0) -> int:
    """The most routed experts (with redundant copies) any of ``chips`` chips holds."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    redundant = _redundant(redundant)
    return int(_experts_per_chip(model.moe["n_routed_experts"], redundant, chips))


def expert_params(model) -> float:
    """Parameters of one routed expert (one layer)."""
    model = _moe_model(model)
    return float(EXPERT_PARAMS.subs({n_mat: 3 if model.ffn_gated else 2, d_model: model.d_model,
                                     d_ff: model.moe["d_ff_expert"]}))


def routed_expert_params(model) -> float:
    """All routed experts of all MoE layers: the part of N_tot that expert parallelism shards."""
    model = _moe_model(model)
    return model.n_moe_layers * model.moe["n_routed_experts"] * expert_params(model)


@dataclass(frozen=True)
class Placement:
    """Memory of one chip when a model's routed experts are sharded over ``chips`` chips and
    everything else (attention, dense layers, shared experts, embeddings, routers) is copied on
    every chip, each chip holding the KV cache of its own share of the batch (data-parallel
    attention, as DeepSeek serves V3). Bytes are per chip."""
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
        """Most sequences of this context the chips together hold beside the weights (0 if none,
        inf at context 0)."""
        free = self.usable - self.weight_bytes
        if free <= 0:
            return 0
        if not self.kv_bytes_per_sequence:
            return math.inf
        return math.floor(free * self.chips / self.kv_bytes_per_sequence)


def placement(model, system, batch, context, dtype="bf16", chips=None, redundant=0,
              kv_bytes_per_element=2, headroom=HEADROOM) -> Placement:
    """Per-chip memory of ``model`` served by ``chips`` chips of ``system`` (all of them by default;
    the lecture uses 64 of an NVL72's 72), with ``batch`` sequences of ``context`` tokens."""
    model = _moe_model(model)
    sys_ = _system(system)
    chips = sys_.count if chips is None else positive_int("chips", chips)
    non_negative("batch", batch)
    non_negative("context", context)
    in_range("headroom", headroom, 0, 0.99)
    g = experts_per_chip(model, chips, redundant)
    b = hardware.bytes_per_weight(dtype)
    one_expert_all_layers = model.n_moe_layers * expert_params(model) * b
    replicated = (model.total_params - routed_expert_params(model)) * b
    rep = Replica(sys_.chip, model, hardware.dtype_name(dtype), chips,
                  float(positive("kv_bytes_per_element", kv_bytes_per_element)))
    per_sequence = float(rep.kv_bytes(1, context)) if context else 0.0
    return Placement(model, sys_.chip, chips, g, g * one_expert_all_layers, replicated,
                     float(batch) * per_sequence / chips, per_sequence, float(headroom))


def max_total_params(system, dtype="bf16", headroom=HEADROOM) -> float:
    """The most parameters whose weights fit in the system's HBM (no KV): N_tot bounded by domain size."""
    sys_ = _system(system)
    in_range("headroom", headroom, 0, 0.99)
    return float(max_total_params_expr.subs({S: sys_.count, C: sys_.chip.hbm_capacity * (1 - headroom),
                                             b_w: hardware.bytes_per_weight(dtype)}))


# --- all-to-all ---------------------------------------------------------------------------------
def alltoall_bytes(model, tokens, chips, bytes_per_element=2):
    """Bytes one chip sends per MoE layer (dispatch + combine), ``tokens`` spread over ``chips``."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    positive("tokens", tokens)
    positive("bytes_per_element", bytes_per_element)
    return _scalar(numeric["alltoall_bytes"](*_values(model, chips, tokens=np.asarray(tokens, float),
                                                     bytes_per_element=bytes_per_element)))


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
    return _scalar(numeric["t_alltoall_up" if name == "scale-up" else "t_alltoall_out"](*args))


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

    @property
    def communication(self) -> float:
        """Both links run at once, so the slower one sets the all-to-all time."""
        return max(self.scale_up, self.scale_out)

    @property
    def work(self) -> float:
        """The experts' roofline: matmuls and weight reads overlap."""
        return max(self.compute, self.weights)

    @property
    def hidden(self) -> bool:
        """True when the all-to-all can overlap entirely with the expert work."""
        return self.communication <= self.work


def layer_times(model, system, tokens, dtype="bf16", domains=1, bytes_per_element=2, redundant=0) -> LayerTimes:
    """The all-to-all and expert times of one MoE layer when its experts span ``domains`` copies of
    ``system`` (2 = two racks, about half of the tokens crossing the slow network)."""
    model = _moe_model(model)
    sys_ = _system(system)
    domains = positive_int("domains", domains)
    positive("tokens", tokens)
    positive("bytes_per_element", bytes_per_element)
    args = _values(model, sys_.count * domains, tokens=float(tokens), domain=sys_.count,
                   redundant=_redundant(redundant), bytes_per_element=bytes_per_element, dtype=dtype,
                   chip=sys_.chip)
    f = {name: float(numeric[name](*args)) for name in ("scale_up_bytes", "scale_out_bytes",
                                                         "t_expert_compute", "t_expert_weights")}
    return LayerTimes(f["scale_up_bytes"] / sys_.chip.scale_up_bandwidth,
                      f["scale_out_bytes"] / sys_.chip.scale_out_bandwidth,
                      f["t_expert_compute"], f["t_expert_weights"])


# --- routing and load balance -------------------------------------------------------------------
def expected_experts_touched(model, tokens):
    """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens, uniform routing.

    At small batch an MoE does not read every expert: Chapter 1's weight-read term N_tot b_w
    is then too high, and this says by how much."""
    model = _moe_model(model)
    non_negative("tokens", tokens)
    return _scalar(numeric["experts_touched"](*_values(model, 1, tokens=np.asarray(tokens, float))))


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
    return _scalar(_imbalance(np.asarray(tokens, float), chips, kk, n, expected_max_standard_normal(chips)))


@dataclass(frozen=True)
class Routing:
    """Loads from simulated routing of one MoE layer, ``trials`` steps of ``tokens`` tokens."""
    chip_loads: np.ndarray
    """token choices each chip received, shape (trials, chips)"""
    copy_loads: np.ndarray
    """token choices each expert copy received, shape (trials, copies)"""
    experts_touched: np.ndarray
    """distinct routed experts chosen in each trial"""

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


def simulate_routing(model, chips, tokens, redundant=0, skew=0.0, trials=16, seed=0) -> Routing:
    """Route ``tokens`` tokens, each to k distinct experts of the model's n_exp, over ``chips``.

    Each token draws its k experts without replacement with probabilities ``_popularity(skew)``
    (Gumbel top-k; ``skew=0`` is uniform routing). ``redundant`` extra copies go to the most
    popular experts; a token routed to an expert with copies picks one at random. Copies are placed
    on chips by expected load (``_place``)."""
    model = _moe_model(model)
    chips = positive_int("chips", chips)
    tokens = positive_int("tokens", tokens)
    redundant = _redundant(redundant)
    trials = positive_int("trials", trials)
    in_range("skew", skew, 0, 4)
    n, kk = model.moe["n_routed_experts"], model.moe["experts_per_token"]
    pop = _popularity(n, skew)
    copies_of = np.ones(n, int)
    for extra in range(redundant):
        copies_of[extra % n] += 1  # experts are indexed by popularity rank
    owner = np.repeat(np.arange(n), copies_of)
    copy_chip = _place(pop[owner] / copies_of[owner], chips)
    first_copy = np.concatenate([[0], np.cumsum(copies_of)[:-1]])
    rng = np.random.default_rng(seed)
    log_pop = np.log(pop)
    chip_loads, copy_loads, touched = [], [], []
    for _ in range(trials):
        counts = np.zeros(n, int)
        for start in range(0, tokens, 4096):
            rows = min(4096, tokens - start)
            keys = log_pop + rng.gumbel(size=(rows, n))
            picks = np.argpartition(-keys, kk - 1, axis=1)[:, :kk]
            counts += np.bincount(picks.ravel(), minlength=n)
        per_copy = np.zeros(len(owner))
        for e in range(n):
            r = copies_of[e]
            per_copy[first_copy[e]:first_copy[e] + r] = (rng.multinomial(counts[e], np.full(r, 1 / r))
                                                         if r > 1 else counts[e])
        copy_loads.append(per_copy)
        chip_loads.append(np.bincount(copy_chip, weights=per_copy, minlength=chips))
        touched.append(np.count_nonzero(counts))
    return Routing(np.array(chip_loads), np.array(copy_loads), np.array(touched))
