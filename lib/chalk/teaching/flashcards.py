"""Flashcard decks: load and check the YAML decks, fill in computed numbers, draw card figures,
and write the flip-card HTML of the flashcards page.

A deck is ``exercises/flashcards/<chapter>.yml``::

    chapter: "01_batching"
    title: "Batching"
    cards:
      - id: balance_batch
        front: "What is the balance batch $B^\\star$?"
        back: "... about {{ balance_v3_h100 }} for DeepSeek-V3 on an H100 ..."
        tags: [formula]
        section: the-balance-batch   # the chapter notebook's heading that explains it
        figure: graph_a          # optional, a name in FIGURES

A derived number is never typed into a card: ``{{ name }}`` is replaced by ``VALUES[name]()``,
computed from the catalog. Each chapter's values and figures live in its module
``chalk.teaching.cards.chNN_name``; ``VALUES`` and ``FIGURES`` gather every chapter's. ``render_figure(name)`` returns a card's figure as PNG bytes, so the
same figure can go into the page and into other deck formats.

``section`` is the anchor of a heading of the chapter notebook, as the site writes it
(``section_anchor``), so the page and the Anki decks link each card to the reasoning behind it.
``audit`` lists what breaks the cards' house rules: a back over ``MAX_BACK_WORDS`` words, a chapter
with fewer than ``MIN_CARDS`` cards, two cards of a deck that say nearly the same thing.
"""
import base64
import hashlib
import html
import importlib
import io
import itertools
import json
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from ..errors import ChalkError, lookup
from . import cards
from .chapters import ROOT, Chapter, chapter_modules, markdown_cells

DECK_DIR = ROOT / "exercises" / "flashcards"
"""Where the course keeps its decks."""


class DeckError(ChalkError):
    """A deck file that cannot be used; the message names the file and, where known, the card."""


# --- what the chapters compute ----------------------------------------------------------------
def _chapter_tables(attribute: str) -> dict[str, Callable]:
    """``attribute`` (VALUES or FIGURES) of every chapter module in ``chalk.teaching.cards``, merged.

    Cards of every chapter share one page and one Anki collection, so a name two chapters define
    is an error rather than a silent override.
    """
    merged: dict[str, Callable] = {}
    owner: dict[str, str] = {}
    for module_name in chapter_modules(cards).values():
        module = importlib.import_module(module_name)
        for name, function in getattr(module, attribute, {}).items():
            if name in merged:
                raise DeckError(f"{module_name}: {attribute} name {name!r} is already defined in "
                                f"{owner[name]}; names must be unique across chapters")
            merged[name], owner[name] = function, module_name
    return merged


@cache
def _tables() -> dict[str, dict[str, Callable]]:
    return {"VALUES": _chapter_tables("VALUES"), "FIGURES": _chapter_tables("FIGURES")}


def __getattr__(name: str):
    """``VALUES``, numbers the cards quote, each computed from chalk and formatted as the card shows
    it, and ``FIGURES``, figures a card may name, each returning a small matplotlib Figure drawn from
    chalk formulas. Gathered on first use: they import every chapter's figures, which a page that
    only shows a card's HTML (a correction box) does not need."""
    if name in ("VALUES", "FIGURES"):
        return _tables()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def fill(text: str, where: str = "card") -> str:
    """Replace each ``{{ name }}`` in ``text`` by the computed value ``VALUES[name]``."""
    def value(match: re.Match) -> str:
        name, values = match.group(1), _tables()["VALUES"]
        if name not in values:
            raise DeckError(f"{where}: unknown value {{{{ {name} }}}}; known values: "
                            f"{', '.join(sorted(values))}")
        return values[name]()
    return _PLACEHOLDER.sub(value, text)


FIGURE_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chalk" / "cards"
"""Drawn card figures, by the content of what draws them (``_library_digest``): the site build, the
decks, the review bundle and the tests each showed all the figures, about 0.9 s of CPU each, and
now one process draws them."""


@cache
def _library_digest() -> str:
    """A hash of everything a card figure is drawn from: every file of the ``chalk`` package (its
    formulas, figure code and catalog data) and the version of matplotlib."""
    import matplotlib

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(matplotlib.__version__.encode())
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


