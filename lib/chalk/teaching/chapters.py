"""The course's chapters, found from their files, and the links between a chapter's pages.

A chapter is a name ``NN_topic`` (``"01_batching"``) shared by its files:

* ``notebooks/NN_topic.ipynb``, the chapter; ``notebooks/NN_topic-deeper.ipynb``, its "Going
  deeper" page (the reconciliations, simulations and sensitivity studies the main line links to);
  ``exercises/NN_topic.ipynb``, its problem set;
* ``exercises/flashcards/NN_topic.yml``, its deck;
* ``chalk.teaching.problems.chNN_topic``, its answer key; ``chalk.teaching.cards.chNN_topic``, the
  numbers and figures of its cards.

Nothing lists the chapters in code: every consumer (grader, decks, student edition, corrections
page) discovers them from these files, so a new chapter is picked up by adding its files.
"""
import html
import json
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import lookup

ROOT = Path(__file__).resolve().parents[3]
"""The repository (the library is installed editable from ``lib/``)."""

PLANNED = {
    "01_batching": "How batch size sets token cost and speed",
    "02_moe_racks": "How MoE models are laid out across racks",
    "03_pipelining": "Pipeline parallelism across racks",
    "04_memory_capacity": "Why pipelining is not wise: capacity against bandwidth",
    "05_overtraining": "RL and over-training past Chinchilla",
    "06_long_context_pricing": "Long-context costs from API prices",
    "07_ciphers_revnets": "Neural nets, ciphers and RevNets",
}
"""The syllabus's chapters, so that material for a chapter not yet written can name it."""

_NAME = re.compile(r"\d\d_\w+")
_MODULE = re.compile(r"ch(\d\d_\w+)")


def chapter_modules(package: ModuleType) -> dict[str, str]:
    """``{chapter: module name}`` of the per-chapter modules ``chNN_topic`` in ``package``."""
    return {m.group(1): f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
            if (m := _MODULE.fullmatch(info.name))}


@dataclass(frozen=True)
class Chapter:
    name: str
    """``NN_topic``, the stem of every file of the chapter."""
    root: Path = ROOT

    @property
    def number(self) -> int:
        return int(self.name[:2])

    @property
    def notebook(self) -> Path:
        return self.root / "notebooks" / f"{self.name}.ipynb"

    @property
    def deeper(self) -> Path:
        """The chapter's "Going deeper" page; the hyphen keeps it out of the chapter names."""
        return self.root / "notebooks" / f"{self.name}-deeper.ipynb"

    @property
    def problem_set(self) -> Path:
        return self.root / "exercises" / f"{self.name}.ipynb"

    @property
    def deck(self) -> Path:
        return self.root / "exercises" / "flashcards" / f"{self.name}.yml"

    @property
    def written(self) -> bool:
        return self.notebook.exists()

    @property
    def title(self) -> str:
        """The notebook's first heading (without the chapter number it starts with) once it is
        written, else the syllabus's title."""
        if self.written:
            for source in markdown_cells(self.notebook):
                if m := re.search(r"^# (?:\d+\. )?(.+)$", source, re.M):
                    return m.group(1).strip()
        return PLANNED.get(self.name, self.name)

    def url(self, page: str = "chapter", anchor: str = "") -> str:
        """The site address of one of the chapter's pages, from a page one folder deep (as every
        chapter, problem set and book page is)."""
        path = {"chapter": f"../notebooks/{self.name}.html", "deeper": f"../notebooks/{self.name}-deeper.html",
                "problems": f"../exercises/{self.name}.html",
                "cards": f"../book/flashcards.html#deck-{self.name}"}
        return lookup("page", page, path, param="page") + (f"#{anchor}" if anchor else "")


def markdown_cells(notebook: Path) -> list[str]:
    """The text of each Markdown cell of a notebook, in order. Read as plain JSON: importing
    nbformat costs a kernel seconds (jsonschema's format checkers), and nothing here needs it."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "markdown"]


def chapters(root: Path = ROOT) -> list[Chapter]:
    """Every chapter the syllabus plans or the tree holds a file of, in chapter order."""
    files = [*root.glob("notebooks/*.ipynb"), *root.glob("exercises/*.ipynb"), *root.glob("exercises/flashcards/*.yml")]
    names = set(PLANNED) | {p.stem for p in files if _NAME.fullmatch(p.stem)}
    return [Chapter(n, root) for n in sorted(names)]


def links(chapter: str, root: Path = ROOT) -> str:
    """HTML for the foot of a chapter: "Going deeper · Problem set · Flashcards", each shown only if
    it exists.

    Call it in a code cell of the chapter notebook (``HTML(links("01_batching"))``); the
    addresses are the website's.
    """
    ch = lookup("chapter", chapter, {c.name: c for c in chapters(root)}, param="chapter")
    items = [(ch.url("deeper"), "Going deeper")] if ch.deeper.exists() else []
    items += [(ch.url("problems"), "Problem set")] if ch.problem_set.exists() else []
    items += [(ch.url("cards"), "Flashcards")] if ch.deck.exists() else []
    anchors = " · ".join(f'<a href="{html.escape(href)}">{text}</a>' for href, text in items)
    return f'<p class="chalk-links"><strong>Chapter {ch.number}:</strong> {anchors}</p>' if items else ""


_TABLE_ROW = re.compile(r"^\s*\|")
_DIRECTIVE_OPTION = re.compile(r"^\s*:\w[\w-]*:")
_ROLE = re.compile(r"\{\w+\}`[^`]*`")


def prose_words(notebook: Path) -> int:
    """The words a reader reads in a notebook's Markdown: fenced code, display math, table rows and
    directive options are left out; an ``{eval}`` number or any other role counts as one word."""
    words = 0
    for source in markdown_cells(notebook):
        skip = None  # the fence or "$$" that opened the block being skipped
        for line in source.splitlines():
            stripped = line.strip()
            if skip:
                if stripped.startswith(skip):
                    skip = None
                continue
            if m := re.match(r"`{3,}|~{3,}", stripped):  # the course writes directives with colons
                skip = m.group(0)
                continue
            if stripped.startswith("$$"):
                if not (len(stripped) > 2 and stripped.endswith("$$")):
                    skip = "$$"
                continue
            if _TABLE_ROW.match(line) or _DIRECTIVE_OPTION.match(line):
                continue
            line = re.sub(r"^\s*(:{3,}(\{[\w-]+\})?|#{1,6}\s)", "", line)  # a directive's title and a heading's words count
            words += len(_ROLE.sub("N", line).split())
    return words
