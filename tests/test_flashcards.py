"""Flashcard decks: the course's decks load, bad decks fail with a clear message, figures are
PNGs, and the HTML has one flip card per card (and flips, in a browser when one is installed)."""
import shutil
import struct
import textwrap

import pytest

from chalk.teaching import chapters, corrections, flashcards
from chalk.errors import ChalkError
from chalk.teaching.flashcards import DeckError, FIGURES, VALUES, deck_html, load_deck, load_decks, render_figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def decks():
    return load_decks()


@pytest.mark.parametrize("chapter", sorted(p.stem for p in flashcards.DECK_DIR.glob("*.yml")))
def test_chapter_deck_meets_the_chapter_contract(decks, chapter):
    # Each chapter's issue: at least 18 cards, at least two with a figure drawn by chalk, and a card
    # for each lecture slip of the segment, which the corrections registry lists for the chapter.
    deck = {d.chapter: d for d in decks}[chapter]
    assert len(deck.cards) >= 18, f"{chapter}: {len(deck.cards)} cards"
    assert sum(1 for c in deck.cards if c.figure in FIGURES) >= 2, f"{chapter}: fewer than two chalk figures"
    gaps = [c.id for c in deck.cards if "lecture-gap" in c.tags]
    slips = [c.id for c in corrections.for_chapter(chapter)]
    assert len(gaps) >= len(slips), f"{chapter}: lecture-gap cards {gaps} for the registered slips {slips}"


def test_every_written_chapter_has_a_deck():
    for chapter in chapters.chapters():
        assert not chapter.written or chapter.deck.is_file(), f"{chapter.name} has no deck"


def test_card_ids_unique_and_placeholders_filled(decks):
    ids = [c.id for d in decks for c in d.cards]
    assert len(ids) == len(set(ids))
    for card in (c for d in decks for c in d.cards):
        assert "{{" not in card.front + card.back, card.id
        assert card.front and card.back and card.tags


def test_lecture_gap_cards_quote_computed_numbers(decks):
    cards = {c.id: c for d in decks for c in d.cards}
    assert VALUES["s_v3"]() in cards["deepseek_sparsity"].back
    assert VALUES["r_a100"]() in cards["r_across_generations"].back
    assert VALUES["r_h100"]() in cards["r_across_generations"].back


def test_values_agree_with_spec_sheets():
    # A100 datasheet: 312 TFLOP/s dense BF16, 2.039 TB/s; H100 SXM: 989.4 and 3.35 (so r ~ 153, 295).
    assert int(VALUES["r_a100"]()) == pytest.approx(312 / 2.039, rel=0.01)
    assert int(VALUES["r_h100"]()) == pytest.approx(989.4 / 3.35, rel=0.01)
    # DeepSeek-V3 report: 671 B total, 37 B active
    assert int(VALUES["s_v3"]()) == round(671 / 37)
    # H100: 80 GB / 3.35 TB/s
    assert int(VALUES["drain_h100_ms"]()) == round(80e9 / 3.35e12 * 1e3)
    for name, value in VALUES.items():
        assert value() and "nan" not in value(), name


# --- validation -------------------------------------------------------------------------------
GOOD_CARD = """
  - id: {id}
    front: "What is $B$?"
    back: "Sequences per step."
    tags: [definition]
"""


def write_deck(folder, name, cards, chapter=None):
    path = folder / f"{name}.yml"
    path.write_text(f'chapter: "{chapter or name}"\ntitle: "Test"\ncards:\n' + textwrap.dedent(cards))
    return path


