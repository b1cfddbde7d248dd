"""Answer key of problem set 2 (MoE across racks): ``exercises/02_moe_racks.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.moe`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
systems, token counts, formats and headroom), so no answer is printed there or in its static
explorer.

Four items ask the chapter's judgement in decode, where the batch decides: whether one
micro-batch's all-to-all hides behind the other's expert work (``hides_kimi_decode``), what would
make it hide (``what_hides_kimi``), up to what batch it hides (``hide_tokens_qwen``) and what a
second rack adds to a decode step (``second_rack_ms``, ``moe.decode_moe_time`` as the chapter
computes it); and one asks it in prefill (``prefill_hides_qwen``). Their keys come from
``moe.layer_times``;
two micro-batches overlapped take, per MoE layer, twice the longer of one micro-batch's all-to-all
and its expert work (the links and the experts each serve both in turn).
"""
import math

from ... import moe
from ...catalog import hardware, models, systems
from ..exercises import Choice, Choices, Exercise, Mistake
ALLTOALL = dict(model="kimi-k2", tokens=4096, chips=16, bytes_per_element=1)
"""``alltoall_mb_kimi``: one chip's all-to-all bytes, FP8 activations both ways."""
DECODE = dict(model="deepseek-v3", deployment="online-decode", dtype="fp8")
"""``expert_gb_decode``: expert weights per GPU in DeepSeek's published decode deployment."""
BOXES = dict(model="deepseek-v3", system="hgx-h800", tokens=4096, boxes=3)
"""``three_box_slowdown``: the all-to-all over three 8-GPU boxes against one, each box keeping its
tokens, every expert choice sent on its own (the flat count)."""
FIT = dict(model="kimi-k2", system="gb300-nvl72", chips=64, context=65536, dtype="fp8")
"""``max_batch_kimi``: the most sequences beside the weights, KV in BF16."""
WEIGHTS = dict(model="qwen3-235b-a22b", system="mi355x-8", dtype="bf16")
"""``weights_gb_qwen``: weights on the busiest GPU of an MI355X platform."""
IMBALANCE = dict(model="deepseek-v3", chips=32, tokens=1024)
"""``imbalance_excess_pct``: the busiest chip's excess over the mean, normal approximation."""
TORUS = dict(system="tpu-v5p-cube", dims=3, shape=(4, 4, 12))
"""``torus_gbps``: a v5p slice of 4 x 4 x 12 chips; the chip is the catalog's v5p."""
HIDE = dict(model="kimi-k2", system="gb300-nvl72", chips=64, tokens_per_chip=128, dtype="fp8",
            links="measured")
"""``hides_kimi_decode`` and ``what_hides_kimi``: Kimi K2 decoding on 64 GPUs of a GB300 NVL72, two
micro-batches of 128 tokens per GPU, BF16 activations, DeepSeek's measured link model (a fixed cost
per call, 80% of NVLink)."""
HIDE_CHANGES = dict(c=dict(chips=32), d=dict(dtype="bf16"), a=dict(tokens_per_chip=64),
                    b=dict(bytes_per_element=1), e=dict(chips=72))
"""The changes ``what_hides_kimi`` lists, by option letter, as overrides of ``HIDE``."""
THRESHOLD = dict(model="qwen3-235b-a22b", system="hgx-b200", dtype="fp8", reference_tokens_per_chip=512)
"""``hide_tokens_qwen``: Qwen3-235B-A22B on the 8 GPUs of an HGX B200, nominal rates; the reference
batch only sets where the linear all-to-all time is read (every expert touched there)."""
PREFILL = dict(model="qwen3-235b-a22b", system="hgx-b200", dtype="fp8", tokens_per_chip=4096, dedup=True)
"""``prefill_hides_qwen``: the ``hide_tokens_qwen`` box in prefill, each token sent once per GPU that
holds one of its experts (DeepEP's normal kernels), nominal rates."""
RACK2 = dict(model="deepseek-v3", system="gb300-nvl72", chips=64, tokens_per_chip=44, dtype="fp8", micro_batches=2)
"""``second_rack_ms``: DeepSeek-V3 decoding on 64 GPUs of a GB300 NVL72, then on 64 GPUs of each of
two, every GPU keeping 44 tokens per micro-batch, nominal rates, every choice sent on its own."""


