"""The answer key of problem set 6: the key agrees with hand calculations, and the prompts state the
scenario the key uses.

The hand calculations type the closed forms and the spec-sheet, model-card and price-list figures
here, not chalk's catalog, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import pytest

from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch06_long_context_pricing as key

EXERCISES = problem_set("06_long_context_pricing")
YEAR = 365.25 * 24 * 3600

# --- independent checks -----------------------------------------------------------------------
# Typed here, not read from chalk:
QWEN_ACTIVE = 22.19e9               # Qwen3-235B-A22B: 22 B activated (blog, Table 2); our count of its config
QWEN = dict(layers=94, kv_heads=4, q_heads=64, d_head=128)      # config.json
GB200_FP8, GB200_BF16, GB200_W = 5e15, 2.5e15, 8e12              # GB200 NVL72 spec, per GPU, dense
H200_HBM, H200_W = 141e9, 4.8e12                                 # H200 datasheet
H200_FP8, H200_BF16 = 1978.9e12, 989.4e12                        # H200 datasheet, dense
LLAMA405 = dict(active=405.85e9, layers=126, q_heads=128, kv_heads=8, d_head=128)   # config.json
LLAMA8 = dict(active=8.03e9, layers=32, q_heads=32, d_head=128)                        # Llama 3.1 8B config.json
GEMMA9 = dict(layers=42, kv_heads=8, d_head=256, window=4096)    # Gemma 2 9B: local and global layers alternate
DS_KV_BF16 = (512 + 64) * 61 * 2                                 # DeepSeek-V3: MLA latent + RoPE key, 61 layers
KIMI = dict(layers=61, kv=DS_KV_BF16)                            # Kimi K2 keeps DeepSeek-V3's attention
DSA = dict(k=2048, heads=64, width=128)                          # DeepSeek-V3.2-Exp config.json
LPDDR = dict(usd_per_TB=10_000, drain=17 / 18.4)                 # 17 TB at 18.4 TB/s
FLASH = dict(usd_per_TB=91, drain=16 * 14 * 2**40 / (6.6 * 2**40 / 180))   # 3FS node: 224 TiB at 6.6/180 TiB/s


def _qwen_f_att():
    return 4 * QWEN["q_heads"] * QWEN["d_head"] * QWEN["layers"]


def _hold():
    # Qwen3's FP8 cache, a million tokens, six hours in an 8-GPU H200 server's HBM at $3.5 per GPU-hour.
    p_hbm = 8 * 3.5 / 3600 / (8 * H200_HBM)
    qwen_fp8 = 2 * QWEN["layers"] * QWEN["kv_heads"] * QWEN["d_head"] * 1
    return 1e6 * qwen_fp8 * p_hbm * (6 * 3600 + H200_HBM / H200_W)


def _gemma_sequence_gb():
    # 21 global layers hold 32,768 tokens, 21 sliding-window layers 4,096; 2 x 8 x 256 bytes per layer-token in FP8.
    per = 2 * GEMMA9["kv_heads"] * GEMMA9["d_head"] * 1
    half = GEMMA9["layers"] // 2
    return per * (half * 32_768 + half * GEMMA9["window"]) / 1e9


def _kink_405b_gb200():
    # Per token at B = 1,024 (every chip count cancels, so per-GPU rates): compute 2 N / F + f_att L / F_att
    # equals memory N b_w / (B W) + L b_kv / W, FP8 weights (b_w = 1), BF16 cache and attention.
    n, b = LLAMA405["active"], 1024
    b_kv = 2 * LLAMA405["layers"] * LLAMA405["kv_heads"] * LLAMA405["d_head"] * 2
    f_att = 4 * LLAMA405["q_heads"] * LLAMA405["d_head"] * LLAMA405["layers"]
    return (2 * n / GB200_FP8 - n / (b * GB200_W)) / (b_kv / GB200_W - f_att / GB200_BF16)


def _rack():
    return ((FLASH["usd_per_TB"] * FLASH["drain"] - LPDDR["usd_per_TB"] * LPDDR["drain"])
            / (LPDDR["usd_per_TB"] - FLASH["usd_per_TB"]))


INDEPENDENT = {
    "kv_from_step_fp4": (40e9 * 0.5 / (300 * 128_000), 1e-9),
    # 2 N_act / ((F/W) L*) + f_att W / F_att, at Gemini 2.5 Pro's published 200K step.
    "kv_implied_qwen": (2 * QWEN_ACTIVE / (H200_FP8 / H200_W * 200_000) + _qwen_f_att() * H200_W / H200_BF16, 0.01),
    "decode_mfu_long": (6.0 / 22.5, 1e-9),                        # claude.com/pricing: $6 / $22.50 above 200K
    "kv_sequence_gemma": (_gemma_sequence_gb(), 1e-9),
    "attention_crossover_8b": (2 * LLAMA8["active"] / (4 * LLAMA8["q_heads"] * LLAMA8["d_head"] * LLAMA8["layers"]), 0.01),
    "hold_cost_hbm": (_hold(), 0.01),
    "break_even_rack_flash": (_rack(), 0.01),
    "kink_read": (_kink_405b_gb200(), 0.005),
    "sparse_read_ratio": (262_144 * KIMI["kv"] / (DSA["width"] * KIMI["layers"] * 262_144 + KIMI["kv"] * DSA["k"]), 1e-9),
}


def test_at_least_ten_exercises_and_nine_independent_checks():
    assert len(EXERCISES) >= 10
    assert len(INDEPENDENT) >= 9 and set(INDEPENDENT) <= set(EXERCISES)


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert math.isclose(EXERCISES[ex_id].expected(), by_hand, rel_tol=tol), (EXERCISES[ex_id].expected(), by_hand)


def test_prefill_speedup_is_below_n_and_above_one():
    # The prefill is compute-bound, so its time per token is 2 N_act / F (plus attention), not the
    # decode time over n: the speed-up lies strictly between 1 and n.
    ratio = EXERCISES["prefill_speedup_qwen"].expected()
    assert 1 < ratio < key.PASS["prompt"]


def test_kink_read_batch_fits_at_the_kink():
    # The hand calculation holds only if all 1,024 sequences fit at the kink (no cut to what fits).
    from chalk import pricing
    c = pricing.cost_against_context(key.PLOT["model"], key.PLOT["target"], [_kink_405b_gb200()], key.PLOT["batch"])
    assert c.batch[0] == key.PLOT["batch"]


def test_rematerialisation_comes_after_the_last_tier_switch():
    hours = EXERCISES["remat_after_hours"].expected()
    assert hours * 3600 > 16_000  # past the flash-to-disk break-even (chapter's test_pricing)


def _prompts():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "06_long_context_pricing.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_every_exercise_has_a_prompt_and_the_title_is_right():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "06_long_context_pricing.ipynb", as_version=4)
    assert nb.cells[0].source.splitlines()[0] == "# Problem set 6: long-context pricing"
    assert set(_prompts()) == set(EXERCISES)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "kv_from_step_fp4": [f"{k.STEP['crossover']:,} tokens", "40 B active", f"$r$ = {k.STEP['intensity']}", "0.5 bytes"],
        "kv_implied_qwen": [f'"{k.IMPLIED["price"]}"', f"`{k.IMPLIED['model']}`", f"`{k.IMPLIED['target']}`", "FP8"],
        "decode_mfu_long": [f"`{k.LONG_PRICE}`"],
        "kv_sequence_gemma": [f"`{k.KV_SEQ['model']}`", f"{k.KV_SEQ['context']:,} tokens", "FP8"],
        "attention_crossover_8b": [f"`{k.CROSS['model']}`", f"`{k.CROSS['target']}`", "BF16"],
        "prefill_speedup_qwen": [f"`{k.PASS['model']}`", f"`{k.PASS['target']}`", f"{k.PASS['prompt']:,} tokens"],
        "hold_cost_hbm": [f"`{k.HOLD['model']}`", f"`{k.HOLD['target']}`", f"{k.HOLD['usd_per_chip_hour']:g} USD",
                          "six hours", "FP8"],
        "break_even_rack_flash": [f"`{k.RACK}`"],
        "remat_after_hours": [f"`{k.REMAT['model']}`", f"{k.REMAT['prompt']:,}-token", f"`{k.REMAT['target']}`",
                              f"{k.REMAT['usd_per_chip_hour']:g} USD"],
        "kink_read": [f"`{k.PLOT['model']}`", f"`{k.PLOT['target']}`", f"{k.PLOT['batch']:,} sequences", "FP8"],
        "sparse_read_ratio": [f"`{k.SPARSE['model']}`", f"{k.SPARSE['context']:,} tokens"],
    }
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)
