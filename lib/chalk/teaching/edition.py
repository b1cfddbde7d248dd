"""The student edition of the course: a folder and a zip to hand out.

    python -m chalk.teaching.edition --out _build/student            # folder + _build/student.zip

The folder holds every problem set with its solutions removed (``chalk.teaching.student``), the
chapter notebooks, the wheel of the package students install (``chalk.teaching.package``: no answer
keys, the keys sealed) and a README saying how to install it, on a laptop or on Colab. Every
notebook is plain Markdown and code (``chalk.teaching.plain``), so that any Jupyter shows its
numbers, boxes and folds without a MyST extension: each is run once for its ``{eval}`` numbers, and
the chapters ship with the outputs of that run (the problem sets without). Runs are cached under
``_build/edition-cache/`` by the notebook and the library, so a second build of the same tree runs
no kernel; the site's build keeps its runs of the same pages there, and shows the runs kept there
(``chalk.teaching.shared_runs``), so each page runs once for both. Each problem set records its chapter in the notebook metadata (``chalk.problem_set``),
which the grader reads first. The zip is reproducible: sorted entries, fixed timestamps and
permissions, outputs without addresses or widget state, so the same tree gives the same bytes (the
lab page's numbers are measurements of the machine that ran it: they repeat through the cache).
"""
import argparse
import fcntl
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

from .chapters import ROOT
from .package import ZIP_TIME, wheel_name, write_tree, write_wheel
from .plain import PlainError, cache_lock, library_digest, notebook, run, site
from .student import SolutionMarkerError, student_notebook
from .tags import normalise

CACHE_ENV = "CHALK_EDITION_CACHE"
"""Names the folder that keeps the notebooks' runs (``chalk.teaching.plain.run``); by default
``_build/edition-cache`` in the repository. A copy of the course may point it at the original's."""


def cache_folder(root: Path = ROOT) -> Path:
    return Path(os.environ.get(CACHE_ENV) or root / "_build" / "edition-cache")

README = """\
# Chalk: the student edition

`exercises/` holds the problem sets, `notebooks/` the chapters. The chapters open with their
numbers, tables and figures in place, from one run made with the edition; run all their cells
(*Run > Run All Cells* in JupyterLab) to make the interactive explorers live. Each problem set checks your
answers as you go: put your answer in the variable an answer cell names (a number, or for a
question with options the letter of your choice, such as `"b"`, or the letters of all that apply,
such as `"a, c"`), run it, then run the check cell below it. The notebooks need the `chalk` package, which is the wheel in this folder.

## On your computer

With Python 3.11 or later, in this folder:

```bash
python -m venv .venv
.venv/bin/pip install {wheel} jupyterlab
.venv/bin/jupyter lab
```

(On Windows the programs are in `.venv\\Scripts\\`.) Nothing else is needed: the wheel brings
what `chalk` uses (NumPy, SymPy, Matplotlib, ipywidgets for the interactive figures, ...).

## On Google Colab

Open a problem set (*File > Upload notebook*), upload `{wheel}` with the *Files* pane (the folder
icon on the left), then run this in a new first cell and restart the session when Colab asks:

```python
%pip install {wheel}
```

Colab already has NumPy, SymPy, Matplotlib and ipywidgets. Download the notebook
(*File > Download > Download .ipynb*) to hand it in.

## What the checks know

The package carries each answer key sealed: the check recognises a right answer, and the usual
mistakes, without holding the answers themselves. Computing an answer with `chalk` is the
exercise; the grader runs your notebook again from the top and grades what each check was given.
"""


def problem_sets(root: Path = ROOT) -> list[Path]:
    """The instructor's problem sets, ``exercises/NN_name.ipynb``, in chapter order."""
    return sorted((root / "exercises").glob("[0-9]*.ipynb"))


def student_problem_set(src: Path) -> nbformat.NotebookNode:
    """The student edition of one problem set, tagged with its chapter for the grader; its answer
    and check cells give nothing away, so they lose the instructor's folds (``chalk.teaching.tags``)."""
    nb = nbformat.read(src, as_version=4)
    normalise(nb, student=True)
    nb = student_notebook(nb, str(src))
    nb.metadata["chalk"] = {"problem_set": src.stem}
    return nb


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """Every page of the chapters, ``notebooks/*.ipynb`` (deeper pages and the lab included)."""
    return sorted((root / "notebooks").glob("*.ipynb"))


