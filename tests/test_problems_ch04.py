"""The answer key of problem set 4: the key agrees with hand calculations, and the prompts state the
scenarios the key uses. (Both ways for every check: tests/test_problem_keys.py.)

The hand calculations type the model shapes from their published configs and the spec-sheet figures
here, not chalk's catalog, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import pytest

from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch04_memory_capacity as key

EXERCISES = problem_set("04_memory_capacity")

# Typed here, not read from chalk (configs on the model hubs, counted from their shapes):
MIXTRAL_N, MIXTRAL_KV = 46.70e9, 2 * 8 * 128 * 32 * 2      # 32 layers, 8 KV heads of 128, BF16
LLAMA70_KV = 2 * 8 * 128 * 80 * 2
LLAMA405_N, LLAMA405_KV, LLAMA405_D = 405.85e9, 2 * 8 * 128 * 126 * 2, 16384
LLAMA70_31_KV = LLAMA70_KV                                  # Llama 3.1 70B has Llama 3 70B's shape
LLAMA2_13B_N = 13.015e9
DS_N, DS_KV = 671.03e9, (512 + 64) * 61 * 2                 # MLA: latent 512 + RoPE key 64, 61 layers
H200_HBM, GB300_HBM, H100_HBM = 141e9, 288e9, 80e9
H200_BW, GB200_BW, NIC = 4.8e12, 8e12, 50e9
LPDDR_NVL72 = 17e12                                         # GB300 NVL72: 17 TB of LPDDR5X


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


INDEPENDENT = {
    "per_chip_gb": ((2 * MIXTRAL_N + 4 * 16 * 16384 * MIXTRAL_KV) / 8 / 1e9, 0.005),
    "cache_per_chip_gb": (8 * 65536 * LLAMA70_KV / 8 / 1e9, 1e-9),
    "crossover_stages": (MIXTRAL_N * 1 / (64 * 8192 * MIXTRAL_KV), 0.005),
    "batch_ceiling": (math.floor(H200_HBM * 0.9 * 8 / (65536 * LLAMA405_KV)), 1e-9),
    "weight_floor_ms": (1e3 * MIXTRAL_N / (8 * H200_BW), 0.005),
    "token_ms": (1e3 * ((LLAMA405_N + 1024 * 16384 * LLAMA405_KV) / (72 * GB200_BW)
                        + 3 * (1e-3 + 1024 * LLAMA405_D * 2 / (72 * NIC))), 0.005),
    "llama_bf16_batch": (math.floor((H100_HBM - 2 * LLAMA405_N / 16) / (8192 * LLAMA405_KV / 8)), 1e-9),
    "zero_stage2_gb": ((2 + (2 + 12) / 64) * LLAMA2_13B_N / 1e9, 0.005),
    "train_chips": (math.ceil(12 * LLAMA405_N / (GB300_HBM * 0.9)), 1e-9),
    # DeepSeek-V3 in BF16 on 8 H200s, 256 x 32,768: the cache takes a fixed share; the weights fit
    # beside it from 2 N / (8 P) <= usable - cache, and the chart's first bar past that is the answer.
    "fits_from_stages": (min(p for p in (1, 2, 3, 4, 6, 8, 12, 16)
                             if 2 * DS_N / (8 * p) + 256 * 32768 * DS_KV / 8 <= 0.9 * H200_HBM), 1e-9),
    "fullest_chip_ratio": (_jamba_fullest(), 0.002),
    "lpddr_sequences": (math.floor(LPDDR_NVL72 / (131072 * LLAMA70_31_KV)), 1e-9),
}


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


def test_every_exercise_has_a_hand_calculation():
    assert set(INDEPENDENT) == set(EXERCISES) and len(INDEPENDENT) >= 10


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


def test_the_chart_exercise_has_three_different_readings():
    # The answer, the slip of reading the weights alone and the slip of reading the crossing differ.
    ex = EXERCISES["fits_from_stages"]
    readings = {ex.expected(), *(m.wrong_answer(ex.expected()) for m in ex.mistakes)}
    assert len(readings) == 3


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


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "per_chip_gb": [f"`{k.PER_CHIP['model']}`", f"{k.PER_CHIP['stages']} stages",
                        f"{k.PER_CHIP['expert_parallel']} GPUs", f"{k.PER_CHIP['batch']} sequences",
                        f"{k.PER_CHIP['context']:,} tokens", "BF16"],
        "cache_per_chip_gb": [f"`{k.CANCEL['model']}`", f"{k.CANCEL['stages']} pipeline stages",
                              f"{k.CANCEL['expert_parallel']} GPUs", f"{k.CANCEL['batch']} sequences",
                              f"{k.CANCEL['context']:,} tokens"],
        "crossover_stages": ["FP8 weights", f"{k.CROSS['batch']} sequences", f"{k.CROSS['context']:,} tokens"],
        "batch_ceiling": [f"`{k.CEILING['model']}`", f"`{k.CEILING['system']}`", f"{k.CEILING['context']:,} tokens"],
        "weight_floor_ms": ["FP8 weights", f"`{k.FLOOR['system']}`"],
        "token_ms": [f"{k.TOKEN['stages']} GB200 NVL72 racks", f"`{k.TOKEN['system']}`",
                     f"{k.TOKEN['batch']:,} sequences", f"{k.TOKEN['context']:,} tokens",
                     f"{1e3 * k.TOKEN['latency']:g} ms", "FP8 weights"],
        "llama_bf16_batch": [f'"{k.PUBLISHED["deployment"]}"', f"{k.PUBLISHED['context']:,}-token", "bare 80 GB"],
        "zero_stage2_gb": [f"`{k.ZERO['model']}`", f"{k.ZERO['chips']} data-parallel GPUs", "stage 2"],
        "train_chips": [f"`{k.TRAIN['chip']}`", f'"{k.TRAIN["recipe"]}"'],
        "fullest_chip_ratio": [f"`{k.LAYOUT['model']}`", f"{k.LAYOUT['stages']} stages",
                               f"{k.LAYOUT['expert_parallel']} GPUs", f"{k.LAYOUT['batch']} sequences",
                               f"{k.LAYOUT['context']:,} tokens"],
        "lpddr_sequences": [f'"{k.SPILL["tier"]}"', f"`{k.SPILL['model']}`", f"{k.SPILL['context']:,} tokens"],
    }
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
