"""Chapter 1's two pages: the chapter reaches every section of its deeper page, and the helpers both
use (test_chapter_pages checks every chapter's length and links)."""
import json
import math
import re
from pathlib import Path

import pytest

from chalk.figures.batching import GRAPHS_AB, lstar_text
from chalk.teaching.flashcards import chapter_sections

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
MAIN, DEEPER = NOTEBOOKS / "01_batching.ipynb", NOTEBOOKS / "01_batching-deeper.ipynb"
LINK = re.compile(r"\]\((01_batching(?:-deeper)?\.ipynb)?#([\w-]+)\)")


def _markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")


def test_the_chapter_links_to_every_section_of_its_deeper_page():
    linked = {a for t, a in LINK.findall(_markdown(MAIN)) if t == DEEPER.name}
    top = {a for a in chapter_sections(DEEPER)} - {"going-deeper-how-batch-size-sets-token-cost-and-speed"}
    # Each second-level section of the deeper page is reached from the chapter, directly or by a sub-heading.
    for anchor in ("how-firm-is-the-balance-context", "a-real-operator-deepseek-s-own-numbers",
                   "a-serving-loop-that-does-not-know-the-closed-form"):
        assert anchor in top and anchor in linked


def test_lstar_text():
    assert lstar_text(math.inf) == "none"
    assert lstar_text(7_555.9) == "7,560"   # three significant digits
    assert lstar_text(2_788.8) == "2,790"
    assert lstar_text(15_111.8) == "15,100"


def test_graphs_replica_is_the_lectures_dense_example():
    # Llama 3 70B in BF16 on one 8-GPU H100 server at 1,024 tokens: issue #24 quotes its balance
    # batch as about 930 (r s b_w / 2 = 295 at no context, raised by the KV reads).
    from chalk import roofline
    from chalk.figures import plotting
    assert GRAPHS_AB == dict(chip="H100-SXM", model="llama-3-70b", dtype="bf16", chips=8, context=1024)
    assert plotting.curves(**GRAPHS_AB, usd_per_chip_hour=2).balance_batch == pytest.approx(930, rel=0.01)
    assert roofline.balance_batch("H100-SXM", "llama-3-70b") == pytest.approx(989.4 / 3.35, rel=1e-3)


def test_an_fp8_cache_turns_deepseek_v3s_rack_compute_bound_at_8k():
    # The worked examples' DeepSeek-V3 row (FP8 weights on 72 GB200s, 8,192 tokens) with its cache in
    # FP8 and attention in BF16, by hand: 5 PFLOP/s FP8 and 2.5 BF16 dense, 8 TB/s per GPU; a cache of
    # 61 x 576 x 1 = 35,136 B and 61 x 278,528 = 16.99e6 attention FLOPs per cached token.
    w, f, f_att, ctx = 72 * 8e12, 72 * 5e15, 72 * 2.5e15, 8192
    per_seq = 2 * 37.55e9 / f + ctx * 61 * 278_528 / f_att - ctx * 35_136 / w
    assert per_seq > 0                                       # attention outlasts the cache read: no L*
    hand = 671.03e9 / w / per_seq                            # about 2,416 sequences
    from chalk import roofline
    got = roofline.balance_batch("GB200", "deepseek-v3", "fp8", ctx, kv_bytes_per_element=1)
    assert got == pytest.approx(hand, rel=2e-3) and got == pytest.approx(2_416, rel=0.01)
    # With a BF16 cache the same row has no balance batch at this context (past L* = 7,560).
    assert roofline.balance_batch("GB200", "deepseek-v3", "fp8", ctx) == math.inf


def test_the_lone_token_card_counts_the_alltoall():
    # 0.0652 ms of weights and 1.693 ms of calls against 0.2086 us of matmuls (tests/test_corrections.py).
    from chalk.teaching.cards.ch01_batching import VALUES
    assert VALUES["lone_token_v3_nvl72"]() == "8,400"
