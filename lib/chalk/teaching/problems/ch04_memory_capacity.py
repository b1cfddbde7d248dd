"""Answer key of problem set 4 (memory capacity): ``exercises/04_memory_capacity.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.memory`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
systems, formats, batches and contexts), so no answer is printed there.
"""
import math

from ... import memory
from ...catalog import hardware, memory_data, models, systems, tiers
from ...roofline import HEADROOM
from ..exercises import Exercise, Mistake

GB = 1e9

PER_CHIP = dict(model="mixtral-8x7b", dtype="bf16", expert_parallel=2, stages=4, batch=16, context=16384)
"""``per_chip_gb``: memory per GPU of a busy four-stage pipeline of two GPUs each."""
CANCEL = dict(model="llama-3-70b", dtype="bf16", expert_parallel=8, stages=8, batch=8, context=65536)
"""``cache_per_chip_gb``: the cache per GPU of an eight-stage pipeline."""
CROSS = dict(model="mixtral-8x7b", dtype="fp8", batch=64, context=8192)
"""``crossover_stages``: P* for Mixtral 8x7B served in FP8."""
CEILING = dict(model="llama-3.1-405b", system="hgx-h200", context=65536)
"""``batch_ceiling``: the largest micro-batch no number of stages lifts (usable HBM, BF16 cache)."""
FLOOR = dict(model="mixtral-8x7b", system="hgx-h200", dtype="fp8")
"""``weight_floor_ms``: the weight-read floor of an MoE on one HGX H200."""
TOKEN = dict(model="llama-3.1-405b", system="gb200-nvl72", dtype="fp8", batch=1024, context=16384, stages=3,
             latency=1e-3)
"""``token_ms``: a token's time on three pipelined NVL72 racks, with slow (1 ms) hops."""
PUBLISHED = dict(deployment="llama-3.1-405b-bf16", context=8192)
"""``llama_bf16_batch``: the published two-machine BF16 layout of Llama 3 405B (bare 80 GB per GPU)."""
ZERO = dict(model="llama-2-13b", recipe="zero-mixed-adam", chips=64, stage=2)
"""``zero_stage2_gb``: model state per GPU under ZeRO stage 2."""
TRAIN = dict(model="llama-3.1-405b", chip="GB300", recipe="8bit-adam")
"""``train_chips``: the fewest GPUs that hold the model state fully sharded."""
PLOT = dict(model="deepseek-v3", system="hgx-h200", dtype="bf16", batch=256, context=32768)
"""The chart of ``fits_from_stages``, drawn in the problem set by ``memory_capacity.stages_figure``."""
LAYOUT = dict(model="jamba-v0.1", dtype="bf16", expert_parallel=8, stages=3, batch=32, context=32768)
"""``fullest_chip_ratio``: the placement's fullest chip over the formula."""
SPILL = dict(model="llama-3.1-70b", tier="lpddr5x-gb300-nvl72", context=131072)
"""``lpddr_sequences``: sequences whose BF16 cache can be parked in the LPDDR5X of a GB300 NVL72 rack."""


def _per_chip(microbatches=None, dtype=PER_CHIP["dtype"], batch=PER_CHIP["batch"]) -> float:
    p = PER_CHIP
    return memory.per_chip(p["model"], batch, p["context"], dtype, p["expert_parallel"], p["stages"],
                           microbatches) / GB


def _active_per_chip() -> float:
    """The slip of counting active parameters: only the experts a token uses held in memory."""
    p, mdl = PER_CHIP, models.get(PER_CHIP["model"])
    weights = mdl.active_params * hardware.bytes_per_weight(p["dtype"]) / (p["expert_parallel"] * p["stages"])
    cache = memory.per_chip_parts(p["model"], p["batch"], p["context"], p["dtype"], p["expert_parallel"], p["stages"])[1]
    return (weights + cache) / GB


def _cache(stages_in_cache=True, bytes_per_element=2) -> float:
    c = CANCEL
    kv = memory.per_chip_parts(c["model"], c["batch"], c["context"], c["dtype"], c["expert_parallel"], c["stages"],
                               None if stages_in_cache else 1, bytes_per_element)[1]
    return kv / GB


