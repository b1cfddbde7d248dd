"""Chapter 3 against published figures: each computed by chalk.pipeline (or the simulator) and
compared with the number or formula the source prints, with its citation and tolerance."""
import pytest

from chalk import hardware, pipeline as pl, systems
from chalk.catalog import layouts

EXACT = 1e-9


def test_deepseek_v3_table2_1f1b_bubble():
    """DeepSeek-V3 report (arXiv 2412.19437) Table 2: 1F1B bubble (PP-1)(F+B); at its PP = 16."""
    F, B = 1.0, 2.0
    run = pl.simulate(16, 64, "1f1b", t_forward=F, t_backward=B)
    assert run.bubble_time == pytest.approx((16 - 1) * (F + B), rel=EXACT)


def test_deepseek_v3_table2_1f1b_activations():
    """DeepSeek-V3 report Table 2: 1F1B keeps PP micro-batches of activations (PP = 16)."""
    assert pl.simulate(16, 64, "1f1b").peak_activations == 16


def test_deepseek_v3_nvlink_over_ib_is_3_2():
    """DeepSeek-V3 report section 3.2.2: NVLink 160 GB/s is "roughly 3.2 times" IB's 50 GB/s,
    so a token can use about 3.2 experts per node at no extra NVLink cost (tolerance exact)."""
    ds = layouts.get("deepseek-v3")
    fanout = pl.experts_per_crossing(ds["nvlink_GBps"] / ds["ib_GBps"])
    assert fanout == pytest.approx(ds["bandwidth_ratio"], rel=EXACT)
    assert fanout == pytest.approx(ds["experts_per_node"], rel=EXACT)


def test_deepseek_v3_up_to_13_experts():
    """DeepSeek-V3 report section 3.2.2: up to 13 experts (4 nodes x 3.2) at the same cost.
    4 x 3.2 = 12.8, printed rounded to 13: tolerance 2%."""
    ds = layouts.get("deepseek-v3")
    most = ds["max_nodes_per_token"] * pl.experts_per_crossing(ds["nvlink_GBps"] / ds["ib_GBps"])
    assert most == pytest.approx(ds["max_experts"], rel=0.02)


def test_deepseek_v3_expert_parallelism_fills_its_nodes():
    """DeepSeek-V3 report section 3.2: 64-way EP spanning 8 nodes, i.e. one 8-GPU NVLink domain
    (an HGX board, the H800's like the H100's) per node: exact."""
    ds = layouts.get("deepseek-v3")
    assert ds["expert"] / ds["expert_nodes"] == systems.get("hgx-h100").count
    assert pl.data_parallel_degree(ds["chips"], pipeline=ds["pipeline"]) % ds["expert"] == 0


def test_deepseek_v3_passes_the_rack_test_at_one_layer():
    """DeepSeek-V3's 8 routed experts and its own 3.2x ratio: 2 x 8 / 3.2 = 5 >= 1, so one MoE
    layer per stage would keep IB off the critical path (section 3.2.2's ratio; exact)."""
    ds = layouts.get("deepseek-v3")
    assert pl.rack_boundary_ratio(1, 8, ds["bandwidth_ratio"]) == pytest.approx(5.0, rel=EXACT)
    assert pl.min_layers_per_stage(8, ds["bandwidth_ratio"]) == 1


def test_gpipe_bubble_formula():
    """Huang et al. 2019 (GPipe, arXiv 1811.06965) section 2.2: bubble O((K-1)/(M+K-1)) for K
    partitions and M micro-batches; the simulator at K = 4, M = 8 (exact)."""
    assert pl.simulate(4, 8, "gpipe").idle_fraction == pytest.approx((4 - 1) / (8 + 4 - 1), rel=EXACT)


def test_megatron_interleaving_divides_the_bubble_by_v():
    """Narayanan et al. 2021 (arXiv 2104.04473) section 2.2.2: with v chunks per device the
    bubble time shrinks by a factor v; measured at p = 8, m = 32, v = 4 (exact)."""
    plain = pl.simulate(8, 32, "1f1b")
    interleaved = pl.simulate(8, 32, "interleaved", 4)
    assert plain.bubble_time / interleaved.bubble_time == pytest.approx(4, rel=EXACT)


def test_korthikanti_interleaved_memory_factor():
    """Korthikanti et al. 2022 (arXiv 2205.05198) section 4.2.3: the interleaved schedule's
    first stage holds 1 + (p-1)/(p v) times 1F1B's p micro-batches; measured at p = 8, v = 2 (exact)."""
    p, chunks = 8, 2
    run = pl.simulate(p, 4 * p, "interleaved", chunks)
    assert run.peak_activations / p == pytest.approx(1 + (p - 1) / (p * chunks), rel=EXACT)


def test_lecture_single_batch_wastes_three_quarters():
    """The lecture (section 4.5 of the notes): one batch through 4 racks leaves three quarters
    of each rack idle (exact)."""
    assert pl.simulate(4, 1, "inference").idle_fraction == pytest.approx(0.75, rel=EXACT)


def test_lecture_rack_test_at_k_8():
    """The lecture (section 4.2): 2 k L_stage / 8 >= 1 holds at one layer per stage with k = 8;
    its ratio there is 2 (exact)."""
    assert pl.rack_boundary_ratio(1, 8, 8) == pytest.approx(2.0, rel=EXACT)
    assert pl.min_layers_per_stage(8, 8) == 1


LLAMA = ["llama-3.1-405b-8k-8192", "llama-3.1-405b-8k-16384", "llama-3.1-405b-128k-16384"]


@pytest.mark.parametrize("name", LLAMA)
def test_llama3_table4_data_parallel_degree(name):
    """Llama 3 Herd (arXiv 2407.21783) Table 4: the printed DP of each 405B layout from its GPUs,
    TP, CP and PP (exact)."""
    lay = layouts.get(name)
    dp = pl.data_parallel_degree(lay["chips"], tensor=lay["tensor"], context=lay["context"],
                                 pipeline=lay["pipeline"])
    assert dp == lay["data"]


@pytest.mark.parametrize("name", LLAMA)
def test_llama3_table4_mfu(name):
    """Llama 3 Herd Table 4: printed BF16 MFU from the printed TFLOP/s per GPU over the H100's
    dense BF16 peak in the catalog; the paper rounds to whole percent: tolerance 2%."""
    lay = layouts.get(name)
    mfu = lay["tflops_per_gpu"] * 1e12 / hardware.get("H100-SXM").flops("bf16")
    assert mfu == pytest.approx(lay["mfu"], rel=0.02)


def test_deepseek_v3_tokens_per_gpu_per_step():
    """DeepSeek-V3 report section 4.2: batch 15,360 sequences of 4K tokens after the ramp, on the
    2,048 H800s of section 3.1: 15,360 x 4,096 / 2,048 = 30,720 tokens per GPU per step (exact)."""
    assert pl.published_tokens_per_chip("deepseek-v3") == 15_360 * 4_096 / 2_048 == 30_720
