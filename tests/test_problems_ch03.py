"""The answer key of problem set 3: every check behaves, and the key agrees with hand calculations.

The hand calculations type the closed forms and the spec-sheet, model-card and paper figures
here, not chalk's catalog or simulator, so a wrong formula or catalog entry shows as a disagreement.
Each choice item's verdict is recomputed (by hand and with chalk), and every wrong option is judged
wrong with its own feedback. (Both ways for every numeric check: tests/test_problem_keys.py.)
"""
import math
import re

import pytest

from chalk import memory, pipeline
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch03_pipelining as key

EXERCISES = problem_set("03_pipelining")


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


# --- independent checks -----------------------------------------------------------------------
# Typed here, not read from chalk:
JAMBA_K, MIXTRAL_K = 2, 2          # Jamba v0.1 and Mixtral 8x7B model cards: top-2 routing
MI355X_RHO = (1075 / 2) / 50      # MI355X datasheet: 1,075 GB/s Infinity Fabric both ways; 400 Gb/s NIC
B200_RHO = 900 / 50                # NVLink 5 900 GB/s per direction / 400 Gb/s NIC = 50 GB/s
H100_RHO = 450 / 50                # NVLink 4 450 GB/s per direction / 400 Gb/s NIC
H100_BF16, H100_NIC = 989e12, 50e9  # H100 SXM dense BF16 FLOP/s; ConnectX-7 per direction
LLAMA70_N, LLAMA70_KV = 70.55e9, 2 * 8 * 128 * 80 * 2   # config.json: 80 layers, 8 KV heads of 128
H100_USABLE = 0.9 * 81_559 * 2**20  # 90% of the 81,559 MiB nvidia-smi reports per H100 (80 GB nominal)
# Llama 3 Herd (arXiv 2407.21783) Table 4: 8,192 GPUs, TP 8, CP 1, PP 16, DP 64, 8,192-token
# sequences, 16M tokens per batch.
LLAMA_SEQS_PER_REPLICA = 16 * 2**20 // 8192 // (8192 // (8 * 1 * 16))


def _scan(P_, v_, target, step):
    m_ = step
    while (P_ - 1) / (v_ * m_ + P_ - 1) > target:
        m_ += step
    return m_


INDEPENDENT = {
    "decode_microbatches": (math.ceil(6 * (1 + 0.25)), 1e-9),
    "min_microbatches": (_scan(12, 2, 0.10, 12), 1e-9),
    "rack_ratio_jamba": (2 * JAMBA_K * 6 * (7 / 8) / MI355X_RHO, 0.01),
    "min_layers_mixtral": (math.ceil(B200_RHO * 8 / (2 * MIXTRAL_K * 7)), 1e-9),
    "llama_bubble": ((16 - 1) / (LLAMA_SEQS_PER_REPLICA + 16 - 1), 1e-9),
    "step_time_read": ((12 + 5 - 1) * (1 + 2), 1e-9),
}
NUMERIC = {i for i, e in EXERCISES.items() if e.kind == "number"}
CHOICE_ITEMS = {i for i, e in EXERCISES.items() if e.kind in ("choice", "choices")}


def test_enough_judgement_items_and_every_item_has_a_topic():
    assert len(EXERCISES) >= 10
    assert sum(bool(e.judgement) for e in EXERCISES.values()) >= 5
    assert len(CHOICE_ITEMS) >= 4
    assert all(e.topic for e in EXERCISES.values())
    # The plug-in items issue 25 named are gone.
    assert not {"bubble_gpipe", "bubble_interleaved", "inference_latency_ms", "weights_per_stage_gb",
                "peak_interleaved"} & set(EXERCISES)


def test_numeric_items_have_hand_calculations():
    assert set(INDEPENDENT) <= NUMERIC and len(NUMERIC - set(INDEPENDENT)) <= 1  # uneven_idle: below


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


def test_exact_items_take_only_the_integer():
    for ex_id in ("decode_microbatches", "min_microbatches", "min_layers_mixtral"):
        ex, value = EXERCISES[ex_id], EXERCISES[ex_id].expected()
        assert ex.exact and judge(ex, int(value)).status == RIGHT
        assert judge(ex, int(value) - 1).status == WRONG and judge(ex, int(value) + 1).status == WRONG


def test_published_layout_is_the_papers():
    from chalk.catalog import layouts
    lay = layouts.get(key.LLAMA_LAYOUT)
    assert (lay["chips"], lay["tensor"], lay["pipeline"], lay["seq_len"]) == (8192, 8, 16, 8192)


