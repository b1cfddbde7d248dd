"""Answer key of problem set 4 (memory capacity): ``exercises/04_memory_capacity.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.memory`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
systems, formats, batches and contexts), so no answer is printed there. Five items ask for a
judgement first (which assumption breaks, which tier or ZeRO stage fits); the tests check each
verdict with chalk's numbers.
"""
import math

from ... import memory
from ...catalog import hardware, memory_data, models, systems, tiers
from ...roofline import HEADROOM
from ..exercises import Choice, Exercise, Mistake

GB = 1e9

PER_CHIP = dict(model="mixtral-8x7b", dtype="bf16", expert_parallel=2, stages=4, batch=16, context=16384)
"""``per_chip_gb``: memory per GPU of a busy four-stage pipeline of two GPUs each."""
CANCEL = dict(model="llama-3.1-70b", dtype="bf16", expert_parallel=8, stages=8, batch=8, context=65536)
"""``cache_per_chip_gb``: the cache per GPU of an eight-stage pipeline."""
CROSS = dict(model="mixtral-8x7b", dtype="fp8", batch=64, context=8192)
"""``crossover_stages``: P* for Mixtral 8x7B served in FP8."""
CEILING = dict(model="llama-3.1-405b", system="hgx-b200", context=65536)
"""``batch_ceiling``: the largest micro-batch no number of stages lifts (usable HBM, BF16 cache); C E/(L b_kv)
is 40.9 at the 192.27 GB a B200 reports, so 40 sequences fit from 26 stages on, within the model's 126 layers
(an H200's 32.09 would need 262)."""
SLOW_HOPS = dict(model="qwen3-235b-a22b", system="hgx-h200", dtype="fp8", batch=64, context=32768, stages=(4, 8),
                 latency=1e-3)
"""``slow_hops_cache``: the cache per GPU when a busy pipeline deepens over slow (1 ms) hops."""
DENSE = dict(model="llama-3.1-70b", dtype="fp8", narrow=("hgx-b200", 8), wide=("gb200-nvl72", 64),
             allreduce=8e-6, allreduces_per_layer=2)
"""``dense_collectives``: a dense model's token time when tensor parallelism widens from 8 to 64 GPUs,
each all-reduce costing at least 8 us whatever the GPUs (stated in the prompt)."""
TOKEN = dict(model="kimi-k2", system="hgx-h200", dtype="bf16", batch=32, context=16384, stages=3,
             latency=2e-3, alltoall=50e-6)
"""``token_ms``: a token's time on an MoE pipelined over three HGX H200s, slow hops (2 ms) and a stated
all-to-all per MoE layer."""
PUBLISHED = dict(deployment="llama-3.1-405b-bf16", context=8192)
"""``llama_bf16_batch``: the published two-machine BF16 layout of Llama 3 405B, with the bare nominal 80 GB per
GPU the question states (an H100 reports 85.52 GB)."""
ZERO = dict(model="jamba-v0.1", chip="H200", recipe="zero-mixed-adam", chips=64, stage=2)
"""``zero_lowest_stage`` and ``zero_fewest_gpus``: which ZeRO stage fits, and on how few GPUs."""
PLOT = dict(model="kimi-k2", system="hgx-h100", dtype="fp8", batch=88, context=32768)
"""The chart of ``fits_from_stages``, drawn in the problem set by ``memory_capacity.stages_figure``: every
bar at least 10% away from the usable-HBM line, so the answer can be read off the chart."""
LAYOUT = dict(model="jamba-v0.1", dtype="bf16", expert_parallel=8, stages=3, batch=32, context=32768)
"""``fullest_chip_ratio``: the placement's fullest chip over the formula."""
PARK = dict(model="llama-3.1-70b", system="hgx-h200", sequences=43, context=65536, within=0.2,
            tiers=("ddr5-hgx-h200", "3fs-storage-node", "ssd-bm1743"))
"""``parked_tier``: where idle conversations' caches wait, to be back in HBM within 0.2 s."""


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


