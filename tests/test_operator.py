"""Chapter 1's roofline against DeepSeek's published serving statistics (chalk.operator).

Published figures: DeepSeek, "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview",
2025-03-01, github.com/deepseek-ai/open-infra-index/blob/main/202502OpenSourceWeek/
day_6_one_more_thing_deepseekV3R1_inference_system_overview.md ("the overview" below).
Expected values are the overview's numbers or hand calculations written out in the comments.
"""
import pytest

import sympy as sp

from chalk import catalog, moe, operator, pricing, roofline
from chalk.catalog import memory_data, operators, quoted
from chalk.errors import ChalkError
from chalk.notation import E, N_rout, N_tot, m, n_exp, n_red

OP = operators.get(operator.DEEPSEEK)


@pytest.fixture(scope="module")
def overlapped():
    return operator.compare(overlap=True)


@pytest.fixture(scope="module")
def serial():
    return operator.compare(overlap=False)


# --- the published economics, recomputed from the published counts ----------------------------
def test_cost_per_day_is_nodes_times_rental():
    # The overview: 226.75 nodes on average x 8 H800 x $2/GPU-hour x 24 h = "$87,072".
    assert operator.cost_per_day() == pytest.approx(87_072, rel=1e-12)
    assert OP.cost_usd_per_day == 87_072


def test_revenue_from_token_counts_and_r1_prices():
    # The overview's footnote prices R1 at $0.14 (cache hit) / $0.55 (miss) input, $2.19 output.
    price = OP.priced_at
    assert (price.cache_read, price.input, price.output) == (0.14, 0.55, 2.19)
    # 342B x 0.14 + (608 - 342)B x 0.55 + 168B x 2.19 = 47,880 + 146,300 + 367,920 = $562,100,
    # against the published $562,027: the token counts are rounded to 1B, so 0.02% is allowed.
    assert operator.revenue_per_day() == pytest.approx(562_100, rel=1e-9)
    assert operator.revenue_per_day() == pytest.approx(OP.revenue_usd_per_day, rel=2e-4)


def test_margin_and_cache_share_match_the_overview():
    # "cost profit margin of 545%": (562,027 - 87,072) / 87,072 = 5.455; recomputed from the
    # recomputed revenue, 5.456. "342B tokens (56.3%) hit the on-disk KV cache": 342/608 = 56.25%.
    margin = operator.revenue_per_day() / operator.cost_per_day() - 1
    assert 100 * margin == pytest.approx(OP.cost_profit_margin_percent, rel=2e-3)
    assert 100 * operator.cache_hit_share() == pytest.approx(OP.cache_hit_percent, abs=0.05)


def test_published_layout_is_what_chalk_places():
    # "EP144 ... 18 nodes with 32 redundant routed experts, where each GPU manages 2 routed experts":
    # (256 + 32) / 144 = 2.
    assert OP.decode_nodes * OP.gpus_per_node == OP.decode_expert_parallel == 144
    assert moe.experts_per_chip(OP.model, 144, OP.decode_redundant_experts) == OP.decode_routed_experts_per_gpu
    assert moe.experts_per_chip(OP.model, 32, 32) == OP.prefill_routed_experts_per_gpu == 9


def test_layouts_agree_with_the_chapter_2_deployment_table():
    # quoted.toml's deployment-online-* tables type the same published layouts: until one file
    # reads the other, the two must agree.
    table = catalog.load("quoted.toml")
    decode, prefill = table["deployment-online-decode"], table["deployment-online-prefill"]
    assert (decode["chips"], decode["nodes"], decode["redundant"], decode["printed_experts_per_chip"]) == (
        OP.decode_expert_parallel, OP.decode_nodes, OP.decode_redundant_experts, OP.decode_routed_experts_per_gpu)
    assert (prefill["chips"], prefill["nodes"], prefill["printed_experts_per_chip"]) == (
        OP.prefill_expert_parallel, OP.prefill_nodes, OP.prefill_routed_experts_per_gpu)


