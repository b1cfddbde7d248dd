"""The student edition of the course: a folder and a zip to hand out.

    python -m chalk.teaching.edition --out _build/student            # folder + _build/student.zip

The folder holds every problem set with its solutions removed (``chalk.teaching.student``), the
chapter notebooks as they are, the wheel of the package students install (``chalk.teaching.package``:
no answer keys, the keys sealed) and a README saying how to install it, on a laptop or on Colab.
Each problem set records its chapter in the notebook metadata (``chalk.problem_set``), which the
grader reads first. The zip is reproducible: sorted entries, fixed timestamps and permissions, so
the same tree gives the same bytes.
"""
import argparse
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

from .chapters import ROOT
from .package import ZIP_TIME, wheel_name, write_tree, write_wheel
from .student import SolutionMarkerError, student_notebook
from .tags import normalise

README = """\
# Chalk: the student edition

`exercises/` holds the problem sets, `notebooks/` the chapters. Each problem set checks your
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


def _write_problem_sets(sources: list[Path], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for src in sources:
        nbformat.write(student_problem_set(src), out_dir / src.name)


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
    _write_problem_sets(problem_sets(root), out / "exercises")
    (out / "notebooks").mkdir(parents=True)
    for nb in sorted((root / "notebooks").glob("*.ipynb")):
        shutil.copyfile(nb, out / "notebooks" / nb.name)
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
    except (SolutionMarkerError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