# --- the choices: each verdict recomputed -------------------------------------------------------
def test_decode_has_a_bubble_of_a_fifth_that_hops_cause():
    d = key.DECODE
    # Round trip P (1 + hop) t_F = 7.5 t_F; work per stage m t_F = 6 t_F: idle 1.5 / 7.5 = 0.2.
    by_hand = 1 - d["microbatches"] / (d["stages"] * (1 + d["hop"]))
    assert close(by_hand, 0.2, 1e-12)
    assert close(pipeline.decode_idle_fraction(d["stages"], d["microbatches"], d["hop"]), by_hand, 1e-9)
    sim = pipeline.simulate(d["stages"], d["microbatches"], "decode", t_hop=d["hop"], steps=12)
    assert close(sim.steady_state_idle_fraction, by_hand, 0.02)
    # Without hops (option a's assumption) m = P leaves no idle time; GPipe's form (c) differs.
    assert pipeline.decode_idle_fraction(d["stages"], d["microbatches"], 0.0) == 0
    assert not close((d["stages"] - 1) / (d["microbatches"] + d["stages"] - 1), by_hand, 0.1)
    # The numeric follow-up: 8 micro-batches remove the idle time, 7 do not.
    full = pipeline.simulate(d["stages"], 8, "decode", t_hop=d["hop"], steps=12)
    assert full.steady_state_idle_fraction < 1e-9
    assert pipeline.simulate(d["stages"], 7, "decode", t_hop=d["hop"], steps=12).steady_state_idle_fraction > 0.01


def test_interleaving_costs_crossings_and_activations_not_bubble():
    s = key.SWITCH
    P_, m_, v_ = s["stages"], s["microbatches"], s["chunks"]
    assert (P_ - 1) / (v_ * m_ + P_ - 1) < (P_ - 1) / (m_ + P_ - 1)            # (a) falls
    assert pipeline.bubble_fraction(P_, m_, "interleaved", v_) < pipeline.bubble_fraction(P_, m_, "1f1b")
    peak_1f1b = pipeline.simulate(P_, m_, "1f1b").peak_activations
    peak_inter = pipeline.simulate(P_, m_, "interleaved", v_).peak_activations
    assert peak_1f1b == P_ and close(peak_inter, P_ * (1 + (P_ - 1) / (P_ * v_)), 1e-9)  # (c) rises
    # (b): with a hop per crossing, interleaving pays v times as many on the fill: the hop term grows.
    hop = 0.1
    free, hopped = (pipeline.bubble_fraction(P_, m_, "interleaved", v_, hop=h) for h in (0.0, hop))
    free1, hopped1 = (pipeline.bubble_fraction(P_, m_, "1f1b", hop=h) for h in (0.0, hop))
    assert hopped - free > hopped1 - free1


def test_mixed_formats_pull_the_boundary_ratio_below_one():
    f = key.FORMATS
    bf16 = 2 * MIXTRAL_K * f["layers"] * 7 / 8 / H100_RHO
    mixed = bf16 * (f["dispatch_bytes"] + f["combine_bytes"]) / (2 * f["boundary_bytes"])
    assert bf16 > 1 > mixed and close(mixed, 0.875, 1e-9)
    from chalk.catalog import models, systems
    k = models.get(f["model"]).moe["experts_per_token"]
    rho = systems.get(f["system"]).scale_up_to_out
    assert close(pipeline.rack_boundary_ratio(f["layers"], k, rho, f["expert_parallel"]), bf16, 1e-6)
    # One more layer: 4 layers clear the bar with the formats weighed, 3 are enough in BF16.
    assert pipeline.min_layers_per_stage(k * 0.75, rho, f["expert_parallel"]) == f["layers"] + 1
    # chalk carries the three formats as inputs and agrees with the hand weighing
    fmt = {key: f[key] for key in ("dispatch_bytes", "combine_bytes", "boundary_bytes")}
    assert close(pipeline.rack_boundary_ratio(f["layers"], k, rho, f["expert_parallel"], **fmt), mixed, 1e-9)
    assert pipeline.min_layers_per_stage(k, rho, f["expert_parallel"], **fmt) == f["layers"] + 1
    assert pipeline.min_layers_per_stage(k, rho, f["expert_parallel"]) == f["layers"]


