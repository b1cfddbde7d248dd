"""Answer key of problem set 1 (batching): ``exercises/01_batching.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and the typical wrong
answers are computed from ``chalk`` when a check runs, so a change to the catalog or a formula
moves the key with it. The scenario constants below are the inputs the problem set states.
"""
import math

from ... import roofline
from ...catalog import hardware, models, prices, systems
from ...catalog.quoted import LECTURE, USD_PER_CHIP_HOUR
from ..exercises import Exercise, Mistake

DEEPSEEK, LLAMA_8B, LLAMA_70B = "deepseek-v3", "llama-3.1-8b", "llama-3-70b"
H100, H200, GB200 = "H100-SXM", "H200", "GB200"

KV_CONTEXT = 2048
"""Context of exercise ``balance_kv_h100``: below DeepSeek-V3's L* on H100, so B* is finite."""
SERVE = dict(chip=H200, model=DEEPSEEK, batch=1024, context=4096, dtype="fp8", chips=8,
             usd_per_chip_hour=USD_PER_CHIP_HOUR)
"""The replica of ``usd_per_mtok`` and ``tokens_per_s``: one 8-GPU H200 server, FP8 weights."""
QUOTED_USD_PER_MTOK = 0.10
"""The price ``batch_from_price`` starts from; it is an input, not derived."""
SCAN = dict(chip=H100, model=LLAMA_8B, context=256)
"""The system of ``min_batch_compute``, the exercise solved by a scan."""
PLOT = dict(chip=H100, model=LLAMA_70B, context=512, chips=8)
"""The system drawn in the plot-reading exercise ``kink_batch``."""
LECTURE_SPARSITY = LECTURE["deepseek_experts"] / LECTURE["deepseek_active_experts"]
"""The lecture's reading of DeepSeek-V3: "32 of 256 experts" active."""
RACK_GPUS = systems.get("gb200-nvl72").count
"""GPUs of the GB200 NVL72 rack in ``latency_floor_ms``."""
FAST_TIER = prices.get("anthropic/claude-opus-4.6")
"""The fast mode the lecture quotes; its speed and price ratios come from the price list."""
FAST_SPEED, FAST_PRICE = FAST_TIER.fast_speedup, FAST_TIER.fast_multipliers[1]


def _ds():
    return models.get(DEEPSEEK)


def _balance(chip, model, context=0, dtype="bf16", b_w=None, kv_bytes_per_element=2, n_tot=None):
    """B* from the numeric formula, with one input overridden to build a typical wrong answer."""
    chip, model = hardware.get(chip), models.get(model)
    return float(roofline.numeric["balance_batch"](
        0, context, model.active_params, n_tot or model.total_params,
        b_w or hardware.bytes_per_weight(dtype), model.kv_bytes_per_token(kv_bytes_per_element),
        chip.flops(dtype), chip.hbm_bandwidth))


def _serve():
    return roofline.decode_point(**SERVE)


def _usd_at_batch_one() -> float:
    """$/Mtok with no batching at short context: the weight read paid by a single token."""
    return roofline.decode_point(**{**SERVE, "batch": 1, "context": 0}).usd_per_million_tokens


def _floor_s(params=None) -> float:
    """Seconds to read ``params`` FP8 weights (default: all of DeepSeek-V3) over a rack's HBM."""
    n = params if params is not None else _ds().total_params
    return n * hardware.bytes_per_weight("fp8") / (RACK_GPUS * hardware.get(GB200).hbm_bandwidth)


def _plot_balance(context):
    return roofline.balance_batch(PLOT["chip"], PLOT["model"], context=context)


DROPPED_2 = ("a matmul costs 2 FLOPs per parameter per token (multiply and add); "
             "the compute time is 2 B N_act / F.")
NO_BYTES = "a BF16 weight is 2 bytes: the weight read takes N_tot b_w / W, not N_tot / W."

