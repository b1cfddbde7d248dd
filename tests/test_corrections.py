"""The corrections registry: one entry per place the lecture notes list (§10), numbers computed
from the catalog and checked here against published figures, boxes and page drawn from it."""
import re

import nbformat
import pytest

from chalk.errors import ChalkError
from chalk.teaching import chapters, corrections
from conftest import ROOT

NOTES_LIST = {"dropped-constants", "deepseek-sparsity", "ratio-not-stable", "drain-not-floor",
              "sparse-attention", "equal-cost", "rl-coefficients", "overtraining-guess", "gemini-step",
              "output-input-ratio", "flash-disk-drain", "quadratic-attention", "speculative-decoding",
              "hop-latency", "scale-up-out", "transcript-slips"}
"""The sixteen places lecture-notes section 10 lists; chapters add the slips they find beyond it."""
"""Places the lecture notes (§10) list where the lecture is loose."""
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(text)]


def statement(correction_id: str) -> str:
    return corrections.get(correction_id).corrected()


def test_every_place_the_notes_list_is_registered_once():
    ids = [c.id for c in corrections.REGISTRY]
    assert len(ids) == len(set(ids)) and NOTES_LIST <= set(ids), sorted(NOTES_LIST - set(ids))
    assert all(re.fullmatch(r"[a-z][a-z0-9-]*", i) for i in ids)


def test_every_entry_names_a_planned_chapter_and_has_a_claim():
    for c in corrections.REGISTRY:
        assert c.chapter in chapters.PLANNED, c.id
        assert c.claim.strip() and c.title.strip(), c.id


def test_chapter_one_boxes_are_computed_not_pending():
    ids = {c.id for c in corrections.for_chapter("01_batching")}
    assert {"dropped-constants", "deepseek-sparsity", "ratio-not-stable", "drain-not-floor",
            "speculative-decoding", "attention-in-decode", "weights-every-batch", "slow-mode",
            "gemini-scale"} <= ids
    assert not any(corrections.get(i).pending for i in ids)


def test_pending_entries_say_so_and_invent_no_number():
    pending = [c for c in corrections.REGISTRY if c.pending]
    for c in pending:
        text = c.corrected()
        assert text.startswith("*Chapter to come.*"), c.id
        assert not re.search(r"\d", text), f"{c.id}: a pending entry quotes a number: {text}"
        assert not chapters.Chapter(c.chapter).written or c.chapter == "01_batching", c.id


# --- the numbers, against published figures ---------------------------------------------------
def test_deepseek_sparsity_by_parameters_and_by_experts():
    text = statement("deepseek-sparsity")
    # DeepSeek-V3's report: 671 B total, 37 B active; 8 of 256 routed experts.
    assert any(n == pytest.approx(671 / 37, rel=0.02) for n in numbers(text))
    assert 256 / 8 in numbers(text)


def test_hardware_ratio_range_includes_a100_and_h100():
    a100, h100 = re.search(r"is (\d+) on an A100 and (\d+) on an H100", statement("ratio-not-stable")).groups()
    # Data sheets: A100 312 TFLOP/s at 2.039 TB/s, H100 SXM 989.4 TFLOP/s at 3.35 TB/s (BF16 dense).
    assert float(a100) == pytest.approx(312 / 2.039, rel=0.01)
    assert float(h100) == pytest.approx(989.4 / 3.35, rel=0.01)


def test_latency_floor_is_the_weight_read_on_a_rack():
    text = statement("drain-not-floor")
    # 671e9 one-byte FP8 weights read at 72 x 8 TB/s.
    floor_ms = 671e9 / (72 * 8e12) * 1e3
    assert any(n == pytest.approx(floor_ms, rel=0.03) for n in numbers(text))


