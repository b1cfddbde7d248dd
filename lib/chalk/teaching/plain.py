"""Plain notebooks: the course's MyST notebooks as Markdown and code that any Jupyter front end reads.

The chapters and problem sets are written in MyST for the site: ``{eval}`` roles print the numbers
the kernel computes, admonitions box and fold text, ``{term}`` links the glossary. JupyterLab
without jupyterlab-myst, Notebook 7, VS Code and Colab show that markup as typed. For the student
edition (``chalk.teaching.edition``) each notebook is run once (``run``, cached under ``_build/``)
and written again (``notebook``) with

* every ``{eval}`` replaced by the text the site shows: the value's ``text/plain`` without its
  quotes, evaluated after the cells above it ran, as MyST-NB's inline execution does;
* admonitions as headed blockquotes, and folded ones (``:class: dropdown``) as HTML ``<details>``;
* ``{term}`` and ``{cite}`` roles, and links to pages outside the edition (``../book/*.md``), as
  links to the published site (``html: baseurl`` in ``_config.yml``); links between the edition's
  notebooks stay relative;
* ``(label)=`` targets, ``+++`` breaks, ``%`` comments and directive options removed, and the
  ``math``, ``figure``, ``image`` and code directives in their Markdown form;
* outputs as the site shows them (none for a ``remove-output`` cell; ``hide-input`` code folded
  with Jupyter's ``source_hidden``), without widget state, memory addresses, or the static twin of
  an explorer, which needs the site's script.

A role or directive with no plain form raises ``PlainError`` naming it, so that a new construct
cannot reach a student as raw markup.
"""
import ast
import copy
import fcntl
import hashlib
import html
import json
import os
import posixpath
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..errors import ChalkError
from .chapters import ROOT


class PlainError(ChalkError):
    """MyST with no plain form, a link the edition cannot resolve, or a number the kernel did not give."""


# ---- the published site ------------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    """Where links go: ``base``, the published site's address (ending in ``/``); ``terms``, each
    glossary term (lower case, as Sphinx matches them) with its anchor on the glossary page;
    ``citations``, each bibliography key with its author-year label; ``shipped``, the paths from the
    repository root of the notebooks the edition holds, which links reach as files; ``headings``,
    for each of them, the site's id of each heading with the id JupyterLab gives it."""
    base: str
    terms: dict
    citations: dict
    shipped: frozenset
    headings: dict = field(default_factory=dict)

    def section(self, notebook: str, anchor: str, page: str) -> str:
        """The id JupyterLab gives the heading the site calls ``anchor`` in ``notebook``: a link
        keeping the site's id would open the notebook at its top (JupyterLab's ids keep case and
        punctuation)."""
        found = self.headings.get(notebook, {}).get(anchor)
        if found is None:
            raise PlainError(f"{page}: the link to #{anchor} names no heading of {notebook}")
        return found

    def link(self, href: str, page: str) -> str:
        """``href`` as written in ``page`` (a path from the root) to where a student's copy of that
        page must point: a notebook of the edition relatively, any other page of the course on the
        site, an address or an anchor on the same page unchanged."""
        if _ABSOLUTE.match(href):
            return href
        if href.startswith("#"):
            return "#" + self.section(page, href[1:], page) if page in self.headings else href
        path, sep, anchor = href.partition("#")
        folder = posixpath.dirname(page)
        target = posixpath.normpath(posixpath.join(folder, path))
        stem, ext = posixpath.splitext(target)
        if target.startswith("../") or ext not in (".ipynb", ".md", ".html"):
            raise PlainError(f"{page}: the link {href!r} is neither a page of the course nor a notebook "
                             "of the edition")
        if stem + ".ipynb" in self.shipped:
            return posixpath.relpath(stem + ".ipynb", folder) + (sep + self.section(stem + ".ipynb", anchor, page)
                                                                if anchor else "")
        return f"{self.base}{stem}.html{sep}{anchor}"

    def term(self, text: str, page: str) -> str:
        """A ``{term}`` role's text (``word`` or ``shown <term>``) as a link to its glossary entry."""
        shown, target = _split_target(text)
        key = " ".join(target.split()).lower()
        if key not in self.terms:
            raise PlainError(f"{page}: {{term}}`{text}` names no entry of book/glossary.md")
        return f"[{shown}]({self.base}book/glossary.html#{self.terms[key]})"

    def cite(self, role: str, keys: str, page: str) -> str:
        """A ``{cite}`` role as the chapters write citations by hand: "Author et al., Year" linked to
        the references page (``{cite:t}``: "Author et al. (Year)")."""
        labels = []
        for key in (k.strip() for k in keys.split(",")):
            if key not in self.citations:
                raise PlainError(f"{page}: {{{role}}}`{keys}` cites {key!r}, which book/references.bib lacks")
            authors, year = self.citations[key]
            labels.append(f"{authors} ({year})" if role.startswith("cite:t") else f"{authors}, {year}")
        return f"[{'; '.join(labels)}]({self.base}book/references.html)"


