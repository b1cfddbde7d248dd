"""Flashcard decks: the course's decks load, bad decks fail with a clear message, figures are
PNGs, and the HTML has one flip card per card (and flips, in a browser when one is installed)."""
import struct
import textwrap

import pytest

from chalk.teaching import chapters, corrections, flashcards
from chalk.errors import ChalkError
from chalk.teaching.flashcards import (DeckError, FIGURES, MAX_BACK_WORDS, MIN_CARDS, VALUES, Card, Deck, audit,
                                      chapter_sections, deck_html, load_deck, load_decks, render_figure,
                                      section_anchor, similarity, word_count)

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
    # H100: the 81,559 MiB nvidia-smi reports (85.52 GB; 80 nominal) / 3.35 TB/s
    assert int(VALUES["drain_h100_ms"]()) == round(81_559 * 2**20 / 3.35e12 * 1e3) == 26
    for name, value in VALUES.items():
        assert value() and "nan" not in value(), name


# --- validation -------------------------------------------------------------------------------
GOOD_CARD = """
  - id: {id}
    front: "What is $B$?"
    back: "Sequences per step."
    tags: [definition]
    section: the-balance-batch
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
    ('  - id: nowhere\n    front: "Q"\n    back: "A"\n    tags: [x]\n', "card 'nowhere': 'section' must be non-empty text"),
])
def test_errors_name_file_and_card(tmp_path, card, message):
    path = write_deck(tmp_path, "09_test", card)
    with pytest.raises(DeckError) as err:
        load_deck(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_section_that_is_no_heading_of_the_chapter_is_refused(tmp_path):
    # A real chapter's deck (its notebook exists), one card pointing at a heading it does not have.
    card = '  - id: lost\n    front: "Q"\n    back: "A"\n    tags: [x]\n    section: the-balance-btach\n'
    path = write_deck(tmp_path, "01_batching", card)
    with pytest.raises(DeckError) as err:
        load_deck(path)
    assert "card 'lost': section 'the-balance-btach' is no heading of 01_batching.ipynb" in str(err.value)
    assert "the-balance-batch" in str(err.value)  # the valid anchors are listed
    good = load_deck(write_deck(tmp_path, "01_batching", GOOD_CARD.format(id="found")))
    assert good.cards[0].section_title == "The balance batch"


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


# --- sections and house rules ------------------------------------------------------------------
def test_section_anchor_is_the_id_the_site_gives_a_heading():
    # Ids as Sphinx writes them for MyST headings (checked on a built page): math keeps its
    # letters, leading numbers go, punctuation runs become one hyphen.
    assert section_anchor(r"$B^\star$ is per replica; per GPU it depends on the layout") == \
        "b-star-is-per-replica-per-gpu-it-depends-on-the-layout"
    assert section_anchor("1. How batch size sets token cost and speed") == "how-batch-size-sets-token-cost-and-speed"
    assert section_anchor('"Pipelining is not wise"') == "pipelining-is-not-wise"
    assert section_anchor("Mixing: a cipher's avalanche") == "mixing-a-cipher-s-avalanche"
    assert section_anchor("See [the notes](notes.md)") == "see-the-notes"


def test_section_anchor_agrees_with_docutils_on_every_chapter_heading():
    from docutils.nodes import make_id
    for chapter in chapters.chapters():
        if chapter.written:
            for anchor, heading in chapter_sections(chapter.notebook).items():
                assert anchor == make_id(heading.replace("$", "")), (chapter.name, heading)


def test_every_card_names_a_heading_of_its_chapter(decks):
    # A card's section is a heading of the chapter notebook or of its "Going deeper" page.
    for card in (c for d in decks for c in d.cards):
        chapter = chapters.Chapter(card.chapter)
        notebook, page = (chapter.deeper, "-deeper") if card.page == "deeper" else (chapter.notebook, "")
        sections = chapter_sections(notebook)
        assert card.section in sections, f"{card.id}: {card.section!r} is no heading of {notebook.name}"
        assert card.section_title == sections[card.section]
        assert card.section_url == f"../notebooks/{card.chapter}{page}.html#{card.section}"


def test_word_count_counts_a_formula_as_one_word():
    assert word_count("The ratio $r\\,b_w/2$ is about 295.") == 6
    assert word_count("$$B^\\star = r\\,\\frac{b_w}{2}\\,s$$ and $s$ — per replica") == 5
    assert word_count("**Data**: the batch (full replicas).") == 5


@pytest.mark.parametrize("deck", load_decks(), ids=lambda d: d.chapter)
def test_course_decks_keep_the_house_rules(deck):
    # At least 18 cards, backs of at most 50 words, a section each, no two cards saying the same.
    assert audit(deck) == []


# Words that share nothing, so synthetic cards built from them are not near-duplicates by accident.
_VOCABULARY = ("amber basalt cobalt dune ember fjord glacier heath island juniper kelp lagoon meadow nectar "
               "oasis prairie quartz reef savanna tundra umber valley willow xylem yarrow zephyr alder birch "
               "cedar delta estuary fern grove hollow inlet jasper knoll larch marsh nettle orchid pebble quill "
               "ridge sorrel thicket").split()


def synthetic_deck(changes=None, n=MIN_CARDS):
    """``n`` cards that keep every rule; ``changes`` maps a card index to fields to replace."""
    cards = []
    for i in range(n):
        words = _VOCABULARY[i::n][:3] or [f"w{i}"]
        fields = dict(id=f"card_{i}", front=f"What links {' '.join(words)}?", back=f"{' '.join(reversed(words))} only.",
                      tags=("definition",), chapter="09_test", section="some-heading", section_title="Some heading")
        fields.update((changes or {}).get(i, {}))
        cards.append(Card(**fields))
    return Deck("09_test", "Test", tuple(cards), flashcards.DECK_DIR / "09_test.yml")


def test_audit_passes_a_good_deck_and_names_each_bad_card():
    assert audit(synthetic_deck()) == []
    at_limit = " ".join(["word"] * (MAX_BACK_WORDS - 2)) + " $a + b = c$ $$x^2$$"
    assert audit(synthetic_deck({0: dict(back=at_limit)})) == []
    too_long = " ".join(["word"] * MAX_BACK_WORDS) + " $x$"
    assert audit(synthetic_deck({0: dict(back=too_long)})) == [f"card_0: back of {MAX_BACK_WORDS + 1} words, more than 50"]
    assert audit(synthetic_deck({3: dict(section="")})) == ["card_3: names no section of its chapter"]
    assert audit(synthetic_deck(n=MIN_CARDS - 1)) == [f"09_test: {MIN_CARDS - 1} cards, fewer than 18"]


def test_audit_finds_cards_that_repeat_each_other():
    front = "Is a decode step of about twenty milliseconds the fastest a model can be served?"
    reworded = "Is a decode step of twenty milliseconds the fastest that a model can be served?"
    problems = audit(synthetic_deck({2: dict(front=front), 5: dict(front=reworded)}))
    assert len(problems) == 1 and problems[0].startswith("card_2 and card_5: fronts nearly the same")
    back = "Capacity over bandwidth: the time to read all of HBM once, about 24 ms on an H100."
    problems = audit(synthetic_deck({1: dict(back=back), 7: dict(back=back.replace("24", "23"))}))
    assert len(problems) == 1 and problems[0].startswith("card_1 and card_7: backs nearly the same")


def test_similarity_of_faces():
    assert similarity("one two three", "one two three") == 1
    assert similarity("one two three", "four five six") == 0
    # formulas' symbols count, so two different formulas with the same words are not a repeat
    feistel = r"$(L, R) \mapsto (R,\ L \oplus F(R, k))$; inverse: $(L', R') \mapsto (R' \oplus F(L', k),\ L')$."
    revnet = r"$y_1 = x_1 + F(x_2)$, $y_2 = x_2 + G(y_1)$; inverse: $x_2 = y_2 - G(y_1)$, $x_1 = y_1 - F(x_2)$."
    assert similarity(feistel, revnet) < 0.6


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
    # each card links to its section, beside the card (not inside its role="button")
    assert page.count('<p class="chalk-read">Read: <a href="../notebooks/') == n_cards
    card = next(c for d in decks for c in d.cards if c.id == "balance_batch_formula")
    assert ('<p class="chalk-read">Read: <a href="../notebooks/01_batching.html#the-balance-batch">'
            'Chapter 1, The balance batch</a></p>') in page
    assert "<script>" in page and "mathjax_process" in page


def test_deck_html_needs_a_deck():
    with pytest.raises(ChalkError):
        deck_html([])


def test_cards_flip_and_filter_in_a_browser(decks, tmp_path, chromium_browser):
    # The suite's one browser per worker (conftest): a second Playwright in the same worker fails
    # ("Sync API inside the asyncio loop") once a test before it has started the shared one.
    page_file = tmp_path / "deck.html"
    page_file.write_text(f"<!doctype html><html><body>{deck_html(decks)}</body></html>")
    context = chromium_browser.new_context()  # its own storage: the marks below start empty
    try:
        page = context.new_page()
        page.goto(page_file.as_uri())
        card = page.locator(".chalk-card").first
        back = card.locator(".chalk-back")
        assert not back.is_visible()
        card.click()
        assert "flipped" in card.get_attribute("class") and back.is_visible()
        read = card.locator("xpath=..").locator(".chalk-read a")
        assert read.is_visible() and read.get_attribute("href").startswith("../notebooks/")
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
    finally:
        context.close()