def _ceiling(headroom=HEADROOM, stages=None) -> float:
    """The largest micro-batch at the deepest pipeline, one layer a stage (``stages``: another depth)."""
    c = CEILING
    stages = models.get(c["model"]).n_layers if stages is None else stages
    return memory.max_batch(c["model"], c["system"], c["context"], "bf16", stages, headroom=headroom)


def _token_ms(stages=TOKEN["stages"], alltoall=TOKEN["alltoall"], every_expert=False) -> float:
    """One token's time in ms (``memory.token_time``); ``every_expert`` reads all N_tot, the slip of
    assuming a micro-batch of 32 touches every expert."""
    t = TOKEN
    hop = memory.hop_time(t["model"], t["system"], t["batch"], t["latency"])
    time = memory.token_time(t["model"], t["system"], t["batch"], t["context"], stages, hop, t["dtype"],
                             alltoall=alltoall)
    if every_expert:
        time += memory.weight_floor(t["model"], t["system"], t["dtype"]) \
            - memory.weight_floor(t["model"], t["system"], t["dtype"], batch=t["batch"])
    return 1e3 * time


def _published_batch(microbatches=None, headroom=0.0) -> float:
    """The largest micro-batch of ``context`` tokens beside the published layout's weights, in the bare
    nominal HBM the question takes."""
    lay = memory_data.deployment(PUBLISHED["deployment"])
    P_, E_ = int(lay["pipeline"]), int(lay["attention_tensor"])
    free = hardware.get("H100-SXM").hbm_nominal * (1 - headroom) - memory.per_chip(lay["model"], 0, 0, "bf16", E_, P_)
    per_sequence = memory.per_chip(lay["model"], 1, PUBLISHED["context"], "bf16", E_, P_, microbatches) \
        - memory.per_chip(lay["model"], 0, 0, "bf16", E_, P_)
    return float(math.floor(free / per_sequence))


def _zero_usable(headroom=HEADROOM) -> float:
    return hardware.get(ZERO["chip"]).hbm_capacity * (1 - headroom)


def _zero_fits(stage, chips=ZERO["chips"]) -> bool:
    z = ZERO
    return memory.training_state_bytes(z["model"], z["recipe"], chips, stage) <= _zero_usable()


def _lowest_stage() -> int:
    return next(stage for stage in memory.ZERO_STAGES if _zero_fits(stage))


def _zero_fewest(stage=None, headroom=HEADROOM) -> float:
    """Fewest data-parallel GPUs whose usable HBM holds the model state under ``stage`` (the lowest
    that fits on the prompt's GPUs by default): a scan over the GPU count."""
    z, stage = ZERO, _lowest_stage() if stage is None else stage
    n = 1
    while memory.training_state_bytes(z["model"], z["recipe"], n, stage) > _zero_usable(headroom):
        n += 1
    return float(n)


def _zero_fewest_floor() -> float:
    """The stage-2 bound solved for n and rounded down: the slip of not rounding up."""
    z, r = ZERO, memory_data.recipe(ZERO["recipe"])
    n_tot = models.get(z["model"]).total_params
    return float(math.floor((r.gradients + r.optimizer) * n_tot / (_zero_usable() - r.weights * n_tot)))


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


FORGOT_M = "a busy pipeline keeps m = P micro-batches in flight, each with its own cache: multiply the cache by m."

