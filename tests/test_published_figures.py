"""chalk against numbers published by others (spec sheets, papers, worked answers).

Each expected value below is the publisher's number, typed as printed, with its source; the
tolerance says how far our computation may sit from it and why.
"""
import pytest

from chalk import hardware, models, roofline

SCALING_BOOK_INFERENCE = "https://jax-ml.github.io/scaling-book/applied-inference/"


def rel(a, b):
    return abs(a - b) / abs(b)


# --- parameter counts, computed from config fields --------------------------------------------
@pytest.mark.parametrize("name, attr, published, tol, source", [
    # DeepSeek-V3 report, Table 1 / abstract: 671B total, 37B activated per token.
    # Active: our count includes both embedding tables (1.9B), which the round "37B" absorbs.
    ("deepseek-v3", "total_params", 671e9, 0.01, "arXiv 2412.19437 abstract"),
    ("deepseek-v3", "active_params", 37e9, 0.02, "arXiv 2412.19437 abstract"),
    # Mixtral paper section 2: 47B parameters, 13B active per token.
    ("mixtral-8x7b", "total_params", 47e9, 0.01, "arXiv 2401.04088 §2"),
    ("mixtral-8x7b", "active_params", 13e9, 0.01, "arXiv 2401.04088 §2"),
    # Hugging Face model cards: 70.6B (Llama 3 70B) and 8.03B (Llama 3.1 8B) parameters.
    ("llama-3-70b", "total_params", 70.6e9, 0.005, "huggingface.co/meta-llama/Meta-Llama-3-70B"),
    ("llama-3.1-8b", "total_params", 8.03e9, 0.005, "huggingface.co/meta-llama/Llama-3.1-8B"),
])
def test_parameter_counts(name, attr, published, tol, source):
    assert rel(getattr(models.get(name), attr), published) <= tol, source


def test_reported_totals_stored_beside_the_configs_agree():
    for m in models.catalog_models().values():
        assert rel(m.total_params, m.reported_total_params) <= 0.02, m.name


# --- KV cache ---------------------------------------------------------------------------------
def test_llama3_70b_kv_per_token_int8_scaling_book():
    # Scaling book, "Serving LLaMA 3-70B": 2 * 8 * 128 * 80 = 160 kiB per token in int8.
    assert models.get("llama-3-70b").kv_bytes_per_token(1) == 160 * 1024


def test_deepseek_v3_mla_caches_latent_plus_rope_key():
    # DeepSeek-V3 report §2.1.1: only the compressed latent (d_c = 512) and the decoupled RoPE key
    # (d_h^R = 64) are cached per layer; 61 layers (config_671B.json), BF16 = 2 bytes.
    assert models.get("deepseek-v3").kv_bytes_per_token(2) == (512 + 64) * 61 * 2


# --- hardware ratios and rooflines ------------------------------------------------------------
@pytest.mark.parametrize("chip, published, tol, source", [
    # Scaling book, GPUs chapter: H100 989e12 / 3.35e12 ≈ 295 FLOP/B.
    ("H100-SXM", 295, 0.01, "scaling-book gpus"),
    # A100 datasheet: 312 TFLOP/s BF16 over 2,039 GB/s ≈ 153.
    ("A100-80GB", 153, 0.01, "NVIDIA A100 datasheet"),
    # Scaling book, "Serving LLaMA 3-70B": FFW blocks are compute bound on TPU v5e when B > 240.
    ("TPU-v5e", 240, 0.01, SCALING_BOOK_INFERENCE),
])
def test_hardware_intensity(chip, published, tol, source):
    assert rel(hardware.get(chip).intensity("bf16"), published) <= tol, source


def test_dense_bf16_balance_batch_is_240_on_tpu_v5e():
    # Scaling book, "Serving LLaMA 3-70B": B > 240 for bf16 weights and compute.
    # A dense model has s = 1, so B* = r b_w / 2 = r; KV ignored as in the book.
    assert rel(roofline.balance_batch("TPU-v5e", "llama-3-70b", "bf16"), 240) <= 0.03


def test_int8_weights_halve_the_balance_batch():
    # Scaling book, same page: int8 weights with bf16 matmuls drop the threshold to 120.
    # Its figures: 1.97e14 FLOP/s, 8.2e11 B/s. Weights of 1 byte, dense (N_act = N_tot = 1).
    b_star = roofline.numeric["balance_batch"](0, 0, 1.0, 1.0, 1.0, 0.0, 1.97e14, 8.2e11)
    assert rel(b_star, 120) <= 0.01


def test_tpu_v5e_drain_time_19ms():
    # Scaling book, same page: 16 GB / 8.2e11 B/s = 19 ms per step when HBM is full.
    assert rel(hardware.get("TPU-v5e").drain_time, 0.019) <= 0.03


def test_llama3_70b_needs_8_75_tpu_v5e_of_weights_in_bf16():
    # Scaling book, same page: 70e9 params * 2 bytes / 16e9 B = 8.75 chips (book rounds to 70B).
    chips = roofline.memory_needed("llama-3-70b", 0, 0, "bf16") / hardware.get("TPU-v5e").hbm_capacity
    assert rel(chips, 8.75) <= 0.01


def test_llama3_70b_batch_that_fits_on_16_v5e_at_8k():
    # Scaling book, same page, table: bf16 on 4x4 = 16 chips leaves room for 43 KV caches at 8k.
    # Our exact parameter count (70.55B, not 70B) leaves 1% less room, so one cache fewer. The
    # book counts every byte of HBM: no headroom.
    assert roofline.max_batch("TPU-v5e", "llama-3-70b", 8192, "bf16", chips=16, headroom=0) in (42, 43)


def test_gb200_nvl72_rack_totals():
    # NVIDIA GB200 NVL72 page: 13.4 TB HBM3e, 576 TB/s, 360 PFLOP/s FP16/BF16 with 2:4 sparsity.
    gpu = hardware.get("GB200")
    assert rel(72 * gpu.hbm_capacity, 13.4e12) <= 0.01
    assert rel(72 * gpu.hbm_bandwidth, 576e12) <= 0.001
    assert rel(72 * gpu.flops("bf16") * 2, 360e15) <= 0.001


def test_deepseek_v3_balance_batch_hand_calculation():
    # B* = (F/W) (b_w/2) (N_tot/N_act) from the H100 datasheet (989.4 TFLOP/s, 3.35 TB/s) and the
    # DeepSeek-V3 report (671B, 37B): 989.4/3.35 * 671/37 = 5,356. Ours uses the computed 37.55B
    # active (embeddings included), 1.5% lower.
    assert rel(roofline.balance_batch("H100-SXM", "deepseek-v3", "bf16"), 989.4 / 3.35 * 671 / 37) <= 0.02


def test_precision_independence_of_the_lecture_ratio():
    # NVIDIA B200 figures: 2.25 / 4.5 / 9 PFLOP/s dense at BF16 / FP8 / FP4, 8 TB/s: F b_w / 2W is
    # the same 281 at every precision (lecture §1: "≈300").
    from chalk.notation import F, W, b_w
    chip = hardware.get("B200")
    for dtype in ("bf16", "fp8", "fp4"):
        ratio = roofline.lecture_ratio.subs({F: chip.flops(dtype), W: chip.hbm_bandwidth,
                                             b_w: hardware.bytes_per_weight(dtype)})
        assert rel(float(ratio), 2.25e15 / 8e12) <= 0.001
