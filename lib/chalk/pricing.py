"""What a provider's public prices imply about its serving (Chapter 6).

Reading prices backwards, each with its convention:

* Decode MFU from the output/input price ratio. Prices are taken proportional to chip-time per
  token; prefill runs at the compute roofline (2 N_act / F per token) and decode at MFU eta_c
  (2 N_act / (eta_c F)). Then p_out / p_in = 1 / eta_c: decode's MFU relative to prefill's, not
  an absolute one. An operator that publishes its throughput per node for both passes gives the
  same ratio measured (``operator_chip_time_ratio``), to set beside its prices.
* KV bytes per token from a long-context price step: the step is read as Chapter 1's balance
  context L* (``roofline.balance_context``: beyond it KV reads outlast the step's compute at any
  batch), solved for b_kv = 2 N_act / (r L*) + W f_att / F_att. The second term is new with the
  second edition of Chapter 1: a model whose attention does f_att FLOPs per cached token (MLA
  does ~240 per KV byte) needs that many more bytes for the same step. In the lecture's
  convention r is F/W at BF16 (its "≈300") and the matmuls run in the weights' format at 2/b_w
  times that rate: b_kv = N_act b_w / (r L*) + f_att / r, the lecture's N_act / (r L*) with FP8
  weights and negligible attention FLOPs.
* The storage tier behind a cache duration. Holding X bytes for T seconds in a tier costs its
  price per byte-second p_hold times X T for the capacity, plus p_hold X C / W for reading it back
  (the share of the device's life the read occupies): p_hold X (T + C/W), a line in T whose
  intercept is set by the drain time C/W. The cheapest tier for a hold time is on the lower
  envelope of these lines, and consecutive tiers trade places at break-even hold times, the
  cousin of Gray and Putzolu's five-minute rule. Recomputing the prefill instead costs the same
  at any T: past some hold time every tier loses to rematerialisation.
* The GPUs that wait for a reload. Rent alone leaves out that the serving GPUs sit idle while a
  cache held off them comes back: n_chips p_chip / W_reload per byte, where W_reload is the
  slower of the tier's bandwidth and the GPUs' own links to it (their scale-out links, n_chips
  W_out; PCIe to host memory is of the same order on HGX servers). The term adds to each slower
  tier's intercept, not its slope, so the envelope stays a walk over lines (``wait=True`` in
  ``hold_costs``, ``tier_envelope``, ``cheapest_tier`` and ``rematerialise_after``): HBM keeps
  the cache for seconds instead of milliseconds, and a tier whose reload alone costs more than a
  prefill (one hard disk) never wins.
* Graph C like for like: output tokens are priced against decode's cost per token and input
  tokens against prefill's, each at the batch that fits beside the weights, and a two-tier price
  against the mean cost per token over the contexts each tier covers (``tier_costs``), since the
  price below the step is charged for every context from 1 token to the step.
"""
import math
from dataclasses import dataclass, field, replace
from functools import cache

import numpy as np
import sympy as sp

from . import calculator, catalog, operator, roofline
from .catalog import hardware, models, operators, prices, systems, tiers
from .catalog.quoted import USD_PER_CHIP_HOUR
from .errors import ChalkError, in_range, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import (C, F, F_att, L, L_star, N_act, T_hold, W, W_out, b_kv, b_w, eta_c, f_att, n_chips, p_chip, p_hold,
                       p_in, p_out, r)

# Solved and lambdified forms are built on first use (``chalk.lazy``): `import chalk` imports this
# module, and kv_bytes_from_step would otherwise build roofline's balance context at every import.
_derived = Lazy(__name__)

# --- formulas -------------------------------------------------------------------------------
# Both passes are priced by their weight matmuls, at short context where attention is negligible.
_prefill_time = roofline.t_matmul.subs(roofline.B, 1)
_decode_time = _prefill_time.subs(F, eta_c * F)


@_derived
def _decode_mfu_expr():
    """eta_c = p_in / p_out: decode MFU implied by the ratio of output to input price."""
    return sp.solve(sp.Eq(p_out / p_in, _decode_time / _prefill_time), eta_c)[0]


@_derived
def _kv_bytes_from_step():
    """b_kv = 2 N_act / (r L*) + W f_att / F_att: KV bytes per token implied by a step at L*, with r = F/W
    in the weights' format and attention at F_att."""
    return sp.expand(sp.solve(sp.Eq(L_star, roofline.balance_context), b_kv)[0])


@_derived
def _kv_bytes_lecture_convention():
    """b_kv = N_act b_w / (r L*) + f_att / r with r = F/W at BF16 (the lecture's ≈300), the matmuls at
    2/b_w times the BF16 rate and attention at the BF16 rate."""
    return sp.expand(_kv_bytes_from_step().subs({r: 2 * r / b_w, F_att: r * W}, simultaneous=True))


@_derived
def _attention_crossover():
    """L where a decode token's attention FLOPs take as long as its weight matmuls: 2 N_act F_att / (f_att F)."""
    return sp.solve(sp.Eq(roofline.t_matmul, roofline.t_attn), L)[0]


drain_time = C / W
"""Seconds to read a whole tier once."""

hold_cost = p_hold * (T_hold + drain_time)
"""Dollars per byte to hold a cache for T_hold in a tier and read it back once (the tier's rent)."""

reload_wait = n_chips * (p_chip / 3600) / sp.Min(W, n_chips * W_out)
"""Dollars per byte of the GPUs that wait while a cache comes back from a tier: the replica's
n_chips at p_chip per hour, for the byte's time over the slower of the tier's bandwidth W and the
chips' links n_chips W_out."""

hold_cost_waiting = hold_cost + reload_wait
"""Dollars per byte to hold a cache off the GPUs and reload it once, the GPUs' wait included."""



@_derived
def _break_even_hold():
    """Hold time at which two tiers (unprimed and primed) cost the same."""
    return sp.solve(sp.Eq(hold_cost, hold_cost.subs({p_hold: sp.Symbol("p'", positive=True),
                                                     C: sp.Symbol("C'", positive=True),
                                                     W: sp.Symbol("W'", positive=True)})), T_hold)[0]


