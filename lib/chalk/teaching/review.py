"""Review the flashcards inside Jupyter: show a card, flip it, mark it known or "again".

    from chalk.teaching.review import Review
    Review("01_batching")        # one chapter; Review() for the whole course

``Session`` holds the logic and has no widgets, so tests drive it directly: cards marked
"again" go to the back of the queue and come round until every card is known. ``Review`` is a
thin ipywidgets view over it. The cards marked known are saved to a small JSON file
(``~/.chalk/review.json`` unless ``progress_file`` says otherwise), so the next session starts
with the cards still to learn; *Start over* forgets a chapter's progress.

In a checkout the cards come from the YAML decks; the package a student installs has no decks or
card modules, so it carries the cards rendered (``write_bundle``, called when the package is built).
"""
import html
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ChalkError
from .flashcards import DECK_DIR, Card, Deck, card_html, figure_alt, load_decks, render_figure, section_html

BUNDLE = Path(__file__).resolve().parent / "deck"
"""The rendered cards of the student package: ``cards.json``, one PNG per figure and what each
figure shows in words, ``figures.json``."""


def default_progress_file() -> Path:
    return Path.home() / ".chalk" / "review.json"


# --- the cards ------------------------------------------------------------------------------
def decks() -> tuple[Deck, ...]:
    """The course's decks: the YAML sources in a checkout, else the bundle the package carries."""
    if DECK_DIR.is_dir():
        return load_decks()
    path = BUNDLE / "cards.json"
    if not path.is_file():
        raise ChalkError(f"no flashcards here: neither {DECK_DIR} nor {path} exists")
    return tuple(Deck(d["chapter"], d["title"], tuple(Card(**{**c, "tags": tuple(c["tags"])}) for c in d["cards"]), path)
                 for d in json.loads(path.read_text(encoding="utf-8")))


def write_bundle(dest: Path) -> Path:
    """Write every deck's cards (numbers filled in) and figures to ``dest`` for the student package."""
    dest.mkdir(parents=True, exist_ok=True)
    course = load_decks()
    data = [{"chapter": d.chapter, "title": d.title, "cards": [asdict(c) for c in d.cards]} for d in course]
    (dest / "cards.json").write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    figures = sorted({c.figure for d in course for c in d.cards if c.figure})
    for figure in figures:
        (dest / f"{figure}.png").write_bytes(render_figure(figure))
    words = {figure: figure_alt(figure) for figure in figures}
    (dest / "figures.json").write_text(json.dumps(words, indent=1, sort_keys=True), encoding="utf-8")
    return dest


def figure_png(name: str) -> bytes:
    bundled = BUNDLE / f"{name}.png"
    return bundled.read_bytes() if bundled.is_file() else render_figure(name)


def figure_words(name: str) -> str:
    """What the figure ``name`` shows, in words: the bundle's, else drawn as the site's alt text is."""
    bundled = BUNDLE / "figures.json"
    words = json.loads(bundled.read_text(encoding="utf-8")) if bundled.is_file() else {}
    return words[name] if name in words else figure_alt(name)


def cards(chapter: str | None = None) -> list[Card]:
    """The cards of ``chapter`` (e.g. ``"01_batching"``), or of every chapter when None."""
    course = decks()
    chapters = [d.chapter for d in course]
    if chapter is not None and chapter not in chapters:
        raise ChalkError(f"chapter: no flashcard deck {chapter!r}; decks: {', '.join(chapters)}")
    return [c for d in course if chapter in (None, d.chapter) for c in d.cards]


# --- saved progress -------------------------------------------------------------------------
def load_known(path: Path | None) -> set[str]:
    """Ids of the cards marked known in ``path``; nothing when it is absent or unreadable."""
    if path is None or not path.is_file():
        return set()
    try:
        return set(json.loads(path.read_text(encoding="utf-8"))["known"])
    except (ValueError, KeyError, TypeError):
        return set()  # a damaged progress file costs the progress, not the review


def save_known(path: Path | None, session_ids: set[str], known_ids: set[str]) -> None:
    """Record ``known_ids`` among ``session_ids``, keeping what the file says of other cards."""
    if path is None:
        return
    known = (load_known(path) - session_ids) | known_ids
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"known": sorted(known)}, indent=1), encoding="utf-8")


# --- a session ------------------------------------------------------------------------------
@dataclass
class Session:
    """A review queue: the front card is the one shown; ``known`` holds the cards done."""
    queue: list[Card]
    flipped: bool = False
    known: list[Card] = field(default_factory=list)
    again: int = 0
    """How many times a card was sent round again."""

    @property
    def total(self) -> int:
        return len(self.queue) + len(self.known)

    @property
    def done(self) -> bool:
        return not self.queue

    @property
    def current(self) -> Card | None:
        return self.queue[0] if self.queue else None

    def flip(self) -> None:
        if not self.done:
            self.flipped = not self.flipped

    def mark(self, known: bool) -> None:
        """Known: the card leaves the queue. Again: it goes to the back and is asked once more."""
        if self.done:
            return
        card = self.queue.pop(0)
        if known:
            self.known.append(card)
        else:
            self.queue.append(card)
            self.again += 1
        self.flipped = False


