"""chalk.moe: the contract, independent checks of each closed form, and clear errors."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalk import ChalkError, hardware, models, moe, systems

DS = "deepseek-v3"


def toy(n_experts=16, k=2, shared=1, d_model=16, d_ff=32):
    return models.from_config("toy-moe", dict(
        display="Toy MoE", attention="gqa", n_layers=2, d_model=d_model, n_heads=2, n_kv_heads=1,
        d_head=8, ffn_gated=True, vocab=100, tied_embeddings=True,
        moe=dict(n_routed_experts=n_experts, experts_per_token=k, d_ff_expert=d_ff,
                 n_shared_experts=shared)))


# --- all-to-all bytes: a brute-force count over every routing -------------------------------------
def brute_force_bytes(n_experts, k, chips, tokens_per_chip, width, domain=None):
    """Expected bytes chip 0 sends (dispatch of its tokens to remote experts, plus its experts'
    results for remote tokens), averaging over every k-subset each token may pick, and the part of
    them that leaves chip 0's domain of ``domain`` chips. Experts sit in blocks on the chips."""
    domain = domain or chips
    expert_chip = [e * chips // n_experts for e in range(n_experts)]
    subsets = list(itertools.combinations(range(n_experts), k))
    sent = crossing = 0.0
    for home in range(chips):
        for choice in subsets:
            for e in choice:
                dest = expert_chip[e]
                if dest == home:
                    continue
                # chip 0 sends the activation when it owns the token, the result when it owns the expert
                if 0 in (home, dest):
                    other = dest if home == 0 else home
                    sent += width
                    crossing += width * (other // domain != 0)
    per_subset = tokens_per_chip / len(subsets)
    return sent * per_subset, crossing * per_subset


@pytest.mark.parametrize("n_experts, k, chips", [(16, 2, 4), (8, 3, 8), (12, 4, 6)])
def test_alltoall_bytes_matches_brute_force(n_experts, k, chips):
    model, per_chip, bpe = toy(n_experts, k), 3, 2
    expected, _ = brute_force_bytes(n_experts, k, chips, per_chip, model.d_model * bpe)
    assert moe.alltoall_bytes(model, per_chip * chips, chips, bpe) == pytest.approx(expected, rel=1e-12)


def test_two_domains_split_matches_brute_force():
    model = toy(16, 2)
    chips, per_chip = 16, 2  # two HGX H100 boxes of 8, one expert per chip
    total, crossing = brute_force_bytes(16, 2, chips, per_chip, model.d_model * 2, domain=8)
    t = moe.layer_times(model, "hgx-h100", per_chip * chips, domains=2)
    chip = hardware.get("H100-SXM")
    assert t.scale_out * chip.scale_out_bandwidth == pytest.approx(crossing, rel=1e-12)
    assert t.scale_up * chip.scale_up_bandwidth == pytest.approx(total - crossing, rel=1e-12)


def test_two_racks_send_half_the_tokens_across():
    """The lecture: spread over two racks, about half of the tokens cross the slow network."""
    tokens, m = 144 * 64, models.get(DS)
    t = moe.layer_times(DS, "gb200-nvl72", tokens, domains=2, bytes_per_element=1)
    all_choices = 2 * (tokens / 144) * 8 * m.d_model * 1
    assert t.scale_out * hardware.get("GB200").scale_out_bandwidth / all_choices == pytest.approx(0.5)
    assert moe.layer_times(DS, "gb200-nvl72", tokens).scale_out == 0


def test_alltoall_time_uses_per_direction_rates():
    # DeepSeek-V3 on HGX H100, 4096 tokens, BF16 activations: 512 tokens x 8 choices x 7,168 x 2 B,
    # both ways, 7/8 of them remote; NVLink 450 GB/s per direction, CX-7 50 GB/s.
    sent = 2 * 512 * 8 * 7168 * 2 * 7 / 8
    assert moe.alltoall_time(DS, "hgx-h100", 4096) == pytest.approx(sent / 450e9)
    assert moe.alltoall_time(DS, "hgx-h100", 4096, link="Scale-Out") == pytest.approx(sent / 50e9)
    ratio = moe.alltoall_time(DS, "hgx-h100", 4096, link="scale-out") / moe.alltoall_time(DS, "hgx-h100", 4096)
    assert ratio == pytest.approx(systems.get("hgx-h100").scale_up_to_out)


def test_alltoall_is_vectorised_over_tokens():
    tokens = np.array([64, 128, 1024])
    out = moe.alltoall_time(DS, "gb200-nvl72", tokens)
    assert out.shape == (3,) and out[1] == pytest.approx(2 * out[0])


def test_comm_to_compute_ratio_does_not_depend_on_tokens():
    ratios = [moe.layer_times(DS, "hgx-h100", t) for t in (512, 8192, 131072)]
    values = [t.scale_up / t.compute for t in ratios]
    assert values == pytest.approx([values[0]] * 3)
    # by hand, per chip of the 8: bytes 2 b (7/8) k d per token over 450 GB/s, against
    # 2 (k + n_sh) n_mat d d_ff FLOPs per token over 989.4 TFLOP/s
    by_hand = (2 * 2 * 7 / 8 * 8 / 450e9) / (2 * 9 * 3 * 2048 / 989.4e12)
    assert values[0] == pytest.approx(by_hand)


def test_expert_compute_counts_two_flops_per_weight():
    model = toy(16, 2, shared=1)
    t = moe.layer_times(model, "hgx-h100", 800)
    flops = 800 * (2 + 1) * 3 * 16 * 32 * 2  # tokens x experts each x weights per expert x 2
    assert t.compute == pytest.approx(flops / (8 * hardware.get("H100-SXM").flops("bf16")))


def test_expert_weights_read_the_picked_routed_experts_and_the_shared_one():
    chip = hardware.get("GB200")
    expert = 3 * 7168 * 2048 * 1   # one expert: 3 x 7,168 x 2,048 FP8 weights
    # every routed expert of the chip's 4 is picked at a large step, and its copy of the one shared
    # expert is read at any step: the matmuls count the shared expert's FLOPs, so its bytes count too
    many = moe.layer_times(DS, "gb200-nvl72", 10**6, dtype="fp8", chips=64)
    assert many.weights == pytest.approx((4 + 1) * expert / chip.hbm_bandwidth)
    # one token picks 8 of 256 routed experts: each chip reads 8/256 of its 4 on average
    one = moe.layer_times(DS, "gb200-nvl72", 1, dtype="fp8", chips=64)
    assert one.weights == pytest.approx((8 / 256 * 4 + 1) * expert / chip.hbm_bandwidth)
    # a model without shared experts reads only its routed ones
    plain = moe.layer_times(toy(16, 2, shared=0), "hgx-h100", 10**6)
    assert plain.weights == pytest.approx(2 * 3 * 16 * 32 * 2 / hardware.get("H100-SXM").hbm_bandwidth)


def test_expert_chips_of_a_domain_set_the_all_to_all():
    # The lecture's 64 of 72: 4096 tokens, 64 per chip, 8 choices, 63/64 of them remote, FP8 both ways.
    t = moe.layer_times(DS, "gb200-nvl72", 4096, bytes_per_element=1, chips=64)
    assert t.scale_up == pytest.approx(2 * 64 * 8 * 7168 * 63 / 64 / 900e9)
    assert t.scale_out == 0
    two = moe.layer_times(DS, "gb200-nvl72", 4096, bytes_per_element=1, chips=64, domains=2)
    assert two.scale_out == pytest.approx(2 * 32 * 8 * 7168 * 0.5 / 50e9)


# --- deduplicated all-to-all: a brute-force count over every routing ------------------------------------
def brute_force_dedup(n_experts, k, chips, domain, reach, tokens_per_chip, width):
    """Expected bytes per chip (dispatch + combine) when a token travels once to each chip of its
    own domain holding one of its experts and once to each other domain holding one, where the chip
    of the sender's local index receives it and forwards it to the others. Routing: ``reach`` of
    the chips // domain domains drawn uniformly, then k experts uniformly among theirs. Returns
    (scale-up bytes, scale-out bytes), each the total over all chips' tokens divided by the chips."""
    domains = chips // domain
    expert_chip = [e * chips // n_experts for e in range(n_experts)]
    up = out = 0.0
    for home in range(chips):
        sets = list(itertools.combinations(range(domains), reach))
        for reached in sets:
            pool = [e for e in range(n_experts) if expert_chip[e] // domain in reached]
            subsets = list(itertools.combinations(pool, k))
            for choice in subsets:
                hit = {expert_chip[e] for e in choice}
                for d in {c // domain for c in hit}:
                    # the chip that needs no scale-up copy: the sender at home, the receiver elsewhere
                    free = home if d == home // domain else d * domain + home % domain
                    up += len({c for c in hit if c // domain == d} - {free}) / len(subsets) / len(sets)
                    out += (d != home // domain) / len(subsets) / len(sets)
    per_transfer = 2 * tokens_per_chip * width / chips   # both ways, averaged over the chips
    return up * per_transfer, out * per_transfer


@pytest.mark.parametrize("n_experts, k, per_domain, domains, reach", [
    (16, 2, 2, 4, 4), (16, 3, 2, 4, 2), (12, 4, 3, 2, 2), (16, 4, 4, 2, 1), (8, 3, 8, 1, 1)])
def test_dedup_bytes_match_brute_force(n_experts, k, per_domain, domains, reach):
    model, per_chip, bpe = toy(n_experts, k), 3, 2
    chips = per_domain * domains
    up, out = brute_force_dedup(n_experts, k, chips, per_domain, reach, per_chip, model.d_model * bpe)
    t = moe.layer_times(model, "hgx-h100", per_chip * chips, domains=domains, chips=per_domain,
                        bytes_per_element=bpe, dedup=True, max_domains=reach)
    chip = hardware.get("H100-SXM")
    assert t.scale_up * chip.scale_up_bandwidth == pytest.approx(up, rel=1e-12)
    assert t.scale_out * chip.scale_out_bandwidth == pytest.approx(out, rel=1e-12)


def missed_by_all(pool, held, k=8):
    """Chance that none of k picks without replacement from ``pool`` experts is one of ``held``
    given ones: C(pool - held, k) / C(pool, k), typed as the product of k fractions."""
    return math.prod((pool - held - i) / (pool - i) for i in range(k))


def test_distinct_gpus_in_an_hgx_box_by_hand():
    # DeepSeek-V3 on 8 GPUs: 32 experts each, 8 distinct picks of 256. A GPU is missed with
    # probability C(224, 8)/C(256, 8); with replacement it would be (7/8)^8, the G(1 - (1 - 1/G)^k)
    # estimate of distinct GPUs (5.25), which drawing without replacement raises by under 1%.
    chips_hit, domains_hit = moe.reach(DS, 8)
    assert chips_hit == pytest.approx(8 * (1 - missed_by_all(256, 32)), rel=1e-12)
    assert chips_hit == pytest.approx(8 * (1 - (7 / 8) ** 8), rel=0.01)
    assert domains_hit == 1
    # so the deduplicated count sends a token to 7/8 of those GPUs, not to 7/8 of its 8 choices
    t = moe.layer_times(DS, "hgx-h100", 4096, dedup=True)
    assert t.scale_up == pytest.approx(2 * 512 * 7168 * 2 * chips_hit * 7 / 8 / 450e9, rel=1e-12)
    assert t.scale_up / moe.layer_times(DS, "hgx-h100", 4096).scale_up == pytest.approx(chips_hit / 8, rel=1e-12)


def test_two_racks_deduplicated_cross_about_once_per_token():
    # 128 experts in each rack: a token misses the other rack with probability C(128, 8)/C(256, 8),
    # so it crosses 1 - that ≈ 0.996 times, not k/2 = 4 times.
    t = moe.layer_times(DS, "gb200-nvl72", 2 * 4096, "fp8", domains=2, chips=64, bytes_per_element=1, dedup=True)
    crossings = 1 - missed_by_all(256, 128)
    assert t.scale_out == pytest.approx(2 * 64 * 7168 * crossings / 50e9, rel=1e-12)
    flat = moe.layer_times(DS, "gb200-nvl72", 2 * 4096, "fp8", domains=2, chips=64, bytes_per_element=1)
    assert flat.scale_out / t.scale_out == pytest.approx(4 / crossings, rel=1e-12)


def test_node_limited_routing_of_deepseek_v3_training():
    # DeepSeek-V3 report §3.2.2: EP64 over 8 nodes, each token sent to at most 4 nodes. In the model
    # the 4 nodes are drawn at random, 32 experts each, and the token's own node is one of them
    # with probability 4/8 (times its chance of being hit): expected nodes hit 4 (1 - C(96, 8)/C(128, 8)).
    chips_hit, nodes_hit = moe.reach(DS, 64, domain=8, max_domains=4)
    assert nodes_hit == pytest.approx(4 * (1 - missed_by_all(128, 32)), rel=1e-12)
    assert nodes_hit <= 4
    assert chips_hit == pytest.approx(4 * 8 * (1 - missed_by_all(128, 4)), rel=1e-12)
    t = moe.layer_times(DS, "hgx-h800", 64 * 256, "fp8", domains=8, dedup=True, max_domains=4)
    assert t.scale_out == pytest.approx(2 * 256 * 7168 * 2 * nodes_hit * 7 / 8 / 50e9, rel=1e-12)
    # unlimited routing reaches more of the 8 nodes: 8 (1 - C(224, 8)/C(256, 8))
    assert moe.reach(DS, 64, domain=8)[1] == pytest.approx(8 * (1 - missed_by_all(256, 32)), rel=1e-12)


def test_whether_the_all_to_all_hides_depends_on_the_batch_below_the_compute_bound_step():
    # DeepSeek-V3 in FP8 on 64 GPUs of a GB200 NVL72, BF16 activations. All-to-all per GPU:
    # 2 x tokens x 8 x 7,168 x 2 B x 63/64 over 900 GB/s; weight reads 4 routed and 1 shared expert
    # x 3 x 7,168 x 2,048 B over 8 TB/s = 27.5 µs; matmuls 2 x tokens x 9 x 3 x 7,168 x 2,048 FLOP
    # over 5 PFLOP/s.
    a2a = {t: 2 * t * 8 * 7168 * 2 * 63 / 64 / 900e9 for t in (64, 128)}   # 16.1 and 32.1 µs
    reads = (4 + 1) * 3 * 7168 * 2048 / 8e12
    for per_chip, hidden in ((64, True), (128, False)):
        t = moe.layer_times(DS, "gb200-nvl72", 64 * per_chip, "fp8", chips=64)
        assert t.communication == pytest.approx(a2a[per_chip]) and t.weights == pytest.approx(reads, rel=1e-3)
        assert t.hidden is hidden and t.compute < t.communication   # slower than the matmuls both times
    # The matmuls catch up with the weight reads at (g + n_sh) b_w (F/W) / (2 (k + n_sh)) tokens per
    # GPU: (4 + 1) x 1 x 625 / 18 = 173.6; there the reads end and the batch cancels.
    step = moe.compute_bound_step(DS, "gb200-nvl72", "fp8", chips=64)
    assert step / 64 == pytest.approx(5 * 625 / 18)
    at = moe.layer_times(DS, "gb200-nvl72", step, "fp8", chips=64)
    assert at.compute == pytest.approx(at.weights, rel=1e-6)


def test_measured_links_add_a_fixed_cost_and_slow_the_rate():
    # one token in the step: 2 x 8 x 7,168 x 2 B x 63/64 / 64 GPUs over 900 GB/s = 3.9 ns, bandwidth only
    nominal = moe.layer_times(DS, "gb200-nvl72", 1, "fp8", chips=64)
    measured = moe.layer_times(DS, "gb200-nvl72", 1, "fp8", chips=64, links="measured")
    assert nominal.communication == pytest.approx(2 * 8 * 7168 * 2 * 63 / 64 / 64 / 900e9)
    assert measured.fixed == pytest.approx(2 * moe.MEASURED.alpha)
    assert measured.communication == pytest.approx(2 * moe.MEASURED.alpha + nominal.communication / 0.8)
    alone = moe.layer_times(DS, "gb200-nvl72", 64, "fp8", chips=1, links="measured")
    assert alone.fixed == 0 and alone.communication == 0     # one chip sends nothing
    # a Links of one's own: no fixed cost, half the network card's rate doubles the crossing time
    half = moe.Links("half", 0.0, 1.0, 0.5)
    two = moe.layer_times(DS, "gb200-nvl72", 8192, "fp8", domains=2, chips=64, links=half)
    flat = moe.layer_times(DS, "gb200-nvl72", 8192, "fp8", domains=2, chips=64)
    assert two.scale_out == pytest.approx(2 * flat.scale_out) and two.scale_up == pytest.approx(flat.scale_up)


# --- placement and memory ----------------------------------------------------------------------------
def test_placement_bytes_from_the_shapes():
    m = models.get(DS)
    p = moe.placement(DS, "gb200-nvl72", batch=512, context=32768, dtype="fp8", chips=64,
                      kv_bytes_per_element=1)
    expert = 3 * 7168 * 2048  # one SwiGLU expert
    assert p.experts_per_chip == 4
    assert p.expert_bytes == pytest.approx(4 * 58 * expert)
    assert p.replicated_bytes == pytest.approx(m.total_params - 58 * 256 * expert)
    assert p.kv_bytes == pytest.approx(512 * 32768 * 61 * (512 + 64) / 64)
    assert p.fits


def test_max_batch_counts_whole_sequences_per_chip():
    # Data-parallel attention keeps each sequence's cache on one chip, so each of the 64 GPUs holds
    # floor(its free HBM / one sequence's KV) sequences. By hand, DeepSeek-V3 in FP8 on 64 GPUs of a
    # GB200 NVL72 (186 GB each, 90% usable): 4 routed experts of 3 x 7,168 x 2,048 in each of 58 MoE
    # layers plus everything that is not a routed expert, against 32,768 x 61 layers x (512 + 64) x
    # 2 B of MLA cache per sequence: 60.83 sequences per GPU, so 60 x 64 = 3,840, not the pooled 3,892.
    m, expert = models.get(DS), 3 * 7168 * 2048
    free = 186e9 * 0.9 - (4 * 58 * expert + m.total_params - 58 * 256 * expert)
    per_sequence = 32768 * 61 * (512 + 64) * 2
    p = moe.placement(DS, "gb200-nvl72", batch=1, context=32768, dtype="fp8", chips=64)
    assert p.max_batch == 64 * math.floor(free / per_sequence) == 3840
    assert math.floor(64 * free / per_sequence) == 3892      # what pooling the chips' HBM would claim
    # the busiest chip holds ceil(batch / chips) whole sequences
    assert moe.placement(DS, "gb200-nvl72", 65, 32768, "fp8", chips=64).kv_bytes == pytest.approx(2 * per_sequence)
    assert moe.placement(DS, "gb200-nvl72", 64, 32768, "fp8", chips=64).kv_bytes == pytest.approx(per_sequence)


def test_max_batch_is_the_fit_threshold():
    p = moe.placement(DS, "gb200-nvl72", batch=1, context=65536, dtype="fp8", chips=64)
    edge = p.max_batch
    assert moe.placement(DS, "gb200-nvl72", edge, 65536, dtype="fp8", chips=64).fits
    assert not moe.placement(DS, "gb200-nvl72", edge + 1, 65536, dtype="fp8", chips=64).fits


def test_deepseek_does_not_fit_an_hgx_h100():
    p = moe.placement(DS, "hgx-h100", batch=1, context=4096, dtype="fp8")
    assert not p.fits and p.max_batch == 0 and p.margin < 0


def test_placement_at_zero_context_has_no_kv():
    p = moe.placement(DS, "gb200-nvl72", batch=64, context=0, dtype="fp8")
    assert p.kv_bytes == 0 and p.max_batch == math.inf
    # a whole context given as a float is a context
    assert moe.placement(DS, "gb200-nvl72", 64, 4096.0, "fp8").kv_bytes == \
        moe.placement(DS, "gb200-nvl72", 64, 4096, "fp8").kv_bytes


# --- routing and load balance --------------------------------------------------------------------------
def test_simulation_conserves_token_choices():
    r = moe.simulate_routing(DS, 72, 1000, redundant=32, skew=1.0, trials=3)
    assert np.allclose(r.chip_loads.sum(axis=1), 1000 * 8)
    assert np.allclose(r.copy_loads.sum(axis=1), 1000 * 8)


@pytest.mark.parametrize("model, chips, tokens", [
    (DS, 64, 16),
    # 4 of 8 experts: choosing without replacement matters here (6 touched, not 5.25)
    (toy(8, 4), 4, 2)])
def test_experts_touched_matches_simulation(model, chips, tokens):
    r = moe.simulate_routing(model, chips, tokens, trials=400, seed=1)
    expected = moe.expected_experts_touched(model, tokens)
    stderr = r.experts_touched.std(ddof=1) / math.sqrt(len(r.experts_touched))
    assert abs(r.experts_touched.mean() - expected) < 4 * stderr


def test_experts_touched_limits():
    assert moe.expected_experts_touched(DS, 0) == 0
    assert moe.expected_experts_touched(DS, 1) == pytest.approx(8)
    assert moe.expected_experts_touched(DS, 10**6) == pytest.approx(256)


@pytest.mark.parametrize("count, published", [
    (1, 0.0), (2, 1 / math.sqrt(math.pi)), (3, 3 / (2 * math.sqrt(math.pi))),
    # Harter (1961), Expected values of normal order statistics, Biometrika 48, Table 1
    (5, 1.16296), (10, 1.53875), (100, 2.50759)])
def test_expected_max_of_normals(count, published):
    assert moe.expected_max_standard_normal(count) == pytest.approx(published, abs=2e-5)


@pytest.mark.parametrize("tokens", [2048, 8192])
def test_imbalance_estimate_matches_simulation(tokens):
    sim = moe.simulate_routing(DS, 64, tokens, trials=8, seed=tokens)
    estimate = moe.imbalance_estimate(DS, 64, tokens)
    # the normal approximation, not the simulation's model: they must agree on the excess over 1
    assert sim.imbalance - 1 == pytest.approx(estimate - 1, rel=0.15)


def test_imbalance_falls_as_one_over_root_tokens():
    few, many = (moe.simulate_routing(DS, 32, t, trials=8, seed=7).imbalance - 1 for t in (1024, 8192))
    assert few / many == pytest.approx(math.sqrt(8), rel=0.25)


def test_redundant_experts_help_skewed_routing():
    plain = moe.simulate_routing(DS, 64, 4096, skew=1.0, trials=4).imbalance
    helped = moe.simulate_routing(DS, 64, 4096, redundant=64, skew=1.0, trials=4).imbalance
    assert helped < plain - 0.2


def test_drift_zero_is_the_calibrated_popularity_and_drift_undoes_the_balancer():
    same = moe.simulate_routing(DS, 64, 2048, redundant=32, skew=0.5, trials=3, seed=5)
    again = moe.simulate_routing(DS, 64, 2048, redundant=32, skew=0.5, trials=3, seed=5, drift=0.0)
    assert np.array_equal(same.chip_loads, again.chip_loads)
    moved = moe.simulate_routing(DS, 64, 2048, redundant=32, skew=0.5, trials=3, seed=5, drift=0.5)
    assert np.allclose(moved.chip_loads.sum(axis=1), 2048 * 8)
    assert moved.imbalance > same.imbalance + 0.3   # copies placed for the old hot experts


def test_drifted_popularity_is_a_permutation_of_a_share():
    rng = np.random.default_rng(0)
    pop = np.log(moe._popularity(256, 0.5))
    out = moe._drifted(rng, pop, 0.25)
    assert sorted(out) == sorted(pop) and np.count_nonzero(out != pop) <= 64


def binomial_overflow(tokens, p, capacity):
    """E[(X - capacity)^+] for X ~ Binomial(tokens, p), summed term by term (log-space pmf)."""
    x = np.arange(math.floor(capacity) + 1, tokens + 1)
    log_pmf = (np.array([math.lgamma(tokens + 1) - math.lgamma(i + 1) - math.lgamma(tokens - i + 1) for i in x])
               + x * math.log(p) + (tokens - x) * math.log1p(-p))
    return float(np.sum((x - capacity) * np.exp(log_pmf)))


@pytest.mark.parametrize("tokens, gamma", [(512, 1.0), (512, 1.25), (2048, 1.25), (4096, 1.1)])
def test_dropped_fraction_simulation_against_the_exact_binomial(tokens, gamma):
    # One expert's load is Binomial(tokens, k/n) exactly, and the expected overflow is linear: the
    # simulation must agree with the binomial sum, which is typed here, not taken from chalk.
    p = 8 / 256
    exact = binomial_overflow(tokens, p, gamma * tokens * p) / (tokens * p)
    sim = moe.simulate_routing(DS, 64, tokens, trials=40, seed=tokens)
    per_trial = [moe.Routing(sim.chip_loads[i:i + 1], sim.copy_loads[i:i + 1], sim.experts_touched[i:i + 1],
                             sim.copy_chip).dropped_fraction(gamma) for i in range(40)]
    stderr = np.std(per_trial, ddof=1) / math.sqrt(40)
    assert abs(np.mean(per_trial) - exact) < 4 * stderr + 1e-12


def test_normal_approximation_of_the_drops_and_where_it_reads_low():
    p = 8 / 256
    for tokens, gamma in [(512, 1.0), (2048, 1.0), (16384, 1.05)]:   # drops of a percent or more
        exact = binomial_overflow(tokens, p, gamma * tokens * p) / (tokens * p)
        assert moe.expected_dropped_fraction(DS, tokens, gamma) == pytest.approx(exact, rel=0.1)
    # far in the tail the binomial's right skew puts more mass there than the normal does
    exact = binomial_overflow(4096, p, 1.25 * 4096 * p) / (4096 * p)
    assert moe.expected_dropped_fraction(DS, 4096, 1.25) < 0.8 * exact


def test_a_capacity_factor_caps_the_imbalance_at_the_price_of_drops():
    r = moe.simulate_routing(DS, 64, 256, trials=8)
    assert r.imbalance > 1.3
    for gamma in (1.1, 1.25):
        assert r.capped_imbalance(gamma) <= gamma + 1e-12 and r.capped_imbalance(gamma) < r.imbalance
        assert r.dropped_fraction(gamma) > 0
    assert r.capped_imbalance(100.0) == pytest.approx(r.imbalance)


def test_capacity_factor_drops_less_as_it_grows():
    r = moe.simulate_routing(DS, 64, 512, trials=4)
    drops = [r.dropped_fraction(cf) for cf in (1.0, 1.25, 2.0, 10.0)]
    assert drops == sorted(drops, reverse=True) and drops[0] > 0 and drops[-1] == 0


# --- errors: every public function names the bad parameter -------------------------------------------
BAD = [
    (lambda: moe.experts_per_chip(DS, 0), "chips"),
    (lambda: moe.experts_per_chip(DS, 2.5), "chips"),
    (lambda: moe.experts_per_chip(DS, 64, redundant=-1), "redundant"),
    (lambda: moe.experts_per_chip("llama-3-8b", 8), "model"),
    (lambda: moe.experts_per_chip("gpt-5", 8), "model"),
    (lambda: moe.expert_params("llama-3-8b"), "model"),
    (lambda: moe.routed_expert_params("nope"), "model"),
    (lambda: moe.alltoall_bytes(DS, 0, 8), "tokens"),
    (lambda: moe.alltoall_bytes(DS, 10, 0), "chips"),
    (lambda: moe.alltoall_bytes(DS, 10, 8, bytes_per_element=0), "bytes_per_element"),
    (lambda: moe.alltoall_time(DS, "hgx-h100", 10, link="nvlink"), "link"),
    (lambda: moe.alltoall_time(DS, "hgx-h999", 10), "system"),
    (lambda: moe.alltoall_time(DS, "hgx-h100", -1), "tokens"),
    (lambda: moe.alltoall_time(DS, "hgx-h100", 10, bytes_per_element=-2), "bytes_per_element"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, domains=0), "domains"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, dtype="fp7"), "dtype"),
    (lambda: moe.layer_times(DS, "hgx-h100", 0), "tokens"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, redundant=-1), "redundant"),
    (lambda: moe.placement(DS, "gb200-nvl72", -1, 100), "batch"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, -100), "context"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100, headroom=1.5), "headroom"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100, chips=0), "chips"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100, kv_bytes_per_element=0), "kv_bytes_per_element"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100, dtype="int3"), "dtype"),
    (lambda: moe.max_total_params("gb200-nvl72", headroom=2), "headroom"),
    (lambda: moe.max_total_params("gb200-nvl72", dtype="fp2"), "dtype"),
    (lambda: moe.expected_experts_touched(DS, -1), "tokens"),
    (lambda: moe.expected_max_standard_normal(0), "count"),
    (lambda: moe.imbalance_estimate(DS, 3, 100), "chips"),
    (lambda: moe.imbalance_estimate(DS, 1, 100), "chips"),
    (lambda: moe.imbalance_estimate(DS, 64, 0), "tokens"),
    (lambda: moe.simulate_routing(DS, 64, 0), "tokens"),
    (lambda: moe.simulate_routing(DS, 0, 10), "chips"),
    (lambda: moe.simulate_routing(DS, 64, 10, trials=0), "trials"),
    (lambda: moe.simulate_routing(DS, 64, 10, skew=-1), "skew"),
    (lambda: moe.simulate_routing(DS, 64, 10, redundant=-2), "redundant"),
    (lambda: moe.simulate_routing(DS, 64, 10, trials=1).dropped_fraction(0), "capacity_factor"),
    (lambda: moe.simulate_routing(DS, 64, 10, trials=1).capped_imbalance(-1), "capacity_factor"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100, chips=73), "chips"),
    (lambda: moe.layer_times(DS, "gb200-nvl72", 10, chips=80), "chips"),
    (lambda: moe.layer_times(DS, "gb200-nvl72", 10, chips=0), "chips"),
    (lambda: moe.expected_dropped_fraction(DS, 100, 0.5), "capacity_factor"),
    (lambda: moe.expected_dropped_fraction(DS, 0, 1.25), "tokens"),
    (lambda: moe.expected_dropped_fraction("llama-3-70b", 100, 1.25), "model"),
    (lambda: moe.lane_rate("tpu-v5p-cube"), "system"),
    (lambda: moe.torus_share("tpu-v9"), "system"),
    (lambda: moe.torus_share("tpu-v7-9216"), "system"),
    (lambda: moe.domain_growth()[0].max_total_params(headroom=-0.1), "headroom"),
    (lambda: moe.domain_growth()[0].max_total_params(dtype="fp3"), "dtype"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, links="fast"), "links"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, dedup="yes"), "dedup"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, max_domains=2), "max_domains"),
    (lambda: moe.layer_times(DS, "hgx-h100", 10, dedup=True, max_domains=0), "max_domains"),
    (lambda: moe.reach(DS, 64, domain=7), "domain"),
    (lambda: moe.reach(DS, 64, domain=8, max_domains=1.5), "max_domains"),
    (lambda: moe.deepep_fit(min_ep=3), "min_ep"),
    (lambda: moe.simulate_routing(DS, 64, 10, drift=1.5), "drift"),
    (lambda: moe.compute_bound_step(DS, "gb200-nvl72", chips=100), "chips"),
    (lambda: moe.alltoall_time(None, "hgx-h100", 10), "model"),
    (lambda: moe.experts_per_chip(42, 8), "model"),
    (lambda: moe.alltoall_time(DS, None, 10), "system"),
    (lambda: moe.layer_times(DS, 8, 10), "system"),
    (lambda: moe.is_slice(None), "system"),
    (lambda: moe.alltoall_bytes(DS, "100", 8), "tokens"),
    (lambda: moe.alltoall_time(DS, "hgx-h100", True), "tokens"),
    (lambda: moe.expected_experts_touched(DS, "16"), "tokens"),
    (lambda: moe.placement(DS, "gb200-nvl72", "8", 100), "batch"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, 100.5), "context"),
    (lambda: moe.placement(DS, "gb200-nvl72", 1, "4096"), "context"),
]


