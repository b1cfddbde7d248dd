"""The answer key of problem set 3: every check behaves, and the key agrees with hand calculations.

The hand calculations type the closed forms and the spec-sheet, model-card and paper figures
here, not chalk's catalog or simulator, so a wrong formula or catalog entry shows as a disagreement.
"""
import math
import re

import pytest

from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch03_pipelining as key

EXERCISES = problem_set("03_pipelining")


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


# --- independent checks -----------------------------------------------------------------------
# Typed here, not read from chalk:
JAMBA_K, MIXTRAL_K = 2, 2          # Jamba v0.1 and Mixtral 8x7B model cards: top-2 routing
MI355X_RHO = (1075 / 2) / 50      # MI355X datasheet: 1,075 GB/s Infinity Fabric both ways; 400 Gb/s NIC
B200_RHO = 900 / 50                # NVLink 5 900 GB/s per direction / 400 Gb/s NIC = 50 GB/s
LLAMA405_PARAMS = 405.85e9         # Llama 3.1 405B config.json, parameters counted from its shapes
# Llama 3 Herd (arXiv 2407.21783) Table 4: 8,192 GPUs, TP 8, CP 1, PP 16, DP 64, 8,192-token
# sequences, 16M tokens per batch.
LLAMA_SEQS_PER_REPLICA = 16 * 2**20 // 8192 // (8192 // (8 * 1 * 16))


def _scan(P_, v_, target, step):
    m_ = step
    while (P_ - 1) / (v_ * m_ + P_ - 1) > target:
        m_ += step
    return m_


INDEPENDENT = {
    "bubble_gpipe": ((6 - 1) / (18 + 6 - 1), 1e-9),
    "bubble_interleaved": ((4 - 1) / (3 * 12 + 4 - 1), 1e-9),
    "min_microbatches": (_scan(12, 2, 0.10, 12), 1e-9),
    "rack_ratio_jamba": (2 * JAMBA_K * 6 * (7 / 8) / MI355X_RHO, 0.01),
    "min_layers_mixtral": (math.ceil(B200_RHO * 8 / (2 * MIXTRAL_K * 7)), 1e-9),
    "inference_latency_ms": (4 * 5.0 + 3 * 2.0, 1e-9),
    "llama_bubble": ((16 - 1) / (LLAMA_SEQS_PER_REPLICA + 16 - 1), 1e-9),
    "step_time_read": ((12 + 5 - 1) * (1 + 2), 1e-9),
    "weights_per_stage_gb": (LLAMA405_PARAMS * 2 / 12 / 1e9, 0.01),
    # Korthikanti et al. 2022: interleaving holds (1 + (P-1)/(P v)) times 1F1B's P micro-batches.
    "peak_interleaved": (4 * (1 + (4 - 1) / (4 * 2)), 1e-9),
}


def test_at_least_ten_independent_checks():
    assert len(INDEPENDENT) >= 10 and set(INDEPENDENT) <= set(EXERCISES)


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


def test_uneven_stages_idle_more_than_the_even_closed_form():
    # The slow middle stage paces the step: its own work m (2 + 4), after stage 1's first
    # forward (1) and before stage 1's last backward (2), bounds the makespan from below.
    u = EXERCISES["uneven_idle"].expected()
    assert u > (3 - 1) / (9 + 3 - 1)
    busy = 9 * (3 + 6 + 3)
    assert u >= 1 - busy / (3 * (9 * 6 + 1 + 2))


def test_published_layout_is_the_papers():
    from chalk.catalog import layouts
    lay = layouts.get(key.LLAMA_LAYOUT)
    assert (lay["chips"], lay["tensor"], lay["pipeline"], lay["seq_len"]) == (8192, 8, 16, 8192)


def _prompts():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "03_pipelining.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): " ".join(h.split()) for h in heads}


def test_every_exercise_has_a_prompt_and_the_title_is_right():
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "03_pipelining.ipynb", as_version=4)
    assert nb.cells[0].source.splitlines()[0] == "# Problem set 3: pipelining"
    assert set(_prompts()) == set(EXERCISES)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "bubble_gpipe": [f"{k.GPIPE['stages']} stages", f"{k.GPIPE['microbatches']} micro-batches"],
        "bubble_interleaved": [f"{k.INTERLEAVED['stages']} devices", f"{k.INTERLEAVED['microbatches']} micro-batches",
                               f"$v = {k.INTERLEAVED['chunks']}$"],
        "min_microbatches": [f"{k.TARGET['stages']} stages", f"$v = {k.TARGET['chunks']}$",
                             f"{k.TARGET['bubble']:.0%}"],
        "rack_ratio_jamba": [f"`{k.RATIO['model']}`", f"`{k.RATIO['system']}`", f"{k.RATIO['layers']} MoE layers",
                             f"{k.RATIO['expert_parallel']} GPUs"],
        "min_layers_mixtral": [f"`{k.MIN_LAYERS['model']}`", f"`{k.MIN_LAYERS['system']}`",
                               f"{k.MIN_LAYERS['expert_parallel']} GPUs"],
        "uneven_idle": [f"{k.UNEVEN['microbatches']} micro-batches", "$t_F = 2$, $t_B = 4$"],
        "inference_latency_ms": [f"{k.HOPS['stages']} racks", f"{k.HOPS['stage_ms']:g} ms", f"{k.HOPS['hop_ms']:g} ms"],
        "llama_bubble": ["16M tokens", f'"{k.LLAMA_LAYOUT}"', "8,192 GPUs", "16 pipeline stages",
                         "8,192-token sequences"],
        "step_time_read": [f"{k.PLOT_MICROBATCHES} micro-batches"],
        "weights_per_stage_gb": [f"`{k.WEIGHTS['model']}`", f"{k.WEIGHTS['stages']} stages", "BF16"],
        "peak_interleaved": [f"{k.PEAK['stages']} devices", f"{k.PEAK['microbatches']} micro-batches",
                             f"$v = {k.PEAK['chunks']}$"],
    }
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)
