"""Card figures are drawn once per version of the library: ``flashcards.FIGURE_CACHE`` keeps each
drawn figure under a hash of everything it is drawn from, for the other processes that show it."""
import pytest

from chalk.teaching import flashcards

NAME = "ch07_memory"


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """An empty cache in tmp_path, and a list that grows by one each time the figure is drawn."""
    monkeypatch.setattr(flashcards, "FIGURE_CACHE", tmp_path / "cards")
    draws, draw = [], flashcards.FIGURES[NAME]
    monkeypatch.setitem(flashcards.FIGURES, NAME, lambda: draws.append(1) or draw())
    flashcards._drawn.cache_clear()  # each call below stands for a new process
    yield draws
    flashcards._drawn.cache_clear()


def test_a_second_process_reads_the_figure_the_first_drew(counted):
    png, alt = flashcards.render_figure(NAME), flashcards.figure_alt(NAME)
    flashcards._drawn.cache_clear()
    assert (flashcards.render_figure(NAME), flashcards.figure_alt(NAME)) == (png, alt)
    assert len(counted) == 1
    assert len(list(flashcards.FIGURE_CACHE.glob(f"{NAME}-*.json"))) == 1


def test_a_change_to_the_library_draws_it_again_and_drops_the_old_entry(counted, monkeypatch):
    flashcards.render_figure(NAME)
    old = {p.name for p in flashcards.FIGURE_CACHE.iterdir()}
    flashcards._drawn.cache_clear()
    monkeypatch.setattr(flashcards, "_library_digest", lambda: "0" * 32)
    flashcards.render_figure(NAME)
    assert len(counted) == 2
    new = {p.name for p in flashcards.FIGURE_CACHE.iterdir()}
    assert new == {f"{NAME}-{'0' * 32}.json"} and not new & old


def test_the_digest_covers_the_catalog_data_and_the_figure_code(tmp_path, monkeypatch):
    """Its inputs, checked on a copy of the package: editing a data file or a figure module changes it."""
    import shutil
    copy = tmp_path / "chalk"
    shutil.copytree(flashcards.Path(flashcards.__file__).parents[1], copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(flashcards, "__file__", str(copy / "teaching" / "flashcards.py"))
    digests = []
    for edit in (None, "catalog/data/chips.toml", "figures/canvas.py"):
        if edit:
            (copy / edit).write_text((copy / edit).read_text() + "\n# edited\n")
        flashcards._library_digest.cache_clear()
        digests.append(flashcards._library_digest())
    flashcards._library_digest.cache_clear()
    assert len(set(digests)) == 3


def test_an_unknown_figure_is_refused_before_the_cache_is_read(counted):
    with pytest.raises(flashcards.ChalkError, match="ch07_memory"):
        flashcards.render_figure("ch07_memroy")