# --- the roofline for the same hardware and layout ----------------------------------------------
# By hand. Little's law: 14,800 tokens/s per node / 8 GPUs / 21 tokens/s per user (middle of the
# published 20-22) = 88.10 sequences per GPU, 12,686 over EP144, each at L = 4,989 tokens.
#   matmuls:   2 x 88.10 x 37.55e9 (N_act) / 1,978.9e12 (FP8)                          = 3.343 ms
#   attention: 88.10 x 4,989 x 16.99e6 / 989.4e12 (BF16)                               = 7.547 ms
#              (16.99e6 = 61 layers x 2 x 128 heads x (2 x 512 + 64), MLA absorbed)
#   KV read:   88.10 x 4,989 x 70,272 B / 3.35e12 B/s                                  = 9.219 ms
#   weights:   671.0e9 B (FP8) / (144 x 3.35e12)                                       = 1.391 ms
#   step = max(3.343 + 7.547, 1.391 + 9.219) = 10.890 ms: 8 x 88.10 / 10.890 ms = 64,716 per node.
def test_batch_from_littles_law(overlapped):
    assert overlapped.batch_per_gpu == pytest.approx(14_800 / 8 / 21, rel=1e-12)


def test_roofline_per_node_by_hand(overlapped):
    assert overlapped.roofline.t_step == pytest.approx(10.890e-3, rel=2e-3)
    assert overlapped.roofline_tokens_per_node == pytest.approx(64_716, rel=2e-3)
    # ... 4.37 times the published 14.8k tokens/s per node.
    assert overlapped.ratio == pytest.approx(64_716 / 14_800, rel=2e-3)


def test_attention_data_parallel_weights_by_hand(overlapped):
    # Every GPU reads N_tot minus all routed experts (671.03e9 - 58 x 256 x 3 x 7,168 x 2,048
    # = 17.12e9 parameters: attention, shared experts, dense layers, embeddings) plus its own 2
    # routed experts x 58 layers x 44.04e6 = 5.11e9: 22.23 GB at one byte, 6.635 ms at 3.35 TB/s.
    assert overlapped.weight_bytes_per_gpu == pytest.approx(22.23e9, rel=2e-3)
    step = overlapped.terms[1]
    assert step.name == "attention data parallel"
    assert step.step == pytest.approx(6.635e-3 + 9.219e-3, rel=2e-3)
    # Two micro-batches read them twice: 2 x 6.635 + 9.219 = 22.49 ms.
    assert overlapped.terms[2].step == pytest.approx(2 * 6.635e-3 + 9.219e-3, rel=2e-3)


def test_params_per_gpu_formula_matches_the_placement(overlapped):
    # The SymPy expression and chalk.moe.placement count the same bytes: 17.12e9 copied + 2 experts
    # of 58 x 44.04e6 (in FP8, one byte a parameter).
    values = {N_tot: OP.model.total_params, N_rout: OP.model.routed_expert_params, n_exp: 256, n_red: 32, E: 144}
    assert float(operator.params_per_gpu.subs(values)) == pytest.approx(overlapped.weight_bytes_per_gpu, rel=1e-9)


# --- the layout's balance batch per GPU -----------------------------------------------------------
# By hand, per GPU and per sequence at L = 4,989: matmuls 2 x 37.55e9 / 1,978.9e12 = 37.95 us,
# attention 4,989 x 16.99e6 / 989.4e12 = 85.67 us, KV read 4,989 x 70,272 / 3.35e12 = 104.65 us.
# A sequence adds 37.95 + 85.67 - 104.65 = 18.97 us more compute than memory time; the weights
# take 22.23e9 / 3.35e12 = 6.636 ms per read. Balance: 6.636 / 0.01897 = 349.8 sequences per GPU
# with one read per step, 699.6 with two micro-batches that each read them.
def test_layout_balance_batch_by_hand(overlapped):
    assert overlapped.balance_batch_per_gpu_one_read == pytest.approx(349.8, rel=0.01)
    assert overlapped.balance_batch_per_gpu == pytest.approx(699.6, rel=0.01)


def test_deepseek_runs_far_below_its_layout_balance_batch(overlapped):
    # 88.10 sequences per GPU: 88.10 / 699.6 = 0.126 and 88.10 / 349.8 = 0.252 of the balance batch,
    # memory-bound (22.49 ms of reads against 10.89 ms of compute) ...
    assert overlapped.batch_per_gpu / overlapped.balance_batch_per_gpu == pytest.approx(0.126, rel=0.01)
    assert overlapped.batch_per_gpu / overlapped.balance_batch_per_gpu_one_read == pytest.approx(0.252, rel=0.01)
    assert overlapped.terms[2].step > 2 * overlapped.roofline.t_compute
    # ... and the balance batch does not fit: (0.9 x 80 GB - 22.23 GB) / (4,989 x 70,272 B)
    # = 49.77e9 / 350.6e6 = 141.96, so 141 whole sequences per GPU at most.
    assert overlapped.max_batch_per_gpu == 141
    assert overlapped.max_batch_per_gpu < overlapped.balance_batch_per_gpu_one_read