_ABSOLUTE = re.compile(r"^[a-zA-Z][\w+.-]*:")


def _split_target(text: str) -> tuple[str, str]:
    """``shown <target>`` → (shown, target); ``word`` → (word, word)."""
    if m := re.fullmatch(r"(.*?)\s*<([^<>]+)>", text, re.S):
        return m[1], m[2]
    return text, text


def glossary_terms(text: str) -> dict[str, str]:
    """``{term, lower case: anchor}`` of the ``{glossary}`` directive in ``text``: a term is a line
    that is not indented; its anchor is the id Sphinx gives it (``term-`` and the term, made an id)."""
    from sphinx.util.nodes import _make_id  # the site's own id rule; Sphinx is there wherever the site builds

    m = re.search(r"^(`{3,}|:{3,})\{glossary\}[^\n]*\n(.*?)^\1\s*$", text, re.S | re.M)
    if not m:
        raise PlainError("book/glossary.md holds no {glossary} directive")
    return {" ".join(line.split()).lower(): _make_id("term-" + line.strip())
            for line in m[2].splitlines() if line.strip() and not line[0].isspace()
            and not _OPTION.match(line)}


def citations(bib: Path) -> dict[str, tuple[str, str]]:
    """``{key: (authors, year)}`` from a BibTeX file: "Last", "Last and Last" or "Last et al."."""
    from pybtex.database import parse_file  # sphinxcontrib-bibtex's parser, present wherever the site builds

    out = {}
    for key, entry in parse_file(str(bib)).entries.items():
        names = [" ".join(p.last_names).replace("{", "").replace("}", "")
                 for p in entry.persons.get("author", entry.persons.get("editor", []))]
        authors = names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2 else f"{names[0]} et al."
        out[key] = (authors, entry.fields.get("year", "n.d."))
    return out


SITE_URL_VARIABLE = "CHALK_SITE_URL"
"""Overrides ``html: baseurl`` for everything that links to the site (this edition, the decks)."""


def base_url(root: Path = ROOT) -> str:
    """The published site's address, ending in ``/``: ``$CHALK_SITE_URL`` when set (a course
    published elsewhere, or a local build for checking), else ``html: baseurl`` in ``_config.yml``,
    the one place the address is kept; the student edition and the flashcard decks both link there."""
    base = os.environ.get(SITE_URL_VARIABLE, "")
    where = SITE_URL_VARIABLE
    if not base:
        import yaml

        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
        base, where = (config.get("html") or {}).get("baseurl") or "", "_config.yml: html: baseurl"
    if not _ABSOLUTE.match(base):
        raise PlainError(f"{where} must be the site's address (https://... or file://...), not {base!r}")
    return base.rstrip("/") + "/"


_MATH = re.compile(r"(\$[^$]+\$)")


def lab_heading_id(heading: str) -> str:
    """The id JupyterLab gives a Markdown heading: the rendered heading's text with every space a
    hyphen (@jupyterlab/rendermime's ``createHeaderId``). Link and code marks and emphasis leave
    only their words; maths keeps its TeX and dollars, since the id is set before it is typeset."""
    words = []
    for part in _MATH.split(heading):
        if not _MATH.fullmatch(part):
            part = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", part)
            part = re.sub(r"`([^`]*)`", r"\1", part)
            part = html.unescape(re.sub(r"\*\*|__|(?<!\w)[*_]|[*_](?!\w)", "", part))
        words.append(part)
    return "".join(words).replace(" ", "-")


