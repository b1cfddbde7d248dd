"""What each problem set asks: one row per exercise part, with its kind, whether it asks for a
judgement, its topic and its points.

The instructors' guide shows these rows as a table per problem set, and the grader writes them
beside each batch (``exercises.csv``), so that both read the kinds from the keys and the notebooks
rather than from a list kept by hand. A numeric, choice or set-of-choices part comes from the key
(``chalk.teaching.problems``); a written part is a ``free-text`` cell of the problem set, marked by
hand, which explains a judgement by its nature.
"""
from pathlib import Path

import nbformat

from .chapters import ROOT, chapters
from .exercises import WRITTEN, problem_set
from .student import FREE_TEXT, exercise_of_cells, free_text_points

FIELDS = ("exercise", "part", "kind", "judgement", "topic", "points")


def rows(chapter: str, root: Path = ROOT) -> list[dict]:
    """The parts of ``chapter``'s problem set in key order, each written part after its exercise."""
    written: dict[str | None, list[float]] = {}
    path = root / "exercises" / f"{chapter}.ipynb"
    if path.is_file():
        nb = nbformat.read(path, as_version=4)
        for cell, ex_id in zip(nb.cells, exercise_of_cells(nb)):
            if cell.cell_type == "markdown" and FREE_TEXT in cell.get("metadata", {}).get("tags", []):
                written.setdefault(ex_id, []).append(free_text_points(cell))
    out = []
    for ex in problem_set(chapter).values():
        out.append({"exercise": ex.id, "part": "check", "kind": ex.kind, "judgement": ex.judgement,
                    "topic": ex.topic, "points": ex.points})
        out += [{"exercise": ex.id, "part": "written" if n == 1 else f"written {n}", "kind": WRITTEN,
                 "judgement": True, "topic": ex.topic, "points": points}
                for n, points in enumerate(written.pop(ex.id, []), 1)]
    out += [{"exercise": ex_id or "", "part": "written", "kind": WRITTEN, "judgement": True, "topic": "",
             "points": points} for ex_id, parts in written.items() for points in parts]
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("$", "\\$")


def table(chapter: str, root: Path = ROOT) -> str:
    """``rows`` as a Markdown table, with a line counting the judgement items."""
    parts = rows(chapter, root)
    lines = ["| exercise | kind | judgement | topic | points |", "|---|---|---|---|---:|"]
    for r in parts:
        name = f"`{r['exercise']}`" + (f" ({r['part']})" if r["part"] != "check" else "")
        lines.append(f"| {name} | {r['kind']} | {'yes' if r['judgement'] else 'no'} | {_cell(r['topic'])} "
                     f"| {r['points']:g} |")
    checked = [r for r in parts if r["part"] == "check"]
    judged = sum(r["judgement"] for r in checked)
    return "\n".join(lines + ["", f"{len(checked)} checked exercises, {judged} of them judgement items; "
                                  f"{len(parts) - len(checked)} written part(s) marked by hand; "
                                  f"{sum(r['points'] for r in parts):g} points in all."])


def tables(root: Path = ROOT) -> str:
    """A title and ``table`` for every problem set (a bold line, not a heading: a heading in a cell's
    output would not join the page's table of contents)."""
    out = []
    for ch in chapters(root):
        if ch.problem_set.is_file():
            out += [f"**Problem set {ch.number}: {_cell(ch.title)}**", "", table(ch.name, root), ""]
    return "\n".join(out)