def test_sharded_balance_batch_is_not_the_layouts(overlapped):
    # Dividing the replica's B* by the GPU count assumes each GPU reads 1/144 of the weights once:
    # 10,558 / 144 = 73.3 at L = 4,989 (B* itself is checked in tests/test_roofline.py). With
    # copies the reads are 144 x 22.23 / 671.03 = 4.770 times that: 349.8.
    bstar = roofline.balance_batch(OP.chip, OP.model, OP.dtype, OP.kv_tokens_per_output_token)
    assert overlapped.balance_batch_per_gpu_one_read / (bstar / 144) == pytest.approx(144 * 22.23 / 671.03, rel=2e-3)


def test_layout_balance_is_the_roofline_balance_scaled_by_reads():
    # Solving compute = memory with the layout's reads gives B* x m x params_per_gpu / N_tot: B*/E
    # exactly when params_per_gpu = N_tot/E and m = 1 (every weight sharded, read once).
    scaled = roofline.balance_batch_expr * m * operator.params_per_gpu / N_tot
    assert sp.simplify(operator.layout_balance_batch_expr - scaled) == 0
    assert sp.simplify(scaled.subs(m, 1).xreplace({operator.params_per_gpu: N_tot / E})
                       - roofline.balance_batch_expr / E) == 0


def test_layout_balance_at_zero_context_by_hand():
    # L = 0: b* = m x params_per_gpu x b_w x F / (2 N_act W) = 22.23e9 x 590.7 / 75.10e9 = 174.9
    # per GPU for one read (r = 1,978.9 / 3.35 = 590.7 in FP8).
    b = operator.layout_balance_batch(OP.chip, OP.model, 144, 0, "fp8", redundant=32)
    assert b == pytest.approx(174.9, rel=2e-3)
    assert operator.layout_balance_batch(OP.chip, OP.model, 144, 0, "fp8", 32, micro_batches=3) == pytest.approx(3 * b)


def test_layout_balance_is_infinite_past_the_balance_context():
    # L* on an H800 in FP8 is 2 x 37.55e9 / 1,978.9e12 / (70,272 / 3.35e12 - 16.99e6 / 989.4e12)
    # = 37.95e-6 / 3.805e-9 = 9,975 tokens: beyond it no batch balances.
    assert roofline.balance_context_for(OP.chip, OP.model, "fp8") == pytest.approx(9_975, rel=3e-3)
    assert operator.layout_balance_batch(OP.chip, OP.model, 144, 12_000, "fp8", 32) == float("inf")


@pytest.mark.parametrize("kwargs, message", [
    ({"micro_batches": 0}, "micro_batches"),
    ({"redundant": -1}, "redundant"),
    ({"context": -5}, "context"),
    ({"model": "llama-3-70b"}, "dense"),
    ({"gpus": 0}, "gpus"),
])
def test_layout_balance_bad_input(kwargs, message):
    args = {"chip": "H800", "model": "deepseek-v3", "gpus": 144, "context": 1000} | kwargs
    with pytest.raises(ChalkError, match=message):
        operator.layout_balance_batch(**args)


# --- communication, imbalance and the bracket -----------------------------------------------------
def test_deepep_figures_are_self_consistent():
    # DeepEP's table (memory.toml) at EP128: 128 tokens x 8 choices x (7,168 + 7,168/128 x 4) B
    # = 7.569 MB dispatched in 192 us = 39.4 GB/s (printed: 39); combine 128 x 8 x 7,168 x 2 B
    # = 14.68 MB in 369 us = 39.8 GB/s (printed: 39).
    ep = memory_data.latency("deepep-low-latency")
    i = ep["ep"].index(128)
    assert 128 * 8 * (7168 + 7168 / 128 * 4) / (ep["dispatch_us"][i] * 1e-6) / 1e9 == pytest.approx(ep["dispatch_GBps"][i], rel=0.03)
    assert 128 * 8 * 7168 * 2 / (ep["combine_us"][i] * 1e-6) / 1e9 == pytest.approx(ep["combine_GBps"][i], rel=0.03)


# The measured link model (chalk.moe.MEASURED), by hand from DeepEP's timings at EP 64, 128 and 256:
# dispatches of 7.569e6 B take 173, 192, 194 us (mean 186.33), combines of 14.680e6 B 314, 369,
# 360 us (mean 347.67). The line through the two means: 7.111e6 B in 161.33 us, 44.07 GB/s, and
# 186.33 - 7.569e6 / 44.07e9 s = 14.59 us per call.
DEEPEP_RATE = (14.680e6 - 7.569e6) / ((347.67 - 186.33) * 1e-6)
DEEPEP_CALL = (186.33 - 7.569e6 / DEEPEP_RATE * 1e6) * 1e-6


