"""Chapter 1's roofline against DeepSeek's published serving statistics (chalk.operator).

Published figures: DeepSeek, "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview",
2025-03-01, github.com/deepseek-ai/open-infra-index/blob/main/202502OpenSourceWeek/
day_6_one_more_thing_deepseekV3R1_inference_system_overview.md ("the overview" below).
Expected values are the overview's numbers or hand calculations written out in the comments.
"""
import pytest

from chalk import catalog, moe, operator
from chalk.catalog import operators, quoted
from chalk.errors import ChalkError

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


def test_alltoall_by_hand(overlapped):
    # Each GPU sends its 88.10 tokens to 8 experts, dispatch in FP8 (1 B) and combine in BF16 (2 B)
    # per element of d_model = 7,168: 88.10 x 8 x 7,168 x 3 B = 15.16 MB per layer, of which the
    # share bound for the other 17 nodes, 1 - 8/144, crosses the 50 GB/s NIC: 286.3 us per layer,
    # x 58 MoE layers = 16.60 ms per step (NVLink's 8/144 share takes microseconds, in parallel).
    assert overlapped.alltoall == pytest.approx(16.60e-3, rel=2e-3)


def test_imbalance_against_a_hand_estimate(overlapped):
    # 256 experts + 32 copies on 144 GPUs: under uniform routing 80 GPUs hold two whole experts
    # while the mean GPU holds 256/144 = 1.78 expert loads (factor 1.125). Such a GPU receives
    # 12,686 x 8 x 2/256 = 793 choices, sd sqrt(793 x (1 - 8/256)) = 27.7; the largest of 80 is
    # about 2.4 sd higher (E max of 80 normals): 860 / (12,686 x 8 / 144 = 705) = 1.22.
    assert overlapped.imbalance == pytest.approx(1.22, rel=0.03)


def test_bounds_by_hand(overlapped, serial):
    # Overlapped: max(compute 10.89, 2 micro-batches x 6.635 + 9.219 = 22.49, 1.22 x 16.60 = 20.2)
    # = 22.49 ms. Not overlapped: max(10.89, 15.85) + 1.22 x 16.60 = 36.1 ms. Ratio 1.60.
    assert overlapped.modelled_step == pytest.approx(22.49e-3, rel=3e-3)
    assert serial.modelled_step == pytest.approx(15.854e-3 + 1.22 * 16.60e-3, rel=0.02)
    assert serial.modelled_step / overlapped.modelled_step == pytest.approx(1.60, rel=0.02)


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
    # The model is a lower bound on the step: nothing it counts makes DeepSeek slower than measured.
    assert c.residual > 1


def test_implied_mfu_by_hand(overlapped):
    # The step's FLOPs at peak take 10.890 ms; the measured step is 47.62 ms: 22.9%.
    assert overlapped.implied_mfu == pytest.approx(10.890 / 47.62, rel=3e-3)


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