def _cross(dtype=CROSS["dtype"], active=False) -> float:
    c, mdl = CROSS, models.get(CROSS["model"])
    share = mdl.active_params / mdl.total_params if active else 1.0
    return share * memory.crossover_stages(c["model"], c["batch"], c["context"], dtype)


def _ceiling(headroom=HEADROOM, stages=10**9) -> float:
    c = CEILING
    return memory.max_batch(c["model"], c["system"], c["context"], "bf16", stages, headroom=headroom)


def _floor_ms(params="total", chips=None, dtype=FLOOR["dtype"]) -> float:
    f = FLOOR
    sys_ = systems.get(f["system"])
    mdl = models.get(f["model"])
    n = mdl.total_params if params == "total" else mdl.active_params
    count = sys_.count if chips is None else chips
    return 1e3 * n * hardware.bytes_per_weight(dtype) / (count * sys_.chip.hbm_bandwidth)


def _token_ms(hops=None) -> float:
    t = TOKEN
    hop = memory.hop_time(t["model"], t["system"], t["batch"], t["latency"])
    reads = memory.token_time(t["model"], t["system"], t["batch"], t["context"], 1, 0.0, t["dtype"])
    n = t["stages"] if hops is None else hops
    return 1e3 * (reads + n * hop)


def _published_batch(microbatches=None, headroom=0.0) -> float:
    """The largest micro-batch of ``context`` tokens beside the published layout's weights, bare HBM."""
    lay = memory_data.deployment(PUBLISHED["deployment"])
    P_, E_ = int(lay["pipeline"]), int(lay["attention_tensor"])
    free = hardware.get("H100-SXM").hbm_capacity * (1 - headroom) - memory.per_chip(lay["model"], 0, 0, "bf16", E_, P_)
    per_sequence = memory.per_chip(lay["model"], 1, PUBLISHED["context"], "bf16", E_, P_, microbatches) \
        - memory.per_chip(lay["model"], 0, 0, "bf16", E_, P_)
    return float(math.floor(free / per_sequence))


def _zero(stage=ZERO["stage"], optimizer=None) -> float:
    """Model state per GPU; ``optimizer`` overrides the recipe's optimizer bytes (the slip of 8)."""
    z = ZERO
    if optimizer is None:
        return memory.training_state_bytes(z["model"], z["recipe"], z["chips"], stage) / GB
    r = memory_data.recipe(z["recipe"])
    return memory.numeric["zero"][stage](models.get(z["model"]).total_params, r.weights, r.gradients, optimizer,
                                         z["chips"]) / GB


def _train_chips(recipe=TRAIN["recipe"], headroom=HEADROOM) -> float:
    t = TRAIN
    return float(memory.fewest_chips_to_train(t["model"], t["chip"], recipe, headroom))


def _fits_from(ignore_cache=False) -> float:
    p = PLOT
    sys_ = systems.get(p["system"])
    usable = sys_.chip.hbm_capacity * (1 - HEADROOM)
    for stages in (1, 2, 3, 4, 6, 8, 12, 16):
        w, k = memory.per_chip_parts(p["model"], p["batch"], p["context"], p["dtype"], sys_.count, stages)
        if w + (0 if ignore_cache else k) <= usable:
            return float(stages)
    return math.inf


def _crossover_read() -> float:
    """The slip of reading the first bar whose cache outweighs its weights instead of the fit line."""
    p = PLOT
    count = systems.get(p["system"]).count
    for stages in (1, 2, 3, 4, 6, 8, 12, 16):
        w, k = memory.per_chip_parts(p["model"], p["batch"], p["context"], p["dtype"], count, stages)
        if k >= w:
            return float(stages)
    return math.inf