def course_site(root: Path = ROOT):
    """The published site as the edition's notebooks link to it (``chalk.teaching.plain.site``)."""
    return site(root, [p.relative_to(root).as_posix() for p in problem_sets(root) + chapter_notebooks(root)])


def cache_name(src: Path, root: Path) -> str:
    """The name under which the page ``src`` is kept in the cache."""
    return src.relative_to(root).as_posix().replace("/", "-").removesuffix(".ipynb")


def page_run(nb, src: Path, root: Path = ROOT, library: str | None = None, **run_options):
    """The one run of ``nb``, the edition's form of the page ``src``, from the cache it shares with
    every other build and test of this tree (``cache_folder``): the first to ask runs it."""
    return run(nb, src.parent, cache_folder(root), name=cache_name(src, root), library=library or library_digest(root),
               **run_options)


def _running_elsewhere(src: Path, root: Path) -> bool:
    """Whether another process is running the page ``src`` into the cache now: ``plain.run`` holds
    ``plain.cache_lock`` while it runs one."""
    lock = cache_lock(cache_folder(root), cache_name(src, root))
    if not lock.is_file():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def problem_set_run(src: Path, root: Path = ROOT, library: str | None = None):
    """A problem set's student edition (``student_problem_set``) and its one run (``page_run``). A
    student's answers are ``...``, so cells after an answer may fail in that run (their errors are
    its outputs)."""
    nb = student_problem_set(src)
    return nb, page_run(nb, src, root, library, allow_errors=True)


def _plain(nb, ran, src: Path, root: Path, course, outputs: bool):
    return notebook(nb, src.relative_to(root).as_posix(), course or course_site(root), ran, outputs=outputs)


def plain_problem_set(src: Path, root: Path = ROOT, course=None, library: str | None = None):
    """The problem set a student receives: ``student_problem_set`` as plain Markdown, its numbers
    from its one run (``problem_set_run``), without outputs; an ``{eval}`` that needed a cell that
    failed there fails the build."""
    return _plain(*problem_set_run(src, root, library), src, root, course, outputs=False)


def plain_chapter(src: Path, root: Path = ROOT, course=None, library: str | None = None):
    """A chapter page as plain Markdown with the outputs of its one run (``page_run``)."""
    nb = nbformat.read(src, as_version=4)
    return _plain(nb, page_run(nb, src, root, library), src, root, course, outputs=True)


def write_zip(folder: Path, dest: Path) -> Path:
    """Zip ``folder`` (entries under its name) with sorted names, fixed dates and modes."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(str(Path(folder.name) / path.relative_to(folder)), ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return dest


def build(out: Path, root: Path = ROOT) -> Path:
    """Write the student edition to ``out`` (replacing it) and ``out`` + ``.zip``; return the zip."""
    if out.exists():
        shutil.rmtree(out)
    library, course = library_digest(root), course_site(root)
    pages = [(folder, make, src) for folder, make, sources in (("exercises", plain_problem_set, problem_sets(root)),
                                                               ("notebooks", plain_chapter, chapter_notebooks(root)))
             for src in sources]
    for folder in ("exercises", "notebooks"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    while pages:
        # A page another build is running now (two test workers on a cold cache) comes last: the
        # builds run different pages at once instead of one waiting at each page the other runs.
        page = next((p for p in pages if not _running_elsewhere(p[2], root)), pages[0])
        pages.remove(page)
        folder, make, src = page
        nbformat.write(make(src, root, course, library), out / folder / src.name)
    with tempfile.TemporaryDirectory(prefix="chalk-package-") as tmp:
        write_wheel(write_tree(Path(tmp) / "tree"), out)
    (out / "README.md").write_text(README.format(wheel=wheel_name()), encoding="utf-8")
    return write_zip(out, out.with_suffix(".zip"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write the student edition of the course.")
    parser.add_argument("--out", type=Path, required=True, help="folder for the edition; the zip goes beside it")
    args = parser.parse_args(argv)
    try:
        print(f"student edition: {args.out}/ and {build(args.out)}")
    except (SolutionMarkerError, PlainError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
