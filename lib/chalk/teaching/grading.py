"""Grade a folder of submitted problem sets into a CSV and one feedback file per submission.

    python -m chalk.teaching.grading SUBMISSIONS [--out _build/grades] [--timeout 120] [--workers 2]

Every file under SUBMISSIONS (any depth, hidden files aside) gets one row. A notebook runs in a
fresh kernel, in its own temporary folder with its own copy of the ``chalk`` package, so it can
neither overwrite the key nor see another submission. After its cells (errors allowed, one time
limit for the whole notebook) an extraction cell prints the answer variables as JSON between
markers that hold a random nonce; the grader parses them and judges each answer with
``chalk.teaching.exercises.judge`` against a key it computed before any submission ran. A student who
redefines ``check``, patches the library in the kernel or prints fake results changes nothing
the grader reads.
"""
import argparse
import asyncio
import csv
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from . import problems
from ..errors import ChalkError
from .chapters import chapter_modules
from .exercises import RIGHT, UNANSWERED, Exercise, Mistake, judge, problem_set

DEFAULT_TIMEOUT = 120
"""Seconds per notebook: a problem set runs in about 6 s, so only a stuck notebook reaches it."""
_EXTRACT_TIMEOUT = 15
"""Seconds the extraction cell may take; it only reads variables."""
_CHECKER = re.compile(r"""checker\(\s*["'](\w+)["']\s*\)""")
_CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\w+)["']""")
_PACKAGE = Path(__file__).resolve().parents[1]
"""The chalk package, copied beside each submission so its kernel grades against this version."""


class GradingError(ChalkError):
    """A bad invocation (missing folder, bad option); the message names the parameter."""


# --- the key ----------------------------------------------------------------------------------
def known_problem_sets() -> list[str]:
    """Chapters with an answer key, ``chalk.teaching.problems.chNN_name`` -> ``"NN_name"``."""
    return sorted(chapter_modules(problems))


def _constant(value):
    return lambda: value


def frozen_key(chapter: str) -> dict[str, Exercise]:
    """``problem_set(chapter)`` with every expected and typical wrong value computed now.

    Judging with constants means nothing a submission does later (even rewriting the library's
    files on disk) can move the key the grader uses.
    """
    frozen = {}
    for ex_id, ex in problem_set(chapter).items():
        expected = ex.expected()
        mistakes = tuple(Mistake(m.hint, value=_constant(m.wrong_answer(expected))) for m in ex.mistakes)
        frozen[ex_id] = replace(ex, expected=_constant(expected), mistakes=mistakes)
    return frozen


# --- which problem set ------------------------------------------------------------------------
def identify(nb, filename: str, chapters: list[str]) -> tuple[str | None, str]:
    """(chapter, how it was found): notebook metadata, else a ``checker("…")`` call, else the name."""
    meta = nb.get("metadata", {}).get("chalk", {})
    if isinstance(meta, dict) and isinstance(meta.get("problem_set"), str):
        return meta["problem_set"], "notebook metadata"
    for cell in nb.get("cells", []):
        if m := _CHECKER.search(str(cell.get("source", ""))):
            return m.group(1), "checker() call"
    named = [c for c in chapters if c in filename]
    if len(named) == 1:
        return named[0], "file name"
    return None, "no chalk metadata, no checker(\"…\") call and no chapter in the file name"


def id_notes(nb, exercises: dict) -> list[str]:
    """Check cells that name an exercise the key lacks, or check the same exercise twice."""
    counts: dict[str, int] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            for ex_id in _CHECK_CALL.findall(cell.source):
                counts[ex_id] = counts.get(ex_id, 0) + 1
    notes = [f"check(\"{i}\") names no exercise of this problem set" for i in counts if i not in exercises]
    notes += [f"exercise {i} is checked {n} times" for i, n in counts.items() if n > 1 and i in exercises]
    return notes