tier_mismatch = sp.Abs(sp.log(drain_time / T_hold))
"""How far a tier's drain time is from the hold time, on a log scale (0 = a perfect match)."""



@_derived
def __hold_cost():
    return _numeric().hold_cost


@_derived
def __reload_wait():
    return _numeric().reload_wait


@_derived
def __mismatch():
    return _numeric().mismatch


@_derived
def __kv_lecture():
    return _numeric().kv_lecture


@_derived
def __decode_mfu():
    return _numeric().decode_mfu


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir


# --- the contract ---------------------------------------------------------------------------
def kv_bytes_from_crossover(crossover_tokens, active_params, intensity, *, flops_per_param=2,
                            bytes_per_weight=1, attention_flops_per_token=0) -> float:
    """KV bytes per token at which a step's KV reads take as long as its compute at
    ``crossover_tokens`` of context (the balance context L*).

    ``intensity`` is r = F/W at BF16, the lecture's "≈300" FLOP per byte. With the defaults (2 FLOPs
    per parameter, FP8 weights whose matmuls run at twice the BF16 rate, attention FLOPs neglected)
    this is the lecture's N_act / (r L*). BF16 weights (``bytes_per_weight=2``) double it; counting
    one multiply per parameter (``flops_per_param=1``) halves it; ``attention_flops_per_token``
    (f_att, run at the BF16 rate) adds f_att / r.
    """
    positive("crossover_tokens", crossover_tokens)
    positive("active_params", active_params)
    positive("intensity", intensity)
    positive("flops_per_param", flops_per_param)
    positive("bytes_per_weight", bytes_per_weight)
    non_negative("attention_flops_per_token", attention_flops_per_token)
    # 2 N_act in the roofline is the FLOPs of one token: flops_per_param N_act in general.
    n_equiv = active_params * flops_per_param / 2
    return float(__kv_lecture()(n_equiv, intensity, crossover_tokens, bytes_per_weight, attention_flops_per_token))


def decode_mfu_from_prices(input_price, output_price) -> float:
    """Decode MFU relative to prefill, p_in / p_out, when both prices track chip-time per token."""
    positive("input_price", input_price)
    positive("output_price", output_price)
    return float(__decode_mfu()(input_price, output_price))


# --- an operator that published both its prices and its throughput ---------------------------
def operator_chip_time_ratio(name=operator.DEEPSEEK, cache_misses_only=False) -> float:
    """GPU-time of one output token over one input token's, from an operator's published
    throughput per node in prefill (input tokens) and in decode (output tokens): the ratio
    p_out / p_in would be if prices followed chip-time. The published prefill rate counts cache
    hits too; with ``cache_misses_only`` a hit is taken to cost no prefill, so the nodes' time is
    shared by the misses alone (``operator.cache_hit_share``)."""
    op = operators.get(name)
    misses = 1 - operator.cache_hit_share(name) if cache_misses_only else 1.0
    return op.prefill_tokens_per_second_per_node * misses / op.decode_tokens_per_second_per_node


# --- deductions from one price entry ---------------------------------------------------------
@dataclass(frozen=True)
class Deduction:
    """A number read off prices, the formula it came from, and the real figure where we have one."""
    quantity: str
    value: float
    formula: sp.Expr
    inputs: dict = field(default_factory=dict)
    actual: float | None = None
    actual_label: str = ""


def _price(price):
    return prices.get(price) if isinstance(price, str) else price


def _model(model):
    return models.get(model) if isinstance(model, str) else model


def implied_decode_mfu(price) -> Deduction:
    price = _price(price)
    return Deduction("decode MFU relative to prefill", decode_mfu_from_prices(price.input, price.output),
                     _decode_mfu_expr(), {"p_in": price.input, "p_out": price.output})


def _step(price):
    if not price.long_context:
        raise ChalkError(f"price: {price.name} has no long-context price step to read")
    return price.long_context["above_tokens"]


def typed_price(input, output, *, cache_read=None, cache_write_5m=None, cache_write_1h=None,
                step_context=None, step_input=None, step_output=None) -> prices.Price:
    """A price entry from numbers typed in rather than read from the catalog: USD per million tokens
    for input, output and each cache price given, and a long-context step as the context it starts
    above with its input and output multipliers (all three, or none)."""
    positive("input", input)
    positive("output", output)
    if float(output) < float(input):
        raise ChalkError(f"output: an output price below the input price ({output:g} < {input:g} USD per Mtok) is "
                         "no published list; check the order of --input and --output")
    cached = {key: float(positive(key, value)) for key, value in
              (("cache_read", cache_read), ("cache_write_5m", cache_write_5m), ("cache_write_1h", cache_write_1h))
              if value is not None}
    if cached.get("cache_read", 0) > float(input):
        raise ChalkError(f"cache_read: a cache hit dearer than the input it replaces ({cached['cache_read']:g} > "
                         f"{input:g} USD per Mtok) would never be bought; it must be at most the input price")
    step = {"step_context": step_context, "step_input": step_input, "step_output": step_output}
    long_context = None
    if any(v is not None for v in step.values()):
        missing = [k for k, v in step.items() if v is None]
        if missing:
            raise ChalkError(f"{missing[0]}: a price step needs its context and both multipliers "
                             "(step_context, step_input, step_output)")
        long_context = {"above_tokens": positive_int("step_context", step_context),
                        "input": float(input) * float(positive("step_input", step_input)),
                        "output": float(output) * float(positive("step_output", step_output))}
    return prices.Price(name="typed-in", provider="typed-in", model="prices", input=float(input),
                        output=float(output), source="typed in", as_of="", long_context=long_context, **cached)


