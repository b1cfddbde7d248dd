"""The answer key of problem set 6: the key agrees with hand calculations, each choice item's verdict
is recomputed, every wrong option gets its feedback, and the prompts state the scenario the key uses.

The hand calculations type the closed forms and the spec-sheet, model-card and price-list figures
here, not chalk's catalog, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import pytest

from chalk import hardware, pricing, systems
from chalk.catalog import prices
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch06_long_context_pricing as key

EXERCISES = problem_set("06_long_context_pricing")
CHOICE_ITEMS = {k for k, e in EXERCISES.items() if e.kind in ("choice", "choices")}
YEAR = 365.25 * 24 * 3600

# --- independent checks -----------------------------------------------------------------------
# Typed here, not read from chalk:
QWEN_ACTIVE = 22.19e9               # Qwen3-235B-A22B: 22 B activated (blog, Table 2); our count of its config
QWEN = dict(layers=94, kv_heads=4, q_heads=64, d_head=128)      # config.json
GB200_FP8, GB200_BF16, GB200_W = 5e15, 2.5e15, 8e12              # GB200 NVL72 spec, per GPU, dense
H200_HBM, H200_W = 143_771 * 2**20, 4.8e12                       # nvidia-smi per H200 (141 GB nominal); datasheet
H200_FP8, H200_BF16 = 1978.9e12, 989.4e12                        # H200 datasheet, dense
LLAMA405 = dict(active=405.85e9, layers=126, q_heads=128, kv_heads=8, d_head=128)   # config.json
LLAMA8 = dict(active=8.03e9, layers=32, q_heads=32, d_head=128)                        # Llama 3.1 8B config.json
GEMMA9 = dict(layers=42, kv_heads=8, d_head=256, window=4096)    # Gemma 2 9B: local and global layers alternate
V32_FP8_LAYER = 512 + 512 // 128 * 4 + 64 * 2                   # FlashMLA's FP8 cache: latent, FP32 scales, BF16 RoPE
INDEX_KEY_LAYER = 128 + 128 // 128 * 4                           # an FP8 indexer key and its FP32 scale
DSA = dict(k=2048, heads=64, width=128)                          # DeepSeek-V3.2-Exp config.json
LPDDR = dict(usd_per_TB=10_000, drain=17 / 18.4)                 # 17 TB at 18.4 TB/s
FLASH = dict(usd_per_TB=91, drain=16 * 14 * 2**40 / (6.6 * 2**40 / 180))   # 3FS node: 224 TiB at 6.6/180 TiB/s


def _qwen_f_att():
    return 4 * QWEN["q_heads"] * QWEN["d_head"] * QWEN["layers"]


def _sparse_over_dense(context):
    """DSA's KV bytes per decode token over dense attention's, both in V3.2's FP8 format (per layer)."""
    return (INDEX_KEY_LAYER * context + V32_FP8_LAYER * min(context, DSA["k"])) / (V32_FP8_LAYER * context)


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
    "kv_sequence_gemma": (_gemma_sequence_gb(), 1e-9),
    "attention_crossover_8b": (2 * LLAMA8["active"] / (4 * LLAMA8["q_heads"] * LLAMA8["d_head"] * LLAMA8["layers"]), 0.01),
    "break_even_rack_flash": (_rack(), 0.01),
    "kink_read": (_kink_405b_gb200(), 0.005),
    "sparse_read_ratio": (1 / _sparse_over_dense(262_144), 1e-9),
}


def test_enough_exercises_and_judgement_items_each_with_a_topic():
    assert len(EXERCISES) >= 10
    assert sum(bool(e.judgement) for e in EXERCISES.values()) >= 5
    assert all(e.topic for e in EXERCISES.values())


def test_every_numeric_exercise_is_checked_by_hand_or_bounded():
    bounded = {"prefill_speedup_qwen", "remat_after_hours"}   # tests below bound them
    assert set(INDEPENDENT) | bounded == set(EXERCISES) - CHOICE_ITEMS


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


def test_the_like_for_like_saving_is_below_the_mixed_precision_one():
    # A BF16 dense cache (2 x 576 bytes a layer) against FP8 indexer keys without scales (128 bytes):
    # the figure the set used to expect, not like for like.
    mixed = 262_144 * 576 * 2 / (128 * 262_144 + 576 * 2 * DSA["k"])
    assert mixed > 1.5 * EXERCISES["sparse_read_ratio"].expected()
    assert "like for like, the dense cache is FP8 too" in judge(EXERCISES["sparse_read_ratio"], mixed).message