EXERCISES = (
    Exercise(
        id="sparsity_v3",
        expected=lambda: _ds().sparsity,
        unit="dimensionless ratio", rel_tol=0.03,
        hint="divide the total parameters by the active ones (models.get('deepseek-v3')).",
        mistakes=(
            Mistake("that is the lecture's '32 of 256 experts'. V3 routes each token to 8 of "
                    "256 experts plus 1 shared expert, and s counts parameters, not experts.",
                    value=lambda: LECTURE_SPARSITY),
            Mistake("that is the ratio of expert counts (256 / 8). Attention, embeddings, the "
                    "dense layers and the shared expert are used by every token: count parameters.",
                    value=lambda: _ds().moe["n_routed_experts"] / _ds().moe["experts_per_token"]),
            Mistake("s = N_tot / N_act is above 1: it is total over active.",
                    value=lambda: 1 / _ds().sparsity),
        )),
    Exercise(
        id="balance_h100",
        expected=lambda: roofline.balance_batch(H100, DEEPSEEK, "bf16"),
        unit="sequences", rel_tol=0.02,
        hint="set 2 B N_act / F equal to N_tot b_w / W and solve for B: B* = (F/W) (b_w/2) s.",
        mistakes=(
            Mistake(DROPPED_2, factor=2),
            Mistake(NO_BYTES, factor=0.5),
            Mistake("every expert's weights are read each step, so the weight read uses N_tot, "
                    "not N_act.", value=lambda: _balance(H100, DEEPSEEK, n_tot=_ds().active_params)),
            Mistake("that uses the lecture's s = 8; DeepSeek-V3's N_tot / N_act is about 18.",
                    value=lambda: hardware.get(H100).intensity("bf16") * LECTURE_SPARSITY),
        )),
    Exercise(
        id="lstar_h100",
        expected=lambda: roofline.balance_context_for(H100, DEEPSEEK, "bf16"),
        unit="tokens", rel_tol=0.02,
        hint="at infinite batch the weights are free; set 2 N_act / F equal to L b_kv / W and solve for L.",
        mistakes=(
            Mistake(DROPPED_2 + " So L* = 2 N_act / (r b_kv).", factor=0.5),
            Mistake("a BF16 cache element is 2 bytes: b_kv = n_layers (d_c + d_R) x 2 B for MLA.",
                    factor=2),
            Mistake("the matmuls of one token use N_act, not N_tot.",
                    value=lambda: roofline.balance_context_for(H100, DEEPSEEK, "bf16") * _ds().sparsity),
        )),
    Exercise(
        id="balance_kv_h100",
        expected=lambda: roofline.balance_batch(H100, DEEPSEEK, "bf16", context=KV_CONTEXT),
        unit="sequences", rel_tol=0.03,
        hint="include the KV read B L b_kv / W in the memory time: B* = N_tot b_w / (2 N_act / r - L b_kv).",
        mistakes=(
            Mistake("that ignores the KV read; at this context it takes bandwidth from the "
                    "weights and raises B*.", value=lambda: roofline.balance_batch(H100, DEEPSEEK, "bf16")),
            Mistake(NO_BYTES, factor=0.5),
            Mistake("the cache is BF16, 2 bytes per element: b_kv = 61 x 576 x 2 B.",
                    value=lambda: _balance(H100, DEEPSEEK, KV_CONTEXT, kv_bytes_per_element=1)),
            Mistake("every expert's weights are read each step, so the weight read uses N_tot.",
                    value=lambda: _balance(H100, DEEPSEEK, KV_CONTEXT, n_tot=_ds().active_params)),
        )),
    Exercise(
        id="min_batch_compute",
        expected=lambda: float(math.ceil(roofline.balance_batch(SCAN["chip"], SCAN["model"],
                                                                context=SCAN["context"]))),
        unit="sequences (a whole number)", rel_tol=0.005,
        hint="scan B = 1, 2, 3, ... and stop at the first B where t_compute >= t_mem "
             "(roofline.numeric['t_compute'] and ['t_mem']).",
        mistakes=(
            Mistake("that leaves out the KV read of each sequence; at this context it matters.",
                    value=lambda: float(math.ceil(roofline.balance_batch(SCAN["chip"], SCAN["model"])))),
            Mistake(NO_BYTES, value=lambda: float(math.ceil(_balance(
                SCAN["chip"], SCAN["model"], SCAN["context"], b_w=1)))),
        )),
    Exercise(
        id="latency_floor_ms",
        expected=lambda: 1e3 * _floor_s(),
        unit="ms", rel_tol=0.02,
        hint="the flat part of graph A: every weight read once with the whole rack's bandwidth, "
             "N_tot b_w / (72 W).",
        mistakes=(
            Mistake("the answer is asked in milliseconds.", factor=1e-3),
            Mistake("every expert is read in a step: use N_tot, not N_act.",
                    value=lambda: 1e3 * _floor_s(params=_ds().active_params)),
            Mistake("the weights are FP8, 1 byte each.", factor=2),
            Mistake("the weights are spread over all 72 GPUs, which read them in parallel.",
                    factor=RACK_GPUS),
        )),
    Exercise(
        id="usd_per_mtok",
        expected=lambda: _serve().usd_per_million_tokens,
        unit="$ per million tokens", rel_tol=0.02,
        hint="the step costs t_step x 8 chips x $2/h / 3600 s/h and makes one token per sequence.",
        mistakes=(
            Mistake("that is dollars per token; the question asks per million tokens.", factor=1e-6),
            Mistake("the replica rents 8 GPUs, not one.", factor=1 / SERVE["chips"]),
            Mistake("a step makes one token for each of the B sequences: divide by the batch.",
                    factor=SERVE["batch"]),
            Mistake("the rental is per hour: divide $2 by 3600 s.", factor=3600),
        )),
    Exercise(
        id="tokens_per_s",
        expected=lambda: _serve().tokens_per_second,
        unit="tokens/s", rel_tol=0.02,
        hint="a step takes max(t_compute, t_mem) and yields B tokens.",
        mistakes=(
            Mistake("that is steps per second; each step yields one token for each sequence.",
                    factor=1 / SERVE["batch"]),
            Mistake("that is per GPU; the question asks for the whole 8-GPU replica.",
                    factor=1 / SERVE["chips"]),
        )),
    Exercise(
        id="batch_from_price",
        expected=lambda: _usd_at_batch_one() / QUOTED_USD_PER_MTOK,
        unit="sequences", rel_tol=0.03,
        hint="on the weight-bound side the price per token is (weight-read time x rent of the "
             "replica) / B; solve for B.",
        mistakes=(
            Mistake("the replica rents 8 GPUs: the rent per step is 8 x $2/h.",
                    factor=1 / SERVE["chips"]),
            Mistake("DeepSeek-V3 is served in FP8 here, 1 byte per weight.", factor=2),
            Mistake("the rental is per hour: divide by 3600 s to get $ per second.", factor=3600),
        )),
    Exercise(
        id="kink_batch",
        expected=lambda: _plot_balance(PLOT["context"]),
        unit="sequences", rel_tol=0.10,
        hint="follow the bold curve from the left: the batch where it leaves the sloped memory "
             "line and joins the compute line.",
        mistakes=(
            Mistake("that is B* without the KV read (r s); on the plot the memory line slopes "
                    "because of the cache, which moves the crossing right.",
                    value=lambda: _plot_balance(0)),
        )),
    Exercise(
        id="worst_latency_ms",
        expected=lambda: 2e3 * hardware.get(H100).drain_time,
        unit="ms", rel_tol=0.02,
        hint="a train leaves every T = C / W; the unluckiest request just missed one.",
        mistakes=(
            Mistake("the request that just missed a train waits a full interval and then rides "
                    "one: 2T.", factor=0.5),
            Mistake("that is the average (1.5T) if arrivals are uniform; the worst case is 2T.",
                    factor=0.75),
            Mistake("the answer is asked in milliseconds.", factor=1e-3),
        )),
    Exercise(
        id="fast_batch_shrink",
        expected=lambda: (lambda normal, fast: normal / fast)(*roofline.fast_mode(FAST_SPEED, FAST_PRICE)),
        unit="ratio (normal batch / fast batch)", rel_tol=0.02,
        hint="the speed ratio puts normal service at 2.5 B*, the price ratio puts fast mode at B*/6.",
        mistakes=(
            Mistake("price and speed act on opposite sides of B*: normal runs above it, fast "
                    "below. Multiply the two ratios.", value=lambda: FAST_PRICE / FAST_SPEED),
            Mistake("the price ratio alone compares fast mode with B*, not with normal service.",
                    value=lambda: FAST_PRICE),
            Mistake("the speed ratio alone compares normal service with B*; fast mode sits "
                    "below B* too.", value=lambda: FAST_SPEED),
        )),
)