def implied_kv_bytes_lecture(price, active_params, target="H100-SXM", dtype="fp8") -> Deduction:
    """b_kv = N_act b_w / (r L*) read off ``price``'s step in the lecture's form: a guessed number of
    active parameters, r = F/W of ``target``'s chip at BF16, weights in ``dtype`` (b_w bytes, the
    matmuls at 2/b_w times the BF16 rate) and attention FLOPs neglected."""
    price = _price(price)
    step = _step(price)
    hw = systems.system_or_chip(target, param="target")
    chip = hw.chip if isinstance(hw, systems.System) else hw
    ratio, b = chip.intensity("bf16"), hardware.bytes_per_weight(dtype)
    value = kv_bytes_from_crossover(step, active_params, ratio, bytes_per_weight=b)
    return Deduction("KV bytes per token, lecture's form", value, _kv_bytes_lecture_convention().subs(f_att, 0),
                     {"N_act": float(active_params), "b_w": b, "r": ratio, "L*": step})


def implied_kv_bytes_per_token(price, model, target="H100-SXM", dtype="bf16", kv_bytes_per_element=2) -> Deduction:
    """b_kv implied by ``price``'s long-context step for ``model`` served on ``target`` in ``dtype``,
    counting the model's own attention FLOPs per cached token at the chip's BF16 rate."""
    price, model = _price(price), _model(model)
    step = _step(price)
    hw = systems.system_or_chip(target, param="target")
    rep = roofline.replica(hw.chip if isinstance(hw, systems.System) else hw, model, dtype,
                           hw.count if isinstance(hw, systems.System) else 1, kv_bytes_per_element)
    n_act, _, _, _, flops, bw, f, f_rate, *_ = rep.params()
    inputs = {N_act: n_act, r: flops / bw, L_star: step, W: bw, f_att: f, F_att: f_rate}
    value = float(_kv_bytes_from_step().subs(inputs))
    return Deduction("KV bytes per token", value, _kv_bytes_from_step(),
                     {"N_act": n_act, "r": flops / bw, "L*": step, "W": bw, "f_att": f, "F_att": f_rate},
                     actual=model.kv_bytes_per_token(kv_bytes_per_element),
                     actual_label=f"{model.display} from its config")


CACHE_HOLDS = {"cache_write_5m": 300.0, "cache_write_1h": 3600.0}
"""Seconds a cache is held for each cache-write price field."""


def tier_for_hold(hold_seconds: float, target="H100-SXM") -> tiers.Tier:
    """The lecture's rule of thumb: the tier whose drain time C/W is nearest ``hold_seconds`` on a
    log scale. ``cheapest_tier`` is the cost rule it approximates."""
    positive("hold_seconds", hold_seconds)
    return min(tiers.tiers_with_hbm(target), key=lambda t: __mismatch()(t.capacity, t.bandwidth, hold_seconds))


def implied_cache_tier(hold_seconds: float, target="H100-SXM") -> Deduction:
    tier = cheapest_tier(hold_seconds, target)
    return Deduction("storage tier", tier.drain_time, drain_time, {"T_hold": hold_seconds, "tier": tier.display})


MIN_ACTIVE_PARAMS = 1e8
"""The smallest active-parameter count taken for a served model (GPT-2 small has 124M): below it the
number is a slip (70 instead of 70e9), not a model."""


def check_active_params(active_params) -> None:
    """None, or a parameter count a served model could have (``MIN_ACTIVE_PARAMS`` to 1e14)."""
    if active_params is not None:
        in_range("active_params", active_params, MIN_ACTIVE_PARAMS, 1e14)


def deduce(price, model=None, target="H100-SXM", dtype="bf16", active_params=None) -> list[Deduction]:
    """Everything this module reads off one price entry (a catalog name or ``typed_price``): the
    decode MFU; with a step, the KV bytes per token in the lecture's form for ``active_params``
    and from ``model``'s own shapes; the storage tier behind each cache write's hold."""
    price = _price(price)
    check_active_params(active_params)
    out = [implied_decode_mfu(price)]
    if price.long_context and active_params is not None:
        out.append(implied_kv_bytes_lecture(price, active_params, target, dtype))
    if price.long_context and model is not None:
        out.append(implied_kv_bytes_per_token(price, model, target, dtype))
    out += [implied_cache_tier(hold, target) for key, hold in CACHE_HOLDS.items()
            if getattr(price, key) is not None]
    return out


def fast_tier_batches(price) -> tuple[float, float] | None:
    """(normal, fast) batch / B* implied by a fast tier's speed-up and price (``roofline.fast_mode``)."""
    price = _price(price)
    if price.fast_speedup is None:
        return None
    return roofline.fast_mode(price.fast_speedup, price.fast_multipliers[1])


def cache_multipliers(price) -> dict[str, float]:
    """Each published cache price over the base input price (read, 5-minute write, 1-hour write)."""
    price = _price(price)
    return {key: price.ratio(key) for key in ("cache_read", "cache_write_5m", "cache_write_1h")
            if getattr(price, key) is not None}


# --- KV bytes per token by attention design --------------------------------------------------
@dataclass(frozen=True)
class KVRow:
    model: str
    design: str
    kv_bytes_per_token: float
    """b_kv once every sliding window is full (full-attention layers, shared caches counted once)"""
    attention_flops_per_token: float
    """f_att, decode FLOPs per cached token"""
    balance_context: float
    """L* on the table's chip and format (inf: attention FLOPs outlast the KV reads)"""


def kv_table(target="H100-SXM", dtype="fp8", kv_bytes_per_element=2, share: dict | None = None) -> list[KVRow]:
    """b_kv, f_att and L* for every catalog model, smallest b_kv first. ``share`` maps a model name to a
    cross-layer KV-sharing factor to apply (a design no catalog model uses: a variant, named so)."""
    hw = systems.system_or_chip(target, param="target")
    chip = hw.chip if isinstance(hw, systems.System) else hw
    chips = hw.count if isinstance(hw, systems.System) else 1
    variants = [(name, m) for name, m in models.catalog_models().items() if m.checkpoint_of is None]
    for name, g in (share or {}).items():
        base = models.get(name)
        variants.append((f"{base.name} with KV shared by {positive_int('share', g)} layers", replace(base, kv_share=g)))
    rows = []
    for name, m in variants:
        rep = roofline.replica(chip, m, dtype, chips, kv_bytes_per_element)
        rows.append(KVRow(name, m.attention_kind, m.kv_bytes_per_token(kv_bytes_per_element),
                          m.attention_flops_per_cached_token(), rep.balance_context()))
    return sorted(rows, key=lambda row: row.kv_bytes_per_token)


