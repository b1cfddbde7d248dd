"""Review the flashcards inside Jupyter: show a card, flip it, mark it known or "again".

    from chalk.teaching.review import Review
    Review("01_batching").show()        # one chapter; Review() for the whole course

``Session`` holds the logic and has no widgets, so tests drive it directly: cards marked
"again" go to the back of the queue and come round until every card is known. ``Review`` is a
thin ipywidgets view over it.
"""
import random
from dataclasses import dataclass, field

from ..errors import ChalkError
from .flashcards import Card, card_html, load_decks, render_figure


@dataclass
class Session:
    """A review queue: the front card is the one shown; ``known`` counts cards done."""
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


def cards(chapter: str | None = None) -> list[Card]:
    """The cards of ``chapter`` (e.g. ``"01_batching"``), or of every chapter when None."""
    decks = load_decks()
    chapters = [d.chapter for d in decks]
    if chapter is not None and chapter not in chapters:
        raise ChalkError(f"chapter: no flashcard deck {chapter!r}; decks: {', '.join(chapters)}")
    return [c for d in decks if chapter in (None, d.chapter) for c in d.cards]


def new_session(chapter: str | None = None, shuffle: bool = False, seed: int | None = None) -> Session:
    queue = cards(chapter)
    if shuffle:
        random.Random(seed).shuffle(queue)
    return Session(queue)


def status_text(s: Session) -> str:
    if s.done:
        return f"All {s.total} cards known ({s.again} sent round again). Well done."
    return f"Card {len(s.known) + 1} of {s.total} to learn · {len(s.known)} known · {len(s.queue)} left"


def face_html(s: Session) -> str:
    """The side of the current card on show, as HTML with \\(...\\) math."""
    if s.done:
        return "<p>Nothing left to review.</p>"
    card = s.current
    side = "Answer" if s.flipped else "Question"
    return f"<p><b>{side}</b></p>" + card_html(card.back if s.flipped else card.front)


class Review:
    """An ipywidgets flashcard reviewer: Flip, then Known or Again."""

    def __init__(self, chapter: str | None = None, shuffle: bool = False, seed: int | None = None):
        import ipywidgets as w  # imported here: the rest of chalk works without a widget stack
        self.session = new_session(chapter, shuffle, seed)
        self.face = w.HTMLMath()
        self.figure = w.Image(format="png", layout=w.Layout(max_width="420px"))
        self.progress = w.Label()
        self.flip_button = w.Button(description="Flip", icon="refresh")
        self.known_button = w.Button(description="Known", button_style="success", icon="check")
        self.again_button = w.Button(description="Again", button_style="warning", icon="repeat")
        self.flip_button.on_click(lambda _: self._do(self.session.flip))
        self.known_button.on_click(lambda _: self._do(lambda: self.session.mark(True)))
        self.again_button.on_click(lambda _: self._do(lambda: self.session.mark(False)))
        self.widget = w.VBox([self.progress, self.face, self.figure,
                              w.HBox([self.flip_button, self.known_button, self.again_button])])
        self._render()

    def _do(self, action) -> None:
        action()
        self._render()

    def _render(self) -> None:
        s = self.session
        self.face.value = face_html(s)
        self.progress.value = status_text(s)
        card = s.current
        show_figure = bool(card and s.flipped and card.figure)
        self.figure.value = render_figure(card.figure) if show_figure else b""
        self.figure.layout.display = None if show_figure else "none"
        # marking before looking at the answer would make "known" meaningless
        self.known_button.disabled = self.again_button.disabled = s.done or not s.flipped
        self.flip_button.disabled = s.done

    def show(self):
        """Display the reviewer in the notebook (and return its widget)."""
        from IPython.display import display
        display(self.widget)
        return self.widget
