"""A Gradescope autograder for one problem set: ``make autograder`` writes it, and the same module,
from the package students install, grades a submission inside Gradescope's container.

    python -m chalk.teaching.autograder build [--out DIR] [--problem-set NN_name] [--timeout 300]
    python -m chalk.teaching.autograder run --problem-set NN_name [--root /autograder] [--user NAME]

Gradescope's autograder specification (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
asks for a zip with ``setup.sh`` and ``run_autograder`` at its top; Gradescope unpacks it into
``/autograder/source``, runs ``setup.sh`` once as root when it builds the image, and for each
submission runs ``run_autograder`` with the student's files in ``/autograder/submission``, reading
the score and the tests from ``/autograder/results/results.json``. The zip ``build`` writes holds
those two scripts, the student package's wheel (``chalk.teaching.package``: every key sealed, none
in plain form) and the pinned versions of what the wheel and a Jupyter kernel need; never the
repository, the plain keys or the instructor's tools.

``run`` (what ``run_autograder`` calls) runs the notebook from the top in a kernel started by the
grader's launcher (``chalk.teaching.sandbox.launcher``): as root it drops to the unprivileged
``--user`` before the kernel starts, with the grader's limits on memory, processes, file size and
CPU time. The answers are read as the grader reads them (``chalk.teaching.runner``) and judged by
this root process against the sealed key; results.json is written after the kernel is gone and
every process of that user killed, into a folder the user cannot write. Gradescope's container
is the isolation between students: bubblewrap, which the local grader uses, rarely runs inside it.
"""
import argparse
import asyncio
import importlib.metadata
import json
import os
import pwd
import signal
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat

from . import sandbox
from .exercises import RIGHT, STATUS_WORD, judge, problem_set, record_value
from .runner import Run, execute, identify

DEFAULT_TIMEOUT = 300
"""Seconds per notebook: a problem set runs in seconds; Gradescope's own limit is set per assignment."""
USER = "chalk-student"
"""The account setup.sh creates for the students' code."""
VENV = "/opt/chalk"
"""Where setup.sh installs the wheel; ``CHALK_PYTHON`` names another interpreter (the tests do)."""
KERNEL = "chalk-autograder"
KERNEL_DEPENDENCIES = ("ipykernel", "nbclient", "jupyter_client")
"""What ``run`` needs beyond the wheel's own dependencies: a kernel and a client to drive it."""


# --- results.json -----------------------------------------------------------------------------
def gradescope_test(number: int, ex_id: str, title: str, points: float, result, kind: str = "") -> dict:
    """One exercise as a test of Gradescope's results.json: its points if right, 0 otherwise, and
    the check's words (never the answer: the check has none to give)."""
    right = result.status == RIGHT
    return {"name": f"{ex_id}: {title}" if title and title != ex_id else ex_id, "number": str(number),
            "score": points if right else 0, "max_score": points, "status": "passed" if right else "failed",
            "output": f"{STATUS_WORD[result.status]}: {result.message}", "tags": [kind] if kind else [],
            "visibility": "visible"}


def results(chapter: str, run: Run | None, notes: list[str], seconds: float) -> dict:
    """results.json for a submission of ``chapter``: one test per exercise of the sealed key,
    judged on the value its variable held after the run (``run`` None: nothing could run, every
    exercise unanswered)."""
    exercises = problem_set(chapter)
    answers = (run.answers or {}) if run else {}
    tests = [gradescope_test(n, ex_id, "", ex.points, judge(ex, record_value(answers.get(ex_id))), ex.kind)
             for n, (ex_id, ex) in enumerate(exercises.items(), 1)]
    score = sum(t["score"] for t in tests)
    possible = sum(t["max_score"] for t in tests)
    lines = [f"Problem set {chapter}: {score:g} of {possible:g} checked points.", *notes,
             "Written answers, if the problem set asks for any, are marked by hand."]
    return {"score": score, "execution_time": round(seconds), "output": "\n".join(lines),
            "tests": tests, "extra_data": {"problem_set": chapter, "status": run.status if run else "not run"}}


# --- running one submission ------------------------------------------------------------------
def _uid(user: str) -> int:
    if user.isdigit():
        return int(user)
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise SystemExit(f"error: user {user!r} does not exist; setup.sh creates {USER!r} "
                         f"(or set CHALK_AUTOGRADER_USER to an unprivileged user or uid)") from None


