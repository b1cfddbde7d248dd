"""Grade a folder of submitted problem sets; merge hand-marked written answers into the grades.

    python -m chalk.teaching.grading SUBMISSIONS [--out DIR] [--roster CSV] [--timeout 120] [--workers 2]
    python -m chalk.teaching.grading --merge DIR/manual.csv [--out DIR]

Every file under SUBMISSIONS (any depth, hidden files aside) is accounted for: a notebook is
graded, a resubmission superseded by a later one and a file that is not a notebook are listed
(``chalk.teaching.gradebook`` writes what comes out, into a new folder each time).

A notebook runs in a fresh kernel in a bubblewrap sandbox (``chalk.teaching.sandbox``) that sees
its own folder, the package students install (``chalk.teaching.package``: the keys sealed, none in
plain form) and the Python libraries, read-only; not the repository, another submission or the
grades. It has its own PID namespace, no network and resource limits; when it ends, everything
the notebook started has ended, and the batch's files are written after every kernel has. The
kernel's Python is a temporary virtual environment that sees this environment's libraries but not
the editable install of ``chalk``, and its environment holds no variable of the grader's. Code that
looks for key material is still flagged (``KEY_MATERIAL``), for the instructor only, and the key's
files are checksummed around every notebook: a batch in which they change fails with an error
naming them (its grades, judged with the key as loaded before, are written first).

An exercise is graded on the value its variable holds after the cells have run from the top
(errors allowed, one time limit for the whole notebook), read by an extraction cell at the end, as
JSON between markers holding a random nonce; a hook prints the same reading at the end of every
cell that names an answer variable, so that answers set before the kernel died or the time ran out
keep their result (``chalk.teaching.runner.execute``). The log each ``check`` call appends
to (``chalk.teaching.exercises.CHECK_LOG``) only informs notes and the search flag, since the
notebook can write to it. The grader judges with ``chalk.teaching.exercises.judge`` against the
instructor's key, computed before any submission ran: a student who redefines ``check``, patches
the library in the kernel or prints fake results changes nothing the grader decides.
"""
import argparse
import ast
import asyncio
import compileall
import concurrent.futures
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import tokenize
import venv
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpecManager
from traitlets import Unicode

from ..errors import ChalkError
from . import overview, problems, sandbox
from .edition import problem_sets, student_problem_set
from .exercises import CHECK_LOG, Exercise, Mistake, answer_text, judge, problem_set, record_value
from .gradebook import (ROSTER_FIELDS, Batch, Row, canvas_name, carry_marks, earlier_marks, merge, new_folder, read_roster,
                        student_of, write)
from .package import write_tree
from .runner import Run, execute, identify
from .seal import known_problem_sets
from .student import FREE_TEXT, PLACEHOLDER, exercise_of_cells, free_text_points, titles

DEFAULT_TIMEOUT = 120
"""Seconds per notebook: a problem set runs in about 6 s, so only a stuck notebook reaches it."""
GRADES = Path("_build") / "grades"
"""Where a batch goes unless ``--out`` says otherwise: a new timestamped folder each time."""
_CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\w+)["']""")
_LOOKS_FOR_FILES = (r"sys\.executable|sys\.prefix|sys\.path|\bPWD\b|getcwd|__file__|__path__|__spec__|"
                    r"site-packages|\.venv\b")
KEY_MATERIAL = (
    (re.compile(r"chalk\.teaching\.problems|teaching\s+import\b[^\n]*\bproblems\b|\bteaching\W+problems\b|"
                r"\bproblems\W+ch\d\d"),
     "imports or opens the instructor's answer keys (chalk.teaching.problems)"),
    (re.compile(r"\bproblem_set\s*\(|\.expected\s*\(|\.verdict\s*\(|\bfrozen_key\b|\b_?sealed\b|\bsealed_exercises\b|"
                r"SEALED_DIR|\bdigest\s*\(|__closure__|__globals__|\br?glob\s*\([^\n]*json"),
     "reads the answer key (expected values or the sealed table)"),
    (re.compile(r"chalk\.teaching\.grading|teaching\s+import\b[^\n]*\bgrading\b|CHALK_CHECK_LOG|_chalk_extract|chalk-answers"),
     "reaches into the grader or its record of the answers"),
    (re.compile(rf"(?:{_LOOKS_FOR_FILES})(?=.*?\blib\b)|\blib\b(?=.*?(?:{_LOOKS_FOR_FILES}))|\blib\W+chalk\b|"
                r"__editable__", re.S),
     "looks for the repository's files, where the plain keys are"),
)
"""Patterns of code (comments aside) that reads key material, and what the flag says. A student
who hides the reading from these gets nothing plain from an import, but can still read the key's
files by a path walked from an installed library: the key's checksums catch a change, not a read."""
SEARCHING = 20
"""More checks of one exercise than this in a run is a search: values tried until one passes."""


