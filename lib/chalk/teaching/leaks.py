"""Find problem-set answers printed where students read: the site, the cards, a notebook, a package.

    python -m chalk.teaching.leaks _build/html-student     # before publishing a class site

An answer counts as printed when a number in the text reads as it: within the exercise's
tolerance (copying it would be marked right) *and* equal to it rounded to the digits it is printed
with: for an answer of 4.268 within 2%, ``4.27`` and ``4.3`` print it, ``4.21`` does not (a different
quantity that happens to lie within the tolerance). A number of four significant digits or more
may be off by one in its last digit (``15.60 T`` prints 15.605 T: no one rounds that way, but it is
the same number). Percentages
read as fractions, ``15.6 T`` and ``548 billion`` as the numbers they name, ``3.8e25`` and
``3.8 × 10^25`` alike.

Short numbers are everywhere on a site about hardware (a 1.30 load imbalance, 194 µs of
all-to-all), so a number of two or three significant digits counts only where the text is about
the answer's quantity: its unit follows (``26 ms``, ``101 GB``, ``8%`` for a fraction) or a word of
the exercise's id is near (``sparsity`` near ``31.2`` for ``sparsity_kimi``, ``shrinks`` near
``15×`` for ``fast_batch_shrink``; a bare ``×`` is not enough, ratios are everywhere). Four digits
or more count anywhere. A number of a single significant digit
(``6``, ``60``, ``0.25``) never counts: an answer that is itself such a number (6 layers, 60
micro-batches) cannot be searched for, and ``unsearchable`` lists them so that their scenarios are
checked by reading instead.
"""
import argparse
import html
import math
import re
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat

from .exercises import problem_set
from .seal import known_problem_sets

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_NUMBER = re.compile(r"""
    (?<![\w.,^\\])(?![0-9a-f]{16,}\b)(?P<mantissa>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![A-DF-Za-df-z]\w*\d)  # not a hash, nor a sealed digest
    (?:[eE](?P<exp>[+-]?\d+))?
    (?:\s*(?:×|\\times|\\cdot)\s*10(?:\^\{?(?P<power>[+−-]?\d+)\}?|(?P<super>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)))?
    (?P<suffix>\s?(?:\\?%|thousand|million|billion|trillion|[KMBT](?![\w-])))?
""", re.X)
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_STOP = {"a", "an", "the", "of", "per", "to", "in", "whole", "number", "dimensionless", "units", "0", "1", "e9",
         "bytes", "relative", "integer"}
_GENERIC = {"ratio", "time", "read", "step", "mean", "from", "with", "total", "cost", "rate", "price", "tokens",
            "batch", "per", "variant", "number", "value", "fraction", "share", "days"}
"""Words of exercise ids too common on the site to tie a number to one exercise."""
_NEAR = (80, 40)
"""Characters before and after a number in which a word of the exercise's id ties it to the exercise."""


@dataclass(frozen=True)
class Answer:
    chapter: str
    id: str
    value: float
    rel_tol: float
    unit: str
    exact: bool = False
    """A whole count judged exactly (sequences, stages): a page prints a count without decimals, so
    "25.00" in a table of some other quantity is not that count."""

    @property
    def searchable(self) -> bool:
        """False for a round answer (one significant digit), which short numbers everywhere match."""
        return _digits(f"{self.value:.12g}".split("e")[0]) > 1


@dataclass(frozen=True)
class Leak:
    answer: Answer
    printed: str
    where: str
    context: str

    def __str__(self) -> str:
        return (f"{self.where}: {self.printed!r} prints {self.answer.chapter}:{self.answer.id} "
                f"({self.answer.value:.6g} {self.answer.unit}) in '…{self.context}…'")


def answers(chapters: list[str] | None = None) -> list[Answer]:
    """Every numeric exercise's expected value, from the instructor's keys (a choice's answer is a
    letter, which no text can be searched for)."""
    return [Answer(c, ex.id, ex.expected(), ex.rel_tol, ex.unit, ex.exact)
            for c in (chapters if chapters is not None else known_problem_sets()) for ex in problem_set(c).values()
            if ex.kind == "number"]