ATTENTION_FORMS = ("decode", "prefill")
"""How attention's FLOPs per cached token are counted: as decode kernels run it (MLA with its
up-projections absorbed, ``Model.attention_flops_per_cached_token``) or as prefill kernels run it
(every head's full keys and values, ``Model.forward_flops_per_token``). The two differ only for MLA."""

_LONG = 2.0 ** 24
"""A context past every sliding window, where one more cached token adds only global layers' work."""


def prefill_attention_flops_per_cached_token(model) -> float:
    """f_att counted as prefill runs attention (un-absorbed MLA): what one more earlier token adds
    to a new token's forward FLOPs, past every sliding window."""
    model = _model(model)
    return (model.forward_flops_per_token(2 * _LONG) - model.forward_flops_per_token(_LONG)) / _LONG


def attention_crossover_context(model, target="H100-SXM", dtype="fp8", form="decode") -> float:
    """Context at which one new token's attention FLOPs take as long as its weight matmuls
    (attention at the chip's BF16 rate, matmuls in ``dtype``), attention counted in ``form``
    (``ATTENTION_FORMS``). Sliding-window layers add a bounded term, counted at the context found
    (one correction step is exact once every window is full); a model with no full-attention
    layer never crosses (inf). A prompt of P tokens crosses at twice this: its tokens see P/2
    earlier tokens on average."""
    model = _model(model)
    if form not in ATTENTION_FORMS:
        raise ChalkError(f"form must be one of {ATTENTION_FORMS}, got {form!r}")
    hw = systems.system_or_chip(target, param="target")
    rep = roofline.replica(hw.chip if isinstance(hw, systems.System) else hw, model, dtype,
                           hw.count if isinstance(hw, systems.System) else 1)
    n_act, _, _, _, flops, _, f, f_rate, *_ = rep.params()
    if form == "prefill":
        f = prefill_attention_flops_per_cached_token(model)
    if f == 0:
        return math.inf
    budget = 2 * n_act * f_rate / flops  # attention FLOPs (at F_att) that take as long as the matmuls
    crossing = float(_attention_crossover().subs({N_act: n_act, F: flops, F_att: f_rate, f_att: f}))
    windowed = model.attention_flops_windowed(crossing)
    if windowed:
        crossing = (budget - windowed) / f
        if crossing < (model.sliding_window or 0):
            raise ChalkError(f"model: {model.display}'s windowed layers alone match its matmuls before the "
                             "windows fill; the crossing is not linear there")
    return crossing


# --- sparse attention -----------------------------------------------------------------------
SPARSE_ATTENTION = "deepseek-v32-sparse-attention"
"""DeepSeek Sparse Attention's published shapes (``data/quoted.toml``)."""


@cache
def sparse_attention_config() -> dict:
    return dict(catalog.load("quoted.toml")[SPARSE_ATTENTION])


@dataclass(frozen=True)
class AttentionWork:
    """What one decode token's attention does over its cached context, all layers."""
    flops: float
    kv_bytes: float
    """bytes of KV cache (and indexer keys) the token reads"""


FP8_SCALE_BLOCK = 128
"""Elements sharing one FP32 scale in DeepSeek-V3.2's FP8 caches: the MLA latent in FlashMLA's "FP8
with scale" format (github.com/deepseek-ai/FlashMLA README, 2025-09-29: 512 FP8 values, 4 FP32 scales,
64 BF16 RoPE values, 656 bytes per token per layer) and the indexer keys (DeepSeek-V3.2-Exp
inference/model.py: ``k_cache`` in FP8, ``k_scale_cache`` one FP32 per block of 128)."""
_FP32, _BF16 = hardware.BYTES_PER_ELEMENT["fp32"], hardware.BYTES_PER_ELEMENT["bf16"]


def v32_fp8_cache_bytes_per_token(model) -> float:
    """Bytes per cached token, all attention layers, of an MLA cache stored as DeepSeek-V3.2 stores
    it for its sparse decode: the latent in FP8 with one FP32 scale per ``FP8_SCALE_BLOCK`` elements,
    the RoPE key kept in BF16 (656 bytes a layer for DeepSeek-V3's shapes)."""
    model = _model(model)
    if not model.mla:
        raise ChalkError(f"model: the V3.2 FP8 cache format is an MLA format; {model.display} is {model.attention_kind}")
    latent, rope = model.mla["kv_lora_rank"], model.mla["rope_head_dim"]
    return model.n_attention_layers * (latent + latent / FP8_SCALE_BLOCK * _FP32 + rope * _BF16)


SPARSE_DESIGNS = (False, "dsa", "nsa")
"""Decode attention designs ``decode_attention_work`` models: dense, DeepSeek Sparse Attention
(V3.2; ``True`` names it too) and Native Sparse Attention."""

NSA = {"compress_block": 32, "compress_stride": 16, "select_block": 64, "select_blocks": 16, "window": 512,
       "source": "https://arxiv.org/abs/2502.11089", "as_of": "2025-02-16"}
"""Native Sparse Attention's published hyperparameters (Yuan et al. 2025, section 4.1): compression
blocks of l = 32 tokens at stride d = 16, n = 16 selected blocks of l' = 64 tokens, a window of
w = 512 tokens. (Kept here until ``data/quoted.toml`` carries them beside DSA's.)"""


def nsa_tokens_read(context) -> float:
    """Tokens' worth of keys and values one NSA decode step reads at ``context`` cached tokens: at
    most floor((L - l)/d) compressed tokens, n l' selected ones and w in the window, each capped by
    the context (Yuan et al. 2025, section 5.2: compression grows with L at a slope 1/d)."""
    L_ = float(non_negative("context", context))
    compressed = max(math.floor((L_ - NSA["compress_block"]) / NSA["compress_stride"]), 0)
    return compressed + min(L_, NSA["select_block"] * NSA["select_blocks"]) + min(L_, NSA["window"])