class GradingError(ChalkError):
    """A bad invocation (missing folder, bad option); the message names the parameter."""


# --- the key ----------------------------------------------------------------------------------
def _constant(value):
    return lambda: value


def frozen_key(chapter: str) -> dict[str, Exercise]:
    """``problem_set(chapter)`` with every expected and typical wrong value computed now.

    Judging with constants means nothing a submission does later (even rewriting the library's
    files on disk) can move the key the grader uses.
    """
    frozen = {}
    for ex_id, ex in problem_set(chapter).items():
        if not isinstance(ex, Exercise):  # a choice holds its answer as data, not as a function
            frozen[ex_id] = ex
            continue
        expected = ex.expected()
        mistakes = tuple(Mistake(m.hint, value=_constant(m.wrong_answer(expected))) for m in ex.mistakes)
        frozen[ex_id] = replace(ex, expected=_constant(expected), mistakes=mistakes)
    return frozen


@dataclass
class Key:
    """What grading one problem set needs: the frozen key, the exercises' titles, and the Markdown
    of both editions (so that what a student wrote stands out from what was handed out)."""
    exercises: dict
    titles: dict
    markdown: set = field(default_factory=set)
    prompts: list = field(default_factory=list)
    """The questions of the written answers, as the student edition shows them above the placeholder."""


def _keys(chapters: list[str]) -> dict:
    """{chapter: Key, or the reason it cannot be loaded}."""
    sources = {p.stem: p for p in problem_sets()}
    keys = {}
    for chapter in chapters:
        try:
            exercises = frozen_key(chapter)
        except Exception as err:  # a broken key fails its own submissions, not the batch
            keys[chapter] = f"the key of {chapter} cannot be loaded ({err})"
            continue
        key = Key(exercises, {i: i for i in exercises})
        if chapter in sources:
            nb = nbformat.read(sources[chapter], as_version=4)
            key.titles = {i: titles(nb).get(i, i) for i in exercises}
            edition = student_problem_set(sources[chapter])
            key.markdown = {c.source.strip() for book in (nb, edition) for c in book.cells if c.cell_type == "markdown"}
            key.prompts = [c.source.split(PLACEHOLDER)[0].strip() for c in edition.cells
                           if FREE_TEXT in c.metadata.get("tags", []) and PLACEHOLDER in c.source]
        keys[chapter] = key
    return keys


def check_ids_unique(keys: dict) -> None:
    """An id two problem sets share is an error: the grades have one column per exercise id."""
    owner: dict[str, str] = {}
    for chapter, key in keys.items():
        for ex_id in key.exercises if isinstance(key, Key) else ():
            if ex_id in owner:
                raise GradingError(f"exercise id {ex_id!r} is in problem sets {owner[ex_id]} and "
                                   f"{chapter}: ids must be unique across problem sets")
            owner[ex_id] = chapter


KEY_FOLDER = Path(problems.__path__[0])
"""The instructor's plain key, ``chalk.teaching.problems``: checksummed around every notebook."""
_KEY_CHANGED = "the instructor's key files changed while this notebook ran"