def test_lone_token_floor_is_the_alltoall_latency():
    values = numbers(statement("drain-not-floor"))
    # A lone token reads its 37.55e9 active parameters (chalk's count from DeepSeek-V3's config; the
    # report says 37 B) at 72 x 8 TB/s: 0.0652 ms.
    lone_ms = 37.55e9 / (72 * 8e12) * 1e3
    assert any(n == pytest.approx(lone_ms, rel=0.01) for n in values)
    # DeepEP's published low-latency timings at EP 64, 128 and 256 (docs/legacy.md, 128 tokens of
    # hidden 7,168, top 8): dispatches of 128 x 8 x (7,168 + 4 x 7,168/128) = 7.569e6 B in 173, 192,
    # 194 us (mean 186.33), combines of 128 x 8 x 7,168 x 2 = 14.680e6 B in 314, 369, 360 us (mean
    # 347.67). The line through both means costs 186.33 - 7.569e6 x (347.67 - 186.33) / 7.111e6
    # = 14.59 us per call; 58 MoE layers of one dispatch and one combine: 1.693 ms a step,
    # 26 times the lone token's read.
    calls_ms = 58 * 2 * (186.33 - 7.569e6 * (347.67 - 186.33) / (14.680e6 - 7.569e6)) * 1e-3
    assert any(n == pytest.approx(calls_ms, rel=0.03) for n in values)
    assert any(n == pytest.approx(calls_ms / lone_ms, abs=0.5) for n in values)


# DeepSeek-V3 in BF16 on an H100 SXM, by hand. The chip: 989.4 TFLOP/s dense BF16 and 3.35 TB/s
# (NVIDIA's H100 datasheet), r = 295.34; the H200: the same FLOP/s at 4.8 TB/s, r = 206.1. The model,
# from its published config.json (61 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64): a
# BF16 cache of 61 x (512 + 64) x 2 = 70,272 B per token; absorbed MLA does 2 x 128 x (2 x 512 + 64)
# FLOPs per layer per cached token, 61 x 278,528 = 16.99e6; 671.03e9 parameters, 37.55e9 active
# (chalk's counts from that config; the report rounds them to 671 B and 37 B).
H100_R, H200_R, V3_BKV, V3_FATT, V3_NTOT, V3_NACT = 989.4 / 3.35, 989.4 / 4.8, 70_272, 61 * 278_528, 671.03e9, 37.55e9


def test_attention_in_decode_old_and_new_balance_context_rounded_as_the_chapter():
    text = statement("attention-in-decode")
    old = 2 * V3_NACT / (H100_R * V3_BKV)              # 3,619 tokens, attention FLOPs left out
    new = 2 * V3_NACT / (H100_R * V3_BKV - V3_FATT)    # 19,952 tokens with them
    assert old == pytest.approx(3_619, rel=1e-3) and new == pytest.approx(19_952, rel=2e-3)
    # The chapter calls the figure fragile and prints three significant digits: "20,000", "3,620".
    for value in (new, old):
        assert f"{float(f'{value:.3g}'):,.0f}" in text
    assert not {3619, 19952} & set(numbers(text)), "printed to more digits than the model supports"
    # On an H200, r b_kv = 206.1 x 70,272 = 14.5e6 < 16.99e6: no L* at all.
    assert H200_R * V3_BKV < V3_FATT and "no $L^\\star$" in text


def test_weights_every_batch_shares_and_the_b1_cost_ratio():
    values = numbers(statement("weights-every-batch"))
    # 1 - (1 - 8/256)^B of the routed experts: 3.1% at 1, 63.8% at 32, 95.8% at 100.
    for batch in (1, 32, 100):
        assert round(100 * (1 - (1 - 8 / 256) ** batch)) in values
    # A lone token costs r b_w / 2 = 295 times its compute-bound cost in BF16, not B* = r b_w s / 2
    # = 295.34 x 671.03 / 37.55 = 5,278.
    assert round(H100_R) in values
    assert any(n == pytest.approx(H100_R * V3_NTOT / V3_NACT, rel=1e-3) for n in values)
    # In weight reads only: on 72 GB200s (5 PFLOP/s dense FP8, 8 TB/s each) a lone token's 37.55e9
    # one-byte weights take 0.0652 ms and its matmuls 2 x 37.55e9 / 3.6e17 s = 0.2086 us, while its
    # 58 MoE layers' dispatch and combine calls take 1.693 ms (test_lone_token_floor_is_the_alltoall_latency):
    # (0.0652 + 1.693) / 0.0002086 = 8,430 times its compute-bound cost, printed to two digits.
    lone_ms, matmul_ms = 37.55e9 / (72 * 8e12) * 1e3, 2 * 37.55e9 / (72 * 5e15) * 1e3
    calls_ms = 58 * 2 * (186.33 - 7.569e6 * (347.67 - 186.33) / (14.680e6 - 7.569e6)) * 1e-3
    assert (lone_ms + calls_ms) / matmul_ms == pytest.approx(8_430, rel=0.01)
    assert 8_400 in values