def site(root: Path = ROOT, shipped=()) -> Site:
    """The course's site as ``_config.yml``, the glossary and the bibliography describe it."""
    from .flashcards import chapter_sections

    headings = {page: {anchor: lab_heading_id(text) for anchor, text in chapter_sections(root / page).items()}
                for page in shipped}
    return Site(base_url(root), glossary_terms((root / "book" / "glossary.md").read_text(encoding="utf-8")),
                citations(root / "book" / "references.bib"), frozenset(shipped), headings)


# ---- Markdown ----------------------------------------------------------------------------------

ADMONITIONS = {"admonition": None, "note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important",
               "warning": "Warning", "caution": "Caution", "attention": "Attention", "danger": "Danger",
               "error": "Error", "seealso": "See also"}
"""Admonition directives and the title each shows (``admonition`` takes its title as argument)."""
ASIDES = ("margin", "sidebar", "topic", "epigraph", "pull-quote", "aside")
"""Directives the site sets beside or apart from the text: a blockquote here, headed by their argument."""
CODE = ("code", "code-block", "sourcecode")

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,}|:{3,})\s*(?:\{(?P<name>[^}\s]+)\}[ \t]*(?P<arg>.*?)|(?P<info>[^`{]*?))\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):(?:\s+(?P<value>.*?))?\s*$")
_DROPPED = re.compile(r"^\s*(?:\([^()\s]+\)=\s*|\+\+\+.*|%.*)$")
"""``(label)=`` targets, ``+++`` breaks and ``%`` comments: markup with nothing to show."""
_INLINE = re.compile(r"\{(?P<role>[\w:+.-]+)\}`(?P<text>[^`]*)`|(?P<ticks>`+)|\]\((?P<href>[^)\s]+)\)")
_SPECIAL = re.compile(r"([\\`*_\[\]<>$|~#])")
_QUOTED = re.compile(r"^([\"']).*\1$", re.S)
_EVAL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
"""The expressions an ``{eval}`` may hold: MyST-NB's default ``eval_name_regex``."""


def literal(text: str) -> str:
    """``text`` escaped so that Markdown shows it as typed (a price's ``$`` is not maths)."""
    return _SPECIAL.sub(r"\\\1", text)


def eval_names(source: str) -> list[str]:
    """The expressions of the ``{eval}`` roles in a Markdown cell, in order, each once."""
    names = []
    for m in _INLINE.finditer(source):
        if m["role"] == "eval" and m["text"] not in names:
            names.append(m["text"])
    return names


class Markdown:
    """One cell's MyST as plain Markdown: ``values`` are its ``{eval}`` texts, ``page`` the
    notebook's path from the root (for links and messages)."""

    def __init__(self, site: Site, page: str, values: dict | None = None):
        self.site, self.page, self.values = site, page, values or {}

    def convert(self, source: str) -> str:
        return "\n".join(self._blocks(source.splitlines())).strip("\n")

    def _blocks(self, lines: list[str]) -> list[str]:
        out, prose, i = [], [], 0

        def add(block, apart=False):  # a converted directive stands apart: Markdown would run a paragraph into it
            if out and not out[-1].strip():
                block = block[next((k for k, line in enumerate(block) if line.strip()), len(block)):]
            elif apart and out:
                out.append("")
            out.extend(block)

        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                if not _DROPPED.match(lines[i]):
                    prose.append(lines[i])
                i += 1
                continue
            if prose:
                add(self._inline("\n".join(prose)).split("\n"))
                prose = []
            end = self._closing(lines, i, m["fence"])
            if m["name"] is not None:  # its body and the block it becomes sit at the fence's indent
                indent = m["indent"]
                body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end]]
                add([indent + line if line.strip() else "" for line in self._directive(m["name"], m["arg"], body)],
                    apart=True)
                out.append("")
            elif m["fence"][0] == ":":
                raise PlainError(f"{self.page}: a ':::' fence without a directive name: {lines[i]!r}")
            else:  # code, shown as typed
                add(lines[i:end + 1])
            i = end + 1
        if prose:
            add(self._inline("\n".join(prose)).split("\n"))
        return out

    def _closing(self, lines: list[str], start: int, fence: str) -> int:
        close = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        for j in range(start + 1, len(lines)):
            if close.match(lines[j]):
                return j
        if fence[0] == ":" or _FENCE.match(lines[start])["name"] is not None:
            raise PlainError(f"{self.page}: {lines[start].strip()!r} is never closed")
        return len(lines)  # an open code fence runs to the end of the cell

    def _directive(self, name: str, arg: str, body: list[str]) -> list[str]:
        options, body = _options(body)
        folded = name == "dropdown" or "dropdown" in options.get("class", "").split()
        if name in ADMONITIONS or name == "dropdown":
            title = arg if name in ("admonition", "dropdown") else ADMONITIONS[name]
            if arg and name not in ("admonition", "dropdown"):
                body = [arg] + body
            content = _trim(self._blocks(body))
            if folded:
                summary = self._inline(title, escape=html.escape) if title else "Details"
                return ["<details>", f"<summary>{summary}</summary>", ""] + content + ["", "</details>"]
            return _quote(([f"**{self._inline(title)}**", ""] if title else []) + content)
        if name in ASIDES:
            return _quote(([f"**{self._inline(arg)}**", ""] if arg else []) + _trim(self._blocks(body)))
        if name == "math":
            return ["$$"] + _trim(([arg] if arg else []) + body) + ["$$"]
        if name in ("figure", "image"):
            caption = _trim(self._blocks(body)) if name == "figure" else []
            alt = options.get("alt") or " ".join(caption) or ""
            return [f"![{alt}]({self.site.link(arg, self.page)})"] + ([""] + caption if caption else [])
        if name in CODE:
            ticks = "`" * max(3, 1 + max((len(t) for t in re.findall(r"`+", "\n".join(body))), default=0))
            return [ticks + arg] + body + [ticks]
        raise PlainError(f"{self.page}: the directive {{{name}}} has no plain form in chalk.teaching.plain; "
                         "give it one there")

    def _inline(self, text: str, escape=literal) -> str:
        out, pos = [], 0
        while m := _INLINE.search(text, pos):
            out.append(text[pos:m.start()])
            pos = m.end()
            if m["ticks"]:  # a code span: copied as it is, roles and all
                close = re.compile(rf"(?<!`){m['ticks']}(?!`)").search(text, pos)
                end = close.end() if close else pos
                out.append(text[m.start():end])
                pos = end
            elif m["href"] is not None:
                out.append(f"]({self.site.link(m['href'], self.page)})")
            else:
                out.append(self._role(m["role"], m["text"], escape))
        return "".join(out) + text[pos:]

    def _role(self, role: str, text: str, escape) -> str:
        if role == "eval":
            if text not in self.values:
                raise PlainError(f"{self.page}: no value for {{eval}}`{text}`")
            return escape(self.values[text])
        if role == "term":
            return self.site.term(text, self.page)
        if role == "cite" or role.startswith("cite:"):
            return self.site.cite(role, text, self.page)
        if role == "math":
            return f"${text}$"
        if role in ("sub", "sup"):
            return f"<{role}>{text}</{role}>"
        if role == "abbr":
            return re.sub(r"\s*\(.*\)\s*$", "", text)  # "MoE (mixture of experts)": the abbreviation
        raise PlainError(f"{self.page}: the role {{{role}}} has no plain form in chalk.teaching.plain; "
                         "give it one there")


def _options(body: list[str]) -> tuple[dict, list[str]]:
    """A directive's ``:key: value`` lines (or YAML block between ``---`` lines) and the rest."""
    options, i = {}, 0
    if body and body[0].strip() == "---":
        import yaml

        end = body.index("---", 1) if "---" in body[1:] else 0
        options, i = yaml.safe_load("\n".join(body[1:end])) or {}, end + 1
    while i < len(body) and (m := _OPTION.match(body[i])):
        options[m["key"]] = m["value"] or ""
        i += 1
    return {k: str(v) for k, v in options.items()}, body[i:]


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _quote(lines: list[str]) -> list[str]:
    return ["> " + line if line.strip() else ">" for line in lines]


# ---- running a notebook ------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """What one execution of a notebook gave, by cell index: ``cells[i]`` is a code cell's
    ``{"outputs", "execution_count"}`` or a Markdown cell's ``{"values": {expression: text/plain}}``
    (the value's ``text/plain`` as the kernel gave it, quotes and all: ``shown`` is what the site
    prints); ``metadata``, what the kernel wrote into the notebook's metadata (``language_info``,
    and ``widgets`` when it drew any), so that the site can show a recorded run
    (``chalk.teaching.shared_runs``) as it shows a live one."""
    cells: list
    metadata: dict = field(default_factory=dict)


NOT_RUN = ("teaching/plain.py", "teaching/shared_runs.py", "teaching/problems/", "teaching/cards/")
"""Library files a run does not depend on, left out of its key as files: this module mostly converts
a run after the cache, and ``shared_runs`` mostly serves one (the code of theirs that makes or keeps
a run is in the key: ``RUN_CODE``); answer keys and the cards' numbers are read by no chapter, and a
problem set's checks, the only cells that read a key, ship no output. So a new chapter's key or
cards, or an edit to the Markdown converter, leave the other notebooks' runs valid."""

RUN_CODE = {"plain.py": ("run", "record", "evaluate"), "shared_runs.py": ("SharedRun",)}
"""Where the code of ``NOT_RUN``'s files that makes, records or keeps a run starts (the site's build
records one through ``shared_runs.SharedRun``): these definitions and every module-level name of
the same file they use, followed through (``run_code``), are part of every key, so a change to
what a run records runs every page again, with no format number or list to keep up by hand."""


def environment() -> str:
    """The installed distributions with their versions, one per line: a run's outputs depend on
    them too (another Matplotlib draws other bytes), so after an upgrade every page runs again."""
    from importlib import metadata

    return "\n".join(sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                              if d.metadata["Name"]}))


