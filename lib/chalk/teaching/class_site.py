"""The class site: the course's site with every problem set in its student edition, for `make book
STUDENT=1`.

    python -m chalk.teaching.class_site _build/html-student

The build reads the repository's own sources; this module, a Sphinx extension listed in
``_config.yml``, hands Sphinx the student edition (``edition.student_problem_set``) of each problem
set in place of the file when ``CHALK_CLASS_SITE=1`` and does nothing otherwise. The chapters are the
same on both sites, so when the default site has been built (``make book``) since the library last
changed, its environment is copied and only the problem sets are read and run again: seven kernels
instead of every page's. Their runs are kept for the edition (``chalk.teaching.shared_runs``), which
then runs none of them; a problem set is never shown from a kept run (``shared_runs.may_show``).
Sphinx keeps an environment only for the source folder it was made from, which is why the class
site is built from the repository rather than from a copy of it.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from .chapters import ROOT
from .edition import problem_sets, student_problem_set

ENV = "CHALK_CLASS_SITE"
"""Set to 1 in the environment of the build that makes the class site."""


def active() -> bool:
    return os.environ.get(ENV) == "1"


def _student_sets(srcdir) -> dict[str, Path]:
    """``{docname: instructor's notebook}`` of the problem sets under ``srcdir``."""
    root = Path(srcdir)
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in problem_sets(root)}


def swap_problem_set(app, docname: str, source: list[str]) -> None:
    """Sphinx's source-read: a problem set's text becomes its student edition's (class site only)."""
    if active() and (src := _student_sets(app.srcdir).get(docname)):
        source[0] = nbformat.writes(student_problem_set(src))


def reread_problem_sets(app, env, added, changed, removed) -> list[str]:
    """Sphinx's env-get-outdated: an environment copied from the default site holds the instructor's
    problem sets, so the class site reads every problem set again."""
    return sorted(_student_sets(app.srcdir)) if active() else []


def setup(app):
    app.connect("source-read", swap_problem_set)
    app.connect("env-get-outdated", reread_problem_sets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _reusable_environment(root: Path) -> Path | None:
    """The default build's environment, if it is newer than the library: Sphinx re-reads a page whose
    file changed, but a page's numbers also change with ``chalk``'s code and data, which it does not
    watch."""
    env = root / "_build" / ".doctrees"
    pickle = env / "environment.pickle"
    if not pickle.is_file():
        return None
    library = max(p.stat().st_mtime for p in (root / "lib" / "chalk").rglob("*") if p.suffix in (".py", ".toml"))
    return env if pickle.stat().st_mtime > library else None


def build(out: Path, root: Path = ROOT, work: Path | None = None) -> Path:
    """Build the class site from ``root`` into ``out`` (replaced); ``work`` (default beside ``out``)
    holds the build's own environment and is removed afterwards."""
    out = Path(out).resolve()
    work = Path(work).resolve() if work else out.with_name(out.name + "-work")
    for folder in (out, work):
        shutil.rmtree(folder, ignore_errors=True)
    if default_env := _reusable_environment(root):
        shutil.copytree(default_env, work / "_build" / ".doctrees")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jupyter_book), "build", str(root), "--path-output", str(work)], check=True,
                   env={**os.environ, ENV: "1"})
    shutil.move(work / "_build" / "html", out)
    shutil.rmtree(work)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the class site: the course's site with the "
                                                 "problem sets in their student editions.")
    parser.add_argument("out", type=Path, help="folder for the site's HTML (replaced)")
    args = parser.parse_args(argv)
    try:
        print(f"The solution-free site is built: open {build(args.out) / 'index.html'}")
    except subprocess.CalledProcessError as err:
        print(f"error: the class site's build failed (exit {err.returncode}); its log is above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