def test_alltoall_measured_and_line_rate_by_hand(overlapped):
    # Each of the 2 micro-batches carries 88.10 / 2 = 44.05 tokens per GPU to 8 experts, FP8
    # dispatch (1 B) and BF16 combine (2 B) per element of d_model = 7,168: 7.578 MB per layer, of
    # which the share bound for the other 17 nodes, 1 - 8/144, crosses the NIC: 7.157 MB.
    crossing = 44.05 * 8 * 7168 * 3 * (1 - 8 / 144)
    # Measured: 7.157 MB / 44.07 GB/s = 162.4 us plus two calls of 14.59 us, 191.6 us a layer;
    # x 58 MoE layers x 2 micro-batches = 22.22 ms per step, 3.385 ms of it the calls.
    assert overlapped.alltoall_fixed == pytest.approx(2 * 58 * 2 * DEEPEP_CALL, rel=3e-3)
    assert overlapped.alltoall == pytest.approx(2 * 58 * (crossing / DEEPEP_RATE + 2 * DEEPEP_CALL), rel=3e-3)
    assert overlapped.alltoall == pytest.approx(22.22e-3, rel=2e-3)
    # Line rate: the crossing bytes at the 50 GB/s NIC, no fixed cost: 143.1 us x 58 x 2 = 16.60 ms.
    assert overlapped.alltoall_line_rate == pytest.approx(2 * 58 * crossing / 50e9, rel=2e-3)


def test_imbalance_against_a_hand_estimate(overlapped):
    # Each micro-batch routes half the batch, 6,343 tokens. 256 experts + 32 copies on 144 GPUs:
    # under uniform routing 80 GPUs hold two whole experts while the mean GPU holds 256/144 = 1.78
    # expert loads (factor 1.125). Such a GPU receives 6,343 x 8 x 2/256 = 396.4 choices, sd
    # sqrt(396.4 x (1 - 8/256)) = 19.6; the largest of 80 is about 2.39 sd higher (E max of 80
    # normals): 443.2 / (6,343 x 8 / 144 = 352.4) = 1.258.
    assert overlapped.imbalance == pytest.approx(1.258, rel=0.03)


def test_bounds_by_hand(overlapped, serial):
    # Imbalance lengthens the transfer, not the calls: 3.385 + 1.249 x (22.22 - 3.385) = 26.92 ms.
    comm = 3.385e-3 + overlapped.imbalance * (22.22e-3 - 3.385e-3)
    # Hidden: max(compute 10.89 (+ imbalance on 1.8 ms of routed matmuls), reads 22.49, 26.92)
    # = 26.92 ms. Not hidden: max(7.547, 9.219) + max(3.34 + 0.45, 13.27) + 26.92 = 49.41 ms.
    assert overlapped.modelled_step == pytest.approx(comm, rel=3e-3)
    assert serial.modelled_step == pytest.approx(9.219e-3 + 13.27e-3 + comm, rel=3e-3)
    # The measured 47.62 ms lies between: 1.77 times the lower end, 0.96 times the upper.
    assert overlapped.modelled_step < overlapped.measured_step < serial.modelled_step


@pytest.mark.parametrize("overlap", [True, False])
def test_terms_reconcile_roofline_to_measurement(overlap):
    c = operator.compare(overlap=overlap)
    product = 1.0
    for term in c.terms:
        product *= term.factor
        assert term.why and term.factor >= 1 - 1e-12
    # roofline step x every factor x residual = the measured step (1 / 21 s = 47.6 ms) ...
    assert c.terms[0].step * product * c.residual == pytest.approx(1 / 21, rel=1e-12)
    # ... and that ratio is the throughput ratio, since both sides run the same batch.
    assert product * c.residual == pytest.approx(c.ratio, rel=1e-12)