def test_slow_mode_lists_the_published_discounts():
    text = statement("slow-mode")
    # Anthropic's and OpenAI's batch APIs, and DeepSeek-V3's off-peak window, each 50% off
    # (tests/test_slow_tiers.py checks the catalog against the published pages).
    assert text.count("50% off") == 3
    assert "Anthropic" in text and "OpenAI" in text and "DeepSeek" in text


def test_gemini_scale_like_for_like():
    values = numbers(statement("gemini-scale"))
    # The lecture: 2,000 x 64 = 128,000 tokens/s per replica, Gemini 1,000 of them. DeepSeek's
    # overview: 608e9 input and 168e9 output tokens in a day, 3.62 input per output token, so
    # Gemini's output is 1,000 / 4.62 = 216 replicas.
    assert 128_000 in values and 608 / 168 == pytest.approx(3.619, rel=1e-3)
    assert any(n == pytest.approx(1000 / (1 + 608 / 168), abs=0.5) for n in values)


def test_gemini_step_doubles_input_and_adds_half_to_output():
    values = numbers(statement("gemini-step"))
    # Google's list: $2 -> $4 input and $12 -> $18 output above 200k tokens.
    assert 4 / 2 in values and 18 / 12 in values


# --- rendering --------------------------------------------------------------------------------
@pytest.mark.parametrize("correction_id", [c.id for c in corrections.for_chapter("01_batching")])
def test_box_is_a_theme_admonition_with_typeset_math_and_a_link_to_the_page(correction_id):
    html = corrections.box(correction_id)
    assert html.startswith('<div class="admonition warning mathjax_process"')
    assert '<p class="admonition-title">' in html
    assert f'href="../book/corrections.html#{correction_id}"' in html
    assert "$" not in html.replace("\\$", ""), "math left in dollars, which MathJax on the site ignores"


def test_box_of_an_unknown_id_names_the_parameter_and_the_known_ids():
    with pytest.raises(ChalkError, match="correction_id.*deepseek-sparsity"):
        corrections.box("no-such-correction")


def test_page_has_every_entry_and_links_written_chapters_to_their_section():
    page = corrections.page_html()
    for c in corrections.REGISTRY:
        assert f'<dt id="{c.id}">' in page
    link = f'href="../notebooks/01_batching.html#{corrections.SECTION}"'
    assert page.count(link) == len(corrections.for_chapter("01_batching"))


def test_the_section_the_page_links_to_exists_in_chapter_one():
    nb = nbformat.read(ROOT / "notebooks" / "01_batching.ipynb", as_version=4)
    headings = [line[3:].strip() for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("## ")]
    slugs = {re.sub(r"[^a-z0-9]+", "-", h.lower()).strip("-") for h in headings}
    assert corrections.SECTION in slugs


def test_chapter_link_names_the_chapter_once():
    # Notebook titles start with their syllabus number ("# 1. How batch size..."); the link adds
    # "Chapter 1: " itself, so the number must not appear twice.
    link = corrections._chapter_cell(corrections.get("dropped-constants"))
    assert "Chapter 1: How batch size" in link and "Chapter 1: 1." not in link