# --- running one notebook ---------------------------------------------------------------------
def extraction_cell(ids: list[str], marker: str) -> str:
    """Code that prints the answer variables as JSON between two ``marker``s.

    A number goes as a float, ``...``/``None`` as null (unanswered), a missing variable as
    {"missing": true}, anything else as its repr, so the grader's ``judge`` sees what the
    notebook's ``check`` would have seen.
    """
    return f"""\
def _chalk_extract(ids, marker):
    import json, numbers, sys
    ns, out = globals(), {{}}
    for name in ids:
        if name not in ns:
            out[name] = {{"missing": True}}
            continue
        v = ns[name]
        try:
            if v is None or v is ...:
                out[name] = None
            elif isinstance(v, bool):
                out[name] = {{"bool": v}}
            elif isinstance(v, numbers.Real):
                out[name] = float(v)
            else:
                out[name] = {{"repr": repr(v)[:200]}}
        except Exception as err:
            out[name] = {{"repr": f"<unreadable: {{type(err).__name__}}>"}}
    sys.stdout.write(marker + json.dumps(out) + marker + "\\n")
    sys.stdout.flush()
_chalk_extract({ids!r}, {marker!r})
del _chalk_extract
"""


@dataclass
class Run:
    status: str = "ok"
    answers: dict | None = None
    """{id: value as the extraction cell sent it}; None when they could not be read."""
    seconds: float = 0.0


def _first_error(cell, index: int) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"error: {out.get('ename')} in cell {index + 1}: {str(out.get('evalue'))[:120]}"
    return None