def test_data_parallel_verdict_rests_on_tokens_per_replica():
    d = key.DATA
    replicas = pipeline.data_parallel_degree(d["gpus"], tensor=d["tensor"], pipeline=d["pipeline"])
    assert replicas == 64 and d["tokens"] // d["gpus"] == 2048
    # By hand, per GPU of the layout: 1/32 of the FP32 gradients in a ring over 64 replicas, against
    # 1/32 of the replica's 6 N tokens at 40% of peak.
    share = d["tensor"] * d["pipeline"]
    send = 2 * (replicas - 1) / replicas * LLAMA70_N * 4 / share / H100_NIC
    compute = 6 * LLAMA70_N * d["tokens"] / replicas / share / (0.4 * H100_BF16)
    assert send < 0.25 * compute                                                  # (b): it hides
    # chalk's table with a replica as its "chip" gives the same ratio; with every GPU a replica (a) it fails.
    rep = {r.kind: r for r in pipeline.parallelism_table(d["model"], d["system"], replicas, d["tokens"])}["data"]
    assert rep.network == "scale-out" and close(rep.scale_out_time / rep.compute_time, send / compute, 0.02)
    alone = {r.kind: r for r in pipeline.parallelism_table(d["model"], d["system"], d["gpus"], d["tokens"])}["data"]
    assert alone.scale_out_time > 3 * alone.compute_time                          # (a)'s "several times"
    # (d): a threshold in tokens per replica exists, well below the layout's but above a few thousand.
    threshold = d["tokens"] / replicas * rep.scale_out_time / rep.compute_time
    assert 8e3 < threshold < 12e3


def test_busy_stages_cannot_buy_the_longer_context():
    c = key.CONTEXT
    assert memory.max_batch(c["model"], c["system"], c["context"]) >= c["batch"]           # it fits today
    per_gpu = c["batch"] * c["longer"] * LLAMA70_KV / 8                                     # B L b_kv / E
    assert per_gpu > 1.1 * H100_USABLE                                                      # (c), by hand
    for stages in (1, 2, 4, 8, 16, 40, 80):
        assert memory.max_batch(c["model"], c["system"], c["longer"], stages=stages) < c["batch"]
    # Idling stages (m = 1) would fit it, from two stages on.
    assert memory.max_batch(c["model"], c["system"], c["longer"], stages=2, microbatches=1) >= c["batch"]


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


def test_choice_prompts_list_every_option():
    prompts = _prompts()
    for ex_id in CHOICE_ITEMS:
        for letter, text in EXERCISES[ex_id].options.items():
            assert f"({letter}) {' '.join(text.split())}" in prompts[ex_id], (ex_id, letter)


def test_prompts_state_the_scenario_the_key_uses():
    k = key
    stated = {
        "decode_bubble": [f"{k.DECODE['stages']} stages", f"{k.DECODE['microbatches']} micro-batches",
                          f"{k.DECODE['hop']:g} $t_F$"],
        "decode_microbatches": ["no stage"],
        "interleave_costs": [f"{k.SWITCH['stages']}-stage pipeline", f"{k.SWITCH['microbatches']} micro-batches",
                             f"$v = {k.SWITCH['chunks']}$"],
        "min_microbatches": [f"{k.TARGET['stages']} stages", f"$v = {k.TARGET['chunks']}$",
                             f"{k.TARGET['bubble']:.0%}"],
        "rack_ratio_jamba": [f"`{k.RATIO['model']}`", f"`{k.RATIO['system']}`", f"{k.RATIO['layers']} MoE layers",
                             f"{k.RATIO['expert_parallel']} GPUs"],
        "min_layers_mixtral": [f"`{k.MIN_LAYERS['model']}`", f"`{k.MIN_LAYERS['system']}`",
                               f"{k.MIN_LAYERS['expert_parallel']} GPUs"],
        "boundary_precision": [f"`{k.FORMATS['model']}`", f"`{k.FORMATS['system']}`",
                               f"{k.FORMATS['layers']} MoE layers", f"{k.FORMATS['expert_parallel']} GPUs",
                               "FP8", "BF16"],
        "uneven_idle": [f"{k.UNEVEN['microbatches']} micro-batches", "$t_F = 2$, $t_B = 4$"],
        "llama_bubble": ["16M tokens", f'"{k.LLAMA_LAYOUT}"', "8,192 GPUs", "16 pipeline stages",
                         "8,192-token sequences"],
        "step_time_read": [f"{k.PLOT_MICROBATCHES} micro-batches"],
        "dp_traffic": [f"`{k.DATA['model']}`", f"{k.DATA['gpus']:,} H100s", f"tensor parallel {k.DATA['tensor']}",
                       f"{k.DATA['pipeline']} pipeline stages", "4M tokens", "FP32", "40%"],
        "pipeline_context": [f"`{k.CONTEXT['model']}`", f"`{k.CONTEXT['system']}`", f"{k.CONTEXT['batch']} sequences",
                             f"{k.CONTEXT['context']:,} tokens", f"{k.CONTEXT['longer']:,} tokens"],
    }
    assert set(stated) == set(EXERCISES)
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        for phrase in phrases:
            assert phrase in prompts[ex_id], (ex_id, phrase)