# --- the choice items' verdicts, recomputed ---------------------------------------------------
def test_long_step_covers_prefill_but_not_decode():
    s = key.STEP_PRICE
    step = pricing.typed_price(s["input"], s["output"], step_context=s["step_context"], step_input=s["step_input"],
                               step_output=s["step_output"])
    tc = pricing.tier_costs(step, s["model"], s["target"], s["batch"], s["dtype"])
    assert tc.prefill_ratio < s["step_input"] and tc.decode_ratio > 1.5 * s["step_output"]     # (b)
    # Why: a prompt's tokens see P/2 earlier ones, so a 405 B model's attention matches its FP8 matmuls
    # (per GPU, BF16 attention) only at P = 2 x 2 N F_att / (f_att F), inside the upper tier.
    f_att = 4 * LLAMA405["q_heads"] * LLAMA405["d_head"] * LLAMA405["layers"]
    prompt_crossing = 2 * 2 * LLAMA405["active"] * GB200_BF16 / (f_att * GB200_FP8)
    assert s["step_context"] < prompt_crossing < 131_072
    assert EXERCISES["long_step_explained"].answer == "b"


def _hold_with_wait(hold):
    """USD per byte for each tier beside the H200 server: rent plus the server's GPUs waiting for the
    reload, which arrives at the slower of the tier's bandwidth and the GPUs' 8 x 50 GB/s links; and
    the rebuild (one prefill). Figures typed here; the rebuild from chalk's prefill."""
    h = key.HOLD
    gpus_usd_per_s = 8 * h["usd_per_chip_hour"] / 3600
    links = 8 * 50e9

    def rent(usd_per_TB):
        return usd_per_TB / 1e12 / (5 * YEAR)

    # (USD per byte-second, capacity, bandwidth) typed from the spec sheets and price notes.
    typed = {"hbm": (gpus_usd_per_s / (8 * H200_HBM), 8 * H200_HBM, 8 * H200_W),
             "ddr5": (rent(10_000), 2e12, 614.4e9),
             "flash": (rent(FLASH["usd_per_TB"]), 246.29e12, 40.3e9),
             "disk": (rent(20.4), 24e12, 0.285e9)}
    cost = {name: p * (hold + c / w) + (0.0 if name == "hbm" else gpus_usd_per_s / min(w, links))
            for name, (p, c, w) in typed.items()}
    cost["recompute"] = pricing.recompute_usd_per_byte(h["model"], h["target"], h["prompt"], h["dtype"],
                                                        h["usd_per_chip_hour"])
    return cost


def test_hold_tier_wait_picks_flash_once_the_waiting_gpus_are_paid():
    h = key.HOLD
    # The typed figures are the catalog's: chalk's rent for each tier agrees.
    rents = pricing.hold_costs(h["hold"], h["target"], h["usd_per_chip_hour"])
    assert math.isclose(rents["3fs-storage-node"], _hold_with_wait(h["hold"])["flash"]
                        - 8 * h["usd_per_chip_hour"] / 3600 / 40.3e9, rel_tol=1e-6)
    assert hardware.get("H200").scale_out_bandwidth == 50e9 and systems.get(h["target"]).count == 8
    cost = _hold_with_wait(h["hold"])
    assert min(cost, key=cost.get) == "flash"                                             # (c)
    # chalk's own wait term (the solution calls it) agrees with the typed one.
    waited = pricing.hold_costs(h["hold"], h["target"], h["usd_per_chip_hour"], wait=True)
    for name, typed in (("hbm-hgx-h200", "hbm"), ("ddr5-hgx-h200", "ddr5"), ("3fs-storage-node", "flash"),
                        ("hdd-exos-x24", "disk")):
        assert math.isclose(waited[name], cost[typed], rel_tol=1e-6), name
    assert pricing.cheapest_tier(h["hold"], h["target"], h["usd_per_chip_hour"], wait=True).name == "3fs-storage-node"
    # Rent alone picks the disk: the trap of option (d).
    assert pricing.cheapest_tier(h["hold"], h["target"], h["usd_per_chip_hour"]).name == "hdd-exos-x24"
    rebuild = cost["recompute"]
    assert cost["hbm"] > 100 * rebuild                                                    # (a): hundreds of prefills
    assert cost["disk"] > 10 * rebuild and cost["disk"] > cost["recompute"]               # (d): dozens of prefills
    assert 0.2 < cost["flash"] / rebuild < 0.8                                            # (e): well under a prefill
    # The holds the feedback names: HBM wins for about a second, DDR5 for seconds to tens of minutes,
    # recomputing beats flash only after days; and a disk loses to recomputing at any hold.
    assert min(_hold_with_wait(0.3), key=_hold_with_wait(0.3).get) == "hbm"
    assert min(_hold_with_wait(10.0), key=_hold_with_wait(10.0).get) == "ddr5"
    assert min(_hold_with_wait(600.0), key=_hold_with_wait(600.0).get) == "ddr5"
    assert min(_hold_with_wait(7200.0), key=_hold_with_wait(7200.0).get) == "flash"
    assert _hold_with_wait(86_400.0)["flash"] < rebuild
    assert _hold_with_wait(0.0)["disk"] > rebuild
    disk_reload_s = 2 * QWEN["layers"] * QWEN["kv_heads"] * QWEN["d_head"] * 2 * h["prompt"] / 0.285e9
    assert 10 < disk_reload_s < 100                                                       # tens of seconds
    assert EXERCISES["hold_tier_wait"].answer == "c"