EXERCISES = (
    Exercise(
        id="per_chip_gb", topic="Memory per chip",
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
        id="cache_per_chip_gb", topic="The micro-batches cancel the stages",
        expected=lambda: _cache(),
        unit="GB per GPU", rel_tol=0.01,
        hint="with m = P the stages cancel: the cache per GPU is B L b_kv / E.",
        mistakes=(
            Mistake("dividing by P is half the story: the pipeline also holds P micro-batches, which multiplies it "
                    "back.", value=lambda: _cache(stages_in_cache=False)),
            Mistake("the cache is BF16: 2 bytes per key or value element.", value=lambda: _cache(bytes_per_element=1)),
        )),
    Choice(
        id="slow_hops_cache", topic="Slow hops cost memory too",
        options={
            "a": "It halves: each stage now holds the cache of half as many layers.",
            "b": "It stays the same: P cancels from the cache per GPU, B L b_kv / E.",
            "c": "It grows, by less than double: slow hops need more micro-batches in flight than stages.",
            "d": "It doubles: twice the stages keep twice the micro-batches in flight, each with its cache.",
        },
        answer="c",
        feedback={
            "a": "that holds if the micro-batches in flight stayed fixed; a busy pipeline keeps at least P of "
                 "them, each with its cache for the stage's layers.",
            "b": "P cancels only while a hop is short against a stage's share of the reads, t_hop << T_read / P. "
                 "Here a stage's share is a few milliseconds and shrinks as P grows, against 1 ms hops.",
            "d": "only the hops' part grows with P: m / P = 1 + P t_hop / T_read, so the cache per GPU grows by "
                 "(1 + 8 t_hop / T_read) / (1 + 4 t_hop / T_read), less than 2.",
        },
        hint="a busy pipeline needs m = P (1 + P t_hop / T_read) micro-batches (memory.busy_microbatches); the "
             "cache per GPU is m B L b_kv / (E P) (memory.per_chip_parts with that m)."),
    Exercise(
        id="crossover_stages", topic="Where the cache overtakes the weights",
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
        id="batch_ceiling", topic="The ceiling no busy pipeline lifts",
        expected=lambda: _ceiling(),
        unit="sequences", exact=True, rel_tol=0.01,
        hint="as P grows the weights per GPU vanish: B_max -> C E / (L b_kv), with C the usable HBM (90%).",
        mistakes=(
            Mistake("keep 10% of HBM free, as the course's fit checks do.", value=lambda: _ceiling(headroom=0)),
            Mistake("that is a single stage, where the weights still take their share; the ceiling is the limit of "
                    "many stages.", value=lambda: _ceiling(stages=1)),
        )),
    Exercise(
        id="fits_from_stages", topic="Reading the board",
        expected=lambda: _fits_from(),
        unit="stages (one of the chart's)", exact=True, rel_tol=0.005,
        hint="read the first bar whose top, weights and cache together, is under the dashed line.",
        mistakes=(
            Mistake("the cache sits on top of the weights: the whole bar must be under the line.",
                    value=lambda: _fits_from(ignore_cache=True)),
            Mistake("that is where the cache overtakes the weights, not where the bar fits.", value=_crossover_read),
        )),
    Exercise(
        id="llama_bf16_batch", topic="A published layout",
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
    Choice(
        id="dense_collectives", topic="Capacity is not bandwidth: a dense model's collectives",
        options={
            "a": "About 8 times faster.",
            "b": "Between 2 and 4 times faster.",
            "c": "Between 1.2 and 2 times faster.",
            "d": "No faster, or slower.",
        },
        answer="c",
        feedback={
            "a": "that is the read's gain alone. Tensor parallelism all-reduces twice per layer, and the prompt's "
                 "floor on each all-reduce does not fall with E: add them to both layouts.",
            "b": "count two all-reduces per layer in each forward pass (after attention and after the MLP), not one.",
            "d": "the read still falls 8-fold and the all-reduces cost the same on either layout: an all-reduce's "
                 "floor does not grow with the GPUs, and the bytes each GPU sends in a ring, 2 (n-1)/n of the "
                 "activations, barely grow.",
        },
        hint="a token's time is at least the read floor (memory.weight_floor with expert_parallel = E) plus "
             "2 all-reduces per layer at their stated cost; compare the two layouts' sums."),
    Exercise(
        id="token_ms", topic="Capacity is not bandwidth: a token's time",
        expected=lambda: _token_ms(),
        unit="ms", rel_tol=0.01,
        hint="memory.token_time(..., stages, hop, dtype, alltoall=...) with hop = memory.hop_time(...): the "
             "weights the micro-batch touches and its cache read once over a board, one hop per stage and "
             "one all-to-all per MoE layer.",
        mistakes=(
            Mistake("decode loops back to the first stage: P hops per token, not P - 1.",
                    value=lambda: _token_ms(stages=TOKEN["stages"] - 1)),
            Mistake("each of the model's MoE layers adds its all-to-all to the token's time.",
                    value=lambda: _token_ms(alltoall=0.0)),
            Mistake("32 sequences choosing 8 of 384 experts each leave many experts untouched: read the "
                    "experts the micro-batch touches (memory.read_time counts them), not every one.",
                    value=lambda: _token_ms(every_expert=True)),
        )),
    Exercise(
        id="fullest_chip_ratio", topic="Placing every byte",
        expected=lambda: _fullest(),
        unit="ratio (fullest GPU / formula)", rel_tol=0.001,
        hint="memory.layout_bytes(...).max() over memory.per_chip(...) with the same arguments.",
        mistakes=(
            Mistake("that is the mean over GPUs, which the formula gets exactly; the question asks for the fullest.",
                    value=lambda: _fullest("mean")),
            Mistake("that is the emptiest GPU.", value=lambda: _fullest("min")),
        )),
    Choice(
        id="parked_tier", topic="Parking the cache in slower tiers",
        options={
            "a": "In HBM, beside the weights: they fit.",
            "b": "In the server's host DDR5.",
            "c": "On one 3FS storage node's flash.",
            "d": "On an enterprise QLC SSD.",
        },
        answer="b",
        feedback={
            "a": "they would fit, just: 43 caches take nearly all the usable HBM the weights leave, so the "
                 "sequences being decoded would have no room. Parking is for the idle ones.",
            "c": "that would do if users could wait longer: it holds them, but at the node's bandwidth one cache "
                 "takes more than the 0.2 s allowed to come back.",
            "d": "that would do if users could wait seconds: it holds them, but at the drive's bandwidth one "
                 "cache takes that long to come back.",
        },
        hint="two tests for each tier (tiers.catalog_tiers()): do the 43 caches fit its capacity, and does one "
             "cache come back within 0.2 s at its bandwidth?"),
    Choice(
        id="zero_lowest_stage", topic="ZeRO: which stage fits",
        options={
            "a": "Stage 0, plain data parallelism.",
            "b": "Stage 1.",
            "c": "Stage 2.",
            "d": "Stage 3.",
            "e": "None: the model state is more than 64 such GPUs hold.",
        },
        answer="c",
        feedback={
            "a": "that would need GPUs with several times the HBM: plain data parallelism keeps all 16 bytes "
                 "per parameter on every GPU.",
            "b": "that would need a larger GPU: stage 1 shards only the optimizer state, and the 4 bytes per "
                 "parameter of weights and gradients left on every GPU already exceed its usable HBM (every "
                 "expert counts).",
            "d": "stage 3 fits too, but it is not the lowest: it also gathers every layer's weights at each "
                 "use, traffic that stage 2 avoids.",
            "e": "that would hold if every GPU kept a full copy; sharded, 64 GPUs hold the whole state many "
                 "times over, and the question is how much stays on each.",
        },
        hint="per GPU: stage 1 keeps (b_w + b_g) N + b_opt N / n, stage 2 b_w N + (b_g + b_opt) N / n, stage 3 "
             "all of it over n (memory.training_state_bytes); N counts every expert."),
    Exercise(
        id="zero_fewest_gpus", topic="ZeRO: fewest GPUs at a stage", judgement=True, exact=True,
        expected=lambda: _zero_fewest(),
        unit="GPUs (a whole number)", rel_tol=0.01,
        hint="at the stage you chose, scan n: memory.training_state_bytes(model, recipe, n, stage) against "
             "a GPU's usable HBM; stage 2 keeps the weights whole on every GPU, so n has a floor.",
        mistakes=(
            Mistake("that is stage 3, which also shards the weights; the question asks at the stage you chose.",
                    value=lambda: _zero_fewest(stage=3)),
            Mistake("keep 10% of HBM free, as the course's fit checks do.", value=lambda: _zero_fewest(headroom=0)),
            Mistake("a GPU short of the bound does not hold the state: round n up, not down.",
                    value=_zero_fewest_floor),
        )),
)
