"""Answer key of problem set 2 (MoE across racks): ``exercises/02_moe_racks.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and typical wrong answers
are computed from ``chalk.moe`` and the catalog when a check runs; the constants below are the
scenario inputs the problem set states. The scenarios differ from the chapter's (other models,
systems, token counts, formats and headroom), so no answer is printed there or in its static
explorer.
"""
import math

from ... import moe
from ...catalog import hardware, models, systems
from ..exercises import Exercise, Mistake

REDUNDANT = dict(model="qwen3-235b-a22b", system="hgx-b200", redundant=52)
"""``experts_per_gpu_qwen``: Qwen3's routed experts and 52 redundant copies on an 8-GPU box."""
ALLTOALL = dict(model="kimi-k2", tokens=4096, chips=16, bytes_per_element=1)
"""``alltoall_mb_kimi``: one chip's all-to-all bytes, FP8 activations both ways."""
TIME = dict(model="deepseek-v3", system="hgx-h200", tokens=3000, bytes_per_element=2)
"""``alltoall_us_h200``: that all-to-all's time inside an HGX H200."""
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
TOUCHED = dict(model="kimi-k2", tokens=24)
"""``touched_experts_kimi``: distinct experts one layer reads in a decode step of 24 sequences."""
PICTURE = dict(model="kimi-k2", system="gb300-nvl72", split="all")
"""``busiest_chips_read``: the domain picture the problem set draws."""
RUBIN = dict(system="vera-rubin-nvl72", dtype="fp4", headroom=0.2)
"""``max_params_vr_fp4``: the most parameters a Vera Rubin NVL72 holds with a fifth of HBM free."""
TORUS = dict(system="tpu-v5p-cube", dims=3, shape=(4, 4, 12))
"""``torus_gbps``: a v5p slice of 4 x 4 x 12 chips; the chip is the catalog's v5p."""


def _experts_per_gpu(redundant=REDUNDANT["redundant"], rounding=math.ceil) -> float:
    n = models.get(REDUNDANT["model"]).moe["n_routed_experts"]
    chips = systems.get(REDUNDANT["system"]).count
    if rounding is math.ceil:
        return float(moe.experts_per_chip(REDUNDANT["model"], chips, redundant))
    return float(rounding((n + redundant) / chips))


def _alltoall_mb(bytes_per_element=ALLTOALL["bytes_per_element"], remote=True, both=True) -> float:
    a = ALLTOALL
    sent = moe.alltoall_bytes(a["model"], a["tokens"], a["chips"], bytes_per_element)
    sent = sent if remote else sent / (1 - 1 / a["chips"])
    return (sent if both else sent / 2) / 1e6


def _alltoall_us(rate=None, remote=True) -> float:
    t, sys_ = TIME, systems.get(TIME["system"])
    seconds = moe.alltoall_time(t["model"], t["system"], t["tokens"], t["bytes_per_element"])
    seconds = seconds if remote else seconds / (1 - 1 / sys_.count)
    return 1e6 * (seconds * sys_.chip.scale_up_bandwidth / rate if rate else seconds)


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


def _busiest(which="most") -> float:
    held = moe.experts_on_chips(PICTURE["model"], systems.get(PICTURE["system"]).count)
    top = max(held)
    return float(held.count(top) if which == "most" else sum(1 for g in held if 0 < g < top))


def _rubin_tparams(headroom=RUBIN["headroom"], dtype=RUBIN["dtype"], count=None) -> float:
    r = RUBIN
    sys_ = systems.get(r["system"])
    chips = count or sys_.count
    return chips * sys_.chip.hbm_capacity * (1 - headroom) / hardware.bytes_per_weight(dtype) / 1e12


def _dies_named_count() -> int:
    """The NVL144 of GTC 2025: the same rack counted by dies."""
    return systems.get(RUBIN["system"]).count * int(moe.ROADMAP["rubin_dies_per_package"])


def _torus_gbps(side=None, both_ways=False, share=True) -> float:
    t = TORUS
    chip = systems.get(t["system"]).chip
    rate = chip.scale_up_bandwidth_bidirectional if both_ways else chip.scale_up_bandwidth
    if not share:
        return rate / 1e9
    return float(moe._torus_share(t["dims"], side or max(t["shape"]))) * rate / 1e9


