"""The review mode: the queue logic, the widget driven by clicking its buttons, progress saved
between sessions, and the cards the student package carries instead of the decks."""
import html
import json
import re

import nbformat
import pytest
from nbclient import NotebookClient

from chalk.errors import ChalkError
from chalk.teaching import review
from chalk.teaching.flashcards import figure_alt, load_decks, render_figure

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


def test_progress_line_moves_on_again_and_on_known():
    s = review.new_session(CHAPTER)
    n = s.total
    assert review.status_text(s) == f"0 of {n} known · {n} to go"
    s.mark(False)
    assert review.status_text(s) == f"0 of {n} known · {n} to go · 1 sent round again"
    s.mark(True)
    assert review.status_text(s) == f"1 of {n} known · {n - 1} to go · 1 sent round again"


def test_flip_shows_back_and_marking_shows_the_next_front():
    s = review.new_session(CHAPTER)
    card = s.current
    assert "Question" in review.face_html(s)
    s.flip()
    assert "Answer" in review.face_html(s) and s.flipped
    assert f"<p class=\"chalk-read\">Read: Chapter {int(card.chapter[:2])}, {card.section_title}</p>" in review.face_html(s)
    s.mark(True)
    assert not s.flipped and s.current is not card


def test_chapter_filter_shuffle_and_bad_chapter():
    assert review.new_session().total == len(ALL)
    a = review.new_session(shuffle=True, seed=3).queue
    assert a == review.new_session(shuffle=True, seed=3).queue and sorted(c.id for c in a) == sorted(c.id for c in ALL)
    with pytest.raises(ChalkError, match="chapter: no flashcard deck '99_x'"):
        review.new_session("99_x")


def test_widget_buttons_drive_the_session():
    r = review.Review(CHAPTER, progress_file=None)
    n = r.session.total
    assert r.known_button.disabled  # no marking before the answer is seen
    r.flip_button.click()
    assert not r.known_button.disabled and "Answer" in r.face.value
    r.again_button.click()
    assert r.session.again == 1 and "Question" in r.face.value and "1 sent round again" in r.progress.value
    while not r.session.done:
        r.flip_button.click()
        r.known_button.click()
    assert len(r.session.known) == n and r.flip_button.disabled and "All" in r.progress.value


def test_widget_shows_a_cards_figure_only_on_its_back_with_its_words():
    figure_card = next(c for c in ALL if c.figure)
    r = review.Review(figure_card.chapter, progress_file=None)
    while r.session.current.id != figure_card.id:
        r.session.mark(True)
    r._render()
    assert r.figure.layout.display == "none" and r.figure_caption.layout.display == "none"
    r.flip_button.click()
    assert bytes(r.figure.value).startswith(b"\x89PNG") and r.figure.layout.display is None
    # ipywidgets' Image has no alt text: a caption beside it, hidden from sight, says what it shows.
    caption = r.figure_caption.value
    assert r.figure_caption in r.widget.children and r.figure_caption.layout.display is None
    assert html.escape(figure_alt(figure_card.figure)) in caption and "clip:rect(0,0,0,0)" in caption


def focus_requests(r, monkeypatch) -> list[str]:
    """The buttons the reviewer asks the browser to focus, in order (ipywidgets sends {"do": "focus"})."""
    asked = []
    for name in ("flip_button", "known_button", "again_button", "restart_button"):
        monkeypatch.setattr(getattr(r, name), "send", lambda msg, buffers=None, name=name:
                            asked.append(name) if msg == {"do": "focus"} else None)
    return asked


def test_keyboard_focus_goes_on_to_the_next_step_after_a_mark(monkeypatch):
    """Known and Again are disabled once pressed (until the next card is turned), which would drop
    the focus to the page: it moves to Flip, and to Start over after the last card."""
    r = review.Review(CHAPTER, progress_file=None)
    asked = focus_requests(r, monkeypatch)
    r.flip_button.click()
    assert asked == []  # Flip stays enabled and keeps the focus
    r.again_button.click()
    assert asked == ["flip_button"] and r.again_button.disabled and not r.flip_button.disabled
    r.flip_button.click()
    r.known_button.click()
    assert asked == ["flip_button", "flip_button"]
    while len(r.session.queue) > 1:
        r.session.mark(True)
    r.flip_button.click()
    r.known_button.click()
    assert r.session.done and asked[-1] == "restart_button" and r.flip_button.disabled
    assert not r.restart_button.disabled


def test_progress_line_is_a_polite_live_region():
    r = review.Review(CHAPTER, progress_file=None)
    n = r.session.total
    r.flip_button.click()
    r.again_button.click()
    live = re.fullmatch(r'<span role="status" aria-live="polite">(.*)</span>', r.progress.value)
    assert live and html.unescape(live.group(1)) == f"0 of {n} known · {n} to go · 1 sent round again"


def test_progress_is_saved_and_resumed_and_start_over_forgets_it(tmp_path):
    progress = tmp_path / "review.json"
    progress.write_text(json.dumps({"known": ["a_card_of_another_chapter"]}))
    r = review.Review(CHAPTER, progress_file=progress)
    first, n = r.session.current, r.session.total
    r.flip_button.click()
    r.known_button.click()
    assert set(json.loads(progress.read_text())["known"]) == {first.id, "a_card_of_another_chapter"}

    again = review.Review(CHAPTER, progress_file=progress)  # the next session
    assert [c.id for c in again.session.known] == [first.id] and again.session.total == n
    assert first.id not in [c.id for c in again.session.queue]
    assert f">1 of {n} known" in again.progress.value
    again.restart_button.click()
    assert again.session.known == [] and len(again.session.queue) == n
    assert json.loads(progress.read_text())["known"] == ["a_card_of_another_chapter"]


def test_a_damaged_progress_file_costs_the_progress_not_the_review(tmp_path):
    bad = tmp_path / "review.json"
    bad.write_text("{not json")
    assert review.Review(CHAPTER, progress_file=bad).session.known == []


def test_show_displays_the_reviewer_once_in_a_kernel(tmp_path):
    """The documented call, in a real kernel: one widget output, not two."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from chalk.teaching.review import Review\nReview({CHAPTER!r}, progress_file=None).show()")])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    views = [o for o in nb.cells[0].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 1, nb.cells[0].outputs


def test_bundle_holds_every_card_and_figure_for_the_student_package(tmp_path, monkeypatch):
    review.write_bundle(tmp_path / "deck")
    data = json.loads((tmp_path / "deck" / "cards.json").read_text())
    assert [d["chapter"] for d in data] == [d.chapter for d in DECKS]
    # A package without the decks reads the bundle: the same cards, numbers filled in, and figures.
    monkeypatch.setattr(review, "DECK_DIR", tmp_path / "no-decks-here")
    monkeypatch.setattr(review, "BUNDLE", tmp_path / "deck")
    assert review.cards() == ALL
    words = json.loads((tmp_path / "deck" / "figures.json").read_text())
    for card in ALL:
        if card.figure:
            assert review.figure_png(card.figure) == render_figure(card.figure)
            assert words[card.figure] == figure_alt(card.figure)
    monkeypatch.setattr(review, "figure_alt", lambda name: pytest.fail(f"{name}: drawn, not read from the bundle"))
    assert all(review.figure_words(f) == words[f] for f in words)
    assert review.Review(CHAPTER, progress_file=None).session.total == len(DECKS[0].cards)