@pytest.mark.parametrize("card, message", [
    ('  - id: lonely\n    front: "Q?"\n    tags: [x]\n', "card 'lonely': 'back' must be non-empty text"),
    ('  - id: no_tags\n    front: "Q?"\n    back: "A."\n', "card 'no_tags': 'tags' must be"),
    ('  - id: bad_fig\n    front: "Q"\n    back: "A"\n    tags: [x]\n    figure: nope\n',
     "card 'bad_fig': unknown figure 'nope'"),
    ('  - id: bad_value\n    front: "Q"\n    back: "{{ no_such }}"\n    tags: [x]\n',
     "card 'bad_value': unknown value"),
    ('  - id: extra\n    front: "Q"\n    back: "A"\n    tags: [x]\n    colour: red\n',
     "card 'extra': unknown field(s) colour"),
    ('  - id: Bad-Id\n    front: "Q"\n    back: "A"\n    tags: [x]\n', "card #1: 'id' must be snake_case"),
    ('  - just text\n', "card #1: must be a mapping"),
])
def test_errors_name_file_and_card(tmp_path, card, message):
    path = write_deck(tmp_path, "09_test", card)
    with pytest.raises(DeckError) as err:
        load_deck(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_deck_level_errors(tmp_path):
    with pytest.raises(DeckError, match="does not match the file name"):
        load_deck(write_deck(tmp_path, "09_a", GOOD_CARD.format(id="a"), chapter="09_b"))
    broken = tmp_path / "09_c.yml"
    broken.write_text("chapter: [unclosed\n")
    with pytest.raises(DeckError, match="09_c.yml: cannot read the deck"):
        load_deck(broken)
    empty = tmp_path / "09_d.yml"
    empty.write_text('chapter: "09_d"\ntitle: "T"\ncards: []\n')
    with pytest.raises(DeckError, match="'cards' must be a non-empty list"):
        load_deck(empty)
    with pytest.raises(DeckError, match="no deck files"):
        load_decks(tmp_path / "nowhere")


def test_duplicate_ids_across_decks_name_both_files(tmp_path):
    first = write_deck(tmp_path, "01_one", GOOD_CARD.format(id="same"))
    second = write_deck(tmp_path, "02_two", GOOD_CARD.format(id="same"))
    with pytest.raises(DeckError) as err:
        load_decks(tmp_path)
    assert str(second) in str(err.value) and str(first) in str(err.value) and "'same'" in str(err.value)


def test_deck_error_is_a_chalk_error():
    assert issubclass(DeckError, ChalkError)


# --- figures and HTML -------------------------------------------------------------------------
@pytest.mark.parametrize("name", FIGURES)
def test_figures_are_small_pngs(name):
    png = render_figure(name)
    assert png.startswith(PNG_SIGNATURE) and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    assert 100 <= width <= 600 and 100 <= height <= 400
    assert len(png) < 100_000


def test_unknown_figure_lists_known_ones():
    with pytest.raises(ChalkError, match="graph_a"):
        render_figure("graph_z")


def test_markdown_and_math_become_mathjax_html():
    out = flashcards.card_html("The **batch** $B < B^\\star$ costs \\$2 and $3 per hour.\n\n$$t = 1$$")
    assert "<strong>batch</strong>" in out
    assert r"\(B &lt; B^\star\)" in out
    assert r"\[t = 1\]" in out
    assert "$2 and $3" in out  # money is not math


def test_deck_html_has_one_card_per_card(decks):
    page = deck_html(decks)
    n_cards = sum(len(d.cards) for d in decks)
    assert page.count('class="chalk-card"') == n_cards == page.count('data-mark="known"')
    for deck in decks:
        assert f'<option value="{deck.chapter}">' in page
        assert page.count(f'data-chapter="{deck.chapter}"') == 1
    assert page.count("data:image/png;base64,") == sum(1 for d in decks for c in d.cards if c.figure)
    assert "<script>" in page and "mathjax_process" in page


def test_deck_html_needs_a_deck():
    with pytest.raises(ChalkError):
        deck_html([])


def test_cards_flip_and_filter_in_a_browser(decks, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium found")
    from playwright.sync_api import sync_playwright
    page_file = tmp_path / "deck.html"
    page_file.write_text(f"<!doctype html><html><body>{deck_html(decks)}</body></html>")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(page_file.as_uri())
        card = page.locator(".chalk-card").first
        back = card.locator(".chalk-back")
        assert not back.is_visible()
        card.click()
        assert "flipped" in card.get_attribute("class") and back.is_visible()
        card.press("Enter")
        assert "flipped" not in card.get_attribute("class")
        page.select_option(".chalk-filter", decks[0].chapter)
        assert page.locator(f'.chalk-chapter[data-chapter="{decks[0].chapter}"]').is_visible()
        # A turned card offers "known" and "again"; the marks survive a reload and can be forgotten.
        known = card.locator("xpath=..").locator("button[data-mark=known]")
        assert not known.is_visible()
        card.click()
        known.click()
        assert "known" in card.get_attribute("class").split() and "flipped" not in card.get_attribute("class")
        assert page.locator(".chalk-progress").inner_text().startswith("1 known and 0 to see again")
        page.reload()
        card = page.locator(".chalk-card").first
        assert "known" in card.get_attribute("class").split()
        assert f"({len(decks[0].cards)} cards, 1 known)" in page.locator(".chalk-count").first.inner_text()
        page.click(".chalk-forget")
        assert "known" not in card.get_attribute("class").split()
        assert page.locator(".chalk-progress").inner_text().startswith("0 known")
        browser.close()