ONE_WAY = "the bandwidth that matters is one direction's: every chip sends and receives at once."

EXERCISES = (
    Exercise(
        id="experts_per_gpu_qwen",
        expected=lambda: _experts_per_gpu(),
        unit="experts (a whole number)", rel_tol=0.005,
        hint="(routed experts + redundant copies) over the GPUs, rounded up: the busiest GPU sets the step.",
        mistakes=(
            Mistake("the redundant copies need slots too: add them to the routed experts.",
                    value=lambda: _experts_per_gpu(redundant=0)),
            Mistake("round up: when the copies do not divide evenly, some GPU holds one more.",
                    value=lambda: _experts_per_gpu(rounding=math.floor)),
        )),
    Exercise(
        id="alltoall_mb_kimi",
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
        id="alltoall_us_h200",
        expected=lambda: _alltoall_us(),
        unit="µs (microseconds)", rel_tol=0.01,
        hint="bytes one GPU sends (dispatch + combine, remote choices only) over its NVLink rate in one direction.",
        mistakes=(
            Mistake(ONE_WAY + " NVLink 4's 900 GB/s counts both directions.",
                    value=lambda: _alltoall_us(rate=2 * systems.get(TIME["system"]).chip.scale_up_bandwidth)),
            Mistake("inside one box the tokens travel over NVLink, not the network card.",
                    value=lambda: _alltoall_us(rate=systems.get(TIME["system"]).chip.scale_out_bandwidth)),
            Mistake("1/8 of the choices stay on the token's own GPU: multiply the bytes by 7/8.",
                    value=lambda: _alltoall_us(remote=False)),
        )),
    Exercise(
        id="expert_gb_decode",
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
    Exercise(
        id="max_batch_kimi",
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
        expected=lambda: _excess_pct(),
        unit="% above the mean chip's load", rel_tol=0.02,
        hint="100 z_E sqrt(E (n_exp - k) / ((n_exp - 1) n_step k)) with z_E = moe.expected_max_standard_normal(E).",
        mistakes=(
            Mistake("the busiest of E chips sits z_E standard deviations out, not one.", value=lambda: _excess_pct(z=1.0)),
            Mistake("n_step is every token of the step, not one chip's share.", value=lambda: _excess_pct(per_chip=True)),
        )),
    Exercise(
        id="touched_experts_kimi",
        expected=lambda: float(moe.expected_experts_touched(TOUCHED["model"], TOUCHED["tokens"])),
        unit="experts", rel_tol=0.01,
        hint="n_exp (1 - (1 - k/n_exp)^n_step): an expert is missed by each token with probability 1 - k/n_exp.",
        mistakes=(
            Mistake("tokens share experts: 24 tokens x 8 choices counts the popular ones many times.",
                    value=lambda: float(TOUCHED["tokens"] * models.get(TOUCHED["model"]).moe["experts_per_token"])),
            Mistake("a small step does not read every expert.",
                    value=lambda: float(models.get(TOUCHED["model"]).moe["n_routed_experts"])),
        )),
    Exercise(
        id="busiest_chips_read",
        expected=lambda: _busiest(),
        unit="GPUs (a whole number)", rel_tol=0.005,
        hint="count the GPUs drawn darkest: they hold one expert more than the others.",
        mistakes=(
            Mistake("those are the GPUs holding one expert fewer.", value=lambda: _busiest("fewer")),
            Mistake("not every GPU holds the most: the experts do not divide evenly over 72.",
                    value=lambda: float(systems.get(PICTURE["system"]).count)),
        )),
    Exercise(
        id="max_params_vr_fp4",
        expected=lambda: _rubin_tparams(),
        unit="trillion parameters", rel_tol=0.01,
        hint="GPU packages x HBM per package x (1 - headroom) / bytes per weight (FP4: 0.5).",
        mistakes=(
            Mistake("keep a fifth of the HBM free, not a tenth.", value=lambda: _rubin_tparams(headroom=0.1)),
            Mistake("FP4 weights take half a byte each.", value=lambda: _rubin_tparams(dtype="fp8")),
            Mistake("the HBM belongs to the 72 packages; counting dies (NVL144) counts each package's memory twice.",
                    value=lambda: _rubin_tparams(count=_dies_named_count())),
        )),
    Exercise(
        id="torus_gbps",
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