def _alltoall_mb(bytes_per_element=ALLTOALL["bytes_per_element"], remote=True, both=True) -> float:
    a = ALLTOALL
    sent = moe.alltoall_bytes(a["model"], a["tokens"], a["chips"], bytes_per_element)
    sent = sent if remote else sent / (1 - 1 / a["chips"])
    return (sent if both else sent / 2) / 1e6


def _expert_gb(dtype=DECODE["dtype"], layers=None) -> float:
    d = next(x for x in moe.deployments() if x.name == DECODE["deployment"])
    m = models.get(DECODE["model"])
    per_expert = moe.expert_params(DECODE["model"]) * hardware.bytes_per_weight(dtype)
    return d.experts_per_chip * (layers or m.n_moe_layers) * per_expert / 1e9


def _slowdown(remote_one=True, share=None, dedup=False) -> float:
    """The key from ``layer_times``; a typical slip from the closed form rho x crossing share /
    remote share, with the slip's shares; or the deduplicated count (once per GPU and per box)."""
    t = BOXES
    sys_ = systems.get(t["system"])
    if remote_one and share is None:
        one = moe.layer_times(t["model"], sys_, t["tokens"], "fp8", dedup=dedup).communication
        many = moe.layer_times(t["model"], sys_, t["boxes"] * t["tokens"], "fp8", domains=t["boxes"],
                               dedup=dedup).communication
        return many / one
    crossing = share if share is not None else 1 - 1 / t["boxes"]
    return sys_.scale_up_to_out * crossing / ((1 - 1 / sys_.count) if remote_one else 1.0)


def _placement(chips=FIT["chips"], kv_bytes_per_element=2):
    f = FIT
    return moe.placement(f["model"], f["system"], 1, f["context"], f["dtype"], chips=chips,
                         kv_bytes_per_element=kv_bytes_per_element)


def _max_batch_even_split() -> float:
    """The slip of spreading every weight evenly, as if nothing were copied onto each chip."""
    p, m = _placement(), models.get(FIT["model"])
    weights = m.total_params * hardware.bytes_per_weight(FIT["dtype"]) / FIT["chips"]
    return float(FIT["chips"] * math.floor((p.usable - weights) / p.kv_bytes_per_sequence))


def _max_batch_pooled() -> float:
    """The slip of pooling the chips' free HBM, as if a sequence's cache could straddle chips."""
    p = _placement()
    return float(math.floor((p.usable - p.weight_bytes) * FIT["chips"] / p.kv_bytes_per_sequence))


def _weights_gb(dtype=WEIGHTS["dtype"], part="all") -> float:
    w = WEIGHTS
    p = moe.placement(w["model"], w["system"], 0, 0, dtype)
    if part == "even":
        return models.get(w["model"]).total_params * hardware.bytes_per_weight(dtype) / systems.get(w["system"]).count / 1e9
    return (p.expert_bytes if part == "experts" else p.weight_bytes) / 1e9


def _excess_pct(z=None, per_chip=False) -> float:
    i = IMBALANCE
    if z is None and not per_chip:
        return 100 * (moe.imbalance_estimate(i["model"], i["chips"], i["tokens"]) - 1)
    m = models.get(i["model"])
    n, k_ = m.moe["n_routed_experts"], m.moe["experts_per_token"]
    tokens = i["tokens"] / i["chips"] if per_chip else i["tokens"]
    z = z if z is not None else moe.expected_max_standard_normal(i["chips"])
    return 100 * z * math.sqrt(i["chips"] * (n - k_) / ((n - 1) * tokens * k_))