@cache
def _drawn(name: str) -> tuple[bytes, str]:
    """The figure ``name`` as PNG bytes and its alt text, from ``FIGURE_CACHE`` when this version
    of the library drew it before."""
    from ..figures.canvas import alt_text

    draw = lookup("figure", name, _tables()["FIGURES"], param="figure")
    path = FIGURE_CACHE / f"{name}-{_library_digest()}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        return base64.b64decode(entry["png"]), entry["alt"]
    except (OSError, ValueError, KeyError):
        pass
    fig = draw()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    png, alt = buf.getvalue(), alt_text(fig)
    try:
        FIGURE_CACHE.mkdir(parents=True, exist_ok=True)
        for old in FIGURE_CACHE.glob(f"{name}-*.json"):
            old.unlink(missing_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"png": base64.b64encode(png).decode("ascii"), "alt": alt}), encoding="utf-8")
        tmp.replace(path)  # whole or absent, when two processes draw at once
    except OSError:
        pass  # an unwritable cache: draw every time
    return png, alt


def render_figure(name: str) -> bytes:
    """The figure ``name`` as PNG bytes (small: about 360 x 240 pixels)."""
    return _drawn(name)[0]


def figure_alt(name: str) -> str:
    """What the figure ``name`` shows, in words (``chalk.figures.canvas.alt_text``)."""
    return _drawn(name)[1]


# --- decks ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Card:
    id: str
    front: str
    """Markdown with $...$ math, computed values filled in."""
    back: str
    tags: tuple[str, ...]
    chapter: str
    figure: str | None = None
    section: str = ""
    """The anchor of the chapter notebook's heading that explains the card."""
    section_title: str = ""
    """That heading's text (Markdown, may hold $...$ math)."""
    page: str = "chapter"
    """Which of the chapter's pages holds the section: ``"chapter"`` or ``"deeper"``."""

    @property
    def section_url(self) -> str:
        """The section's address on the site, from a page one folder deep (the flashcards page)."""
        return Chapter(self.chapter).url(self.page, self.section)


@dataclass(frozen=True)
class Deck:
    chapter: str
    title: str
    cards: tuple[Card, ...]
    path: Path


_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_CARD_KEYS = {"id", "front", "back", "tags", "figure", "section"}


# --- sections ---------------------------------------------------------------------------------
def section_anchor(heading: str) -> str:
    """The id the site gives a section headed ``heading`` (Markdown): docutils' ``make_id`` of its
    text, i.e. lower-case ASCII, every run of other characters one hyphen, no leading digits."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its words
    text = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"^[-0-9]+|-+$", "", re.sub(r"[^a-z0-9]+", "-", text))


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@cache
def chapter_sections(notebook: Path) -> dict[str, str]:
    """``{anchor: heading}`` of a notebook's Markdown headings, in order. A heading that repeats an
    earlier one's anchor gets a numbered id on the site, so only the first is listed."""
    sections: dict[str, str] = {}
    for source in markdown_cells(notebook):
        fenced = False
        for line in source.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and (m := _HEADING.match(line)):
                sections.setdefault(section_anchor(m.group(1)), m.group(1))
    return sections


def _section(where: str, entry: dict, chapter: str) -> tuple[str, str, str]:
    """(anchor, heading, page) of the card's section, checked against the chapter notebook and its
    "Going deeper" page, once written; the chapter's own heading wins where both have one."""
    anchor = _text(where, entry, "section")
    ch = Chapter(chapter)
    if not ch.notebook.is_file():
        return anchor, "", "chapter"
    pages = {"chapter": ch.notebook, "deeper": ch.deeper}
    found = {page: chapter_sections(nb) for page, nb in pages.items() if nb.is_file()}
    for page, sections in found.items():
        if anchor in sections:
            return anchor, sections[anchor], page
    raise DeckError(f"{where}: section {anchor!r} is no heading of {' or '.join(pages[p].name for p in found)}; "
                    f"their headings' anchors: {', '.join(a for s in found.values() for a in s)}")


def _text(where: str, entry: dict, key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DeckError(f"{where}: '{key}' must be non-empty text, got {value!r}")
    return value.strip()


def _card(where: str, i: int, entry, chapter: str) -> Card:
    if not isinstance(entry, dict):
        raise DeckError(f"{where} card #{i + 1}: must be a mapping with id, front, back, tags")
    card_id = entry.get("id")
    if not isinstance(card_id, str) or not _ID.match(card_id):
        raise DeckError(f"{where} card #{i + 1}: 'id' must be snake_case text, got {card_id!r}")
    where = f"{where} card {card_id!r}"
    if unknown := set(entry) - _CARD_KEYS:
        raise DeckError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
                        f"allowed: {', '.join(sorted(_CARD_KEYS))}")
    tags = entry.get("tags")
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) and t for t in tags):
        raise DeckError(f"{where}: 'tags' must be a non-empty list of words, got {tags!r}")
    figure = entry.get("figure")
    if figure is not None and figure not in (known := _tables()["FIGURES"]):
        raise DeckError(f"{where}: unknown figure {figure!r}; known figures: {', '.join(sorted(known))}")
    front, back = fill(_text(where, entry, "front"), where), fill(_text(where, entry, "back"), where)
    section, section_title, page = _section(where, entry, chapter)
    return Card(id=card_id, front=front, back=back, tags=tuple(tags), chapter=chapter, figure=figure,
                section=section, section_title=section_title, page=page)


