"""Chapter 4 against published figures: each computed through chalk.memory and compared with the
number the source prints, with its citation and a stated tolerance. Only figures about memory per
chip, the serving read floor and training state; Chapter 1's (a token's cache, the balance batch,
the drain time) are tested with Chapter 1.

Sources: the scaling book (Austin et al. 2025, "How to Scale Your Model", Part 8, "Serving LLaMA
3-70B on TPUs", https://jax-ml.github.io/scaling-book/applied-inference/), ZeRO (Rajbhandari et
al., arXiv 1910.02054), vLLM (Kwon et al., arXiv 2309.06180), the Llama 3 report (arXiv
2407.21783) and the DeepSeek-V3 report (arXiv 2412.19437)."""
import math

import pytest

from chalk import hardware, memory as mem, moe, systems
from chalk.catalog import memory_data

GB, TB, GiB, KiB = 1e9, 1e12, 2**30, 2**10
V5E = "TPU-v5e"


def _v5e_slice(chips: int) -> systems.System:
    """A TPU v5e slice of ``chips`` chips: the scaling book's 2x2 and 4x4."""
    pod = systems.get("tpu-v5e-256")
    return systems.System(f"tpu-v5e-{chips}", f"TPU v5e {chips} chips", pod.chip, chips, pod.source, pod.as_of)


# --- the scaling book, Part 8 (LLaMA 3-70B on TPU v5e) -------------------------------------------
def test_scaling_book_32k_sequence_is_5_3_gb():
    """"5.3GB / sequence" at 32,768 tokens in int8 (the book multiplies 162e3 by 32,768): 2%."""
    assert mem.kv_per_sequence("llama-3-70b", 32768, kv_bytes_per_element=1) == pytest.approx(5.3 * GB, rel=0.02)


def test_scaling_book_batch_240_at_32k_is_1_3_tb():
    """"For BS=240, this is 1.3TB": 2%."""
    kv = mem.per_chip_parts("llama-3-70b", 240, 32768, "int8", kv_bytes_per_element=1)[1]
    assert kv == pytest.approx(1.3 * TB, rel=0.02)


def test_scaling_book_86_chips_to_hold_it():
    """"(70e9 + 1.3e12) / 16e9 = 86 TPU v5e chips": the fewest whole chips whose bare HBM holds the
    int8 weights and that cache (the book rounds the cache to 1.3 TB): 2%."""
    need = mem.per_chip("llama-3-70b", 240, 32768, "int8", kv_bytes_per_element=1)
    chips = math.ceil(need / hardware.get(V5E).hbm_capacity)
    assert chips == pytest.approx(86, rel=0.02)


def test_scaling_book_int4_weights_floor_is_about_10_ms():
    """"if we only looked at model parameters in int4 our minimum latency is about 10ms / step" on
    the 2x2 slice int4 fits: chalk's weight floor in a 0.5-byte format (FP4, int4's width). The
    book says "about": 10%."""
    assert mem.weight_floor("llama-3-70b", _v5e_slice(4), "fp4") == pytest.approx(10e-3, rel=0.10)


def test_scaling_book_low_batch_latency_is_5_5_ms():
    """Latency "5.5ms with low batch size" for int8 weights on the 4x4 (16-way model parallel)
    slice of the Pareto plot: the weight floor, 3%."""
    assert mem.weight_floor("llama-3-70b", _v5e_slice(16), "int8") == pytest.approx(5.5e-3, rel=0.03)


# --- ZeRO (Rajbhandari et al., arXiv 1910.02054) --------------------------------------------------
def _zero(params: float, stage: int, chips: int) -> float:
    """Model state per device under ``stage`` with mixed-precision Adam (2 + 2 + K bytes, K = 12)."""
    r = memory_data.recipe("zero-mixed-adam")
    return float(mem.numeric["zero"][stage](params, r.weights, r.gradients, r.optimizer, chips))


ZERO_FIG1 = [(0, 120 * GB), (1, 31.4 * GB), (2, 16.6 * GB), (3, 1.9 * GB)]
"""Figure 1: per-device model states of a 7.5 B model at data-parallel degree 64: baseline, P_os,
P_os+g, P_os+g+p."""


@pytest.mark.parametrize("stage, printed", ZERO_FIG1)
def test_zero_figure_1_for_7_5b_on_64_devices(stage, printed):
    """Printed to three figures (1.9 to two): 2%."""
    assert _zero(7.5e9, stage, 64) == pytest.approx(printed, rel=0.02)


