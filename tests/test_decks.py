"""Anki packages and the TSV: they open as Anki collections with every card and figure, keep
their ids when cards change (so re-imports update), and are byte-for-byte reproducible."""
import json
import sqlite3
import zipfile

import pytest
import yaml

from chalk.errors import ChalkError
from chalk.teaching import decks, plain
from chalk.teaching.chapters import ROOT
from chalk.teaching.flashcards import DECK_DIR, load_decks, render_figure

COURSE_DECKS = load_decks()
CARDS = [c for d in COURSE_DECKS for c in d.cards]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("decks")
    return out, decks.build(out)


def collection(apkg, tmp_path):
    """(sqlite connection to collection.anki2, {media name: bytes}) of a package."""
    with zipfile.ZipFile(apkg) as zf:
        (tmp_path / "collection.anki2").write_bytes(zf.read("collection.anki2"))
        names = json.loads(zf.read("media"))
        media = {name: zf.read(index) for index, name in names.items()}
    return sqlite3.connect(tmp_path / "collection.anki2"), media


def test_one_package_per_chapter_plus_the_course_and_a_tsv(built):
    out, paths = built
    names = {p.name for p in paths}
    assert names == {f"chalk_{d.chapter}.apkg" for d in COURSE_DECKS} | {"chalk.apkg", "chalk_cards.tsv"}


def test_course_package_is_an_anki_collection_with_every_card_and_figure(built, tmp_path):
    db, media = collection(built[0] / "chalk.apkg", tmp_path)
    assert db.execute("select count(*) from notes").fetchone()[0] == len(CARDS)
    assert db.execute("select count(*) from cards").fetchone()[0] == len(CARDS)
    figures = {c.figure for c in CARDS if c.figure}
    assert figures, "the course has figure cards"
    assert set(media) == {decks.media_name(f) for f in figures}
    for figure in figures:
        assert media[decks.media_name(figure)] == render_figure(figure)
    backs = [flds.split("\x1f")[1] for (flds,) in db.execute("select flds from notes")]
    assert sum(f'<img src="{decks.media_name(f)}">' in b for b in backs for f in figures) == \
        sum(1 for c in CARDS if c.figure)
    fields = dict(db.execute("select guid, flds from notes"))
    assert any(r"\(" in f for f in fields.values())  # math in \(...\), the delimiters Anki's MathJax reads
    by_guid = {note.guid: card.id for card, note in ((c, decks.note(c)) for c in CARDS)}
    unrendered = [by_guid[g] for g, f in fields.items() if "$" in f.replace(r"\$", "")]
    assert not unrendered, f"cards whose $...$ math did not become \\(...\\): {unrendered}"


def test_chapter_package_holds_its_chapter(built, tmp_path):
    deck = COURSE_DECKS[0]
    db, _ = collection(built[0] / f"chalk_{deck.chapter}.apkg", tmp_path)
    assert db.execute("select count(*) from notes").fetchone()[0] == len(deck.cards)
    deck_names = [d["name"] for d in json.loads(db.execute("select decks from col").fetchone()[0]).values()]
    assert f"Chalk::{deck.title}" in deck_names


def test_packages_are_reproducible(built, tmp_path):
    out, paths = built
    for first, second in zip(paths, decks.build(tmp_path)):
        assert first.read_bytes() == second.read_bytes(), first.name


def test_ids_survive_an_edit_so_reimports_update(tmp_path, monkeypatch):
    edited = tmp_path / "decks"
    edited.mkdir()
    for path in DECK_DIR.glob("*.yml"):
        (edited / path.name).write_text(path.read_text().replace("Sequences.", "Sequences (edited)."))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "2000000000")
    decks.build(tmp_path / "a", edited)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    decks.build(tmp_path / "b")

    def ids(folder):
        db, _ = collection(folder / "chalk.apkg", folder)
        notes = dict(db.execute("select guid, flds from notes"))
        return notes, db.execute("select models, decks from col").fetchone(), db
    (edited_notes, (models_a, decks_a), db_a), (notes, (models_b, decks_b), _) = ids(tmp_path / "a"), ids(tmp_path / "b")
    assert set(edited_notes) == set(notes) and edited_notes != notes
    assert set(json.loads(models_a)) == set(json.loads(models_b))
    assert set(json.loads(decks_a)) == set(json.loads(decks_b))
    assert {m for (m,) in db_a.execute("select mod from notes")} == {2000000000}