def _torus_gbps(side=None, both_ways=False, share=True) -> float:
    t = TORUS
    chip = systems.get(t["system"]).chip
    rate = chip.scale_up_bandwidth_bidirectional if both_ways else chip.scale_up_bandwidth
    if not share:
        return rate / 1e9
    return float(moe._torus_share(t["dims"], side or max(t["shape"]))) * rate / 1e9


def _layer(scenario, domains=1, **override) -> moe.LayerTimes:
    """One MoE layer of a decode scenario (``HIDE``, ``RACK2``) with entries overridden: the scenario's
    tokens per GPU on each of its GPUs, in each of ``domains`` copies of its system."""
    s = {**scenario, **override}
    return moe.layer_times(s["model"], s["system"], s["tokens_per_chip"] * s["chips"] * domains, s["dtype"],
                           domains=domains, chips=s["chips"], bytes_per_element=s.get("bytes_per_element", 2),
                           dedup=s.get("dedup", False), links=s.get("links", "nominal"))


def _threshold_tokens(per_token_factor=1.0, cover="weights") -> float:
    """Tokens per GPU in one micro-batch at which its all-to-all takes as long as the other
    micro-batch's expert work: nominal rates make the all-to-all linear in the tokens, and the
    weight reads do not grow once every expert is touched. A wrong answer scales the all-to-all per
    token, or takes the matmuls as the cover (they outlast the reads only from n_step*)."""
    t = THRESHOLD
    sys_ = systems.get(t["system"])
    if cover == "matmuls":
        return moe.compute_bound_step(t["model"], sys_, t["dtype"]) / sys_.count
    ref = t["reference_tokens_per_chip"]
    lt = moe.layer_times(t["model"], sys_, ref * sys_.count, t["dtype"])
    return lt.weights / (per_token_factor * lt.communication / ref)


def _second_rack_ms(span="overlapped", micro_batches=None, layers=None, **override) -> float:
    """Milliseconds a second rack adds to a decode step of ``RACK2``: per MoE layer and micro-batch,
    the overlapped span max(all-to-all, expert work) on two racks less that on one. Wrong answers
    add the layers in series, add the whole two-rack all-to-all, or change the counts."""
    r = {**RACK2, **override}
    if span == "overlapped" and micro_batches is None and layers is None:
        one, two = (moe.decode_moe_time(r["model"], r["system"], r["tokens_per_chip"], r["dtype"], domains=d,
                                        chips=r["chips"], micro_batches=r["micro_batches"],
                                        links=r.get("links", "nominal")) for d in (1, 2))
        return 1e3 * (two - one)
    one, two = _layer(RACK2, **override), _layer(RACK2, domains=2, **override)
    if span == "exposed":
        added = two.communication
    else:
        per = (lambda t: t.communication + t.work) if span == "series" else (lambda t: max(t.communication, t.work))
        added = per(two) - per(one)
    return 1e3 * (micro_batches or r["micro_batches"]) * (layers or models.get(r["model"]).n_moe_layers) * added


ONE_WAY = "the bandwidth that matters is one direction's: every chip sends and receives at once."