def unsearchable(found: list[Answer]) -> list[Answer]:
    return [a for a in found if not a.searchable]


def _digits(mantissa: str) -> int:
    """Significant digits as printed: a decimal's trailing zeros count, an integer's do not."""
    digits = mantissa.replace(",", "").replace(".", "").lstrip("0")
    return len(digits if "." in mantissa else digits.rstrip("0")) or 1


@dataclass(frozen=True)
class _Printed:
    text: str
    value: float
    unit_step: float
    """One unit of the last printed digit, in the value's scale."""
    digits: int
    percent: bool
    before: str
    after: str


_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
"""A source's as-of date: its day and month are no quantity a page prints."""


def _printed(text: str) -> list[_Printed]:
    text = text.replace("{,}", ",").replace("\u2009", " ").replace("\u202f", " ").replace("\xa0", " ")
    text = _DATE.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        mantissa = m.group("mantissa")
        value = float(mantissa.replace(",", ""))
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        integer = mantissa.replace(",", "")
        step = 10.0 ** -decimals if decimals else 10.0 ** (len(integer) - len(integer.rstrip("0"))) if value else 1.0
        power = m.group("power") or (m.group("super") or "").translate(_SUPERSCRIPT)
        exponent = int(m.group("exp") or 0) + (int(power.replace("−", "-")) if power else 0)
        if abs(exponent) > 300:
            continue  # not a number a page means (a hash's "4e5123"), and beyond a float
        scale = 10.0 ** exponent
        suffix = (m.group("suffix") or "").strip().lstrip("\\")
        percent = suffix == "%"
        scale *= 0.01 if percent else _SCALE.get(suffix, 1.0)
        found.append(_Printed(m.group(0).strip(), value * scale, step * scale, _digits(mantissa), percent,
                              text[max(0, m.start() - _NEAR[0]):m.start()], text[m.end():m.end() + _NEAR[1]]))
    return found


def _about(p: _Printed, answer: Answer) -> bool:
    """Whether the text around ``p`` is about the answer's quantity: its unit follows, or a word of
    the exercise's id is near."""
    unit = answer.unit.lower()
    if p.percent:
        return any(w in unit for w in ("fraction", "percent", "probability"))
    after = p.after.lower().lstrip()
    if "$" in unit and ("$" in p.before[-2:] or after.startswith("usd")):
        return True
    words = [w[:-1] if len(w) > 3 and w.endswith("s") else w
             for w in re.findall(r"[a-zµ$*-]+", unit) if w not in _STOP and len(w) > 1]
    if any(re.match(rf"{re.escape(w)}s?\b", after) for w in words):
        return True
    near = (p.before + " " + p.after).lower()
    return any(re.search(rf"\b{w}", near) for w in answer.id.split("_") if w.isalpha() and len(w) >= 4
               and w not in _GENERIC)


def find(text: str, found: list[Answer], where: str) -> list[Leak]:
    """The answers ``text`` prints (see the module's docstring for what counts)."""
    leaks = []
    for p in _printed(text):
        if p.digits < 2:
            continue
        for a in found:
            if a.exact and "." in p.text:
                continue
            value = p.value * 100 if p.percent and "percent" in a.unit else p.value
            step = p.unit_step * 100 if p.percent and "percent" in a.unit else p.unit_step
            last_digits = 1.0 if p.digits >= 4 else 0.5
            if not (math.isclose(value, a.value, rel_tol=a.rel_tol)
                    and abs(value - a.value) <= last_digits * step * (1 + 1e-9)):
                continue
            if p.digits >= 4 or _about(p, a):
                leaks.append(Leak(a, p.text, where, (p.before + p.text + p.after).replace("\n", " ")))
    return leaks


