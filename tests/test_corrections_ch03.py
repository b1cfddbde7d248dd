"""Chapter 3's correction boxes and cards quote the chapter's own computation (pipeline.rack_test):
the review found the box at E -> infinity (0.89) beside the table's E = 72 (0.88), and TPU pods
counted in the box but left out of the table."""
import re

from chalk import pipeline, systems
from chalk.teaching import corrections
from chalk.teaching.cards import ch03_pipelining as cards


def test_one_layer_box_quotes_the_tables_rows():
    text = corrections.get("one-layer-stages").corrected()
    same = {rb.system: rb for rb in pipeline.rack_test("deepseek-v3")}
    fp8 = {rb.system: rb for rb in pipeline.rack_test("deepseek-v3", **pipeline.DEEPEP_FORMATS)}
    nvl = same["gb200-nvl72"]
    # by hand, E = 72 and rho = 900 / 50: 2 x 8 x (71/72) / 18 = 0.877, not the E -> infinity 0.889
    assert f"{2 * 8 * 71 / 72 / 18:.2f}" == f"{nvl.ratio_one_layer:.2f}" == "0.88"
    assert " 0.88," in text and "0.89" not in text
    assert f"{fp8['gb200-nvl72'].ratio_one_layer:.2f}" == "0.66" and "0.66" in text
    # the count covers the switched systems the table shows, and no TPU pod
    assert f"catalog's {len(same)} switched" in text and "tpu" not in text
    failing = [n for n, rb in same.items() if rb.min_layers > 1]
    assert f"{len(failing)} need more than one layer" in text
    assert all(f"`{n}`" in text for n in failing)
    assert f"{sum(rb.min_layers > 1 for rb in fp8.values())} with FP8 dispatch" in text


def test_one_layer_box_weighs_the_crossing_against_compute_by_hand():
    # the lecture's conclusion survives: one DeepSeek-V3 layer (37.55e9 active / 61 layers) trains at
    # 6 x 6.16e8 FLOPs per token, 1.85 us at 40% of a GB200's 5 PFLOP/s FP8; its crossing, activation
    # forward and gradient back in BF16, is 2 x 7,168 x 2 B over 50 GB/s = 0.573 us: 3.2 times
    text = corrections.get("one-layer-stages").corrected()
    assert f"{(6 * 37.55e9 / 61 / (0.4 * 5e15)) / (2 * 7168 * 2 / 50e9):.1f}" == "3.2"
    assert "compute, 3.2 times as long" in text
    assert cards.VALUES["pp_margin_fp8"]() == "3.2"


def test_card_quotes_the_same_row_as_the_box():
    nvl = next(rb for rb in pipeline.rack_test("deepseek-v3") if rb.system == "gb200-nvl72")
    assert cards.VALUES["pp_nvl72_one_layer"]() == f"{nvl.ratio_one_layer:.2f}"
    assert cards.VALUES["pp_nvl72_min_layers"]() == f"{nvl.min_layers}"
    assert nvl.expert_parallel == systems.get("gb200-nvl72").count


def test_batch_box_says_the_per_rack_batch_is_unchanged_and_users_grow():
    text = corrections.get("pipeline-batch-neutral").corrected()
    assert re.search(r"batch each rack runs, yes", text)
    assert "concurrent users one model instance needs" in text
    # one batch in 4 stages idles 3/4 (the lecture's own picture); decode at hops of t_F / 2 needs
    # ceil(4 x 1.5) = 6 in flight
    assert "75%" in text and " 6 at hops of 0.5" in text


def test_decode_bubble_box_against_the_round_trip_by_hand():
    text = corrections.get("decode-bubble").corrected()
    # prefill stream: no idle in steady state. Decode, P = 4, t_F = 1: a round trip lasts 4 (1 + hop);
    # 2 micro-batches work 2 of it, idle 1 - 2/4 = 50%; 4 with hops of 0.5 work 4 of 6, idle 33%;
    # busy from ceil(4 x 1.5) = 6 in flight
    assert "(0% idle" in text and "idles 50%" in text and "33% at hops of 0.5" in text and ", 6 here" in text
    assert pipeline.decode_idle_fraction(4, 2) == 0.5 and pipeline.decode_microbatches_needed(4, 0.5) == 6