def decode_attention_work(model, context, sparse=False, kv_bytes_per_element=2, v32_fp8=False) -> AttentionWork:
    """Attention FLOPs and KV bytes of one decode token at ``context`` cached tokens, for a design in
    ``SPARSE_DESIGNS``.

    Dense: f_att and b_kv per cached token (sliding windows counted exactly). DSA (DeepSeek Sparse
    Attention): an FP8 indexer scores every cached token in every attention layer (2 x heads x width
    FLOPs, its keys read), then the model's own attention runs on the top k only. NSA: attention
    runs on ``nsa_tokens_read`` tokens' worth of the cache (compressed, selected and windowed keys
    read at the model's b_kv each, the selection scored on the compressed branch). Sparse designs are
    modelled for models whose attention layers are all global. ``v32_fp8`` stores the cache as
    DeepSeek-V3.2 does (``v32_fp8_cache_bytes_per_token``) and counts the indexer keys' FP32 scales:
    like for like, dense and sparse, instead of ``kv_bytes_per_element`` everywhere."""
    model = _model(model)
    L_ = float(non_negative("context", context))
    design = "dsa" if sparse is True else sparse
    if design not in SPARSE_DESIGNS:
        raise ChalkError(f"sparse must be one of {SPARSE_DESIGNS} (True for 'dsa'), got {sparse!r}")
    per_token = v32_fp8_cache_bytes_per_token(model) if v32_fp8 else model.kv_bytes_per_token(kv_bytes_per_element)
    if not design:
        windowed = model.kv_bytes(L_, kv_bytes_per_element) - model.kv_bytes_per_token(kv_bytes_per_element) * L_
        return AttentionWork(model.attention_flops_per_cached_token() * L_ + model.attention_flops_windowed(L_),
                             float(per_token * L_ + windowed))
    if model.sliding_window:
        raise ChalkError(f"model: sparse attention is modelled on global attention layers only; "
                         f"{model.display} has sliding-window layers")
    if design == "nsa":
        read = nsa_tokens_read(L_)
        return AttentionWork(model.attention_flops_per_cached_token() * read, per_token * read)
    q = sparse_attention_config()
    layers, attended = model.n_attention_layers, min(L_, q["index_top_k"])
    key_bytes = q["index_head_dim"] * q["index_key_bytes"]
    if v32_fp8:
        key_bytes += q["index_head_dim"] / FP8_SCALE_BLOCK * _FP32
    index_flops = 2 * q["index_heads"] * q["index_head_dim"] * layers * L_
    return AttentionWork(index_flops + model.attention_flops_per_cached_token() * attended,
                         key_bytes * layers * L_ + per_token * attended)


def growth_exponent(model, context, sparse=False, quantity="kv_bytes", v32_fp8=False) -> float:
    """d ln(work) / d ln(L) between ``context`` and twice it: 1 for a term linear in L, 0.5 for sqrt(L)."""
    positive("context", context)
    if quantity not in ("kv_bytes", "flops"):
        raise ChalkError(f"quantity must be 'kv_bytes' or 'flops', got {quantity!r}")
    low, high = (getattr(decode_attention_work(model, x, sparse, v32_fp8=v32_fp8), quantity) for x in (context, 2 * context))
    return math.log2(high / low)


# --- cost per token against context (graph C) -------------------------------------------------
@dataclass(frozen=True)
class ContextCost:
    """Chapter 1's bound per token of one pass (decode or prefill) over a range of contexts, NaN
    where not one sequence of that context fits beside the weights."""
    context: np.ndarray
    compute: np.ndarray
    """seconds of chip time per token for the matmuls and attention"""
    memory: np.ndarray
    """seconds of chip time per token for the weight and KV reads"""
    batch: np.ndarray
    """sequences per pass at each context"""
    chips: int
    usd_per_chip_hour: float

    @property
    def usd_per_million_tokens(self) -> np.ndarray:
        return 1e6 * np.maximum(self.compute, self.memory) * self.chips * self.usd_per_chip_hour / 3600

    @property
    def relative(self) -> np.ndarray:
        """Cost per token over its value at the first context."""
        cost = np.maximum(self.compute, self.memory)
        return cost / cost[0]

    @property
    def kink(self) -> float:
        """Context at which the reads overtake the compute: between the last point where they do not
        and the first where they do, interpolated linearly in log(memory / compute) against log(L);
        the first context if they outlast it there already, inf if nowhere in the range."""
        over = np.flatnonzero(self.memory > self.compute)
        if not over.size:
            return math.inf
        i = int(over[0])
        if i == 0 or self.context[i - 1] <= 0:
            return float(self.context[i])
        x = np.log(self.context[i - 1:i + 1])
        y = np.log(self.memory[i - 1:i + 1] / self.compute[i - 1:i + 1])
        return float(np.exp(x[0] - y[0] * (x[1] - x[0]) / (y[1] - y[0])))


def _replica_on(model, target, dtype, kv_bytes_per_element=2) -> roofline.Replica:
    hw = systems.system_or_chip(target, param="target")
    return roofline.replica(hw.chip if isinstance(hw, systems.System) else hw, model, dtype,
                            hw.count if isinstance(hw, systems.System) else 1, kv_bytes_per_element)


def _contexts(contexts) -> np.ndarray:
    contexts = np.asarray(non_negative("contexts", np.asarray(contexts, dtype=float)))
    if contexts.ndim != 1 or contexts.size == 0:
        raise ChalkError(f"contexts must be a non-empty list of token counts, got {contexts!r}")
    return contexts


