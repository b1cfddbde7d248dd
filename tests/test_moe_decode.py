"""chalk.moe: what a second domain costs a decode step, and the ratio above which the network sets
the pace of the deduplicated all-to-all, each checked by hand from published figures."""
import math

import pytest

from chalk import ChalkError, moe

DS = "deepseek-v3"
# DeepSeek-V3 (arXiv 2412.19437, Table/config): d_model 7168, expert width 2048 (SwiGLU, 3 matrices),
# 256 routed experts, 8 per token, 1 shared, 61 layers of which the first 3 are dense.
D_MODEL, D_FF, N_EXP, K, N_SH, MOE_LAYERS = 7168, 2048, 256, 8, 1, 61 - 3
# GB200 NVL72 (NVIDIA's product page): NVLink 5 at 1.8 TB/s both ways, so 900 GB/s each way; one
# 400 Gb/s ConnectX-7 per GPU, 50 GB/s each way; 8 TB/s of HBM per GPU.
NVLINK, NIC, HBM = 900e9, 50e9, 8e12
EXPERT_BYTES_FP8 = 3 * D_MODEL * D_FF  # one expert, one byte per weight


def _by_hand(tokens_per_chip, racks):
    """(all-to-all, expert weight reads) of one layer and one micro-batch, in seconds, on 64 GPUs per
    rack, BF16 activations, every choice sent on its own, nominal rates."""
    chips = 64 * racks
    sent = 2 * tokens_per_chip * K * D_MODEL * 2            # dispatch and combine, BF16
    if racks == 1:
        comm = sent * (1 - 1 / chips) / NVLINK
    else:                                                   # half of the choices cross: the NIC is slower
        comm = max(sent * (1 / 2 - 1 / chips) / NVLINK, sent * (1 / 2) / NIC)
    reads = (N_EXP // chips + N_SH) * EXPERT_BYTES_FP8 / HBM
    return comm, reads


def test_a_second_rack_in_decode_by_hand():
    # 64 tokens per GPU in each of two micro-batches: inside one rack the all-to-all (16 us) hides
    # behind the other micro-batch's weight reads (27.5 us); across two, 147 us against 16.5 us of
    # reads, and it sets the layer.
    comm1, reads1 = _by_hand(64, 1)
    comm2, reads2 = _by_hand(64, 2)
    assert (1e6 * comm1, 1e6 * reads1, 1e6 * comm2, 1e6 * reads2) == pytest.approx((16.06, 27.53, 146.8, 16.52), abs=0.01)
    one = moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", chips=64)
    two = moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", domains=2, chips=64)
    assert one == pytest.approx(MOE_LAYERS * 2 * reads1, rel=1e-9)
    assert two == pytest.approx(MOE_LAYERS * 2 * comm2, rel=1e-9)
    assert 1e3 * (two - one) == pytest.approx(13.84, abs=0.01)


def test_one_micro_batch_takes_the_all_to_all_and_the_experts_in_series():
    comm, reads = _by_hand(32, 1)
    t = moe.decode_moe_time(DS, "gb200-nvl72", 32, "fp8", chips=64, micro_batches=1)
    assert t == pytest.approx(MOE_LAYERS * (comm + reads), rel=1e-9)


def test_attention_covers_the_all_to_all_too():
    # 40 us of attention per layer and micro-batch: on one rack it lengthens every layer (the
    # all-to-all was hidden already); on two it hides part of the all-to-all, so the tax shrinks.
    comm1, reads1 = _by_hand(64, 1)
    comm2, reads2 = _by_hand(64, 2)
    att = 40e-6
    kw = dict(chips=64, attention=att)
    one = moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", **kw)
    two = moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", domains=2, **kw)
    assert one == pytest.approx(MOE_LAYERS * 2 * (reads1 + att), rel=1e-9)
    assert two == pytest.approx(MOE_LAYERS * 2 * max(comm2, reads2 + att), rel=1e-9)
    assert two - one < MOE_LAYERS * 2 * (comm2 - reads1)


def test_measured_links_make_the_second_rack_dearer():
    nominal = [moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", domains=d, chips=64) for d in (1, 2)]
    measured = [moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", domains=d, chips=64, links="measured")
                for d in (1, 2)]
    assert measured[1] - measured[0] > nominal[1] - nominal[0] > 0


def test_crossover_ratio_by_hand():
    # Two racks of 64 GPUs, 2 experts each: a token's 8 picks come from 256 experts. It reaches a
    # given GPU unless all 8 miss its 2 experts, and a given rack unless all 8 miss its 128.
    chips_reached = 128 * (1 - math.comb(254, 8) / math.comb(256, 8))
    racks_reached = 2 * (1 - math.comb(128, 8) / math.comb(256, 8))
    # scale-up copies: all GPUs reached but one per rack; crossings: racks reached but the own one
    by_hand = chips_reached * (1 - 1 / 64) / (racks_reached * (1 - 64 / 128))
    assert moe.crossover_ratio(DS, 128, 64) == pytest.approx(by_hand, rel=1e-12)
    assert 7.5 < by_hand < K      # about the GPUs a token reaches per rack it crosses to


def test_at_the_crossover_both_links_take_as_long():
    t = moe.layer_times(DS, "gb200-nvl72", 128 * 64, "fp8", domains=2, chips=64, dedup=True)
    rho = 900e9 / 50e9
    assert t.scale_up / t.scale_out * rho == pytest.approx(moe.crossover_ratio(DS, 128, 64), rel=1e-12)


def test_node_limited_routing_lowers_the_crossover_less_than_more_domains_do():
    assert moe.crossover_ratio(DS, 64, 8, max_domains=4) < moe.crossover_ratio(DS, 16, 8) < moe.crossover_ratio(DS, 128, 64)


@pytest.mark.parametrize("call, param", [
    (lambda: moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", micro_batches=0), "micro_batches"),
    (lambda: moe.decode_moe_time(DS, "gb200-nvl72", 0, "fp8"), "tokens_per_chip"),
    (lambda: moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", domains=0), "domains"),
    (lambda: moe.decode_moe_time(DS, "gb200-nvl72", 64, "fp8", attention=-1e-6), "attention"),
    (lambda: moe.crossover_ratio(DS, 64, 64), "domain"),
    (lambda: moe.crossover_ratio(DS, 64, 24), "domain"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError, match=param):
        call()