@pytest.mark.parametrize("call, param", BAD, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD)])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError) as err:
        call()
    assert param in str(err.value)


def test_dense_model_error_lists_the_moe_models():
    with pytest.raises(ChalkError, match="deepseek-v3"):
        moe.experts_per_chip("llama-3-8b", 8)


def test_indivisible_chips_error_lists_valid_counts():
    with pytest.raises(ChalkError, match="64"):
        moe.imbalance_estimate(DS, 72, 100)


# --- tori: the closed form against routing every message ------------------------------------------------
def torus_max_link_load(shape):
    """Route one unit from every chip to every other chip of a torus with wraparound, dimension by
    dimension along the shorter way (ties split half and half); the most any one directed link carries."""
    loads = {}
    chips = list(itertools.product(*[range(n) for n in shape]))
    for src in chips:
        for dst in chips:
            paths = [(list(src), 1.0)]
            for dim, n in enumerate(shape):
                forward = (dst[dim] - src[dim]) % n
                ways = [(1, forward)] if forward < n - forward else [(-1, n - forward)] if forward > n - forward \
                    else [(1, forward), (-1, forward)]
                grown = []
                for at, weight in paths:
                    for step, hops in ways:
                        here = list(at)
                        for _ in range(hops):
                            key = (tuple(here), dim, step)
                            loads[key] = loads.get(key, 0.0) + weight / len(ways)
                            here[dim] = (here[dim] + step) % n
                        grown.append((here, weight / len(ways)))
                paths = grown
    return max(loads.values())