def _fitting(rep: roofline.Replica, contexts: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``wanted`` sequences per pass, cut to what fits beside the weights (``Replica.max_batch``);
    NaN where not one fits. Raises DoesNotFit if the weights alone do not."""
    most = np.array([rep.max_batch(x) for x in contexts])
    batch = np.minimum(wanted, most)
    return np.where(batch >= 1, batch, np.nan)


def cost_against_context(model, target, contexts, batch, dtype="fp8", kv_bytes_per_element=2,
                         usd_per_chip_hour=USD_PER_CHIP_HOUR, fit=True) -> ContextCost:
    """Graph C: compute and memory time per decode (output) token against context, ``batch``
    sequences per step or, with ``fit``, as many of them as fit beside the weights at that context
    (``Replica.max_batch``, the library's headroom kept free): past that point the batch shrinks
    as 1/L and the weights weigh again. ``fit=False`` is the bandwidth bound the lecture draws,
    whether or not the sequences fit; as its batch grows its kink tends to L*."""
    rep = _replica_on(model, target, dtype, kv_bytes_per_element)
    contexts = _contexts(contexts)
    positive("batch", batch)
    positive("usd_per_chip_hour", usd_per_chip_hour)
    if not isinstance(fit, bool):
        raise ChalkError(f"fit must be True or False, got {fit!r}")
    b = np.full(contexts.shape, float(batch))
    if fit:
        b = _fitting(rep, contexts, b)
    p = rep.params(contexts)
    with np.errstate(invalid="ignore"):
        times = {k: np.broadcast_to(roofline.numeric[k](b, contexts, *p), contexts.shape) / b
                 for k in ("t_compute", "t_mem")}
    return ContextCost(contexts, times["t_compute"], times["t_mem"], b, rep.chips, float(usd_per_chip_hour))


PREFILL_TOKENS = 16_384
"""New tokens one prefill pass carries: prompts shorter than this share a pass (batched or chunked
prefill), so that a short prompt's prefill is compute-bound as a long one's is."""


def prefill_cost_against_context(model, target, prompts, dtype="fp8", kv_bytes_per_element=2,
                                 usd_per_chip_hour=USD_PER_CHIP_HOUR, tokens_per_pass=PREFILL_TOKENS) -> ContextCost:
    """Compute and memory time per input token of prefilling prompts of each length in ``prompts``
    (``calculator.prefill``): ceil(tokens_per_pass / P) prompts of P tokens per pass, as many as fit.
    Past the knee of graph D the pass is compute-bound and its cost per token grows only through
    attention, each token attending to the P/2 tokens before it on average."""
    rep = _replica_on(model, target, dtype, kv_bytes_per_element)
    prompts = _contexts(prompts)
    if np.any(prompts < 1):
        raise ChalkError(f"prompts must be at least 1 token, got {prompts.min():g}")
    positive_int("tokens_per_pass", tokens_per_pass)
    positive("usd_per_chip_hour", usd_per_chip_hour)
    b = _fitting(rep, prompts, np.ceil(tokens_per_pass / prompts))
    compute, memory = np.full(prompts.shape, np.nan), np.full(prompts.shape, np.nan)
    for i, (prompt, batch) in enumerate(zip(prompts, b)):
        if np.isfinite(batch):
            pt = calculator.prefill(rep.model, rep.chip, batch, int(prompt), dtype=dtype, chips=rep.chips,
                                    kv_bytes_per_element=kv_bytes_per_element, usd_per_chip_hour=usd_per_chip_hour)
            compute[i], memory[i] = (x / (batch * prompt) for x in (pt.t_compute, pt.t_weights + pt.t_kv))
    return ContextCost(prompts, compute, memory, b, rep.chips, float(usd_per_chip_hour))


@dataclass(frozen=True)
class TierCosts:
    """Mean cost per token below and above a price step, contexts spread evenly over each tier."""
    step: float
    top: float
    """the longest context above the step: the model's published maximum"""
    decode: tuple[float, float]
    """USD per million output tokens, (below, above) the step"""
    prefill: tuple[float, float]
    """USD per million input tokens, (below, above) the step"""
    price_steps: tuple[float, float]
    """the price entry's (input, output) multipliers above the step"""

    @property
    def decode_ratio(self) -> float:
        return self.decode[1] / self.decode[0]

    @property
    def prefill_ratio(self) -> float:
        return self.prefill[1] / self.prefill[0]


TIER_POINTS = 200
"""Contexts per tier the means are taken over (midpoints of equal slices)."""


def tier_costs(price, model, target, batch, dtype="fp8", usd_per_chip_hour=USD_PER_CHIP_HOUR) -> TierCosts:
    """What each tier of ``price``'s two-tier list covers in cost: the mean cost per output token
    (decode, ``cost_against_context`` with ``fit``) and per input token (prefill,
    ``prefill_cost_against_context``) over contexts spread evenly from 0 to the step and from the
    step to ``model``'s maximum context. Evenly spread is an assumption: a mix that favours short
    contexts lowers the first tier's mean."""
    price, model = _price(price), _model(model)
    step, top = float(_step(price)), float(model.max_context or 0)
    if top <= step:
        raise ChalkError(f"model: {model.display}'s maximum context ({top:,.0f} tokens) does not reach past "
                         f"{price.name}'s step at {step:,.0f}; choose a model published for longer contexts")
    means = {}
    for tier, (low, high) in enumerate(((0.0, step), (step, top))):
        edges = np.linspace(low, high, TIER_POINTS + 1)
        mids = (edges[:-1] + edges[1:]) / 2
        dec = cost_against_context(model, target, mids, batch, dtype, usd_per_chip_hour=usd_per_chip_hour)
        pre = prefill_cost_against_context(model, target, mids, dtype, usd_per_chip_hour=usd_per_chip_hour)
        means[tier] = (float(np.mean(dec.usd_per_million_tokens)), float(np.mean(pre.usd_per_million_tokens)))
    return TierCosts(step, top, (means[0][0], means[1][0]), (means[0][1], means[1][1]), price.long_context_multipliers)


# --- passes of n tokens (graph D) -------------------------------------------------------------
@dataclass(frozen=True)
class PassTimes:
    n: np.ndarray
    """new tokens per sequence in the pass"""
    compute: np.ndarray
    """seconds of compute (matmuls and attention) of each pass"""
    memory: np.ndarray
    """seconds of weight and KV reads of each pass"""

    @property
    def step(self) -> np.ndarray:
        return np.maximum(self.compute, self.memory)

    @property
    def per_token(self) -> np.ndarray:
        return self.step / self.n

    @property
    def knee(self) -> float:
        """First n at which compute outlasts memory (inf if none in the range)."""
        bound = self.n[self.compute >= self.memory]
        return float(bound[0]) if bound.size else math.inf


def pass_times(model, target, ns, cached=0, batch=1, dtype="bf16", **kwargs) -> PassTimes:
    """Time of one pass of n new tokens for each of ``batch`` sequences with ``cached`` tokens already
    in the cache, for each n in ``ns`` (``calculator.run_pass``: n = 1 is decode, n = prompt is prefill)."""
    ns = np.asarray(ns)
    if ns.ndim != 1 or ns.size == 0:
        raise ChalkError(f"ns must be a non-empty list of token counts, got {ns!r}")
    non_negative("cached", cached)
    points = [calculator.run_pass(model, target, batch, cached + int(positive_int("n", int(k))), n=int(k),
                                  dtype=dtype, **kwargs) for k in ns]
    return PassTimes(ns.astype(float), np.array([p.t_compute for p in points]),
                     np.array([p.t_weights + p.t_kv for p in points]))


def compute_bound_from(model, target, cached=0, batch=1, dtype="bf16", **kwargs) -> int:
    """The smallest n at which a pass of n new tokens per sequence is compute-bound (graph D's
    crossover), solved by bisection over ``calculator.run_pass``; without attention or KV it is
    r b_w N_tot / (2 N_act) with r = F/W in the weights' format."""
    def compute_bound(n):
        p = calculator.run_pass(model, target, batch, cached + n, n=n, dtype=dtype, **kwargs)
        return p.t_compute >= p.t_weights + p.t_kv
    low, high = 1, 2
    while not compute_bound(high):
        low, high = high, 2 * high
        if high > 2 ** 24:
            raise ChalkError(f"model: {model} on {target} is not compute-bound below 2^24 new tokens per pass")
    if compute_bound(low):
        return low
    while high - low > 1:  # compute_bound(low) is False, compute_bound(high) True
        mid = (low + high) // 2
        low, high = (mid, high) if not compute_bound(mid) else (low, mid)
    return high


# --- prompt caching: the tier rule ------------------------------------------------------------
def reload_bandwidth(tier: tiers.Tier, target="H100-SXM", stripes=1) -> float:
    """Bytes per second a cache comes back to ``target``'s GPUs from ``tier``: the slower of the
    bandwidth of the ``stripes`` devices it is spread over and the GPUs' scale-out links; infinite
    for the GPUs' own HBM. Striping leaves rent and drain time per byte as they are; it shortens
    only the wait."""
    positive_int("stripes", stripes)
    hw = systems.system_or_chip(target, param="target")
    if tier.name == tiers.hbm_tier(target).name:
        return math.inf
    return min(stripes * tier.bandwidth, hw.scale_out_bandwidth)


def reload_wait_usd_per_byte(tier: tiers.Tier, target="H100-SXM", usd_per_chip_hour=USD_PER_CHIP_HOUR,
                             stripes=1) -> float:
    """Dollars per byte of ``target``'s GPUs waiting while a cache comes back from ``tier``, spread
    over ``stripes`` of its devices (``reload_wait``); 0 for their own HBM, which needs no reload."""
    positive("usd_per_chip_hour", usd_per_chip_hour)
    hw = systems.system_or_chip(target, param="target")
    if not math.isfinite(reload_bandwidth(tier, target, stripes)):
        return 0.0
    chips = hw.count if isinstance(hw, systems.System) else 1
    return float(__reload_wait()(chips, usd_per_chip_hour, stripes * tier.bandwidth, hw.scale_out_bandwidth / chips))


@dataclass(frozen=True)
class TierLine:
    """One tier's cost per byte as a line in the hold time: ``slope`` T + ``intercept``."""
    tier: tiers.Tier
    slope: float
    """the tier's rent, dollars per byte-second"""
    intercept: float
    """the read back: rent for the drain time, plus (with the wait) the GPUs' idle time"""

    def at(self, hold_seconds):
        return self.slope * hold_seconds + self.intercept


def tier_lines(target="H100-SXM", usd_per_chip_hour=USD_PER_CHIP_HOUR, lifetime_years=tiers.LIFETIME_YEARS,
               wait=False, stripes=1) -> list[TierLine]:
    """Each tier beside ``target`` as a cost line; ``wait`` charges the GPUs that wait for the reload
    from ``stripes`` devices of each tier."""
    held = tiers.tiers_with_hbm(target, usd_per_chip_hour, lifetime_years)
    return [TierLine(t, t.usd_per_byte_second, t.usd_per_byte_second * t.drain_time
                     + (reload_wait_usd_per_byte(t, target, usd_per_chip_hour, stripes) if wait else 0.0))
            for t in held]


def hold_costs(hold_seconds, target="H100-SXM", usd_per_chip_hour=USD_PER_CHIP_HOUR,
               lifetime_years=tiers.LIFETIME_YEARS, wait=False, stripes=1) -> dict[str, float]:
    """Dollars per byte to hold a cache for ``hold_seconds`` in each tier of ``target`` and read it
    back once: the tier's rent, and with ``wait`` the GPUs idle while it comes back from
    ``stripes`` devices of the tier."""
    non_negative("hold_seconds", hold_seconds)
    rent = {t.name: float(__hold_cost()(t.usd_per_byte_second, hold_seconds, t.capacity, t.bandwidth))
            for t in tiers.tiers_with_hbm(target, usd_per_chip_hour, lifetime_years)}
    if not wait:
        return rent
    return {line.tier.name: rent[line.tier.name] + reload_wait_usd_per_byte(line.tier, target, usd_per_chip_hour, stripes)
            for line in tier_lines(target, usd_per_chip_hour, lifetime_years)}


@dataclass(frozen=True)
class Switch:
    """On the cost envelope, ``slower`` becomes cheaper than ``faster`` from ``hold_seconds`` on."""
    faster: tiers.Tier
    slower: tiers.Tier
    hold_seconds: float


def _break_even(a: TierLine, b: TierLine) -> float:
    """Hold time where lines a and b cost the same (``break_even_hold`` for rent alone); inf if they never do."""
    if a.slope == b.slope:
        return math.inf
    t = (b.intercept - a.intercept) / (a.slope - b.slope)
    return t if t > 0 else math.inf


def tier_envelope(target="H100-SXM", usd_per_chip_hour=USD_PER_CHIP_HOUR,
                  lifetime_years=tiers.LIFETIME_YEARS, wait=False, stripes=1) -> tuple[tiers.Tier, list[Switch]]:
    """The rule: the cheapest tier at T = 0 and the break-even hold times at which cheaper-to-hold
    tiers take over, in order. Each step moves to the tier whose line crosses the current one first."""
    lines = tier_lines(target, usd_per_chip_hour, lifetime_years, wait, stripes)
    first = current = min(lines, key=lambda x: (x.intercept, x.slope))
    switches, now = [], 0.0
    while True:
        later = [(_break_even(current, x), x) for x in lines if x.slope < current.slope]
        later = [(when, x) for when, x in later if now <= when < math.inf]
        if not later:
            return first.tier, switches
        when, nxt = min(later, key=lambda x: (x[0], x[1].slope))
        switches.append(Switch(current.tier, nxt.tier, when))
        current, now = nxt, when


def cheapest_tier(hold_seconds, target="H100-SXM", usd_per_chip_hour=USD_PER_CHIP_HOUR,
                  lifetime_years=tiers.LIFETIME_YEARS, wait=False) -> tiers.Tier:
    """The tier the break-even rule picks for a cache held ``hold_seconds``."""
    non_negative("hold_seconds", hold_seconds)
    first, switches = tier_envelope(target, usd_per_chip_hour, lifetime_years, wait)
    chosen = first
    for s in switches:
        if hold_seconds >= s.hold_seconds:
            chosen = s.slower
    return chosen


def implied_cache_bytes_per_token(usd_per_million_tokens_hour, tier, target="H100-SXM",
                                  usd_per_chip_hour=USD_PER_CHIP_HOUR, lifetime_years=tiers.LIFETIME_YEARS) -> float:
    """Bytes per token of a cache whose hold for an hour in ``tier`` (named as in ``hold_costs``),
    read back once, costs ``usd_per_million_tokens_hour`` per million tokens: a published storage
    price read as a tier's rent."""
    positive("usd_per_million_tokens_hour", usd_per_million_tokens_hour)
    costs = hold_costs(3600.0, target, usd_per_chip_hour, lifetime_years)
    if tier not in costs:
        raise ChalkError(f"tier must be one of {sorted(costs)} beside {target}, got {tier!r}")
    return usd_per_million_tokens_hour / 1e6 / costs[tier]


def recompute_usd_per_byte(model, target, prompt, dtype="bf16", usd_per_chip_hour=USD_PER_CHIP_HOUR) -> float:
    """Dollars per byte of KV cache to rebuild it: one prefill of ``prompt`` tokens at the roofline
    (``calculator.prefill``), over the bytes its cache holds."""
    model = _model(model)
    point = calculator.prefill(model, target, 1, prompt, dtype=dtype, usd_per_chip_hour=usd_per_chip_hour)
    usd = point.usd_per_million_tokens / 1e6 * prompt
    return usd / float(model.kv_bytes(prompt))


def rematerialise_after(model, target, prompt, dtype="bf16", usd_per_chip_hour=USD_PER_CHIP_HOUR,
                        lifetime_years=tiers.LIFETIME_YEARS, wait=False, stripes=1) -> float:
    """Hold time beyond which recomputing the prefill costs less than holding the cache in the
    tier the rule picks: where the envelope of hold costs reaches the cost of a rebuild (0 if a
    reload alone costs more)."""
    rebuild = recompute_usd_per_byte(model, target, prompt, dtype, usd_per_chip_hour)
    lines = {x.tier.name: x for x in tier_lines(target, usd_per_chip_hour, lifetime_years, wait, stripes)}
    first, switches = tier_envelope(target, usd_per_chip_hour, lifetime_years, wait, stripes)
    segments = [(first, 0.0)] + [(s.slower, s.hold_seconds) for s in switches]
    ends = [start for _, start in segments[1:]] + [math.inf]
    for (tier, start), end in zip(segments, ends):
        line = lines[tier.name]
        when = (rebuild - line.intercept) / line.slope  # slope T + intercept = rebuild
        if when < end:
            return max(start, when)
    raise AssertionError("the last tier's cost grows without bound")


# --- the numeric forms ---------------------------------------------------------------------------
def _numeric():
    """``pricing_numeric``: the formulas this module evaluates, as plain Python (``numeric_forms``)."""
    from . import pricing_numeric
    return pricing_numeric


def numeric_forms() -> dict:
    """The expressions this module evaluates as numbers, each with its arguments in order, by the
    name of its plain-Python form in ``pricing_numeric.py``. A function, not a table: the lecture's
    KV bytes and the decode MFU are solved on first use, which the generated file spares a kernel."""
    return {
        "hold_cost": ((p_hold, T_hold, C, W), hold_cost),
        "reload_wait": ((n_chips, p_chip, W, W_out), reload_wait),
        "mismatch": ((C, W, T_hold), tier_mismatch),
        "kv_lecture": ((N_act, r, L_star, b_w, f_att), _kv_bytes_lecture_convention()),
        "decode_mfu": ((p_in, p_out), _decode_mfu_expr()),
    }


def numeric_source() -> str:
    """The text of ``pricing_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.pricing", numeric_forms(), symbol_names(globals()),
                            "The formulas ``chalk.pricing`` evaluates as numbers "
                            "(``chalk.pricing.numeric_forms``), as plain Python, so that a kernel "
                            "evaluates them without solving or lambdifying.")


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "pricing_numeric.py")