def _sweep(uid: int) -> None:
    """Kill every process of ``uid``: whatever the notebook started that outlived its kernel. As
    that user, ``kill(-1)`` reaches exactly its processes and never the caller itself; the child
    that sends it execs nothing, so it needs no program the user can reach."""
    if os.getuid() != 0 or uid == 0:
        return
    for _ in range(3):  # a process forking while it is being killed may leave a child behind
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)


def _box(tmp: Path, nb, uid: int) -> tuple[Path, dict, Path]:
    """The kernel's writable folder (notebook, HOME, temporary files, sockets), its environment,
    and the launcher, in a root-owned folder the kernel can read but not change."""
    os.chmod(tmp, 0o755)
    box = tmp / "box"
    for folder in ("work", "home", "tmp", "ipython", "mpl", "conn"):
        (box / folder).mkdir(parents=True)
    nbformat.write(nb, box / "work" / "submission.ipynb")
    launcher = tmp / "launcher" / "launch.py"
    launcher.parent.mkdir()
    launcher.write_text(sandbox.launcher(uid), encoding="utf-8")
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": str(box / "home"), "TMPDIR": str(box / "tmp"),
           "IPYTHONDIR": str(box / "ipython"), "MPLCONFIGDIR": str(box / "mpl"), "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return box, env, launcher


async def run_submission(nb, ids: list[str], limit: float, uid: int) -> Run:
    """Run ``nb`` from the top as ``uid`` (when root) under the grader's limits; every process of
    ``uid`` is dead when it returns."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory(prefix="chalk-autograder-") as tmp:
        box, env, launcher = _box(Path(tmp), nb, uid)
        limits = dict(sandbox.LIMITS, RLIMIT_CPU=int(limit) + 30)
        spec = Path(tmp) / "spec" / KERNEL
        spec.mkdir(parents=True)
        argv = [sys.executable, str(launcher), json.dumps(limits), "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "chalk autograder",
                                                      "language": "python", "interrupt_mode": "message"}))
        km = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
                                transport="ipc", ip=str(box / "conn" / "kernel"),
                                connection_file=str(box / "conn" / "kernel.json"))
        km.write_connection_file()
        sandbox.hand_over(box, uid)

        def finish(process):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)
            _sweep(uid)

        return await execute(nb, ids, limit, km, env, box / "work", finish)


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def grade_submission(root: Path, chapter: str, limit: float, uid: int) -> dict:
    """results.json's content for the submission under ``root/submission``."""
    start = time.monotonic()
    found = _notebooks(root / "submission")
    if not found:
        return results(chapter, None, ["No notebook (.ipynb) was submitted: nothing could be graded."], 0)
    chosen = [p for p in found if _identified(p, chapter)] or found
    path, notes = chosen[-1], []
    if len(found) > 1:
        notes.append(f"{len(found)} notebooks were submitted; {path.relative_to(root / 'submission')} was graded.")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # not JSON, not a notebook: nbformat raises several types
        return results(chapter, None, notes + [f"{path.name} could not be read as a notebook "
                                                f"({type(err).__name__}); it scores 0."], 0)
    found_set, how = identify(nb, path.name, [chapter])
    if found_set != chapter:
        return results(chapter, None, notes + [f"{path.name} is not problem set {chapter} "
                                                f"({found_set or 'unknown'}, from the {how}); it scores 0."], 0)
    run = asyncio.run(run_submission(nb, list(problem_set(chapter)), limit, uid))
    if run.status != "ok":
        where = f" in cell {run.cell + 1}" if run.cell is not None else ""
        notes.append(f"The notebook did not run cleanly ({run.status}{where}"
                     f"{': ' + run.error if run.error else ''}); every answer set before that counts.")
    if run.answers is None and run.status != "failed":
        notes.append("The answers could not be read (the notebook's output was replaced or forged).")
    return results(chapter, run, notes, time.monotonic() - start)


def _identified(path: Path, chapter: str) -> bool:
    try:
        return identify(nbformat.read(path, as_version=4), path.name, [chapter])[0] == chapter
    except Exception:  # an unreadable notebook is graded only when it is the one submitted
        return False