def load_deck(path) -> Deck:
    """Read and check one deck file; errors name the file and the card."""
    path = Path(path)
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise DeckError(f"{where}: cannot read the deck: {err}") from None
    if not isinstance(data, dict):
        raise DeckError(f"{where}: a deck must be a mapping with chapter, title and cards")
    chapter, title = _text(where, data, "chapter"), _text(where, data, "title")
    if chapter != path.stem:
        raise DeckError(f"{where}: chapter {chapter!r} does not match the file name {path.stem!r}")
    entries = data.get("cards")
    if not isinstance(entries, list) or not entries:
        raise DeckError(f"{where}: 'cards' must be a non-empty list")
    cards = tuple(_card(where, i, e, chapter) for i, e in enumerate(entries))
    return Deck(chapter=chapter, title=title, cards=cards, path=path)


def load_decks(directory=DECK_DIR) -> tuple[Deck, ...]:
    """Every ``*.yml`` deck in ``directory``, in chapter order; card ids must be unique across decks."""
    paths = sorted(Path(directory).glob("*.yml"))
    if not paths:
        raise DeckError(f"{directory}: no deck files (*.yml)")
    decks = tuple(load_deck(p) for p in paths)
    seen: dict[str, Path] = {}
    for deck in decks:
        for card in deck.cards:
            if card.id in seen:
                raise DeckError(f"{deck.path} card {card.id!r}: id already used in {seen[card.id]}")
            seen[card.id] = deck.path
    return decks


# --- house rules ----------------------------------------------------------------------------
MAX_BACK_WORDS = 50
"""A back says one thing: at most this many words, each formula counted as one."""
MIN_CARDS = 18
"""Cards per chapter deck, at least."""
NEAR_DUPLICATE = 0.6
"""Two faces whose word sequences match at least this much (difflib's ratio) repeat each other."""

_FORMULA = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.S)


def word_count(text: str) -> int:
    """Words of a card face: each $...$ or $$...$$ formula counts as one word, punctuation as none."""
    return sum(1 for w in _FORMULA.sub(" x ", text).split() if re.search(r"\w", w))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def similarity(a: str, b: str) -> float:
    """How much two faces say the same words in the same order, 0 to 1 (formulas' symbols count)."""
    return SequenceMatcher(None, _words(a), _words(b), autojunk=False).ratio()


def audit(deck: Deck) -> list[str]:
    """What in ``deck`` breaks the house rules, one line each; empty when nothing does."""
    problems = [f"{deck.chapter}: {len(deck.cards)} cards, fewer than {MIN_CARDS}"] if len(deck.cards) < MIN_CARDS else []
    problems += [f"{c.id}: back of {n} words, more than {MAX_BACK_WORDS}" for c in deck.cards
                 if (n := word_count(c.back)) > MAX_BACK_WORDS]
    problems += [f"{c.id}: names no section of its chapter" for c in deck.cards if not c.section]
    for a, b in itertools.combinations(deck.cards, 2):
        for face in ("front", "back"):
            if (ratio := similarity(getattr(a, face), getattr(b, face))) >= NEAR_DUPLICATE:
                problems.append(f"{a.id} and {b.id}: {face}s nearly the same ({ratio:.2f})")
    return problems


# --- HTML -------------------------------------------------------------------------------------
def _math(content: str, options: dict) -> str:
    # \( \) and \[ \] are MathJax 3's default delimiters; escaping keeps "<" out of the markup,
    # and the browser decodes it before MathJax reads the text.
    left, right = (r"\[", r"\]") if options.get("display_mode") else (r"\(", r"\)")
    return left + html.escape(content, quote=False) + right


# allow_digits=False: "$2 per hour ... $3" is money, not math.
_MARKDOWN = MarkdownIt("commonmark").use(dollarmath_plugin, allow_digits=False, double_inline=True, renderer=_math)


def card_html(text: str) -> str:
    """A card face's Markdown as an HTML fragment, math in \\(...\\) for MathJax."""
    return _MARKDOWN.render(text).strip()