EXERCISES = (
    Exercise(
        id="alltoall_mb_kimi",
        topic="all-to-all bytes",
        expected=lambda: _alltoall_mb(),
        unit="MB (1e6 bytes)", rel_tol=0.01,
        hint="2 (dispatch and combine) x tokens per chip x k x d_model x bytes per element x (1 - 1/E).",
        mistakes=(
            Mistake("a token's activation goes out to its k experts and the results come back: count both ways (2x).",
                    value=lambda: _alltoall_mb(both=False)),
            Mistake("1/E of the choices land on the token's own chip and are never sent: multiply by (1 - 1/E).",
                    value=lambda: _alltoall_mb(remote=False)),
            Mistake("the activations are sent in FP8, one byte per element.", value=lambda: _alltoall_mb(2)),
        )),
    Exercise(
        id="expert_gb_decode",
        topic="experts per GPU in a published deployment",
        expected=lambda: _expert_gb(),
        unit="GB", rel_tol=0.01,
        hint="experts per GPU (routed + redundant over the GPUs, rounded up) x MoE layers x one expert's "
             "parameters x bytes per weight.",
        mistakes=(
            Mistake("DeepSeek-V3's weights are FP8, one byte each.", value=lambda: _expert_gb(dtype="bf16")),
            Mistake("only the MoE layers hold experts: DeepSeek-V3's first 3 layers are dense.",
                    value=lambda: _expert_gb(layers=models.get(DECODE["model"]).n_layers)),
        )),
    Exercise(
        id="three_box_slowdown",
        topic="crossing the box boundary",
        expected=lambda: _slowdown(),
        unit="dimensionless ratio (three boxes / one box)", rel_tol=0.02,
        hint="over three boxes 2/3 of each GPU's choices cross the network card, rho times slower per "
             "direction; inside one box (1 - 1/8) of them cross NVLink.",
        mistakes=(
            Mistake("inside one box only 7/8 of the choices leave the GPU: divide by (1 - 1/8).",
                    value=lambda: _slowdown(remote_one=False)),
            Mistake("with three boxes two thirds of the experts are elsewhere, not half.",
                    value=lambda: _slowdown(share=0.5)),
            Mistake("the choices whose expert is in the GPU's own box stay on NVLink: only 2/3 cross the network.",
                    value=lambda: _slowdown(share=1.0)),
            Mistake("the prompt sends every expert choice on its own, as the decode kernels do; once per GPU "
                    "and once per box is how the prefill and training kernels send.",
                    value=lambda: _slowdown(dedup=True)),
        )),
    Choice(
        id="hides_kimi_decode",
        topic="hiding the all-to-all in decode",
        options={
            "a": "Yes, behind the other micro-batch's expert matmuls.",
            "b": "Yes, behind the other micro-batch's reads of its expert weights.",
            "c": "No: it outlasts both the other micro-batch's matmuls and its weight reads.",
            "d": "No schedule can hide it: a dispatch must arrive before the experts start.",
        },
        answer="c",
        feedback={
            "a": "that would hold above n_step*, in prefill or training, where the matmuls outlast the "
                 "weight reads. A GPU's 128 tokens are far below it: the matmuls are the shorter expert work, "
                 "and against them alone the all-to-all is longer at any batch here.",
            "b": "that holds at the links' nominal rates, bandwidth only. With the measured link model each "
                 "dispatch and each combine call also costs its fixed time, and NVLink runs at 80% of its "
                 "rate: the all-to-all then outlasts the reads.",
            "d": "that holds within one micro-batch, which takes the all-to-all and its experts in series. "
                 "With two in flight, one's dispatch and combine travel while the other's experts work.",
        },
        hint="moe.layer_times(model, system, tokens, dtype, chips=64, links='measured') gives one "
             "micro-batch's all-to-all (.communication), matmuls (.compute) and weight reads (.weights); "
             "compare the first with the other two.",
    ),
    Choices(
        id="what_hides_kimi",
        topic="what makes the all-to-all hide",
        options={
            "a": "Halve the tokens per GPU in each micro-batch to 64.",
            "b": "Send the activations in FP8 both ways instead of BF16.",
            "c": "Put the experts on 32 GPUs instead of 64 with 128 tokens per GPU in each micro-batch.",
            "d": "Store the weights in BF16 instead of FP8.",
            "e": "Put the experts on all 72 GPUs with 128 tokens per GPU in each micro-batch.",
        },
        answer={"c", "d"},
        feedback={
            "a": "that would be enough at nominal rates. Half the tokens halve the bytes, but each dispatch "
                 "and each combine call still costs its fixed time, and the cover, the weight reads, does not "
                 "shrink with the batch: still longer.",
            "b": "that would be enough at nominal rates. FP8 halves the bytes, as halving the batch does, and "
                 "leaves the fixed cost of every call: still longer than the weight reads.",
            "c": "applies: each GPU then holds twice the routed experts and reads nearly twice the weights per "
                 "micro-batch, while it sends about the same bytes. It hides, and the step gets longer: hiding "
                 "is a comparison, not a speed-up.",
            "d": "applies: BF16 doubles every weight read, the cover, and leaves the all-to-all as it is. It "
                 "hides because the step got slower.",
            "e": "spreading the experts wider can only shorten a GPU's reads, the cover; and 384 experts over "
                 "72 GPUs still leave as many on the busiest GPU as over 64, so its reads and its all-to-all "
                 "stay as they were: still longer.",
        },
        hint="in decode the other micro-batch's weight reads are the cover: a change helps only if it "
             "shortens the all-to-all below them, fixed cost per call included, or lengthens the reads. "
             "Try each with moe.layer_times.",
    ),
    Exercise(
        id="hide_tokens_qwen",
        topic="the largest decode batch that hides",
        judgement=True,
        expected=_threshold_tokens,
        unit="tokens per GPU in one micro-batch", rel_tol=0.02,
        hint="decide what covers the all-to-all first: below n_step* it is the other micro-batch's weight "
             "reads, which do not grow with the batch. At nominal rates the all-to-all grows in proportion "
             "to the tokens: solve all-to-all(T) = weight reads for T.",
        mistakes=(
            Mistake("twice the answer: the all-to-all per token is half what it should be. It goes both ways "
                    "(dispatch and combine), in BF16 (2 bytes), over NVLink's rate in one direction.", factor=2),
            Mistake("1/8 of a token's choices land on its own GPU and are not sent: the bytes carry (1 - 1/E).",
                    factor=1 - 1 / 8),
            Mistake("that is n_step*/E, where the matmuls start to outlast the weight reads. Below it the reads "
                    "are the cover, and the all-to-all outgrows them well before.",
                    value=lambda: _threshold_tokens(cover="matmuls")),
        ),
    ),
    Choice(
        id="prefill_hides_qwen",
        topic="hiding the all-to-all in prefill",
        options={
            "a": "Yes, behind the other micro-batch's expert matmuls.",
            "b": "Yes, behind the other micro-batch's reads of its expert weights.",
            "c": "No: it outlasts the matmuls, which are now the longer expert work.",
            "d": "That depends on the batch: the all-to-all grows with it and the expert work does not.",
        },
        answer="c",
        feedback={
            "a": "that would hold for a wider expert or a faster link: above n_step* the all-to-all over the "
                 "matmuls is bytes per token over the link's rate against FLOPs per token over the chip's, "
                 "and Qwen3's narrow experts do too few FLOPs per byte sent on a B200.",
            "b": "that is the decode picture, below n_step*. At 4,096 tokens per GPU the matmuls far outlast "
                 "the weight reads and are the cover.",
            "d": "that holds below n_step*, where the weight reads are the cover. Above it the all-to-all and "
                 "the matmuls both grow in proportion to the tokens, and the batch cancels out of the verdict.",
        },
        hint="decide which expert work covers the transfer at this batch (matmuls or weight reads), then "
             "compare: moe.layer_times(model, system, tokens, dtype, dedup=True).",
    ),
    Exercise(
        id="second_rack_ms",
        topic="a second rack per decode step",
        judgement=True,
        expected=_second_rack_ms,
        unit="ms added per decode step", rel_tol=0.02,
        hint="per MoE layer, two overlapped micro-batches take twice the longer of one micro-batch's "
             "all-to-all and its expert work. Decide which is longer on one rack and on two (the experts "
             "spread over twice the GPUs, so each GPU reads fewer), then multiply the difference by the "
             "micro-batches and the MoE layers.",
        mistakes=(
            Mistake("that adds the whole two-rack all-to-all to the step. On one rack the step already took "
                    "the expert work the all-to-all hid behind, and on two each GPU reads fewer experts: the "
                    "layer grows from the longer of the two on one rack to the longer on two.",
                    value=lambda: _second_rack_ms("exposed")),
            Mistake("that takes each micro-batch's all-to-all and expert work in series. With two micro-batches "
                    "in flight one's all-to-all overlaps the other's experts: the layer takes the longer of "
                    "the two, for each micro-batch.", value=lambda: _second_rack_ms("series")),
            Mistake("half the answer: both micro-batches pay the longer all-to-all in each layer.",
                    value=lambda: _second_rack_ms(micro_batches=1)),
            Mistake("only the MoE layers hold experts: DeepSeek-V3's first 3 layers are dense.",
                    value=lambda: _second_rack_ms(layers=models.get(RACK2["model"]).n_layers)),
            Mistake("the prompt takes the links' nominal rates, bandwidth only; the measured link model adds a "
                    "fixed cost per call.", value=lambda: _second_rack_ms(links="measured")),
        ),
    ),
    Exercise(
        id="max_batch_kimi",
        topic="memory per chip",
        expected=lambda: float(_placement().max_batch),
        unit="sequences", exact=True, rel_tol=0.002,
        hint="moe.placement(model, system, batch, context, dtype, chips=64) and read .max_batch: each GPU "
             "holds as many whole sequences as its own free HBM takes, times the GPUs.",
        mistakes=(
            Mistake("a sequence's cache lives whole on one GPU: round down per GPU (free HBM of one GPU over one "
                    "sequence's KV), then multiply by the GPUs; pooling the free HBM counts sequences split "
                    "across GPUs.", value=_max_batch_pooled),
            Mistake("the experts sit on 64 of the 72 GPUs; the other 8 hold neither weights nor KV here.",
                    value=lambda: float(_placement(chips=systems.get(FIT["system"]).count).max_batch)),
            Mistake("the KV cache is kept in BF16, 2 bytes per element.",
                    value=lambda: float(_placement(kv_bytes_per_element=1).max_batch)),
            Mistake("only the routed experts are split: attention, the dense layer and the shared expert are "
                    "copied on every GPU.", value=_max_batch_even_split),
        )),
    Exercise(
        id="weights_gb_qwen",
        topic="memory per chip",
        expected=lambda: _weights_gb(),
        unit="GB", rel_tol=0.01,
        hint="the busiest GPU's experts of every MoE layer plus everything that is copied on every GPU.",
        mistakes=(
            Mistake("only the routed experts are split; attention and embeddings are copied on every GPU.",
                    value=lambda: _weights_gb(part="even")),
            Mistake("the weights are BF16, 2 bytes each.", value=lambda: _weights_gb(dtype="fp8")),
            Mistake("each GPU also holds a copy of everything that is not a routed expert.",
                    value=lambda: _weights_gb(part="experts")),
        )),
    Exercise(
        id="imbalance_excess_pct",
        topic="load imbalance",
        expected=lambda: _excess_pct(),
        unit="% above the mean chip's load", rel_tol=0.02,
        hint="100 z_E sqrt(E (n_exp - k) / ((n_exp - 1) n_step k)) with z_E = moe.expected_max_standard_normal(E).",
        mistakes=(
            Mistake("the busiest of E chips sits z_E standard deviations out, not one.", value=lambda: _excess_pct(z=1.0)),
            Mistake("n_step is every token of the step, not one chip's share.", value=lambda: _excess_pct(per_chip=True)),
        )),
    Exercise(
        id="torus_gbps",
        topic="all-to-all on a torus",
        expected=lambda: _torus_gbps(),
        unit="GB/s per chip, per direction", rel_tol=0.01,
        hint="share = 4 / (dimensions x longest side), times the chip's ICI bandwidth in one direction.",
        mistakes=(
            Mistake("on a torus an all-to-all cannot use all of a chip's ICI: messages share links on the way.",
                    value=lambda: _torus_gbps(share=False)),
            Mistake(ONE_WAY + " Google prints ICI as both directions together.", value=lambda: _torus_gbps(both_ways=True)),
            Mistake("the longest side sets the share: its links carry the most hops.",
                    value=lambda: _torus_gbps(side=min(TORUS["shape"]))),
        )),
)
