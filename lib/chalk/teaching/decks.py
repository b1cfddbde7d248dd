"""Export the flashcard decks: Anki packages (one per chapter, one for the course) and a TSV.

    python -m chalk.teaching.decks --out _build/decks

Ids are hashes of names (model, deck per chapter, note per card id), so importing a newer package
updates the cards already in a student's Anki rather than adding copies. Packages are
reproducible: genanki's timestamps are pinned and its zip is rewritten with fixed entry dates, so
the same sources give the same bytes. Card faces are the flashcards page's HTML, math in
``\\(...\\)`` as Anki's MathJax expects; figures travel inside the package as media files.

Each back ends with a link to the chapter section that explains the card. Anki has no site of its
own, so the link is absolute: ``--site`` gives the site's address, else the course's one setting for
it (``CHALK_SITE_URL`` when set, else ``html: baseurl`` in ``_config.yml``; see ``plain.base_url``).
"""
import argparse
import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import genanki

from .package import ZIP_TIME
from ..errors import ChalkError
from . import plain
from .chapters import ROOT
from .flashcards import DECK_DIR, Card, Deck, card_html, load_decks, render_figure, section_html

COURSE = "Chalk"
_PACKAGE = Path(__file__).resolve().parents[1]
_CSS = """.card { font-family: sans-serif; font-size: 18px; text-align: left; max-width: 40em; margin: auto; }
img { display: block; max-width: 100%; margin: 0.5em auto; }"""


def stable_id(*names: str) -> int:
    """An Anki id from names: the same names always give the same id, in Anki's usual range."""
    digest = hashlib.sha256("::".join(names).encode()).digest()
    return (1 << 30) + int.from_bytes(digest[:8], "big") % (1 << 30)


MODEL = genanki.Model(
    stable_id(COURSE, "model"), f"{COURSE} card",
    fields=[{"name": "Front"}, {"name": "Back"}],
    templates=[{"name": "Card", "qfmt": "{{Front}}", "afmt": '{{FrontSide}}<hr id="answer">{{Back}}'}],
    css=_CSS)


def default_site() -> str:
    """The site the cards link to: the one the student edition links to (``plain.base_url``)."""
    return plain.base_url(ROOT).rstrip("/")


def section_link(card: Card, site: str) -> str:
    """The card's section on the site at ``site``, as an absolute address."""
    page = card.chapter + ("-deeper" if card.page == "deeper" else "")
    return f"{site.rstrip('/')}/notebooks/{page}.html" + (f"#{card.section}" if card.section else "")


def back_html(card: Card, site: str) -> str:
    """A card's back as Anki and the TSV show it: the answer, then the link to its section."""
    return card_html(card.back) + section_html(card, section_link(card, site))


def media_name(figure: str) -> str:
    """The file name of a figure in Anki's media folder, which all decks share: hence the prefix."""
    return f"chalk_{figure}.png"


def note(card: Card, site: str | None = None) -> genanki.Note:
    back = back_html(card, site or default_site())
    if card.figure:
        back += f'<img src="{media_name(card.figure)}">'
    return genanki.Note(model=MODEL, fields=[card_html(card.front), back], guid=genanki.guid_for(COURSE, card.id),
                        tags=[t.replace(" ", "_") for t in (*card.tags, card.chapter)])


def anki_deck(deck: Deck, site: str) -> genanki.Deck:
    out = genanki.Deck(stable_id(COURSE, "deck", deck.chapter), f"{COURSE}::{deck.title}")
    for card in deck.cards:
        out.add_note(note(card, site))
    return out


def source_time(decks) -> int:
    """The time written into notes: ``SOURCE_DATE_EPOCH`` if set, else the newest source's mtime.

    Anki updates an imported note only when it is newer than the one it has, so the time must
    grow when a card changes (a deck, or the library that computes its numbers), yet stay the
    same when nothing changed.
    """
    if "SOURCE_DATE_EPOCH" in os.environ:
        return int(os.environ["SOURCE_DATE_EPOCH"])
    sources = [d.path for d in decks] + [p for p in _PACKAGE.rglob("*") if p.suffix in (".py", ".toml")]
    return int(max(p.stat().st_mtime for p in sources))


def write_package(decks, dest: Path, timestamp: int, site: str) -> Path:
    """One ``.apkg`` holding ``decks`` and their figures, byte-for-byte reproducible."""
    figures = sorted({c.figure for d in decks for c in d.cards if c.figure})
    with tempfile.TemporaryDirectory() as tmp:
        media = []
        for figure in figures:
            path = Path(tmp) / media_name(figure)
            path.write_bytes(render_figure(figure))
            media.append(str(path))
        raw = Path(tmp) / "raw.apkg"
        genanki.Package([anki_deck(d, site) for d in decks], media_files=media).write_to_file(raw, timestamp=timestamp)
        # genanki dates its zip entries from the temporary files; rewrite them with a fixed date
        with zipfile.ZipFile(raw) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
            for info in src.infolist():
                fixed = zipfile.ZipInfo(info.filename, ZIP_TIME)
                fixed.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(fixed, src.read(info))
    return dest


def _one_line(text: str) -> str:
    return " ".join(text.split())


def write_tsv(decks, dest: Path, site: str) -> Path:
    """Front and back, one card per line, tab between, each face the HTML of the Anki packages
    (bold as ``<strong>``, math in ``\\(...\\)``): what Anki's text import reads with HTML allowed."""
    lines = []
    for deck in decks:
        for card in deck.cards:
            back = back_html(card, site) + (f"<p>[figure: {card.figure}, in the Anki packages]</p>" if card.figure else "")
            lines.append(f"{_one_line(card_html(card.front))}\t{_one_line(back)}\n")
    dest.write_text("".join(lines), encoding="utf-8")
    return dest


def build(out: Path, deck_dir: Path = DECK_DIR, site: str | None = None) -> list[Path]:
    """Every chapter's package, the course package and the TSV, written to ``out``; the cards link
    to their sections on the site at ``site`` (``default_site()`` when None)."""
    decks = load_decks(deck_dir)
    site = site or default_site()
    out.mkdir(parents=True, exist_ok=True)
    stamp = source_time(decks)
    written = [write_package([d], out / f"chalk_{d.chapter}.apkg", stamp, site) for d in decks]
    written.append(write_package(decks, out / "chalk.apkg", stamp, site))
    written.append(write_tsv(decks, out / "chalk_cards.tsv", site))
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Export the flashcards as Anki packages and a TSV.")
    parser.add_argument("--out", type=Path, default=Path("_build/decks"), help="folder for the files")
    parser.add_argument("--site", help="the course site's address, for the links to each card's section "
                        "(default: $CHALK_SITE_URL, else html: baseurl in _config.yml)")
    args = parser.parse_args(argv)
    try:
        for path in build(args.out, site=args.site):
            print(f"{path} ({path.stat().st_size:,} bytes)")
    except (ChalkError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