def run(root: Path, chapter: str, limit: float = DEFAULT_TIMEOUT, user: str = USER) -> Path:
    """Grade ``root/submission`` and write ``root/results/results.json``; returns its path."""
    uid = _uid(user) if os.getuid() == 0 else os.getuid()
    if os.getuid() == 0 and uid == 0:
        raise SystemExit("error: the students' code must not run as root; name an unprivileged --user")
    data = grade_submission(root, chapter, limit, uid)
    dest = root / "results" / "results.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    dest.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return dest


# --- the zip ---------------------------------------------------------------------------------
SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder's image.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${CHALK_VENV:-{venv}}"
PYTHON="$(command -v python3.13 || command -v python3.12 || command -v python3.11 || true)"
if [ -z "$PYTHON" ]; then
  apt-get install -y python3.11 python3.11-venv
  PYTHON=python3.11
fi
"$PYTHON" -m venv "$VENV" || { apt-get install -y "$(basename "$PYTHON")-venv"; "$PYTHON" -m venv "$VENV"; }
"$VENV/bin/python" -m pip install -r requirements.txt ./{wheel}
id -u {user} >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin {user}
"""
RUN = """\
#!/usr/bin/env bash
# Gradescope runs this as root for every submission; the students' code runs as {user}.
# The root folder is the first argument, else $AUTOGRADER_ROOT, else /autograder.
set -uo pipefail
ROOT="${1:-${AUTOGRADER_ROOT:-/autograder}}"
exec "${CHALK_PYTHON:-{venv}/bin/python}" -m chalk.teaching.autograder run --root "$ROOT" \\
  --problem-set {chapter} --timeout {timeout} --user "${CHALK_AUTOGRADER_USER:-{user}}"
"""


def _fill(template: str, **values) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def requirements() -> str:
    """Pinned versions, as this environment has them, of the wheel's dependencies and a kernel's."""
    from .package import metadata  # the instructor's tools: not in the student package

    names = [*metadata()["dependencies"], *KERNEL_DEPENDENCIES]
    return "".join(f"{n}=={importlib.metadata.version(n)}\n" for n in names)


def build(out: Path, chapters: list[str] | None = None, timeout: float = DEFAULT_TIMEOUT) -> list[Path]:
    """One zip per problem set (``chapters``, default all) in ``out``: ``chalk-autograder-<set>.zip``."""
    from .package import entry, write_tree, write_wheel  # the instructor's tools: not in the student package
    from .seal import known_problem_sets

    known = known_problem_sets()
    chapters = chapters or known
    for chapter in chapters:
        if chapter not in known:
            raise SystemExit(f"error: PROBLEM_SET: no problem set {chapter!r}; known: {', '.join(known)}")
    written = []
    with tempfile.TemporaryDirectory(prefix="chalk-autograder-build-") as tmp:
        wheel = write_wheel(write_tree(Path(tmp) / "package"), Path(tmp) / "wheel")
        pins = requirements()
        out.mkdir(parents=True, exist_ok=True)
        for chapter in chapters:
            dest = out / f"chalk-autograder-{chapter}.zip"
            with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
                entry(zf, "setup.sh", _fill(SETUP, venv=VENV, wheel=wheel.name, user=USER).encode(), 0o755)
                entry(zf, "run_autograder", _fill(RUN, venv=VENV, chapter=chapter, timeout=int(timeout),
                                                  user=USER).encode(), 0o755)
                entry(zf, "requirements.txt", pins.encode())
                entry(zf, wheel.name, wheel.read_bytes())
            written.append(dest)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write Gradescope autograders, or grade one submission in one.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write chalk-autograder-<problem set>.zip files")
    b.add_argument("--out", type=Path, default=Path("_build") / "autograder")
    b.add_argument("--problem-set", action="append", help="one problem set (repeatable); default: all")
    b.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per notebook")
    r = sub.add_parser("run", help="grade <root>/submission into <root>/results/results.json")
    r.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
    r.add_argument("--problem-set", required=True)
    r.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    r.add_argument("--user", default=USER, help="the unprivileged user (name or uid) the notebook runs as")
    args = parser.parse_args(argv)
    if args.command == "build":
        if not args.timeout > 0:
            raise SystemExit(f"error: TIMEOUT: must be > 0 seconds per notebook, got {args.timeout!r}")
        for path in build(args.out, args.problem_set, args.timeout):
            print(path)
        return 0
    print(run(args.root, args.problem_set, args.timeout, args.user))
    return 0


if __name__ == "__main__":
    sys.exit(main())