# --- what text a reader sees --------------------------------------------------------------------
class _Visible(HTMLParser):
    """The text of a page as read: no scripts or styles; alt and title text included."""
    _HIDDEN = {"script", "style", "head", "template"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self._hidden = [], 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in self._HIDDEN
        self.parts += [f" {v} " for k, v in attrs if k in ("alt", "title", "aria-label") and v]

    def handle_endtag(self, tag):
        self._hidden -= tag in self._HIDDEN and self._hidden > 0

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


class _Unfolded(_Visible):
    """The text of a page as read before any fold is opened: a closed ``<details>`` shows only its
    ``<summary>``, a dropdown admonition (sphinx-togglebutton hides ``.toggle`` and
    ``.admonition.dropdown`` when the page loads) only its title."""
    _VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__()
        self._stack = [("", "", True, True)]  # (tag, "details"/"fold"/"", its content shows, it shows)

    def handle_starttag(self, tag, attrs):
        _, parent_kind, parent_inner, parent_outer = self._stack[-1]
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        title = (tag == "summary" and parent_kind == "details") or ("admonition-title" in classes and parent_kind == "fold")
        shows = parent_outer if title else parent_inner
        if shows:
            super().handle_starttag(tag, attrs)
        if tag in self._VOID:
            return
        self._hidden += tag in self._HIDDEN and not shows
        kind = "details" if tag == "details" and "open" not in attributes else \
            "fold" if classes & {"dropdown", "toggle"} else ""
        self._stack.append((tag, kind, shows and not kind, shows))

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, 0, -1):  # the innermost open element of this tag
            if self._stack[i][0] == tag:
                shows = self._stack[i][3]
                del self._stack[i:]
                if shows or tag in self._HIDDEN:
                    super().handle_endtag(tag)
                return

    def handle_data(self, data):
        if self._stack[-1][2]:
            super().handle_data(data)


def html_text(page: str, folded: bool = False) -> str:
    """The text of ``page``; with ``folded``, only what shows before any fold is opened."""
    parser = _Unfolded() if folded else _Visible()
    parser.feed(page)
    return " ".join(parser.parts)


def notebook_text(nb) -> str:
    """What a notebook shows: its cells' sources and text outputs."""
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts += [out.get("text", ""), data.get("text/plain", ""), data.get("text/markdown", ""),
                      html_text(data.get("text/html", "")), out.get("evalue", "")]
    return "\n".join(str(p) for p in parts)


def file_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        return html_text(raw)
    if path.suffix == ".ipynb":
        return notebook_text(nbformat.reads(raw, as_version=4))
    return html.unescape(raw)


MEASURED = ("01_lab-roofline",)
"""Pages whose numbers are the build machine's own measurements (Chapter 1's lab): different on every
build, so they print no key, yet now and then one matches a key by chance; they are not searched."""


def search(paths: list[Path], found: list[Answer]) -> list[Leak]:
    """Leaks in the pages (``.html``), notebooks, Markdown, text and JSON files under ``paths``."""
    files = []
    for path in paths:
        files += sorted(p for p in path.rglob("*") if p.suffix in (".html", ".ipynb", ".md", ".txt", ".tsv", ".json")
                        and "_sources" not in p.parts and p.stem not in MEASURED) if path.is_dir() else [path]
    return [leak for f in files for leak in find(file_text(f), found, str(f))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Find problem-set answers printed in a built site or files.")
    parser.add_argument("paths", nargs="+", type=Path, help="folders (searched for .html, .ipynb, .md, ...) or files")
    args = parser.parse_args(argv)
    found = answers()
    leaks = search(args.paths, [a for a in found if a.searchable])
    for leak in leaks:
        print(leak)
    for a in unsearchable(found):
        print(f"not searchable (a round answer; check its scenario by reading): {a.chapter}:{a.id} = {a.value:g}")
    print(f"{len(leaks)} printed answer(s)", file=sys.stderr)
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