def run_code(teaching: Path = Path(__file__).resolve().parent) -> str:
    """The source of ``RUN_CODE``'s definitions in the folder ``teaching`` (by default this module's,
    the code that makes this process's runs) and of the module-level definitions of the same file
    that they use, directly or through one another; read without importing (``shared_runs`` needs
    MyST-NB)."""
    parts = []
    for name, roots in RUN_CODE.items():
        text = (teaching / name).read_text(encoding="utf-8")
        tops = {}
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                tops[node.name] = node
            elif isinstance(node, ast.Assign):
                tops.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
        missing = [r for r in roots if r not in tops]
        if missing:
            raise PlainError(f"{name}: RUN_CODE names {missing}, which it no longer defines")
        used, todo = set(), list(roots)
        while todo:
            if (top := todo.pop()) not in used:
                used.add(top)
                todo += [n.id for n in ast.walk(tops[top]) if isinstance(n, ast.Name) and n.id in tops]
        parts += [f"{name}:{top}\n{ast.get_source_segment(text, tops[top])}" for top in sorted(used)]
    return "\n".join(parts)


def library_digest(root: Path = ROOT) -> str:
    """A hash of what a notebook's run depends on besides the notebook: ``lib/chalk``'s code and
    catalog data (less ``NOT_RUN``), the code that makes a run (``run_code``), the Python version
    and the installed packages (``environment``)."""
    lib = root / "lib" / "chalk"
    digest = hashlib.sha256(f"{run_code()}\n{sys.version}\n{environment()}".encode())
    for path in sorted(p for p in lib.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        name = path.relative_to(lib).as_posix()
        if not name.startswith(NOT_RUN):
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_lock(cache: Path, name: str) -> Path:
    """The file held locked while the notebook ``name`` runs into ``cache`` (by ``run``, or by the
    site's build through ``chalk.teaching.shared_runs``)."""
    return Path(cache) / f"{name}.lock"


def cache_entry(cache: Path, name: str, nb, library: str | None = None) -> Path:
    """Where the run of ``nb`` under the name ``name`` is kept: ``<name>-<key>.json``, the key
    hashing the notebook and ``library`` (``library_digest()`` by default)."""
    key = hashlib.sha256(((library or library_digest()) + nbformat.writes(nb)).encode()).hexdigest()[:24]
    return Path(cache) / f"{name}-{key}.json"


def cached(entry: Path) -> Run | None:
    """The run kept at ``entry``, or None."""
    if not entry.is_file():
        return None
    kept = json.loads(entry.read_text(encoding="utf-8"))
    return Run(kept["cells"], kept["metadata"])


def keep(entry: Path, result: Run) -> None:
    """Write ``result`` to ``entry`` whole (a temporary file renamed into place) and remove the
    older runs of the same name."""
    name = entry.name.rsplit("-", 1)[0]
    for old in entry.parent.glob(f"{name}-*.json"):
        if re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{24}}\.json", old.name):
            old.unlink()
    fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"cells": result.cells, "metadata": result.metadata}, f)  # in the kernel's order, as a live page shows it
        os.replace(tmp, entry)
    except BaseException:
        os.unlink(tmp)
        raise