def _fullest(stat="max") -> float:
    lay = LAYOUT
    chips = memory.layout_bytes(lay["model"], lay["batch"], lay["context"], lay["dtype"], lay["expert_parallel"],
                                lay["stages"])
    formula = memory.per_chip(lay["model"], lay["batch"], lay["context"], lay["dtype"], lay["expert_parallel"],
                              lay["stages"])
    return float(getattr(chips, stat)() / formula)


def _spill(bytes_per_element=2, tib=False) -> float:
    s = SPILL
    capacity = tiers.catalog_tiers()[s["tier"]].capacity
    capacity = capacity / 1e12 * 2**40 if tib else capacity
    return float(math.floor(capacity / memory.kv_per_sequence(s["model"], s["context"], bytes_per_element)))


FORGOT_M = "a busy pipeline keeps m = P micro-batches in flight, each with its own cache: multiply the cache by m."

EXERCISES = (
    Exercise(
        id="per_chip_gb",
        expected=lambda: _per_chip(),
        unit="GB per GPU", rel_tol=0.01,
        hint="c = (N_tot b_w + m B L b_kv) / (E P) with m = P; N_tot counts every expert.",
        mistakes=(
            Mistake(FORGOT_M, value=lambda: _per_chip(microbatches=1)),
            Mistake("the weights are BF16, 2 bytes each.", value=lambda: _per_chip(dtype="fp8")),
            Mistake("every expert sits in memory whether a token uses it or not: count N_tot, not N_act.",
                    value=_active_per_chip),
        )),
    Exercise(
        id="cache_per_chip_gb",
        expected=lambda: _cache(),
        unit="GB per GPU", rel_tol=0.01,
        hint="with m = P the stages cancel: the cache per GPU is B L b_kv / E.",
        mistakes=(
            Mistake("dividing by P is half the story: the pipeline also holds P micro-batches, which multiplies it "
                    "back.", value=lambda: _cache(stages_in_cache=False)),
            Mistake("the cache is BF16: 2 bytes per key or value element.", value=lambda: _cache(bytes_per_element=1)),
        )),
    Exercise(
        id="crossover_stages",
        expected=lambda: _cross(),
        unit="stages (a real number)", rel_tol=0.01,
        hint="P* = N_tot b_w / (B L b_kv): solve weights/(E P) = B L b_kv / E for P.",
        mistakes=(
            Mistake("the weights are FP8, 1 byte each.", value=lambda: _cross(dtype="bf16")),
            Mistake("every expert's weights are in memory: N_tot, not N_act.", value=lambda: _cross(active=True)),
            Mistake("that is the inverse: P* grows with the weights and falls with the cache.",
                    value=lambda: 1 / _cross()),
        )),
    Exercise(
        id="batch_ceiling",
        expected=lambda: _ceiling(),
        unit="sequences", exact=True, rel_tol=0.01,
        hint="as P grows the weights per GPU vanish: B_max -> C E / (L b_kv), with C the usable HBM (90%).",
        mistakes=(
            Mistake("keep 10% of HBM free, as the course's fit checks do.", value=lambda: _ceiling(headroom=0)),
            Mistake("that is a single stage, where the weights still take their share; the ceiling is the limit of "
                    "many stages.", value=lambda: _ceiling(stages=1)),
        )),
    Exercise(
        id="weight_floor_ms",
        expected=lambda: _floor_ms(),
        unit="ms", rel_tol=0.01,
        hint="N_tot b_w / (S W_chip): every weight read once, all S GPUs reading in parallel.",
        mistakes=(
            Mistake("that is what one token reads, its active experts; reading the weights once, as a batch that "
                    "touches every expert does, means all of them: N_tot.",
                    value=lambda: _floor_ms(params="active")),
            Mistake("all the GPUs of the domain read at once: divide by S.", value=lambda: _floor_ms(chips=1)),
            Mistake("the weights are FP8, 1 byte each.", value=lambda: _floor_ms(dtype="bf16")),
        )),
    Exercise(
        id="token_ms",
        expected=lambda: _token_ms(),
        unit="ms", rel_tol=0.01,
        hint="memory.token_time(...) with hop = memory.hop_time(...): the reads of one whole model and one "
             "micro-batch's cache over one rack, plus one hop per stage.",
        mistakes=(
            Mistake("decode loops back to the first stage: P hops per token, not P - 1.",
                    value=lambda: _token_ms(hops=TOKEN["stages"] - 1)),
            Mistake("the hops add to the reads: pipelining keeps the reads and adds P hops.",
                    value=lambda: _token_ms(hops=0)),
        )),
    Exercise(
        id="llama_bf16_batch",
        expected=lambda: _published_batch(),
        unit="sequences", exact=True, rel_tol=0.02,
        hint="16 GPUs: tensor parallel 8 in each machine, 2 pipeline stages. Per GPU the weights take "
             "N_tot b_w / 16; the rest holds B L b_kv / 8 with m = P = 2.",
        mistakes=(
            Mistake("with m = P = 2 micro-batches in flight each stage holds two micro-batches' cache for its "
                    "layers: B L b_kv / E, not / (E P).", value=lambda: _published_batch(microbatches=1)),
            Mistake("the question takes the bare 80 GB, as the paper's statement does: no headroom.",
                    value=lambda: _published_batch(headroom=HEADROOM)),
        )),
    Exercise(
        id="zero_stage2_gb",
        expected=lambda: _zero(),
        unit="GB per GPU", rel_tol=0.01,
        hint="stage 2 keeps each GPU's weights (2 bytes) and shards the gradients (2) and optimizer state (12).",
        mistakes=(
            Mistake("that is stage 1, which shards only the optimizer state.", value=lambda: _zero(stage=1)),
            Mistake("that is stage 3, which also shards the weights.", value=lambda: _zero(stage=3)),
            Mistake("Adam's state includes the FP32 master copy: 12 bytes per parameter, not 8.",
                    value=lambda: _zero(optimizer=8)),
        )),
    Exercise(
        id="train_chips",
        expected=lambda: _train_chips(),
        unit="GPUs", exact=True, rel_tol=0.005,
        hint="bytes per parameter of the recipe x N_tot, over each GPU's usable HBM, rounded up.",
        mistakes=(
            Mistake("8-bit Adam keeps 12 bytes per parameter, not mixed-precision Adam's 16.",
                    value=lambda: _train_chips(recipe="zero-mixed-adam")),
            Mistake("keep 10% of HBM free, as the course's fit checks do.", value=lambda: _train_chips(headroom=0)),
        )),
    Exercise(
        id="fits_from_stages",
        expected=lambda: _fits_from(),
        unit="stages (one of the chart's)", exact=True, rel_tol=0.005,
        hint="read the first bar whose top, weights and cache together, is under the dashed line.",
        mistakes=(
            Mistake("the cache sits on top of the weights: the whole bar must be under the line.",
                    value=lambda: _fits_from(ignore_cache=True)),
            Mistake("that is where the cache overtakes the weights, not where the bar fits.", value=_crossover_read),
        )),
    Exercise(
        id="fullest_chip_ratio",
        expected=lambda: _fullest(),
        unit="ratio (fullest GPU / formula)", rel_tol=0.001,
        hint="memory.layout_bytes(...).max() over memory.per_chip(...) with the same arguments.",
        mistakes=(
            Mistake("that is the mean over GPUs, which the formula gets exactly; the question asks for the fullest.",
                    value=lambda: _fullest("mean")),
            Mistake("that is the emptiest GPU.", value=lambda: _fullest("min")),
        )),
    Exercise(
        id="lpddr_sequences",
        expected=lambda: _spill(),
        unit="sequences", exact=True, rel_tol=0.01,
        hint="the tier's capacity over one sequence's cache, memory.kv_per_sequence(model, context): caches "
             "parked there, to be swapped back into HBM before they decode.",
        mistakes=(
            Mistake("the cache is BF16: 2 bytes per element.", value=lambda: _spill(bytes_per_element=1)),
            Mistake("the catalog's TB are 10^12 bytes, not 2^40.", value=lambda: _spill(tib=True)),
        )),
)
