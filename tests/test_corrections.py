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
            "speculative-decoding"} <= ids
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