def run(nb, cwd: Path, cache: Path | None = None, name: str = "notebook", allow_errors: bool = False,
        library: str | None = None) -> Run:
    """Execute ``nb`` in a fresh kernel working in ``cwd`` and evaluate each Markdown cell's
    ``{eval}`` expressions once the cells above it ran. With ``cache`` (a folder) the result is kept
    there (``cache_entry``) and read from there while the notebook and ``library`` are unchanged;
    older results for ``name`` go."""
    if cache is None:
        return _execute(nb, cwd, name, allow_errors)
    entry = cache_entry(cache, name, nb, library)
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(cache_lock(cache, name), "w") as lock:  # two builds at once: the second waits and reads
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (result := cached(entry)) is not None:
            return result
        result = _execute(nb, cwd, name, allow_errors)
        keep(entry, result)
        return result


def cell_timeout(root: Path = ROOT) -> int:
    """The seconds a cell may run: the site build's ``execute: timeout`` in ``_config.yml``. One
    limit for both, since the site shows a run the edition kept (``shared_runs``): a cell that
    outgrew the site's limit must fail there, not pass on a run made under a longer one."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return int(config["execute"]["timeout"])


def _execute(nb, cwd: Path, name: str, allow_errors: bool) -> Run:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = copy.deepcopy(nb)
    client = NotebookClient(nb, timeout=cell_timeout(), kernel_name="python3", allow_errors=allow_errors,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}})
    values = {}
    with client.setup_kernel():
        info = client.wait_for_reply(client.kc.kernel_info())["content"]
        nb.metadata["language_info"] = info["language_info"]  # as MyST-NB's inline execution records it
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                try:
                    client.execute_cell(cell, i)
                except CellExecutionError as err:
                    raise PlainError(f"{name}: cell {i} failed: {err}") from None
            elif cell.cell_type == "markdown" and (names := eval_names(cell.source)):
                values[i] = evaluate(client, names, f"{name}, cell {i}")
    return record(client, values)


def record(client, values: dict) -> Run:
    """The run that ``client`` (an nbclient ``NotebookClient`` that has executed its notebook)
    made, with ``values[i]``, Markdown cell ``i``'s ``{eval}`` texts (``evaluate``)."""
    client.set_widgets_metadata()
    metadata = {key: client.nb.metadata[key] for key in ("language_info", "widgets") if key in client.nb.metadata}
    cells = [{"outputs": cell.get("outputs", []), "execution_count": cell.get("execution_count")}
             if cell.cell_type == "code" else {"values": values[i]} if i in values else {}
             for i, cell in enumerate(client.nb.cells)]
    return Run(*json.loads(json.dumps([cells, metadata])))