def key_files() -> dict[str, str]:
    """{file: SHA-256} of the files under ``KEY_FOLDER``, compiled ones aside."""
    return {p.relative_to(KEY_FOLDER).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(KEY_FOLDER.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def changed(before: dict, after: dict) -> list[str]:
    """The files written, added or removed between two ``key_files``."""
    return sorted(f for f in before.keys() | after.keys() if before.get(f) != after.get(f))


# --- reading a submission -----------------------------------------------------------------------
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


def _place(i: int, sections: list, key: Key) -> str:
    ex = sections[i] if i < len(sections) else None
    return f"exercise {ex} ({key.titles.get(ex, ex)})" if ex else f"the opening cells (cell {i + 1})"


def code_of(source: str) -> str:
    """``source`` with its comments blanked, lines kept; only whole-line comments where it does not
    tokenize (an unclosed bracket or string)."""
    lines = source.splitlines()
    try:
        comments = [t.start for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return "\n".join("" if ln.lstrip().startswith("#") else ln for ln in lines)
    for row, col in comments:
        lines[row - 1] = lines[row - 1][:col]
    return "\n".join(lines)


def key_material(nb, key: Key) -> list[str]:
    """A flag for each code cell whose code reads key material (``KEY_MATERIAL``)."""
    sections, flags = exercise_of_cells(nb), []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = code_of(cell.source)
        for pattern, what in KEY_MATERIAL:
            if m := pattern.search(code):
                line = code[code.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
                flags.append(f"{_place(i, sections, key)} {what}: `{line[:80]}`")
    return flags


def written_parts(nb, key: Key) -> list[dict]:
    """The written answers (cells tagged ``free-text``) and any Markdown the student added; a
    second part of one kind under one exercise is ``written 2``, ``note 2``, … so that (file,
    exercise, part) names each one (``chalk.teaching.gradebook.merge`` matches on it)."""
    parts, seen = [], {}
    for cell, ex in zip(nb.cells, exercise_of_cells(nb)):
        if cell.cell_type != "markdown":
            continue
        text = cell.source.strip()
        if FREE_TEXT in cell.get("metadata", {}).get("tags", []):
            prompt = next((p for p in key.prompts if p and text.startswith(p)), "")
            text = text[len(prompt):].strip()
            kind, text, points = "written", "" if text == PLACEHOLDER else text, free_text_points(cell)
        elif text and text not in key.markdown:
            kind, points = "note", 0.0
        else:
            continue
        n = seen[ex, kind] = seen.get((ex, kind), 0) + 1
        parts.append({"exercise": ex, "part": kind if n == 1 else f"{kind} {n}", "text": text, "max_points": points})
    return parts


# --- running one notebook ---------------------------------------------------------------------
def _read_checks(log: Path) -> list[tuple[str, object]]:
    calls = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else ():
        try:
            entry = json.loads(line)
            calls.append((str(entry["id"]), entry["answer"]))
        except (ValueError, KeyError, TypeError):
            continue  # a line the kernel did not write as check does: ignored
    return calls


KERNEL = "chalk-grader"
"""The kernelspec each submission's kernel is started from (``run_notebook`` writes one per run)."""


@dataclass
class Kernel:
    """What every kernel of a batch shares: its Python, the sandbox's launcher and ``bwrap``."""
    python: Path
    launcher: Path
    bwrap: str
    font_list: Path | None = None
    """Matplotlib's font list, built once for the batch (``font_list``); None where none was built."""


def kernel_python(dest: Path, tool: str) -> Kernel:
    """Write the Python submissions run in, and the sandbox's launcher, under ``dest``.

    Its Python is a virtual environment of the base interpreter (so ``sys.executable`` is a
    temporary path, not the repository's ``.venv``) whose one site folder names this environment's
    library folders. Python runs the ``.pth`` files of a site folder, not of the folders they name:
    the editable install's finder, which maps ``chalk`` to the repository's ``lib/chalk``, is never
    loaded, and ``chalk`` is whatever ``PYTHONPATH`` puts first (``_sandbox``); the repository is
    not in the sandbox anyway.
    """
    builder = venv.EnvBuilder(symlinks=os.name != "nt")
    builder.create(dest / "python")
    paths = {"base": str(dest / "python"), "platbase": str(dest / "python")}
    site = Path(sysconfig.get_path("purelib", "venv", vars=paths))
    # Resolved, as sandbox.python_folders binds them: a .venv reached through a symlink (the
    # instructors' guide's scratch course) is not at its own path inside the sandbox.
    libraries = dict.fromkeys(str(Path(sysconfig.get_path(p)).resolve()) for p in ("purelib", "platlib"))
    (site / "chalk-grader.pth").write_text("".join(f"{d}\n" for d in libraries), encoding="utf-8")
    launcher = dest / "launcher" / "launch.py"
    launcher.parent.mkdir()
    launcher.write_text(sandbox.launcher(), encoding="utf-8")
    return Kernel(dest / "python", launcher, tool, font_list(dest / "mpl", dest / "python"))


def font_list(dest: Path, python: Path) -> Path | None:
    """Matplotlib's list of the system's fonts, written once for a batch under ``dest`` by the
    kernels' Python ``python`` (a virtual environment's folder). Every kernel's MPLCONFIGDIR is an
    empty scratch folder, where matplotlib's first import scans the fonts again and writes this
    list (0.3-0.6 s of CPU in each notebook that draws); the sandbox binds this one there
    read-only instead (``sandbox.command``). None where that Python wrote none (no matplotlib: its
    kernels draw nothing), and each kernel scans the fonts as before."""
    dest.mkdir()
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": str(dest), "MPLCONFIGDIR": str(dest)}
    try:
        # -I, and its own folder as the working one: run outside the sandbox, it must import nothing
        # from where the grader was started (a submissions folder could hold a matplotlib.py)
        subprocess.run([str(python / "bin" / "python"), "-I", "-c", "import matplotlib.font_manager"], env=env,
                       cwd=dest, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return None
    written = sorted(dest.glob("fontlist-*.json"))
    return written[0] if len(written) == 1 else None


def compiled(package: Path) -> Path:
    """``package`` with every module compiled to its ``__pycache__``: the sandbox binds it read-only
    and kernels run with PYTHONDONTWRITEBYTECODE, so without this every kernel compiled the chalk
    modules it imports again from source (0.1-0.3 s of CPU a notebook)."""
    if not compileall.compile_dir(package, quiet=2):
        raise GradingError(f"PACKAGE: the student package in {package} does not compile")
    return package


def _sandbox(tmp: Path) -> tuple[Path, Path, dict, Path]:
    """The kernel's folder ``box`` (``sandbox.box_paths``: its scratch folders, sockets and check
    log), ``box/lib`` where the sandbox binds the batch's student package read-only, and the kernel's
    environment: none of the grader's variables, no ``PWD``. Nothing it writes there reaches the
    key, the submissions, the grades or the next kernel."""
    box = tmp / "box"
    paths = sandbox.box_paths(box)
    for name in ("conn", *sandbox.SCRATCH_FOLDERS):
        paths[name].mkdir(parents=True)
    paths["log"].touch()
    (box / "lib").mkdir()
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONPATH": str(box / "lib"), "HOME": str(paths["home"]),
           "TMPDIR": str(paths["tmp"]), "IPYTHONDIR": str(paths["ipython"]), "MPLCONFIGDIR": str(paths["mpl"]),
           "PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           CHECK_LOG: str(paths["log"])}
    return box, paths["work"], env, paths["log"]


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel binds its sockets in the sandbox's own ``box/conn`` (the
    connection file names that path) and whose grader end reaches them from outside, once the
    sandbox has started (``sandbox.reach``)."""
    bwrap = Unicode(help="the bwrap that starts the sandbox")

    async def _async_post_start_kernel(self, **kw) -> None:
        self.ip = sandbox.reach(self.bwrap, self.provisioner.process.pid, Path(self.ip))
        await super()._async_post_start_kernel(**kw)


def _kernel_manager(tmp: Path, box: Path, package: Path, kernel: Kernel, limit: float) -> AsyncKernelManager:
    """A manager for a kernel in the sandbox, talking to it over Unix sockets in ``box/conn``."""
    spec = tmp / "spec" / KERNEL
    spec.mkdir(parents=True)
    argv = sandbox.command(kernel.bwrap, box, package, kernel.python, kernel.launcher, limit, kernel.font_list)
    # an interrupt goes as a message: a signal would reach bwrap, not the kernel, and end the sandbox
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "chalk grader", "language": "python",
                                                  "interrupt_mode": "message"}), encoding="utf-8")
    paths = sandbox.box_paths(box)
    km = SandboxedKernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
                                transport="ipc", ip=str(paths["conn"] / "kernel"), connection_file=str(paths["connection"]),
                                bwrap=kernel.bwrap)
    km.write_connection_file()
    sandbox.hand_over(box)
    return km


async def run_notebook(nb, ids: list[str], limit: float, package: Path, kernel: Kernel) -> Run:
    """Execute ``nb`` in a fresh kernel in its sandbox (``chalk.teaching.sandbox``); read the
    variables ``ids`` after every cell that names one, and the check log. When it returns, every
    process the notebook started is dead."""
    with tempfile.TemporaryDirectory(prefix="chalk-grade-") as tmp:
        box, work, env, log = _sandbox(Path(tmp))
        km = _kernel_manager(Path(tmp), box, package, kernel, limit)
        run = await execute(nb, ids, limit, km, env, work, _end)
        run.checks = _read_checks(log)
    return run


def _end(process) -> None:
    """Make sure the sandbox is gone: bwrap exits only once its PID namespace is empty, so a
    dead bwrap means nothing the notebook started lives on."""
    if process is None or process.poll() is not None:
        return
    process.kill()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise GradingError(f"SANDBOX: the sandbox of a kernel (pid {process.pid}) would not end") from None


def _status(run: Run, nb, key: Key) -> str:
    sections = exercise_of_cells(nb)
    if run.status == "error":
        return f"error: {run.error.split(':')[0]} in {_place(run.cell, sections, key)}:{run.error.split(':', 1)[1]}"
    if run.status == "died":
        return f"error: the kernel died in {_place(run.cell, sections, key)} (the notebook exited or crashed it)"
    if run.status == "timeout":
        return f"timeout in {_place(run.cell, sections, key)}"
    if run.status == "failed":
        return f"error: could not run the notebook ({run.error})"
    if run.answers is None:
        return "error: the answers could not be read (stdout replaced or forged)"
    return "ok"


def _shown(record) -> str:
    value = record_value(record)
    if value is None:
        return "nothing"
    return answer_text(value) if isinstance(value, float) else repr(value)


def searches(run: Run) -> list[str]:
    """A flag for each exercise whose check ran more than ``SEARCHING`` times."""
    counts: dict[str, int] = {}
    for ex_id, _ in run.checks:
        counts[ex_id] = counts.get(ex_id, 0) + 1
    return [f"the check of {i} was called {n} times: answers tried against it until one passed?"
            for i, n in counts.items() if n > SEARCHING]


def judged(key: Key, run: Run) -> tuple[dict, list[str]]:
    """Each exercise's Result, from the value its variable holds after the run from the top (the
    last snapshot before a crash or the time limit), and notes where that differs from what its
    last check was given (the check's log only informs the note: the notebook can write to it)."""
    last = {ex_id: value for ex_id, value in run.checks if ex_id in key.exercises}
    variables = run.answers or {}
    results, notes = {}, []
    for ex_id, ex in key.exercises.items():
        value = variables.get(ex_id)
        if run.answers is not None and ex_id in last and record_value(last[ex_id]) != record_value(value):
            notes.append(f"{ex_id} was last checked as {_shown(last[ex_id])} but holds {_shown(value)} after the "
                         f"run from the top: graded {_shown(value)}")
        results[ex_id] = judge(ex, record_value(value))
    return results, notes


def out_of_order(nb) -> bool:
    """Whether the saved notebook's cells were last run in another order than top to bottom."""
    counts = [c.get("execution_count") for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    return any(b <= a for a, b in zip(counts, counts[1:]))


_REORDERED = ("the notebook was saved after running its cells out of order; it was graded as a run from the "
              "top shows it, which may differ from what you saw")


def loop_checks(nb) -> list[str]:
    """A flag for each ``check`` call inside a loop or comprehension: answers tried until one
    passes. Read from the code, so a notebook that silences the check's log is still seen."""
    flags = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(_python(cell.source))
        except SyntaxError:
            continue
        loops = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        for loop in (n for n in ast.walk(tree) if isinstance(n, loops)):
            if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "check"
                   for c in ast.walk(loop)):
                flags.append(f"cell {i + 1} calls check inside a loop: answers tried until one passed?")
                break
    return flags


def _python(source: str) -> str:
    """A cell's source with IPython's magics and shell escapes blanked, so that it parses."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())


# --- grading one file -------------------------------------------------------------------------
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


@dataclass
class Submission:
    path: Path
    file: str
    student: dict
    nb: object = None
    problem: str | None = None
    chapter: str | None = None
    how: str = ""


async def grade_file(sub: Submission, keys: dict, limit: float, package: Path, kernel: Kernel) -> Row:
    """One submission's row; never raises."""
    if sub.problem:
        return Row(sub.file, sub.problem, student=sub.student)
    if sub.chapter is None:
        return Row(sub.file, f"invalid: problem set unknown ({sub.how})", student=sub.student)
    if sub.chapter not in keys:
        return Row(sub.file, f"invalid: no problem set {sub.chapter!r} (from the {sub.how}); "
                             f"known: {', '.join(keys)}", problem_set=sub.chapter, student=sub.student)
    key = keys[sub.chapter]
    if isinstance(key, str):  # the instructor's key failed to load
        return Row(sub.file, f"invalid: {key}", problem_set=sub.chapter, student=sub.student)
    nb = sub.nb
    row = Row(sub.file, "", problem_set=sub.chapter, student=sub.student, notes=id_notes(nb, key.exercises),
              flags=key_material(nb, key), written=written_parts(nb, key),
              points={i: ex.points for i, ex in key.exercises.items()})
    if sub.path.suffix != ".ipynb":
        row.notes.append(f"graded as a notebook although named {sub.path.name}")
    sections = nbformat.from_dict(nb)  # headings as submitted; the run appends a cell to nb
    key_before = key_files()
    run = await run_notebook(nb, list(key.exercises), limit, package, kernel)
    if written := changed(key_before, key_files()):
        row.flags.append(f"{_KEY_CHANGED} ({', '.join(written)}; "
                         f"another notebook may have run at the same time)")
    row.status, row.seconds = _status(run, sections, key), run.seconds
    row.results, notes = judged(key, run)
    row.notes += notes + ([_REORDERED] if out_of_order(sections) else [])
    row.flags += searches(run) + loop_checks(sections)
    return row


def submissions(folder: Path) -> list[Path]:
    """Every file under ``folder`` except hidden ones and Jupyter checkpoints."""
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def plan(folder: Path, chapters: list[str], roster: list[dict]) -> tuple[list[Submission], list[dict]]:
    """(notebooks to grade, other files): a student's resubmissions of one problem set give way to
    the latest (Canvas's order), and a file that is not a notebook is listed, not scored."""
    subs, others = [], []
    for path in submissions(folder):
        file = path.relative_to(folder).as_posix()
        sub = Submission(path, file, student_of(file, roster))
        sub.nb, sub.problem = _load(path)
        if sub.problem and path.suffix != ".ipynb":
            others.append({"file": file, "student": sub.student, "graded": "no: not a notebook"})
            continue
        if sub.nb is not None:
            sub.chapter, sub.how = identify(sub.nb, path.name, chapters)
        subs.append(sub)
    groups: dict[tuple, list[Submission]] = {}
    for sub in subs:
        if sub.student.get("id") and sub.chapter:
            groups.setdefault((sub.student["id"], sub.chapter), []).append(sub)
    for group in groups.values():
        *earlier, latest = sorted(group, key=lambda s: ((canvas_name(s.file) or {}).get("order", (0, 0)), s.file))
        for sub in earlier:
            subs.remove(sub)
            others.append({"file": sub.file, "student": sub.student, "problem_set": sub.chapter,
                           "graded": f"no: superseded by {latest.file}"})
    return subs, others


async def _grade_all(subs: list[Submission], keys: dict, limit: float, workers: int, package: Path,
                     kernel: Kernel) -> list[Row]:
    gate = asyncio.Semaphore(workers)

    async def one(sub: Submission) -> Row:
        async with gate:
            row = await grade_file(sub, keys, limit, package, kernel)
            print(f"{row.file}: {row.status}, {row.score:g} points ({row.seconds:.1f} s)", file=sys.stderr)
            return row

    return list(await asyncio.gather(*(one(s) for s in subs)))


def _run_coroutine(coroutine):
    """Run ``coroutine`` to completion, also from inside a running event loop.

    Jupyter (where instructors call ``grade``) and Playwright's sync API both keep a loop running
    in the main thread, where ``asyncio.run`` refuses to start; a private thread has none.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def missing(roster: list[dict], rows: list[Row], sets: list[str]) -> list[Row]:
    """A row scoring 0 for each student the roster names and each problem set of the batch that
    no file of theirs was handed in for (a file that could not be graded counts as handed in)."""
    def who(student: dict) -> str:
        return student.get("id") or student.get("student")

    handed = {(who(r.student), r.problem_set) for r in rows}
    unknown = {who(r.student) for r in rows if r.problem_set not in sets}
    out = []
    for entry in roster:
        student = {k: (entry.get(k) or "").strip() for k in ROSTER_FIELDS}
        if not who(student) or who(student) in unknown:
            continue  # nobody named, or a file whose problem set is unknown: exported as 0 already
        out += [Row("", f"missing: no notebook of problem set {s} handed in (scored 0)", s, student)
                for s in sets if (who(student), s) not in handed]
    return out


def grade(folder, out=None, timeout: float = DEFAULT_TIMEOUT, workers: int = 2, roster=None, marks=None) -> Batch:
    """Grade every file under ``folder`` into ``out`` (default: a new ``_build/grades/<time>``);
    ``marks``, an earlier batch (its folder, or its filled ``manual.csv``), gives its hand marks
    to the written answers that are unchanged."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GradingError(f"SUBMISSIONS: {str(folder)!r} is not a folder of submitted notebooks")
    if not timeout > 0:
        raise GradingError(f"timeout: must be > 0 seconds per notebook, got {timeout!r}")
    if not (isinstance(workers, int) and workers >= 1):
        raise GradingError(f"workers: must be a whole number >= 1, got {workers!r}")
    if not submissions(folder):
        raise GradingError(f"SUBMISSIONS: {str(folder)!r} holds no files")
    roster_rows = read_roster(Path(roster)) if roster else []
    given = earlier_marks(Path(marks)) if marks else {}
    start = time.monotonic()
    tool = sandbox.bwrap()
    destination = new_folder(Path(out) if out else None, GRADES)
    chapters = known_problem_sets()
    keys = _keys(chapters)
    check_ids_unique(keys)
    subs, others = plan(folder, chapters, roster_rows)
    key_before = key_files()
    with tempfile.TemporaryDirectory(prefix="chalk-package-") as tmp:
        package = compiled(write_tree(Path(tmp) / "package"))
        kernel = kernel_python(Path(tmp) / "kernel", tool)
        setup = time.monotonic() - start
        rows = _run_coroutine(_grade_all(subs, keys, timeout, workers, package, kernel))
    present = {r.problem_set for r in rows}
    carry_marks(rows, given)
    rows += missing(roster_rows, rows, [c for c in keys if c in present])
    batch = Batch(rows, {c: k.titles for c, k in keys.items() if isinstance(k, Key) and c in present}, others,
                  exercises={c: overview.rows(c) for c, k in keys.items() if isinstance(k, Key) and c in present},
                  setup_seconds=setup)
    batch.folder = write(batch, destination)
    if written := changed(key_before, key_files()):
        suspects = [r.file for r in rows if any(f.startswith(_KEY_CHANGED) for f in r.flags)]
        raise GradingError(f"KEY: the instructor's key changed while the batch ran ({', '.join(written)} in "
                           f"{KEY_FOLDER}), while {', '.join(suspects) or 'no notebook'} ran. The grades "
                           f"in {batch.folder} were judged with the key as it was before; restore the key from "
                           f"version control before grading again")
    return batch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade submitted problem sets, or merge hand-given points.")
    parser.add_argument("submissions", type=Path, nargs="?", help="folder of submitted notebooks (any depth)")
    parser.add_argument("--merge", type=Path, metavar="MANUAL_CSV",
                        help="a batch's manual.csv with the points filled in: write the batch again with them")
    parser.add_argument("--out", type=Path, help=f"a new folder for the grades (default: {GRADES}/<date_time>)")
    parser.add_argument("--roster", type=Path, help="CSV naming the student of each file (columns file or id, student, ...)")
    parser.add_argument("--marks", type=Path, metavar="BATCH",
                        help="an earlier batch (its folder or filled manual.csv): its hand marks carry over to "
                             "the written answers that are unchanged")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per notebook")
    parser.add_argument("--workers", type=int, default=2, help="notebooks run at once")
    args = parser.parse_args(argv)
    try:
        if args.merge:
            batch = merge(args.merge, args.out)
            print(f"merged {args.merge} into {batch.folder}/: grades.csv, canvas.csv, gradescope.csv, feedback/")
            return 0
        if args.submissions is None:
            raise GradingError("SUBMISSIONS: give a folder of submitted notebooks (or --merge a manual.csv)")
        batch = grade(args.submissions, args.out, args.timeout, args.workers, args.roster, args.marks)
    except ChalkError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    ok = sum(r.status == "ok" for r in batch.rows)
    print(f"graded {len(batch.rows)} notebooks ({ok} ran cleanly), listed {len(batch.others)} other files: "
          f"{batch.folder}/ (grades.csv, feedback/, canvas.csv, gradescope.csv, manual.csv)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
