"""The review mode: the queue logic, the widget driven by clicking its buttons, progress saved
between sessions, and the cards the student package carries instead of the decks."""
import json
import nbformat
import pytest
from nbclient import NotebookClient

from chalk.errors import ChalkError
from chalk.teaching import review
from chalk.teaching.flashcards import load_decks, render_figure

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


def test_widget_shows_a_cards_figure_only_on_its_back():
    figure_card = next(c for c in ALL if c.figure)
    r = review.Review(figure_card.chapter, progress_file=None)
    while r.session.current.id != figure_card.id:
        r.session.mark(True)
    r._render()
    assert r.figure.layout.display == "none"
    r.flip_button.click()
    assert bytes(r.figure.value).startswith(b"\x89PNG") and r.figure.layout.display is None


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
    assert again.progress.value.startswith(f"1 of {n} known")
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
    for card in ALL:
        if card.figure:
            assert review.figure_png(card.figure) == render_figure(card.figure)
    assert review.Review(CHAPTER, progress_file=None).session.total == len(DECKS[0].cards)
