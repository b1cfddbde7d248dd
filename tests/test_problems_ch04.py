"""The answer key of problem set 4: the key agrees with hand calculations, each choice's verdict is
recomputed, and the prompts state the scenarios the key uses. (Both ways for every check:
tests/test_problem_keys.py.)

The hand calculations type the model shapes from their published configs and the spec-sheet figures
here, not chalk's catalog, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import numpy as np
import pytest

from chalk import memory
from chalk.catalog import tiers
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch04_memory_capacity as key

EXERCISES = problem_set("04_memory_capacity")

# Typed here, not read from chalk (configs on the model hubs, counted from their shapes):
MIXTRAL_N, MIXTRAL_KV = 46.70e9, 2 * 8 * 128 * 32 * 2      # 32 layers, 8 KV heads of 128, BF16
LLAMA70_N, LLAMA70_KV = 70.55e9, 2 * 8 * 128 * 80 * 2      # Llama 3.1 70B has Llama 3 70B's shape
LLAMA405_N, LLAMA405_KV = 405.85e9, 2 * 8 * 128 * 126 * 2
# Qwen3-235B-A22B (config.json): 94 layers of attention (64 query heads and 4 KV heads of 128, q/k norms)
# and 128 routed experts of 3 x 4,096 x 1,536 (8 per token); untied embeddings of 151,936 x 4,096.
QWEN3_ROUTED = 94 * 128 * 3 * 4096 * 1536
QWEN3_N = (QWEN3_ROUTED + 94 * (4096 * 8192 * 2 + 4096 * 512 * 2 + 4096 * 128 + 2 * 4096 + 2 * 128)
           + 2 * 151936 * 4096 + 4096)
QWEN3_KV = 2 * 4 * 128 * 94 * 2
# Kimi K2 (config.json): 61 layers, the first dense; 60 MoE layers of 384 routed experts of
# 3 x 7,168 x 2,048 (8 per token) and one shared; MLA (q rank 1,536, kv rank 512, RoPE 64, 64 heads
# of 128 + 64); untied embeddings of 163,840 x 7,168.
KIMI_ROUTED = 60 * 384 * 3 * 7168 * 2048
KIMI_REST = (2 * 163840 * 7168
             + 61 * (7168 * 1536 + 1536 * 64 * 192 + 7168 * 576 + 512 * 64 * 256 + 64 * 128 * 7168)
             + 3 * 7168 * 18432 + 60 * 3 * 7168 * 2048 + 60 * 384 * 7168)
KIMI_N, KIMI_KV, KIMI_D = KIMI_ROUTED + KIMI_REST, (512 + 64) * 61 * 2, 7168
JAMBA_N = 51.57e9                                          # Jamba v0.1, counted from its shapes (_jamba_fullest)
# HBM as nvidia-smi reports it per GPU (143,771, 81,559 and 183,359 MiB; 141, 80 and 180 GB nominal): every
# fit uses it, except llama_bf16_batch, whose question takes the bare nominal 80 GB.
H200_HBM, H100_HBM, B200_HBM = 143_771 * 2**20, 81_559 * 2**20, 183_359 * 2**20
H100_NOMINAL = 80e9
H200_BW, B200_BW, NIC = 4.8e12, 8e12, 50e9
HOST_DDR5, FS_NODE, QLC_SSD = (2e12, 614.4e9), (246.29e12, 40.3e9), (61.44e12, 7.2e9)   # capacity, bandwidth
DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16)                        # the chart's bars


def _jamba_fullest() -> float:
    """Jamba v0.1 on 3 stages of 8 GPUs, 32 sequences of 32,768 tokens, m = 3, by hand.

    Config: 32 layers; attention in layers 4, 12, 20, 28 (offset 4, period 8), 8 KV heads of 128;
    16 experts of 3 x 4,096 x 14,336 in the odd layers; untied embeddings 2 x 65,536 x 4,096;
    51.57 B parameters counted from the shapes. Layer i goes to stage floor(3i/32): layers 0-10,
    11-21 and 22-31. The middle stage has attention layers 12 and 20 and six expert layers."""
    n_tot, expert, emb = 51.57e9, 3 * 4096 * 14336, 2 * 65536 * 4096
    routed = 16 * 16 * expert
    rest = (n_tot - emb - routed) / 32                     # everything else, spread over the layers
    per_seq_layer = 32768 * 2 * 8 * 128 * 2                # one sequence's cache in one attention layer
    sequences_per_chip = 3 * 32 / 8
    middle = 2 * (11 * rest + 6 * 16 * expert) / 8 + 2 * per_seq_layer * sequences_per_chip
    formula = (2 * n_tot + 3 * 32 * 32768 * 4 * 2 * 8 * 128 * 2) / (8 * 3)
    return middle / formula


def _kimi_bars():
    """Memory per GPU of Kimi K2, FP8, on stages of 8 H100s, 88 x 32,768 tokens, m = P: bar by bar."""
    cache = 88 * 32768 * KIMI_KV / 8
    return [(KIMI_N / (8 * p), cache) for p in DEPTHS]


def _kimi_token() -> float:
    """Kimi K2 in BF16 over 3 HGX H200s: weights 32 sequences touch, their cache, 3 hops, 60 all-to-alls."""
    untouched = KIMI_ROUTED * (1 - 8 / 384) ** 32
    reads = ((KIMI_N - untouched) * 2 + 32 * 16384 * KIMI_KV) / (8 * H200_BW)
    hop = 2e-3 + 32 * KIMI_D * 2 / (8 * NIC)
    return 1e3 * (reads + 3 * hop + 60 * 50e-6)


def _jamba_stage2_fewest() -> int:
    # 2 N + 14 N / n <= usable: n >= 14 N / (usable - 2 N) = 722.0 / 32.5 = 22.2, so 23 (Jamba v0.1, 51.57 B
    # parameters from its shapes, as in _jamba_fullest)
    return math.ceil(14 * JAMBA_N / (0.9 * H200_HBM - 2 * JAMBA_N))


INDEPENDENT = {
    "per_chip_gb": ((2 * MIXTRAL_N + 4 * 16 * 16384 * MIXTRAL_KV) / 8 / 1e9, 0.005),
    "cache_per_chip_gb": (8 * 65536 * LLAMA70_KV / 8 / 1e9, 1e-9),
    "crossover_stages": (MIXTRAL_N * 1 / (64 * 8192 * MIXTRAL_KV), 0.005),
    # At 126 stages, one layer each: C E/(L b_kv) less the weights' share, N b_w/(P L b_kv): 40 (38 at 180 GB).
    "batch_ceiling": (math.floor((B200_HBM * 0.9 * 8 - 2 * LLAMA405_N / 126) / (65536 * LLAMA405_KV)), 1e-9),
    "token_ms": (_kimi_token(), 0.005),
    "llama_bf16_batch": (math.floor((H100_NOMINAL - 2 * LLAMA405_N / 16) / (8192 * LLAMA405_KV / 8)), 1e-9),
    "fits_from_stages": (next(p for p, (w, k) in zip(DEPTHS, _kimi_bars()) if w + k <= 0.9 * H100_HBM), 1e-9),
    "fullest_chip_ratio": (_jamba_fullest(), 0.002),
    "zero_fewest_gpus": (_jamba_stage2_fewest(), 1e-9),
}
NUMERIC = {i for i, e in EXERCISES.items() if e.kind == "number"}
CHOICE_ITEMS = {i for i, e in EXERCISES.items() if e.kind in ("choice", "choices")}


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


def test_every_numeric_exercise_has_a_hand_calculation_and_enough_judgement():
    assert set(INDEPENDENT) == NUMERIC and len(EXERCISES) >= 10
    assert sum(bool(e.judgement) for e in EXERCISES.values()) >= 5 and len(CHOICE_ITEMS) >= 4
    assert all(e.topic for e in EXERCISES.values())
    # The plug-in items issue 25 named are gone.
    assert not {"weight_floor_ms", "zero_stage2_gb", "train_chips", "lpddr_sequences"} & set(EXERCISES)


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


def test_the_cache_exercise_runs_a_model_that_reaches_its_context():
    from chalk.catalog import models
    assert models.get(key.CANCEL["model"]).max_context >= key.CANCEL["context"]


def test_the_chart_can_be_read_every_bar_a_tenth_from_the_line():
    # By hand: each bar's total at least 10% above or below the usable HBM, and each bar's cache at
    # least 10% from its weights, so neither the fit nor the crossing sits on a line.
    usable = 0.9 * H100_HBM
    for w, k in _kimi_bars():
        assert abs((w + k) / usable - 1) >= 0.10 and abs(k / w - 1) >= 0.10
    # chalk draws the same bars.
    p = key.PLOT
    w, k = memory.per_chip_parts(p["model"], p["batch"], p["context"], p["dtype"], 8, np.array(DEPTHS))
    assert np.allclose(w + k, [a + b for a, b in _kimi_bars()], rtol=0.005)


def test_the_chart_exercise_has_three_different_readings():
    # The answer, the slip of reading the weights alone and the slip of reading the crossing differ.
    ex = EXERCISES["fits_from_stages"]
    readings = {ex.expected(), *(m.wrong_answer(ex.expected()) for m in ex.mistakes)}
    assert len(readings) == 3


def test_exact_items_take_only_the_integer():
    for ex_id in ("batch_ceiling", "fits_from_stages", "llama_bf16_batch", "zero_fewest_gpus"):
        ex, value = EXERCISES[ex_id], EXERCISES[ex_id].expected()
        assert ex.exact and judge(ex, int(value)).status == RIGHT
        assert judge(ex, int(value) - 1).status == WRONG and judge(ex, int(value) + 1).status == WRONG


# --- the choices: each verdict recomputed -------------------------------------------------------
def test_slow_hops_make_the_cache_grow_with_depth_by_less_than_double():
    s = key.SLOW_HOPS
    reads = ((QWEN3_N - QWEN3_ROUTED * (1 - 8 / 128) ** 64) * 1 + 64 * 32768 * QWEN3_KV) / (8 * H200_BW)
    hop = 1e-3 + 64 * 4096 * 2 / (8 * NIC)
    cache = {p: (1 + p * hop / reads) * 64 * 32768 * QWEN3_KV / 8 for p in s["stages"]}    # m/P B L b_kv / E
    assert all(hop > 0.2 * reads / p for p in s["stages"])      # (b)'s premise, short hops, fails
    growth = cache[8] / cache[4]
    assert 1.1 < growth < 1.9                                    # (c), not (a) halving nor (d) doubling
    got = {}
    for p in s["stages"]:
        chalk_hop = memory.hop_time(s["model"], s["system"], s["batch"], s["latency"])
        m = memory.busy_microbatches(s["model"], s["system"], s["batch"], s["context"], p, chalk_hop, s["dtype"])
        got[p] = memory.per_chip_parts(s["model"], s["batch"], s["context"], s["dtype"], 8, p, m)[1]
        assert close(got[p], cache[p], 0.01), (p, got[p], cache[p])
    assert close(got[8] / got[4], growth, 0.005)


def test_a_dense_models_allreduces_cap_the_gain_of_a_wider_group():
    d = key.DENSE
    allreduces = d["allreduces_per_layer"] * 80 * d["allreduce"]
    narrow, wide = LLAMA70_N / (8 * B200_BW), LLAMA70_N / (64 * B200_BW)     # FP8: 1 byte per weight
    assert close(narrow / wide, 8, 1e-9)                                       # (a)'s read gain
    gain = (narrow + allreduces) / (wide + allreduces)
    assert 1.2 < gain < 2 and allreduces > wide                                # (c)
    one_per_layer = (narrow + allreduces / 2) / (wide + allreduces / 2)
    assert 2 < one_per_layer < 4                                               # (b)'s slip
    (sys_n, e_n), (sys_w, e_w) = d["narrow"], d["wide"]
    assert close(memory.weight_floor(d["model"], sys_n, d["dtype"], expert_parallel=e_n), narrow, 0.005)
    assert close(memory.weight_floor(d["model"], sys_w, d["dtype"], expert_parallel=e_w), wide, 0.005)


def test_only_host_memory_holds_the_parked_caches_and_returns_one_in_time():
    p = key.PARK
    one = p["context"] * LLAMA70_KV
    parked = p["sequences"] * one
    free_hbm = 8 * 0.9 * H200_HBM - 2 * LLAMA70_N
    assert 0.95 < parked / free_hbm < 1                           # (a): fits, but leaves the batch nothing
    verdicts = {}
    for name, (capacity, bandwidth) in zip(p["tiers"], (HOST_DDR5, FS_NODE, QLC_SSD)):
        t = tiers.catalog_tiers()[name]
        assert close(t.capacity, capacity, 0.01) and close(t.bandwidth, bandwidth, 0.01), name
        assert parked <= capacity, name                           # every tier holds them
        verdicts[name] = one / bandwidth <= p["within"]
    assert verdicts == {"ddr5-hgx-h200": True, "3fs-storage-node": False, "ssd-bm1743": False}
    assert one / FS_NODE[1] > 2 * p["within"] and one / QLC_SSD[1] > 1.0    # (c), (d): well past 0.2 s
    assert close(memory.kv_per_sequence(p["model"], p["context"]), one, 1e-9)


def test_zero_stage_two_is_the_lowest_that_fits_jamba_on_64_h200s():
    z, usable, n = key.ZERO, 0.9 * H200_HBM, key.ZERO["chips"]
    by_hand = {0: 16 * JAMBA_N, 1: 4 * JAMBA_N + 12 * JAMBA_N / n, 2: 2 * JAMBA_N + 14 * JAMBA_N / n,
               3: 16 * JAMBA_N / n}
    assert [by_hand[s] <= usable for s in range(4)] == [False, False, True, True]
    assert 16 * JAMBA_N < n * usable                            # (e): 64 GPUs hold it sharded
    for stage, state in by_hand.items():
        assert close(memory.training_state_bytes(z["model"], z["recipe"], n, stage), state, 0.005)
    assert 4 * JAMBA_N > usable                                 # stage 1 fails at any n (the follow-up)


def _prompts():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "04_memory_capacity.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_every_exercise_has_a_prompt_and_the_title_is_right():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "04_memory_capacity.ipynb", as_version=4)
    assert nb.cells[0].source.splitlines()[0] == "# Problem set 4: memory capacity"
    assert set(_prompts()) == set(EXERCISES)


def test_choice_prompts_list_every_option():
    prompts = _prompts()
    for ex_id in CHOICE_ITEMS:
        for letter, text in EXERCISES[ex_id].options.items():
            assert f"({letter}) {' '.join(text.split())}" in prompts[ex_id], (ex_id, letter)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "per_chip_gb": [f"`{k.PER_CHIP['model']}`", f"{k.PER_CHIP['stages']} stages",
                        f"{k.PER_CHIP['expert_parallel']} GPUs", f"{k.PER_CHIP['batch']} sequences",
                        f"{k.PER_CHIP['context']:,} tokens", "BF16"],
        "cache_per_chip_gb": [f"`{k.CANCEL['model']}`", f"{k.CANCEL['stages']} pipeline stages",
                              f"{k.CANCEL['expert_parallel']} GPUs", f"{k.CANCEL['batch']} sequences",
                              f"{k.CANCEL['context']:,} tokens"],
        "slow_hops_cache": [f"`{k.SLOW_HOPS['model']}`", f"`{k.SLOW_HOPS['system']}`", "FP8 weights",
                            f"{k.SLOW_HOPS['batch']} sequences", f"{k.SLOW_HOPS['context']:,} tokens",
                            f"{1e3 * k.SLOW_HOPS['latency']:g} ms", "from 4 stages to 8"],
        "crossover_stages": ["FP8 weights", f"{k.CROSS['batch']} sequences", f"{k.CROSS['context']:,} tokens"],
        "batch_ceiling": [f"`{k.CEILING['model']}`", f"`{k.CEILING['system']}`", f"{k.CEILING['context']:,} tokens"],
        "fits_from_stages": [],
        "llama_bf16_batch": [f'"{k.PUBLISHED["deployment"]}"', f"{k.PUBLISHED['context']:,}-token", "bare 80 GB"],
        "dense_collectives": [f"`{k.DENSE['model']}`", f"`{k.DENSE['narrow'][0]}`", f"`{k.DENSE['wide'][0]}`",
                              f"{k.DENSE['wide'][1]} GPUs", f"{1e6 * k.DENSE['allreduce']:g} µs", "FP8 weights",
                              "twice per layer"],
        "token_ms": [f"`{k.TOKEN['model']}`", f"`{k.TOKEN['system']}`", f"{k.TOKEN['stages']} HGX H200 boards",
                     f"{k.TOKEN['batch']} sequences", f"{k.TOKEN['context']:,} tokens",
                     f"{1e3 * k.TOKEN['latency']:g} ms", f"{1e6 * k.TOKEN['alltoall']:g} µs", "in BF16"],
        "fullest_chip_ratio": [f"`{k.LAYOUT['model']}`", f"{k.LAYOUT['stages']} stages",
                               f"{k.LAYOUT['expert_parallel']} GPUs", f"{k.LAYOUT['batch']} sequences",
                               f"{k.LAYOUT['context']:,} tokens"],
        "parked_tier": [f"`{k.PARK['system']}`", f"`{k.PARK['model']}`", f"{k.PARK['sequences']} conversations",
                        f"{k.PARK['context']:,} tokens", f"{k.PARK['within']:g} s"],
        "zero_lowest_stage": [f"`{k.ZERO['model']}`", f'"{k.ZERO["recipe"]}"', f"{k.ZERO['chips']} data-parallel",
                              f"`{k.ZERO['chip']}`"],
        "zero_fewest_gpus": ["At the stage you chose", "H200s"],
    }
    assert set(stated) == set(EXERCISES)
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)


def test_the_chart_is_drawn_from_the_keys_scenario():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "04_memory_capacity.ipynb", as_version=4)
    p = key.PLOT
    call = f'stages_figure("{p["model"]}", "{p["system"]}", "{p["dtype"]}", {p["batch"]}, {p["context"]})'
    assert any(call in c.source for c in nb.cells if c.cell_type == "code")