@pytest.mark.parametrize("shape", [(4, 4, 4), (8, 8), (4, 6), (16,)])
def test_torus_all_to_all_share_matches_routing_every_message(shape):
    # A chip sends R bytes/s spread over all chips; a link of b bytes/s carries R/N times its load.
    # The chip's injection is 2 b per dimension, so the usable share is N / (load x 2 x dims).
    chips, dims = math.prod(shape), len(shape)
    share = chips / (torus_max_link_load(shape) * 2 * dims)
    assert float(moe._torus_share(dims, max(shape))) == pytest.approx(share, rel=1e-12)


def test_a_slice_of_a_larger_domain_is_left_out_of_the_boundary_ratios():
    # Google's v5p page: a pod of 8,960 chips on ICI; a 4 x 4 x 4 cube of 64 leaves over ICI through
    # optical switches, not over its 50 Gb/s of data-centre network. NVL72 and an 8-GPU box are whole.
    assert moe.is_slice("tpu-v5p-cube") and not moe.is_slice("gb200-nvl72") and not moe.is_slice("hgx-h100")
    ratios = moe.boundary_ratios()
    assert "tpu-v5p-cube" not in ratios and len(ratios) == len(systems.catalog_systems()) - 1
    # H800: 400 GB/s of NVLink both ways against one 400 Gb/s NIC; v5e pod: 400 GB/s of ICI both ways
    # against 2 x 100 Gb/s per host of 8 chips
    assert min(ratios.values()) == pytest.approx(200e9 / 50e9)
    assert max(ratios.values()) == pytest.approx(200e9 / (200e9 / 8 / 8))


