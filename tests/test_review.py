"""The review mode: the queue logic, and the widget driven by clicking its buttons."""
import pytest

from chalk.teaching import review
from chalk.errors import ChalkError
from chalk.teaching.flashcards import load_decks

DECKS = load_decks()
CHAPTER = DECKS[0].chapter
ALL = [c for d in DECKS for c in d.cards]


def test_again_cards_come_round_until_all_are_known():
    s = review.new_session(CHAPTER)
    first, second = s.queue[0], s.queue[1]
    n = s.total
    s.mark(False)  # again: to the back
    assert s.current is second and s.queue[-1] is first and s.total == n
    s.mark(True)
    assert s.known == [second]
    seen_first = 0
    while not s.done:
        seen_first += s.current is first
        s.mark(True)
    assert seen_first == 1 and len(s.known) == n and s.again == 1
    assert "All" in review.status_text(s) and "1 sent round again" in review.status_text(s)


def test_flip_shows_back_and_marking_shows_the_next_front():
    s = review.new_session(CHAPTER)
    card = s.current
    assert "Question" in review.face_html(s)
    s.flip()
    assert "Answer" in review.face_html(s) and s.flipped
    s.mark(True)
    assert not s.flipped and s.current is not card


def test_chapter_filter_shuffle_and_bad_chapter():
    assert review.new_session().total == len(ALL)
    a = review.new_session(shuffle=True, seed=3).queue
    assert a == review.new_session(shuffle=True, seed=3).queue and sorted(c.id for c in a) == sorted(c.id for c in ALL)
    with pytest.raises(ChalkError, match="chapter: no flashcard deck '99_x'"):
        review.new_session("99_x")


def test_widget_buttons_drive_the_session():
    r = review.Review(CHAPTER)
    n = r.session.total
    assert r.known_button.disabled  # no marking before the answer is seen
    r.flip_button.click()
    assert not r.known_button.disabled and "Answer" in r.face.value
    r.again_button.click()
    assert r.session.again == 1 and "Question" in r.face.value
    while not r.session.done:
        r.flip_button.click()
        r.known_button.click()
    assert len(r.session.known) == n and r.flip_button.disabled and "All" in r.progress.value


def test_widget_shows_a_cards_figure_only_on_its_back():
    figure_card = next(c for c in ALL if c.figure)
    r = review.Review(figure_card.chapter)
    while r.session.current.id != figure_card.id:
        r.session.mark(True)
    r._render()
    assert r.figure.layout.display == "none"
    r.flip_button.click()
    assert bytes(r.figure.value).startswith(b"\x89PNG") and r.figure.layout.display is None