def evaluate(client, names: list[str], where: str) -> dict[str, str]:
    """Each expression's ``text/plain``, evaluated in ``client``'s kernel without a trace in it
    (no output, no history): a number the site prints inline, so text and nothing else."""
    bad = [n for n in names if not _EVAL_NAME.match(n)]
    if bad:
        raise PlainError(f"{where}: {{eval}} takes a variable name, not {bad[0]!r}")
    msg_id = client.kc.execute("", silent=True, store_history=False, user_expressions={n: n for n in names})
    results = client.wait_for_reply(msg_id)["content"]["user_expressions"]
    values = {}
    for name in names:
        result = results[name]
        if result["status"] != "ok":
            raise PlainError(f"{where}: {{eval}}`{name}` failed: {result.get('ename')}: {result.get('evalue')}")
        if set(result["data"]) != {"text/plain"}:
            raise PlainError(f"{where}: {{eval}}`{name}` shows as {sorted(result['data'])}, not as text")
        values[name] = result["data"]["text/plain"]
    return values


def shown(text: str) -> str:
    """An ``{eval}`` value's ``text/plain`` as the site prints it: MyST-NB renders it inline,
    without the quotes of a string."""
    return text[1:-1] if _QUOTED.match(text) else text


# ---- the notebook ------------------------------------------------------------------------------

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TWIN = 'class="chalk-twin"'
"""The static twin's markup (``chalk.figures.twin``): drawn by the site's script, blank elsewhere."""
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
_HREF = re.compile(r'(href|src)="([^"]*)"')
HIDDEN = {"source_hidden": ("remove-input", "hide-input", "hide-cell", "remove-cell", "remove_input"),
          "outputs_hidden": ("hide-output", "hide-cell")}