def _read_answers(cell, marker: str, ids: list[str]) -> dict | None:
    text = "".join(o.get("text", "") for o in cell.outputs
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    found = re.findall(re.escape(marker) + r"(.*?)" + re.escape(marker), text, flags=re.S)
    if len(found) != 1:  # printed twice means something in the kernel echoed or forged it
        return None
    try:
        answers = json.loads(found[0])
    except ValueError:
        return None
    return answers if isinstance(answers, dict) and set(answers) == set(ids) else None


def _sandbox(tmp: Path, nb_bytes: bytes) -> tuple[Path, dict]:
    """A working folder holding the notebook, and the kernel's environment.

    The kernel imports a private copy of ``chalk`` (PYTHONPATH comes before the editable
    install) and gets its own HOME, IPython and Matplotlib folders: nothing it writes reaches the
    key, the submissions or the next kernel.
    """
    work = tmp / "work"
    work.mkdir()
    (work / "submission.ipynb").write_bytes(nb_bytes)
    shutil.copytree(_PACKAGE, tmp / "lib" / "chalk")
    env = {**os.environ, "PYTHONPATH": str(tmp / "lib"), "HOME": str(tmp / "home"),
           "IPYTHONDIR": str(tmp / "ipython"), "MPLCONFIGDIR": str(tmp / "mpl"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    return work, env


async def run_notebook(nb, ids: list[str], limit: float) -> Run:
    """Execute ``nb`` in a sandboxed fresh kernel and read the variables ``ids``."""
    run, start = Run(), time.monotonic()
    marker = f"<<chalk-answers-{secrets.token_hex(16)}>>"
    with tempfile.TemporaryDirectory(prefix="chalk-grade-") as tmp:
        work, env = _sandbox(Path(tmp), nbformat.writes(nb).encode())
        client = NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=math.ceil(limit),
                                interrupt_on_timeout=True, record_timing=False,
                                error_on_timeout={"ename": "Timeout", "evalue": "", "traceback": []},
                                resources={"metadata": {"path": str(work)}})
        try:
            # the kernel's own log lines would bury the grader's progress; its errors are in the cells
            async with client.async_setup_kernel(env=env, stderr=subprocess.DEVNULL):
                for i, cell in enumerate(list(nb.cells)):
                    client.timeout = max(1, math.ceil(start + limit - time.monotonic()))
                    await client.async_execute_cell(cell, i)
                    if time.monotonic() - start >= limit:
                        run.status = "timeout"
                        break
                    if run.status == "ok" and cell.cell_type == "code":
                        run.status = _first_error(cell, i) or "ok"
                extract = nbformat.v4.new_code_cell(extraction_cell(ids, marker))
                nb.cells.append(extract)
                client.timeout = _EXTRACT_TIMEOUT
                await client.async_execute_cell(extract, len(nb.cells) - 1)
                run.answers = _read_answers(extract, marker, ids)
        except DeadKernelError:
            run.status = "error: the kernel died (the notebook exited or crashed it)"
        except Exception as err:  # a kernel that cannot start or talk must not stop the batch
            run.status = f"error: could not run the notebook ({type(err).__name__}: {err})"[:200]
    if run.answers is None and run.status == "ok":
        run.status = "error: the answers could not be read (stdout replaced or forged)"
    run.seconds = time.monotonic() - start
    return run


# --- grading one file -------------------------------------------------------------------------
@dataclass
class Row:
    file: str
    status: str
    problem_set: str = ""
    results: dict = field(default_factory=dict)
    """{exercise id: chalk.teaching.exercises.Result}, empty when no answer could be read."""
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> int:
        return sum(r.status == RIGHT for r in self.results.values())


def _load(path: Path) -> tuple[object, str | None]:
    """(notebook, None) or (None, why it is not a gradable notebook)."""
    try:
        text = path.read_bytes().decode("utf-8")
        json.loads(text)
    except ValueError as err:  # UnicodeDecodeError is a ValueError too
        kind = "not valid JSON" if path.suffix == ".ipynb" else "not a notebook"
        return None, f"invalid: {kind} ({str(err)[:80]})"
    try:
        nb = nbformat.reads(text, as_version=4)
        if not all(c.cell_type in ("code", "markdown", "raw") for c in nb.cells):
            raise ValueError("unknown cell type")
    except Exception as err:  # nbformat raises several types for JSON that is not a notebook
        return None, f"invalid: JSON but not a notebook ({str(err).splitlines()[0][:80] if str(err) else type(err).__name__})"
    return nb, None


async def grade_file(path: Path, name: str, keys: dict, limit: float) -> Row:
    """One submission's row; never raises."""
    nb, problem = _load(path)
    if problem:
        return Row(name, problem)
    chapter, how = identify(nb, path.name, list(keys))
    if chapter is None:
        return Row(name, f"invalid: problem set unknown ({how})")
    if chapter not in keys:
        return Row(name, f"invalid: no problem set {chapter!r} (from the {how}); "
                         f"known: {', '.join(keys)}", problem_set=chapter)
    key = keys[chapter]
    if isinstance(key, str):  # the instructor's key failed to load
        return Row(name, f"invalid: {key}", problem_set=chapter)
    row = Row(name, "", problem_set=chapter, notes=id_notes(nb, key))
    if path.suffix != ".ipynb":
        row.notes.append(f"graded as a notebook although named {path.name}")
    run = await run_notebook(nb, list(key), limit)
    row.status, row.seconds = run.status, run.seconds
    for ex_id, ex in key.items():
        value = (run.answers or {}).get(ex_id)
        if isinstance(value, dict):
            value = value.get("bool", value.get("repr"))  # "missing" -> None: unanswered
        row.results[ex_id] = judge(ex, value)
    return row


def submissions(folder: Path) -> list[Path]:
    """Every file under ``folder`` except hidden ones and Jupyter checkpoints."""
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


async def _grade_all(paths: list[Path], folder: Path, keys: dict, limit: float, workers: int) -> list[Row]:
    gate = asyncio.Semaphore(workers)

    async def one(path: Path) -> Row:
        async with gate:
            row = await grade_file(path, path.relative_to(folder).as_posix(), keys, limit)
            print(f"{row.file}: {row.status}, {row.score} right ({row.seconds:.1f} s)", file=sys.stderr)
            return row

    return list(await asyncio.gather(*(one(p) for p in paths)))


def _keys(chapters: list[str]) -> dict:
    """{chapter: frozen key, or the reason it cannot be loaded}."""
    keys = {}
    for chapter in chapters:
        try:
            keys[chapter] = frozen_key(chapter)
        except Exception as err:  # a broken key fails its own submissions, not the batch
            keys[chapter] = f"the key of {chapter} cannot be loaded ({err})"
    return keys


def columns(keys: dict) -> list[str]:
    """Exercise ids in chapter order; an id two problem sets share is an error, not a merge."""
    owner: dict[str, str] = {}
    for chapter, key in keys.items():
        for ex_id in key if isinstance(key, dict) else ():
            if ex_id in owner:
                raise GradingError(f"exercise id {ex_id!r} is in problem sets {owner[ex_id]} and "
                                   f"{chapter}: ids must be unique across problem sets")
            owner[ex_id] = chapter
    return list(owner)


# --- output -----------------------------------------------------------------------------------
def write_csv(rows: list[Row], ids: list[str], dest: Path) -> None:
    """One row per file: file, problem set, status, score, maximum, 1/0 per exercise, notes."""
    with dest.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["file", "problem_set", "status", "score", "maximum", *ids, "notes"])
        for r in rows:
            marks = [("1" if r.results[i].status == RIGHT else "0") if i in r.results else "" for i in ids]
            maximum = len(r.results) if r.results else ""
            out.writerow([r.file, r.problem_set, r.status, r.score, maximum, *marks, "; ".join(r.notes)])


def feedback(row: Row) -> str:
    """A short Markdown note for the student: the score, what passed, a hint for the rest."""
    lines = [f"# Feedback on {row.file}", ""]
    if not row.results:
        return "\n".join(lines + [f"This file could not be graded: {row.status}.", ""])
    lines.append(f"Problem set {row.problem_set}: **{row.score} of {len(row.results)}** right.")
    if row.status != "ok":
        lines.append(f"The notebook did not run cleanly ({row.status}); every answer that could be read counts.")
    lines += [f"Note: {n}." for n in row.notes]
    passed = [i for i, r in row.results.items() if r.status == RIGHT]
    lines += ["", "Passed: " + (", ".join(passed) if passed else "none yet.")]
    todo = [r for r in row.results.values() if r.status != RIGHT]
    if todo:
        lines += ["", "To revisit:"]
        lines += [f"- {r.id}: {'not answered' if r.status == UNANSWERED else 'wrong'}: {r.message}"
                  for r in todo]
    return "\n".join(lines + [""])


def grade(folder, out="_build/grades", timeout: float = DEFAULT_TIMEOUT, workers: int = 2) -> list[Row]:
    """Grade every file under ``folder``; write ``out/grades.csv`` and ``out/feedback/<file>.md``."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise GradingError(f"SUBMISSIONS: {str(folder)!r} is not a folder of submitted notebooks")
    if not timeout > 0:
        raise GradingError(f"timeout: must be > 0 seconds per notebook, got {timeout!r}")
    if not (isinstance(workers, int) and workers >= 1):
        raise GradingError(f"workers: must be a whole number >= 1, got {workers!r}")
    paths = submissions(folder)
    if not paths:
        raise GradingError(f"SUBMISSIONS: {str(folder)!r} holds no files")
    keys = _keys(known_problem_sets())
    ids = columns(keys)
    rows = asyncio.run(_grade_all(paths, folder, keys, timeout, workers))
    out.mkdir(parents=True, exist_ok=True)
    if (out / "feedback").exists():
        shutil.rmtree(out / "feedback")  # feedback of an earlier batch must not linger
    for row in rows:
        dest = out / "feedback" / f"{row.file}.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(feedback(row), encoding="utf-8")
    write_csv(rows, ids, out / "grades.csv")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade submitted problem sets.")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (any depth)")
    parser.add_argument("--out", type=Path, default=Path("_build/grades"), help="folder for grades.csv and feedback/")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per notebook")
    parser.add_argument("--workers", type=int, default=2, help="notebooks run at once")
    args = parser.parse_args(argv)
    try:
        rows = grade(args.submissions, args.out, args.timeout, args.workers)
    except ChalkError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    ok = sum(r.status == "ok" for r in rows)
    print(f"graded {len(rows)} files ({ok} ran cleanly): {args.out / 'grades.csv'}, feedback in {args.out / 'feedback'}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