ZERO_TABLE1 = [(7.5e9, 4, 1, 52.5), (7.5e9, 4, 2, 41.3), (7.5e9, 4, 3, 30), (128e9, 64, 1, 536),
               (128e9, 64, 2, 284), (128e9, 64, 3, 32), (1e12, 1024, 1, 4011), (1e12, 1024, 2, 2013),
               (1e12, 1024, 3, 15.6)]
"""Table 1: per-device memory (GB) of the 7.5 B, 128 B and 1 T models at data-parallel degrees 4, 64
and 1,024 under P_os (stage 1), P_os+g (2) and P_os+g+p (3)."""


@pytest.mark.parametrize("params, chips, stage, printed", ZERO_TABLE1)
def test_zero_table_1(params, chips, stage, printed):
    """Printed to three or four figures: 1%."""
    assert _zero(params, stage, chips) == pytest.approx(printed * GB, rel=0.01)


def test_zero_gpt2_needs_24_gb_of_model_states_for_3_gb_of_weights():
    """Section 3.1: a 1.5 B GPT-2 has "only 3GB" of fp16 parameters yet needs "at least 24 GB" of
    model states with mixed-precision Adam, without sharding (exact)."""
    r = memory_data.recipe("zero-mixed-adam")
    assert float(mem.numeric["zero"][0](1.5e9, r.weights, 0, 0, 1)) == pytest.approx(3 * GB, rel=1e-12)
    assert _zero(1.5e9, 0, 1) == pytest.approx(24 * GB, rel=1e-12)


# --- vLLM (Kwon et al., arXiv 2309.06180) --------------------------------------------------------
# vLLM's 13B example is OPT-13B: hidden size 5,120, 40 layers, multi-head attention, FP16. Llama 2
# 13B has the same attention shape, so its cache per token is the same.
def test_vllm_one_token_of_a_13b_model_caches_800_kb():
    """Section 3: "the KV cache of a single token demands 800 KB of space", 2 x 5,120 x 40 x 2
    bytes, which is 800 KiB exactly."""
    assert mem.kv_per_sequence("llama-2-13b", 1) == 800 * KiB


def test_vllm_one_2048_token_request_caches_1_6_gb():
    """Section 3: up to 2,048 tokens, "as much as 1.6 GB" per request (800 KiB x 2,048 = 1.5625
    GiB, printed to two figures): 0.05 GiB."""
    assert mem.kv_per_sequence("llama-2-13b", 2048) / GiB == pytest.approx(1.6, abs=0.05)


def test_vllm_13b_weights_take_65_percent_of_an_a100_40gb():
    """Figure 1: serving a 13B model on an A100 (40 GB), "Parameters (26GB, 65%)". Printed to two
    figures: 2%."""
    weights = mem.per_chip("llama-2-13b", 0, 0, "fp16")
    assert weights == pytest.approx(26 * GB, rel=0.02)
    assert weights / (40 * GB) == pytest.approx(0.65, rel=0.02)


# --- serving layouts --------------------------------------------------------------------------
def test_llama_3_405b_bf16_needs_two_machines_and_a_pipeline():
    """Llama 3 report, section 6.1: in BF16 the 405B model "does not fit in the GPU memory of a
    single machine with 8 Nvidia H100 GPUs"; it runs on 16 GPUs of two machines, tensor parallel in
    each and pipelined across. Weights alone, bare HBM (no headroom)."""
    lay = memory_data.deployment("llama-3.1-405b-bf16")
    hbm = hardware.get("H100-SXM").hbm_capacity
    assert mem.per_chip(lay["model"], 0, 0, "bf16", expert_parallel=8, stages=1) > hbm
    assert mem.per_chip(lay["model"], 0, 0, "bf16", expert_parallel=int(lay["attention_tensor"]),
                        stages=int(lay["pipeline"])) < hbm
    # Section 6.2: in FP8 one machine suffices.
    assert mem.per_chip(lay["model"], 0, 0, "fp8", expert_parallel=8) < hbm


def test_deepseek_v3_decode_holds_one_expert_per_gpu():
    """DeepSeek-V3 report, section 3.4.2: decoding on 320 GPUs, "each GPU hosts only one expert",
    with 64 GPUs for redundant and shared experts (exact)."""
    lay = memory_data.deployment("deepseek-v3-decode")
    assert moe.experts_per_chip(lay["model"], int(lay["expert"]), redundant=int(lay["redundant_experts"])) == 1