def section_html(card: Card, href: str | None = None) -> str:
    """"Read: Chapter N, <heading>", linking to ``href`` if given; nothing for a card without a section."""
    if not card.section:
        return ""
    page = ", going deeper" if card.page == "deeper" else ""
    where = f"Chapter {int(card.chapter[:2])}{page}, {_MARKDOWN.renderInline(card.section_title or card.section)}"
    if href is not None:
        where = f'<a href="{html.escape(href)}">{where}</a>'
    return f'<p class="chalk-read">Read: {where}</p>'


# One face shows at a time; the grid stretches the cards of a row to the same height.
_CSS = """
.chalk-controls { margin: 0.5em 0 1em; display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
.chalk-filter { max-width: 22em; }
.chalk-chapter-title { font-weight: 600; font-size: 1.15em; margin: 1em 0 0.5em; }
.chalk-count { font-weight: normal; color: #666; font-size: 0.85em; }
.chalk-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(15.5em, 1fr)); gap: 0.8em; }
.chalk-card { display: flex; flex-direction: column; min-height: 7em; border: 1px solid #c8c8c8; border-radius: 8px; padding: 0.7em 0.8em 0.4em;
  cursor: pointer; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.08); font-size: 0.92em; }
.chalk-card:hover { border-color: #0072B2; }
.chalk-card:focus-visible { outline: 3px solid #0072B2; outline-offset: 2px; }
.chalk-card.flipped { background: #f3f8fc; border-color: #0072B2; }
.chalk-face { flex: 1; }
.chalk-face p { margin: 0 0 0.5em; }
.chalk-back, .chalk-card.flipped .chalk-front { display: none; }
.chalk-card.flipped .chalk-back { display: block; }
.chalk-side { display: block; font-size: 0.72em; text-transform: uppercase; letter-spacing: .06em; color: #595959; }
.chalk-figure { display: block; max-width: 100%; margin: 0.3em auto; }
.chalk-tags { margin-top: 0.3em; }
.chalk-tag { font-size: 0.7em; color: #474747; background: #eee; border-radius: 3px; padding: 0 0.4em; margin-right: 0.3em; }
.chalk-slot { display: flex; flex-direction: column; }
.chalk-slot .chalk-card { flex: 1; }
.chalk-read { display: none; font-size: 0.85em; margin: 0.3em 0 0; }
.chalk-slot.open .chalk-read { display: block; }
.chalk-marks { display: none; gap: 0.5em; margin-top: 0.3em; }
.chalk-slot.open .chalk-marks { display: flex; }
.chalk-marks button { flex: 1; }
.chalk-card.known { border-left: 6px solid #009E73; }
.chalk-card.again { border-left: 6px dashed #D55E00; }
.chalk-state { font-size: 0.72em; color: #474747; margin-left: 0.5em; }
.chalk-progress { color: #474747; }
"""

# Scoped to its own deck via currentScript, so two decks on one page do not interfere.
_JS = """
(function () {
  var deck = document.currentScript.parentElement;
  function flip(card) {
    var open = card.classList.toggle("flipped");
    card.setAttribute("aria-pressed", open);
    card.parentElement.classList.toggle("open", open);  // the Again / Known buttons of a turned card
  }
  deck.addEventListener("click", function (e) {
    var card = e.target.closest(".chalk-card");
    if (card) flip(card);
  });
  deck.addEventListener("keydown", function (e) {
    var card = e.target.closest(".chalk-card");
    if (card && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); flip(card); }
  });
  var filter = deck.querySelector(".chalk-filter");
  function choose(chapter) {
    filter.value = chapter;
    deck.querySelectorAll(".chalk-chapter").forEach(function (s) {
      s.hidden = chapter !== "" && s.dataset.chapter !== chapter;
    });
  }
  filter.addEventListener("change", function () { choose(filter.value); });
  // A chapter page links to #deck-<chapter>: open the page on that chapter's cards alone.
  var linked = /^#deck-(.+)$/.exec(location.hash);
  if (linked && deck.querySelector('.chalk-chapter[data-chapter="' + linked[1] + '"]')) choose(linked[1]);
  deck.querySelector(".chalk-reset").addEventListener("click", function () {
    deck.querySelectorAll(".chalk-card.flipped").forEach(flip);
  });
  // What the reader marked, kept in this browser: {card id: "known" | "again"}. Storage can be
  // refused (private windows, some file:// pages); the marks then last as long as the page.
  var KEY = "chalk-flashcards-v1", marks = {};
  try { marks = JSON.parse(localStorage.getItem(KEY) || "{}") || {}; } catch (err) { marks = {}; }
  function save() { try { localStorage.setItem(KEY, JSON.stringify(marks)); } catch (err) {} }
  var progress = deck.querySelector(".chalk-progress");
  function show() {
    var known = 0, again = 0, total = 0;
    deck.querySelectorAll(".chalk-card").forEach(function (card) {
      var mark = marks[card.dataset.cardId];
      total += 1; known += mark === "known"; again += mark === "again";
      card.classList.toggle("known", mark === "known");
      card.classList.toggle("again", mark === "again");
      card.querySelector(".chalk-state").textContent = mark === "known" ? "· known" : mark === "again" ? "· see again" : "";
    });
    deck.querySelectorAll(".chalk-chapter").forEach(function (s) {
      var n = s.querySelectorAll(".chalk-card.known").length;
      s.querySelector(".chalk-known").textContent = n ? ", " + n + " known" : "";
    });
    progress.textContent = known + " known and " + again + " to see again, of " + total +
      " cards (kept in this browser)";
  }
  deck.addEventListener("click", function (e) {
    var button = e.target.closest(".chalk-marks button");
    if (!button) return;
    var card = button.closest(".chalk-slot").querySelector(".chalk-card");
    marks[card.dataset.cardId] = button.dataset.mark;
    save(); flip(card); card.focus(); show();
  });
  deck.querySelector(".chalk-forget").addEventListener("click", function () {
    marks = {}; save(); show();
  });
  show();
})();
"""