def test_a_switch_gives_the_whole_link_and_a_torus_a_share():
    assert moe.torus_share("gb200-nvl72") == 1.0
    assert moe.torus_share("tpu-v5p-cube") == pytest.approx(4 / (3 * 4))


# --- domains and deployments ------------------------------------------------------------------------------
def test_domain_growth_counts_packages_dies_and_memory():
    by_name = {d.name: d for d in moe.domain_growth()}
    nvl72 = next(d for name, d in by_name.items() if name.startswith("GB200"))
    assert (nvl72.packages, nvl72.dies) == (72, 144)
    assert nvl72.hbm == pytest.approx(72 * 186e9)
    assert nvl72.max_total_params("fp4", headroom=0) == pytest.approx(72 * 186e9 / 0.5)
    ultra = by_name["Rubin Ultra NVL576 (as announced)"]
    assert (ultra.packages, ultra.dies, ultra.status) == (144, 576, "announced")
    assert ultra.max_total_params("fp8") == pytest.approx(144 * 1e12 * 0.9)


def test_every_deployment_reproduces_its_printed_experts_per_gpu():
    rows = moe.deployments()
    assert len(rows) >= 4
    for d in rows:
        assert d.experts_per_chip == d.printed_experts_per_chip, d.name
        assert d.chips == 8 * d.nodes, d.name   # H800 nodes of 8 GPUs


