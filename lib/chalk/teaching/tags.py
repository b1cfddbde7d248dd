"""The cell tags that keep a problem set's answers out of plain view on the site.

    python -m chalk.teaching.tags             # normalise every exercises/NN_*.ipynb in place
    python -m chalk.teaching.tags --check     # only list the cells that break the rule (exit 1)

The rule, by a cell's role (``role``):

* an **answer cell** (a code cell holding ``### BEGIN SOLUTION``) is tagged ``hide-cell`` and
  titled by its ``mystnb`` metadata: the site shows one "Show solution" fold holding the solution
  code and anything it prints;
* a **check cell** (a code cell ``check("<id>", <id>)``) is tagged ``remove-output``: the site shows
  the call a student runs, never the verdict, which would print the value (the tests run every
  check, so the instructor's site needs no printed "right");
* a **worked solution** (a Markdown cell tagged ``solution``) and a **written answer's** model
  answer (a Markdown cell tagged ``free-text``) are dropdown admonitions (``:class: dropdown``),
  folded on the site; their tags are left as they are (``solution`` drops the cell from the student
  edition).

In the student edition (``student=True``) an answer cell holds no solution and a check has nothing
to give away ("not answered"), so both lose their tags: the class site shows each check's verdict.
Other cells (set-up, figures, prose) are left alone. Anything the site shows outside these folds
must not give an answer away; ``tests/test_answers_not_printed.py`` checks the built pages.
"""
import argparse
import re
import sys
from pathlib import Path

import nbformat

from .student import BEGIN, FREE_TEXT

ANSWER, CHECK, WORKED, WRITTEN = "answer", "check", "worked solution", "written answer"
HIDE_TAGS = frozenset({"hide-input", "hide-output", "hide-cell", "remove-input", "remove-output", "remove-cell",
                       "remove_input", "remove_output"})
"""The tags with which Jupyter Book hides or drops a code cell's parts; the rule owns them on
answer and check cells."""
RULE = {ANSWER: ["hide-cell"], CHECK: ["remove-output"]}
PROMPTS = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
"""The fold's titles on an answer cell (MyST-NB's cell-level ``mystnb`` settings)."""
_CHECK = re.compile(r"check\(\s*[\"']\w+[\"']\s*,[^\n]*\)")
_DROPDOWN = re.compile(r"^:class:.*\bdropdown\b", re.M)


def role(cell) -> str | None:
    """What a cell is in a problem set: ``ANSWER``, ``CHECK``, ``WORKED``, ``WRITTEN`` or None."""
    tags = cell.get("metadata", {}).get("tags", [])
    if cell.cell_type == "code":
        if any(line.strip() == BEGIN for line in cell.source.splitlines()):
            return ANSWER
        return CHECK if _CHECK.fullmatch(cell.source.strip()) else None
    if cell.cell_type == "markdown":
        if "solution" in tags:
            return WORKED
        if FREE_TEXT in tags:
            return WRITTEN
    return None


def _wanted(cell, student: bool) -> tuple[list[str], dict | None]:
    """The hiding tags and ``mystnb`` prompts ``cell`` should carry (None: not a managed cell)."""
    kind = role(cell)
    if kind not in RULE:
        return [], None
    return ([], {}) if student else (RULE[kind], PROMPTS if kind == ANSWER else {})


def normalise_cell(cell, student: bool = False) -> bool:
    """Give ``cell`` the tags and prompts of its role; True if it changed."""
    tags, prompts = _wanted(cell, student)
    if prompts is None:
        return False
    meta = cell.setdefault("metadata", {})
    old_tags = meta.get("tags", [])
    new_tags = [t for t in old_tags if t not in HIDE_TAGS] + tags
    mystnb = {k: v for k, v in meta.get("mystnb", {}).items() if k not in PROMPTS} | prompts
    changed = new_tags != old_tags or mystnb != meta.get("mystnb", {})
    if new_tags:
        meta["tags"] = new_tags
    else:
        meta.pop("tags", None)
    if mystnb:
        meta["mystnb"] = mystnb
    else:
        meta.pop("mystnb", None)
    return changed


def normalise(nb, student: bool = False) -> int:
    """Apply the rule to every cell of ``nb`` in place; return how many cells changed."""
    return sum(normalise_cell(cell, student) for cell in nb.cells)


def problems(nb, name: str = "notebook") -> list[str]:
    """Every cell of an instructor's problem set that breaks the rule, as a sentence each."""
    found = []
    for i, cell in enumerate(nb.cells):
        kind = role(cell)
        where = f"{name} cell {i} ({kind})"
        if kind in (ANSWER, CHECK):
            copy = nbformat.from_dict(cell)
            if normalise_cell(copy):
                found.append(f"{where}: tags {cell.metadata.get('tags', [])} and mystnb "
                             f"{cell.metadata.get('mystnb', {})}; run python -m chalk.teaching.tags")
        elif kind == WORKED and not _DROPDOWN.search(cell.source):
            found.append(f"{where}: not a dropdown admonition (:class: dropdown), so it shows unfolded")
        elif kind == WRITTEN and BEGIN in cell.source and not _DROPDOWN.search(cell.source):
            found.append(f"{where}: the model answer is not in a dropdown admonition")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Tag problem-set cells so the site folds every answer.")
    parser.add_argument("notebooks", nargs="*", type=Path, help="problem sets (default: exercises/NN_*.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; list the cells that break the rule")
    args = parser.parse_args(argv)
    from .edition import problem_sets  # here, not at the top: edition imports this module
    bad = []
    for path in args.notebooks or problem_sets():
        nb = nbformat.read(path, as_version=4)
        if args.check:
            bad += problems(nb, str(path))
            continue
        changed = normalise(nb)
        if changed:
            nbformat.write(nb, path)
        print(f"{path}: {changed} cell(s) retagged")
        bad += [p for p in problems(nb, str(path)) if "retag" not in p]
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