def test_tsv_has_one_line_per_card_front_tab_back_in_the_packages_html(built, tmp_path):
    lines = (built[0] / "chalk_cards.tsv").read_text().splitlines()
    assert len(lines) == len(CARDS)
    assert all(line.count("\t") == 1 for line in lines)
    db, _ = collection(built[0] / "chalk.apkg", tmp_path)
    anki = {guid: flds.split("\x1f") for guid, flds in db.execute("select guid, flds from notes")}
    for card, line in zip(CARDS, lines):
        front, back = line.split("\t")
        anki_front, anki_back = anki[decks.note(card).guid]
        assert front == " ".join(anki_front.split())  # the same HTML as the Anki package
        assert back.startswith(" ".join(anki_back.split("<img")[0].split()))
    bold = [c for c in CARDS if "**" in c.front + c.back]
    assert bold, "the course has cards with bold text to convert"
    text = "\n".join(lines)
    assert "**" not in text and "<strong>" in text and "\\(" in text and "$" not in text.replace("\\$", "")


def test_every_anki_back_links_to_its_section_on_the_site(tmp_path):
    out = decks.build(tmp_path, site="https://example.org/chalk/")
    db, _ = collection(tmp_path / "chalk.apkg", tmp_path)
    backs = {guid: flds.split("\x1f")[1] for guid, flds in db.execute("select guid, flds from notes")}
    for card in CARDS:
        page = card.chapter + ("-deeper" if card.page == "deeper" else "")  # a section of its Going deeper page
        href = f"https://example.org/chalk/notebooks/{page}.html#{card.section}"
        assert f'Read: <a href="{href}">Chapter {int(card.chapter[:2])}, ' in backs[decks.note(card).guid], card.id
    tsv = (tmp_path / "chalk_cards.tsv").read_text()
    assert tsv.count('<p class="chalk-read">Read: <a href="https://example.org/chalk/notebooks/') == len(CARDS)
    assert out[-1].name == "chalk_cards.tsv"


def test_the_decks_and_the_student_edition_link_to_the_same_site(monkeypatch):
    """One setting for the site's address: html: baseurl, overridden by CHALK_SITE_URL for both."""
    card = next(c for c in CARDS if c.id == "balance_batch_formula")
    monkeypatch.delenv("CHALK_SITE_URL", raising=False)
    configured = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["baseurl"].rstrip("/")
    assert configured.startswith("https://")
    assert decks.section_link(card, decks.default_site()) == f"{configured}/notebooks/01_batching.html#the-balance-batch"
    assert plain.base_url(ROOT) == configured + "/"
    monkeypatch.setenv("CHALK_SITE_URL", "https://example.org/course/")
    assert decks.section_link(card, decks.default_site()) == \
        "https://example.org/course/notebooks/01_batching.html#the-balance-batch"
    assert plain.base_url(ROOT) == "https://example.org/course/"
    monkeypatch.setenv("CHALK_SITE_URL", "example.org/course")
    with pytest.raises(ChalkError, match="CHALK_SITE_URL must be the site's address"):
        decks.default_site()


def test_stable_id_is_in_ankis_range_and_depends_on_the_name():
    assert decks.stable_id("Chalk", "deck", "01_batching") == decks.stable_id("Chalk", "deck", "01_batching")
    assert decks.stable_id("Chalk", "deck", "01_batching") != decks.stable_id("Chalk", "deck", "02_x")
    assert 1 << 30 <= decks.stable_id("anything") < 1 << 31