"""Jupyter's folds for what the site hides or folds; a ``remove-output`` cell ships no output."""
NO_OUTPUT = ("remove-output", "remove_output", "remove-cell")


SITE_ONLY = "site-only"
"""The tag of a Markdown cell that reads right only beside what the site's script draws (the
paragraph describing a static twin's menus and slider): the edition, which shows a link to the
site in the twin's place, leaves it out."""


def notebook(nb, page: str, site: Site, result: Run, outputs: bool = True):
    """The plain form of ``nb`` (a MyST notebook at ``page``, its path from the root), with the
    values and, if ``outputs``, the outputs of ``result``, an execution of that same notebook.
    Markdown cells the site removes (``remove-cell``) go, and so do those only the site shows
    (``SITE_ONLY``); the notebook's metadata stays as it is."""
    if len(result.cells) != len(nb.cells):
        raise PlainError(f"{page}: the execution has {len(result.cells)} cells, the notebook {len(nb.cells)}")
    nb = copy.deepcopy(nb)
    cells = []
    for cell, ran in zip(nb.cells, result.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            if "remove-cell" in tags or SITE_ONLY in tags:
                continue
            values = {expression: shown(text) for expression, text in ran.get("values", {}).items()}
            cell.source = Markdown(site, page, values).convert(cell.source)
        elif cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if outputs:
                if not any(t in tags for t in NO_OUTPUT):
                    cell.outputs = [o for o in (_output(o, page, site) for o in ran["outputs"]) if o]
                cell.execution_count = ran["execution_count"]
                folds = {k: True for k, hidden_by in HIDDEN.items() if any(t in tags for t in hidden_by)}
                if folds:
                    cell.metadata.setdefault("jupyter", {}).update(folds)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


def _output(output: dict, page: str, site: Site):
    """One output as a student's notebook carries it, or None for a widget with nothing else to show."""
    output = nbformat.from_dict(copy.deepcopy(output))
    data = output.get("data")
    if data is None:
        return output
    widget = data.pop(WIDGET_VIEW, None) is not None
    data.pop(WIDGET_STATE, None)
    if widget and set(data) <= {"text/plain"}:
        return None
    text = data.get("text/html", "")
    if TWIN in text:
        output.data = {"text/markdown": f"*This static version needs the site's script: it works on [the course "
                                        f"website]({site.base}{posixpath.splitext(page)[0]}.html). After Run All, "
                                        "the live explorer above does the same here.*",
                       "text/plain": "(the explorer's static version: on the course website)"}
        output.metadata = {}
        return output
    if text:
        data["text/html"] = _HREF.sub(lambda m: f'{m[1]}="{_html_link(m[2], page, site)}"', text)
    if "text/plain" in data and len(data) > 1:  # a repr behind a figure: its address changes every run
        data["text/plain"] = _ADDRESS.sub(">", data["text/plain"])
    return output


def _html_link(href: str, page: str, site: Site) -> str:
    return href if href.startswith("data:") else html.escape(site.link(html.unescape(href), page))