def new_session(chapter: str | None = None, shuffle: bool = False, seed: int | None = None,
                known: set[str] = frozenset()) -> Session:
    """A session over ``chapter``'s cards; the ids in ``known`` start as known."""
    queue = cards(chapter)
    if shuffle:
        random.Random(seed).shuffle(queue)
    return Session([c for c in queue if c.id not in known], known=[c for c in queue if c.id in known])


def status_text(s: Session) -> str:
    if s.done:
        return f"All {s.total} cards known ({s.again} sent round again). Well done."
    again = f" · {s.again} sent round again" if s.again else ""
    return f"{len(s.known)} of {s.total} known · {len(s.queue)} to go{again}"


def face_html(s: Session) -> str:
    """The side of the current card on show, as HTML with \\(...\\) math."""
    if s.done:
        return "<p>Nothing left to review.</p>"
    card = s.current
    if not s.flipped:
        return "<p><b>Question</b></p>" + card_html(card.front)
    # The section in words, not a link: the site's addresses do not hold inside a Jupyter server.
    return "<p><b>Answer</b></p>" + card_html(card.back) + section_html(card)


def progress_html(s: Session) -> str:
    """The progress line as a live region (role status: polite), so a screen reader says how far
    the review has come after each mark without the reader leaving the buttons."""
    return f'<span role="status" aria-live="polite">{html.escape(status_text(s))}</span>'


def caption_html(words: str) -> str:
    """``words`` read aloud, not drawn: the live explorers' hidden caption for their pictures."""
    from ..figures.explorer import _SCREEN_READER_ONLY  # the explorers need ipywidgets, as the reviewer does
    return f'<span style="{_SCREEN_READER_ONLY}">{html.escape(words)}</span>'


class Review:
    """An ipywidgets flashcard reviewer: Flip, then Known or Again; Start over forgets progress.
    It works from the keyboard: Tab to a button, Enter or Space to press it; a card's figure has
    a hidden caption in words for a screen reader (ipywidgets' Image has no alt text).

    ``progress_file=None`` keeps nothing between sessions.
    """

    def __init__(self, chapter: str | None = None, shuffle: bool = False, seed: int | None = None,
                 progress_file: Path | str | None = ...):
        import ipywidgets as w  # imported here: the rest of chalk works without a widget stack
        self.chapter, self.shuffle, self.seed = chapter, shuffle, seed
        self.progress_file = default_progress_file() if progress_file is ... else \
            (Path(progress_file) if progress_file is not None else None)
        self.session = new_session(chapter, shuffle, seed, load_known(self.progress_file))
        self.face = w.HTMLMath()
        self.figure = w.Image(format="png", layout=w.Layout(max_width="420px"))
        self.figure_caption = w.HTML()
        self.progress = w.HTML()
        self.flip_button = w.Button(description="Flip", icon="refresh")
        self.known_button = w.Button(description="Known", button_style="success", icon="check")
        self.again_button = w.Button(description="Again", button_style="warning", icon="repeat")
        self.restart_button = w.Button(description="Start over", icon="undo")
        self.flip_button.on_click(lambda _: self._do(self.session.flip))
        self.known_button.on_click(lambda _: self._mark(True))
        self.again_button.on_click(lambda _: self._mark(False))
        self.restart_button.on_click(lambda _: self._do(self._restart))
        self.widget = w.VBox([self.progress, self.face, self.figure, self.figure_caption,
                              w.HBox([self.flip_button, self.known_button, self.again_button,
                                      self.restart_button])])
        self._render()

    def _ids(self) -> set[str]:
        return {c.id for c in (*self.session.queue, *self.session.known)}

    def _restart(self) -> None:
        save_known(self.progress_file, self._ids(), set())
        self.session = new_session(self.chapter, self.shuffle, self.seed)

    def _do(self, action) -> None:
        action()
        save_known(self.progress_file, self._ids(), {c.id for c in self.session.known})
        self._render()

    def _mark(self, known: bool) -> None:
        self._do(lambda: self.session.mark(known))
        # The button pressed is now disabled, and a disabled button drops the keyboard focus to the
        # page; it goes to the next step: Flip for the next card, Start over when none is left.
        (self.restart_button if self.session.done else self.flip_button).focus()

    def _render(self) -> None:
        s = self.session
        self.face.value = face_html(s)
        self.progress.value = progress_html(s)
        card = s.current
        show_figure = bool(card and s.flipped and card.figure)
        self.figure.value = figure_png(card.figure) if show_figure else b""
        self.figure_caption.value = caption_html(figure_words(card.figure)) if show_figure else ""
        self.figure.layout.display = self.figure_caption.layout.display = None if show_figure else "none"
        # marking before looking at the answer would make "known" meaningless
        self.known_button.disabled = self.again_button.disabled = s.done or not s.flipped
        self.flip_button.disabled = s.done

    def _ipython_display_(self) -> None:
        from IPython.display import display
        display(self.widget)

    def show(self) -> None:
        """Display the reviewer in the notebook. It returns nothing, so a cell ending in
        ``Review(...).show()`` shows the reviewer once."""
        self._ipython_display_()