def test_lane_rate_is_the_link_rate_over_its_pairs():
    # NVLink 4: 25 GB/s per direction per link over 2 pairs; NVLink 5 twice that.
    assert moe.lane_rate("hgx-h100") == pytest.approx(25e9 * 8 / 2)
    assert moe.lane_rate("gb200-nvl72") == pytest.approx(50e9 * 8 / 2)


# --- properties ---------------------------------------------------------------------------------------
@given(st.integers(1, 512), st.integers(0, 300))
def test_experts_per_chip_is_the_tightest_even_spread(chips, redundant):
    g = moe.experts_per_chip(DS, chips, redundant)
    assert g * chips >= 256 + redundant > (g - 1) * chips


@given(st.integers(1, 10**6), st.integers(1, 10**6), st.integers(1, 512))
def test_alltoall_bytes_linear_in_tokens(t1, t2, chips):
    a, b = moe.alltoall_bytes(DS, t1, chips), moe.alltoall_bytes(DS, t2, chips)
    assert a * t2 == pytest.approx(b * t1, rel=1e-12)


@given(st.integers(1, 8), st.integers(1, 10**5))
def test_split_over_domains_adds_up(domains, tokens):
    t = moe.layer_times(DS, "gb200-nvl72", tokens, domains=domains)
    chip = hardware.get("GB200")
    total = t.scale_up * chip.scale_up_bandwidth + t.scale_out * chip.scale_out_bandwidth
    assert total == pytest.approx(moe.alltoall_bytes(DS, tokens, 72 * domains), rel=1e-12)


@given(st.integers(1, 72), st.integers(1, 8), st.integers(1, 8))
def test_dedup_never_sends_more_across_domains(chips, domains, limit):
    flat = moe.layer_times(DS, "gb200-nvl72", 10_000, domains=domains, chips=chips)
    dedup = moe.layer_times(DS, "gb200-nvl72", 10_000, domains=domains, chips=chips, dedup=True,
                            max_domains=limit)
    assert dedup.scale_out <= flat.scale_out * (1 + 1e-12)


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_experts_touched_grow_with_tokens_and_stay_bounded(t1, t2):
    low, high = sorted((t1, t2))
    a, b = moe.expected_experts_touched(DS, low), moe.expected_experts_touched(DS, high)
    assert 8 <= a <= b * (1 + 1e-12) and b <= 256 * (1 + 1e-12)