def test_hold_tier_striped_picks_the_disk_pool_once_every_reload_reaches_the_links():
    h = key.STRIPED
    assert h["stripes"] * 0.285e9 >= 8 * 50e9          # 2,000 disks fill the GPUs' 400 GB/s
    # By hand: every off-GPU tier waits the same 1/(400 GB/s); rents as typed in _hold_with_wait.
    one = _hold_with_wait(h["hold"])
    gpus_usd_per_s = 8 * h["usd_per_chip_hour"] / 3600
    pooled = {name: c - (0.0 if name in ("hbm", "recompute") else
                         gpus_usd_per_s / min(w, 8 * 50e9) - gpus_usd_per_s / (8 * 50e9))
              for (name, c), w in zip(one.items(), (None, 614.4e9, 40.3e9, 0.285e9, None))}
    assert min(pooled, key=pooled.get) == "disk"                                          # (d)
    assert min(one, key=one.get) == "flash"                                               # one drive each: (c)
    assert pooled["flash"] > 1.3 * pooled["disk"] and pooled["recompute"] > 5 * pooled["disk"]   # (c), (e)
    assert pooled["ddr5"] > 10 * pooled["recompute"] and pooled["hbm"] > 1000 * pooled["recompute"]  # (b), (a)
    # chalk's striped costs agree with the typed ones.
    chalk = pricing.hold_costs(h["hold"], h["target"], h["usd_per_chip_hour"], wait=True, stripes=h["stripes"])
    for name, typed in (("hbm-hgx-h200", "hbm"), ("ddr5-hgx-h200", "ddr5"), ("3fs-storage-node", "flash"),
                        ("hdd-exos-x24", "disk")):
        assert math.isclose(chalk[name], pooled[typed], rel_tol=1e-6), name
    ex = EXERCISES["hold_tier_striped"]
    assert ex.answer == "d"
    assert judge(ex, "d").status == RIGHT and judge(ex, "c").status == WRONG and judge(ex, "e").status == WRONG


def test_storage_price_matches_hbm_rent_and_no_slower_tier():
    s = key.STORAGE
    price = prices.get(s["price"]).cache_storage_per_hour
    assert price == 4.5        # the catalog's entry: USD 4.50 per million tokens per hour (finding 2 re-dates its prices)
    qwen_bf16 = 2 * QWEN["layers"] * QWEN["kv_heads"] * QWEN["d_head"] * 2
    p_hbm = 8 * s["usd_per_chip_hour"] / 3600 / (8 * H200_HBM)
    hbm_by_hand = 1e6 * qwen_bf16 * p_hbm * (3600 + H200_HBM / H200_W)
    assert 0.5 < hbm_by_hand / price < 2                                                  # (a)
    rent = {k: 1e6 * qwen_bf16 * v for k, v in pricing.hold_costs(3600, s["target"], s["usd_per_chip_hour"]).items()}
    assert math.isclose(rent[f"hbm-{s['target']}"], hbm_by_hand, rel_tol=0.01)
    assert all(v < price / 50 for k, v in rent.items() if not k.startswith("hbm"))        # (b), (c), (d)
    assert EXERCISES["cache_storage_tier"].answer == "a"