def _face(card: Card, side: str) -> str:
    body = card_html(card.front if side == "front" else card.back)
    if side == "back" and card.figure:
        png = base64.b64encode(render_figure(card.figure)).decode("ascii")
        body += (f'<img class="chalk-figure" alt="{html.escape(figure_alt(card.figure))}" '
                 f'src="data:image/png;base64,{png}">')
    label = "question" if side == "front" else "answer"
    return f'<div class="chalk-face chalk-{side}"><span class="chalk-side">{label}</span>{body}</div>'


def _card_element(card: Card) -> str:
    tags = " ".join(f'<span class="chalk-tag">{html.escape(t)}</span>' for t in card.tags)
    # The mark buttons and the section link sit beside the card, not in it: a control inside a
    # role="button" is not reachable. Both show once the card is turned; the marks come first, so
    # from a turned card Tab reaches "again" and "known" before the reading.
    return (f'<div class="chalk-slot"><div class="chalk-card" id="card-{card.id}" data-card-id="{card.id}" '
            f'tabindex="0" role="button" aria-pressed="false">{_face(card, "front")}{_face(card, "back")}'
            f'<div class="chalk-tags">{tags}<span class="chalk-state"></span></div></div>'
            f'<div class="chalk-marks"><button type="button" data-mark="again">again</button>'
            f'<button type="button" data-mark="known">known</button></div>'
            f'{section_html(card, card.section_url)}</div>')


def deck_html(decks) -> str:
    """Flip cards for ``decks`` as one self-contained HTML block (inline CSS and JS, no kernel).

    Cards are grouped by chapter under a chapter filter; clicking a card (or Enter/Space on it)
    toggles the class ``flipped``, and a turned card offers "again" and "known": the marks and
    their counts are kept in the browser's localStorage. Math is left for the page's MathJax to typeset.
    """
    decks = tuple(decks)
    if not decks:
        raise ChalkError("decks: need at least one deck")
    options = "".join(f'<option value="{d.chapter}">{html.escape(d.title)}</option>' for d in decks)
    sections = "".join(
        f'<section class="chalk-chapter" id="deck-{d.chapter}" data-chapter="{d.chapter}">'
        f'<p class="chalk-chapter-title">{html.escape(d.title)} '
        f'<span class="chalk-count">({len(d.cards)} cards<span class="chalk-known"></span>)</span></p>'
        f'<div class="chalk-grid">{"".join(_card_element(c) for c in d.cards)}</div></section>'
        for d in decks)
    return (f'<div class="chalk-deck mathjax_process"><style>{_CSS}</style>'
            f'<div class="chalk-controls"><label>Chapter <select class="chalk-filter">'
            f'<option value="">all chapters</option>{options}</select></label> '
            f'<button type="button" class="chalk-reset">show all questions</button> '
            f'<button type="button" class="chalk-forget">forget my marks</button> '
            f'<span class="chalk-progress" aria-live="polite"></span></div>'
            f'{sections}<script>{_JS}</script></div>')