# --- MFU, each against a named peak ---------------------------------------------------------------
# Per GPU a step does 88.10 x (2 x 37.55e9 + 4,989 x 16.99e6) = 88.10 x 159.86e9 = 14.08e12 FLOPs,
# 6.616e12 of them in weight matmuls, in the measured 47.62 ms.
def test_implied_mfu_by_hand(overlapped):
    # Time-weighted (matmuls at the FP8 peak, attention at BF16): 10.890 ms of 47.62 = 22.9%.
    assert overlapped.implied_mfu == pytest.approx(10.890 / 47.62, rel=3e-3)
    # Against one peak: 14.08e12 / (1,978.9e12 x 0.04762) = 14.9% of FP8, 29.9% of BF16 (989.4).
    assert overlapped.mfu_at("fp8") == pytest.approx(14.08e12 / (1978.9e12 * 0.04762), rel=3e-3)
    assert overlapped.mfu_at("bf16") == pytest.approx(14.08e12 / (989.4e12 * 0.04762), rel=3e-3)
    # Weight matmuls only, the MFU that 2 N_act per token counts: 6.616e12 / 94.24e12 = 7.02%.
    assert overlapped.mfu_at("fp8", matmuls_only=True) == pytest.approx(0.0702, rel=3e-3)
    # The layout caps it before any communication: 10.89 / 22.49 = 48.4%.
    assert overlapped.layout_mfu_bound == pytest.approx(10.89 / 22.49, rel=3e-3)


def test_price_implied_mfu_is_the_price_ratio():
    # chalk.pricing reads decode MFU as p_in / p_out: R1's $0.55 / $2.19 = 25.1%.
    assert pricing.implied_decode_mfu(OP.priced_at).value == pytest.approx(0.55 / 2.19, rel=1e-12)


def test_user_speed_moves_the_batch_not_the_ratio():
    # A faster user at the same output per node means fewer sequences per GPU; the roofline's
    # throughput barely depends on the batch here (no weight floor to amortise), so the ratio
    # moves by well under the 10% between 20 and 22 tokens/s.
    slow, fast = operator.compare(user_tokens_per_second=20), operator.compare(user_tokens_per_second=22)
    assert slow.batch_per_gpu / fast.batch_per_gpu == pytest.approx(22 / 20)
    assert abs(slow.ratio / fast.ratio - 1) < 0.03


def test_decode_cost_scope():
    # Decode GPUs only: 8 GPUs x $2/h / 3,600 s / 14,800 tokens/s per node = $0.300 per million.
    assert operator.decode_usd_per_million_tokens() == pytest.approx(16 / 3600 / 14_800 * 1e6, rel=1e-12)


# --- the lecture's replica and its scale argument -----------------------------------------------
def test_lecture_replica_arithmetic():
    # Lecture 25:53-27:40: "2,000 x 64 = 128,000 tokens per second"; 64 steps/s is a 15.6 ms step.
    lecture = quoted.LECTURE
    assert lecture["replica_sequences"] * lecture["replica_steps_per_second"] == lecture["replica_tokens_per_second"]
    assert 1e3 / lecture["replica_steps_per_second"] == pytest.approx(15.6, abs=0.05)


def test_deepseek_scale_against_the_lecture_replica():
    # One EP144 decode unit: 18 nodes x 14,800 = 266,400 tokens/s, about 2.1 lecture replicas;
    # the whole fleet: 168e9 output tokens / 86,400 s = 1.94M tokens/s, about 15 replicas.
    replica = quoted.LECTURE["replica_tokens_per_second"]
    assert operator.decode_unit_tokens_per_second() == pytest.approx(266_400, rel=1e-12)
    assert operator.fleet_output_tokens_per_second() / replica == pytest.approx(168e9 / 86_400 / 128_000, rel=1e-12)


def test_fleet_tokens_counted_like_googles():
    # Input and output: (608e9 + 168e9) / 86,400 s = 8.98M tokens/s, against the lecture's Gemini
    # of 1,000 x 128,000 = 128M tokens/s: 7.0%.
    assert operator.fleet_tokens_per_second() == pytest.approx(776e9 / 86_400, rel=1e-12)
    lecture = quoted.LECTURE
    gemini = lecture["replica_tokens_per_second"] * lecture["gemini_over_replica"]
    assert operator.fleet_tokens_per_second() / gemini == pytest.approx(8.981e6 / 128e6, rel=1e-3)


# --- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"name": "openai@2025"}, "operator"),
    ({"user_tokens_per_second": -1}, "user_tokens_per_second"),
    ({"overlap": "yes"}, "overlap"),
])
def test_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ChalkError, match=message):
        operator.compare(**kwargs)


def test_loader_rejects_a_system_of_another_chip():
    entry = dict(catalog.load("operators.toml")[operator.DEEPSEEK], system="hgx-h100")
    with pytest.raises(ChalkError, match="built from H100-SXM, not H800"):
        operators._build("x", entry)