def test_sparse_attention_reads_more_below_its_top_k():
    c = key.SHORT_SPARSE
    assert c["context"] < DSA["k"] and _sparse_over_dense(c["context"]) > 1.1            # (b), by hand
    dense, sparse = (pricing.decode_attention_work(c["model"], c["context"], sparse=x, v32_fp8=True).kv_bytes
                     for x in (False, True))
    assert math.isclose(sparse / dense, _sparse_over_dense(c["context"]), rel_tol=1e-9)
    assert EXERCISES["sparse_short_context"].answer == "b"


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


def test_choice_prompts_list_every_option():
    prompts = _prompts()
    for ex_id in CHOICE_ITEMS:
        for letter, text in EXERCISES[ex_id].options.items():
            assert f"({letter}) {' '.join(text.split())}" in prompts[ex_id], (ex_id, letter)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "kv_from_step_fp4": [f"{k.STEP['crossover']:,} tokens", "40 B active", f"$r$ = {k.STEP['intensity']}", "0.5 bytes"],
        "kv_implied_qwen": [f'"{k.IMPLIED["price"]}"', f"`{k.IMPLIED['model']}`", f"`{k.IMPLIED['target']}`", "FP8"],
        "long_step_explained": [f"`{k.STEP_PRICE['model']}`", f"`{k.STEP_PRICE['target']}`", "FP8",
                                f"{k.STEP_PRICE['batch']} sequences",
                                f"typed_price({k.STEP_PRICE['input']!r}, {k.STEP_PRICE['output']!r}, "
                                f"step_context={k.STEP_PRICE['step_context']:_}, step_input={k.STEP_PRICE['step_input']!r}, "
                                f"step_output={k.STEP_PRICE['step_output']!r})"],
        "kv_sequence_gemma": [f"`{k.KV_SEQ['model']}`", f"{k.KV_SEQ['context']:,} tokens", "FP8"],
        "attention_crossover_8b": [f"`{k.CROSS['model']}`", f"`{k.CROSS['target']}`", "BF16"],
        "prefill_speedup_qwen": [f"`{k.PASS['model']}`", f"`{k.PASS['target']}`", f"{k.PASS['prompt']:,} tokens"],
        "hold_tier_wait": [f"`{k.HOLD['model']}`", f"`{k.HOLD['target']}`", f"{k.HOLD['usd_per_chip_hour']:g} USD",
                           "six hours", "FP8", "BF16", f"{k.HOLD['prompt']:,}-token", "8 GPUs", "400 Gb/s"],
        "hold_tier_striped": [f"`{k.STRIPED['model']}`", f"`{k.STRIPED['target']}`",
                              f"{k.STRIPED['usd_per_chip_hour']:g} USD", "for a day", "FP8", "BF16",
                              f"{k.STRIPED['prompt']:,}-token", f"stripes={k.STRIPED['stripes']}"],
        "cache_storage_tier": [f'prices.get("{k.STORAGE["price"]}")', f"`{k.STORAGE['model']}`", "BF16",
                               f"`{k.STORAGE['target']}`", f"{k.STORAGE['usd_per_chip_hour']:g} USD"],
        "kink_read": [f"`{k.PLOT['model']}`", f"`{k.PLOT['target']}`", f"{k.PLOT['batch']:,} sequences", "FP8"],
        "sparse_read_ratio": [f"`{k.SPARSE['model']}`", f"{k.SPARSE['context']:,} tokens", "FP8", "v32_fp8=True"],
        "sparse_short_context": [f"`{k.SHORT_SPARSE['model']}`", f"{k.SHORT_SPARSE['context']:,} tokens", "FP8"],
        "break_even_rack_flash": [f"`{k.RACK}`", "rent only"],
        "remat_after_hours": [f"`{k.REMAT['model']}`", f"{k.REMAT['prompt']:,}-token", f"`{k.REMAT['target']}`",
                              f"{k.REMAT['usd_per_chip_hour']:g} USD", "rent only"],
    }
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)
