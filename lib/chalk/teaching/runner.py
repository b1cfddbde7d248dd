"""Running a submitted notebook from the top and reading its answer variables: what the grader
(``chalk.teaching.grading``, each kernel in a bubblewrap sandbox) and the Gradescope autograder
(``chalk.teaching.autograder``, the kernel as an unprivileged user) share.

It lives in the package students install, because the autograder runs from that package: it
holds no key, only the way a run is driven and read.
"""
import json
import math
import re
import secrets
import subprocess
import time
from dataclasses import dataclass, field

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

EXTRACT_TIMEOUT = 15
"""Seconds the extraction cell may take; it only reads variables."""
_CHECKER = re.compile(r"""checker\(\s*["'](\w+)["']\s*\)""")


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


_RECORD = '{name: answer_record(ns[name]) if name in ns else {"missing": True} for name in ids}'
"""The answer variables ``ids`` of the namespace ``ns`` as the kernel prints them: each encoded as
``chalk.teaching.exercises.answer_record`` encodes what ``check`` is given, a missing one as
{"missing": true}."""


def extraction_cell(ids: list[str], marker: str) -> str:
    """Code that prints the answer variables (``_RECORD``) as JSON between two ``marker``s."""
    return f"""\
def _chalk_extract(ids, marker):
    import json, sys
    from chalk.teaching.exercises import answer_record
    ns = globals()
    sys.stdout.write(marker + json.dumps({_RECORD}) + marker + "\\n")
    sys.stdout.flush()
_chalk_extract({ids!r}, {marker!r})
del _chalk_extract
"""


def watch_cell(ids: list[str], marker: str, names: str) -> str:
    """Code that registers an IPython ``post_run_cell`` hook printing what ``extraction_cell``
    prints at the end of every cell whose source matches ``names``, so that a reading costs no
    message exchange of its own. It writes to the ``sys.stdout`` of the moment it is registered
    (a notebook that replaces its own stdout does not silence it)."""
    return f"""\
def _chalk_watch(ids, marker, names):
    import json, re, sys
    from chalk.teaching.exercises import answer_record
    shell, out, named = get_ipython(), sys.stdout, re.compile(names)
    def snapshot(result):
        if named.search(getattr(result.info, "raw_cell", None) or ""):
            ns = shell.user_ns
            out.write(marker + json.dumps({_RECORD}) + marker + "\\n")
            out.flush()
    shell.events.register("post_run_cell", snapshot)
_chalk_watch({ids!r}, {marker!r}, {names!r})
del _chalk_watch
"""


@dataclass
class Run:
    status: str = "ok"
    """"ok", "timeout", "died", "error" (a cell raised) or "failed" (the kernel could not run it)."""
    answers: dict | None = None
    """{id: value as the extraction cell sent it}; None when they could not be read."""
    checks: list = field(default_factory=list)
    """(id, value) of every ``check`` call, in order, from the log."""
    cell: int | None = None
    """The cell the first error (or the kernel's death) happened in."""
    error: str = ""
    seconds: float = 0.0


def first_error(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {str(out.get('evalue'))[:120]}"
    return None


def read_answers(cell, marker: str, ids: list[str]) -> dict | None:
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


async def execute(nb, ids: list[str], limit: float, km, env: dict, work, finish) -> Run:
    """Run ``nb``'s cells from the top in the kernel ``km`` starts (errors allowed, ``limit``
    seconds for the whole notebook), reading the variables ``ids`` after every cell that names
    one; ``finish(process)`` is called with the kernel's process once the kernel is shut down or
    lost, to make sure nothing it started lives on. ``run.checks`` is left to the caller.

    The reading after a cell is printed by a hook (``watch_cell``) at the end of that cell's own
    run, not by a cell of its own: one message exchange per cell instead of two. Those readings
    only stand in when the kernel dies or the time runs out; after the last cell, an extraction
    cell with a marker the kernel has never seen reads every variable, so that the grade of a
    notebook that ran to the end rests on a record nothing in the kernel could forge."""
    run, start = Run(), time.monotonic()
    marker = f"<<chalk-answers-{secrets.token_hex(16)}>>"
    watched = f"<<chalk-answers-{secrets.token_hex(16)}>>"
    client = NotebookClient(nb, km=km, allow_errors=True, timeout=math.ceil(limit),
                            interrupt_on_timeout=True, record_timing=False,
                            error_on_timeout={"ename": "Timeout", "evalue": "", "traceback": []},
                            resources={"metadata": {"path": str(work)}})
    i, cells, forged, process = 0, list(nb.cells), False, None
    names = re.compile(r"\b(?:" + "|".join(map(re.escape, ids)) + r")\b") if ids else None

    def read(cell, mark):
        nonlocal forged
        answers = read_answers(cell, mark, ids)
        forged = forged or answers is None
        run.answers = None if forged else answers

    async def hidden(source):
        """Run ``source`` as a cell of its own, out of the history, and return it with its outputs."""
        cell = nbformat.v4.new_code_cell(source)
        nb.cells.append(cell)  # nbclient files outputs by index into the notebook
        client.timeout = EXTRACT_TIMEOUT
        try:
            await client.async_execute_cell(cell, len(nb.cells) - 1, store_history=False)
        finally:
            nb.cells.pop()
        return cell

    try:
        # the kernel's own log lines would bury the grader's progress; its errors are in the cells
        async with client.async_setup_kernel(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              cleanup_kc=True):
            process = getattr(km.provisioner, "process", None)
            if names:
                await hidden(watch_cell(ids, watched, names.pattern))
            for i, cell in enumerate(cells):
                client.timeout = max(1, math.ceil(start + limit - time.monotonic()))
                await client.async_execute_cell(cell, i)
                if time.monotonic() - start >= limit:
                    run.status, run.cell = "timeout", i
                    break
                if run.status == "ok" and cell.cell_type == "code" and (error := first_error(cell)):
                    run.status, run.cell, run.error = "error", i, error
                if cell.cell_type == "code" and names and names.search(cell.source):
                    read(cell, watched)  # what a crash later in the notebook cannot take back
            read(await hidden(extraction_cell(ids, marker)), marker)
    except DeadKernelError:
        run.status, run.cell = "died", i
    except Exception as err:  # a kernel that cannot start or talk must not stop the batch
        run.status, run.error = "failed", f"{type(err).__name__}: {err}"[:160]
    finally:
        finish(process)
    run.seconds = time.monotonic() - start
    return run
