"""The ``chalk`` a student installs: a copy of the package without the answer keys or the
instructor's tools, with each key sealed (``chalk.teaching.seal``) and the flashcards rendered.

    write_tree(dest)       # dest/chalk/..., also the package the grader runs submissions against
    write_wheel(tree, out) # out/chalk-<version>+student-py3-none-any.whl

The wheel is written directly (a zip with the ``.dist-info`` files of the wheel format, PEP 427)
rather than by a build backend, so that it needs nothing beyond the standard library, works
offline, and is byte-for-byte reproducible: sorted entries, fixed dates and modes. Its metadata
(name, version, dependencies) is read from ``lib/pyproject.toml``.
"""
import base64
import csv
import hashlib
import io
import json
import shutil
import tomllib
import zipfile
from pathlib import Path

from . import review
from .seal import known_problem_sets, seal

PACKAGE = Path(__file__).resolve().parents[1]
PYPROJECT = PACKAGE.parent / "pyproject.toml"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
"""The earliest time a zip entry can hold; any fixed value makes an archive reproducible."""
INSTRUCTOR_ONLY = ("teaching/problems", "teaching/grading.py", "teaching/gradebook.py", "teaching/edition.py",
                   "teaching/student.py", "teaching/seal.py", "teaching/package.py", "teaching/decks.py",
                   "teaching/leaks.py", "teaching/tags.py", "teaching/overview.py",
                   "teaching/class_site.py", "teaching/plain.py")
"""Left out of the student package: the plain keys and the tools that make editions and grades."""
CARD_MODULES = "teaching/cards/ch*.py"
"""Left out too: they compute the cards' numbers, some from the keys; the package carries the
rendered cards instead (``chalk.teaching.review.write_bundle``)."""
_JUNK = ("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints")


def _left_out(rel: str) -> bool:
    return any(rel == x or rel.startswith(x + "/") for x in INSTRUCTOR_ONLY) or Path(rel).match(CARD_MODULES)


def write_tree(dest: Path) -> Path:
    """The student package at ``dest/chalk`` (``dest`` is replaced); returns ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    target = dest / "chalk"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns(*_JUNK))
    for path in sorted(target.rglob("*"), reverse=True):  # files before their folders
        if path.exists() and _left_out(path.relative_to(target).as_posix()):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    sealed = target / "teaching" / "sealed"
    sealed.mkdir()
    for chapter in known_problem_sets():
        (sealed / f"{chapter}.json").write_text(json.dumps(seal(chapter), indent=1), encoding="utf-8")
    review.write_bundle(target / "teaching" / review.BUNDLE.name)
    return dest


def metadata() -> dict:
    """The ``[project]`` table of ``lib/pyproject.toml``, the one place the package is described."""
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


def wheel_name() -> str:
    project = metadata()
    return f"{project['name']}-{project['version']}+student-py3-none-any.whl"


def entry(zf: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    """A zip entry with a fixed date and mode, so that the same bytes make the same archive."""
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(tree: Path, out_dir: Path) -> Path:
    """A pure-Python wheel of the package at ``tree/chalk``, in ``out_dir``."""
    project = metadata()
    version = f"{project['version']}+student"
    info = f"{project['name']}-{version}.dist-info"
    meta = "".join([
        "Metadata-Version: 2.1\n", f"Name: {project['name']}\n", f"Version: {version}\n",
        f"Summary: {project['description']}\n", f"Requires-Python: {project['requires-python']}\n",
        *(f"Requires-Dist: {d}\n" for d in project["dependencies"])])
    files = {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}
    files[f"{info}/METADATA"] = meta.encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: chalk.teaching.package\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/top_level.txt"] = b"chalk\n"
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in files.items():
        writer.writerow([name, _hash(data), len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    files[f"{info}/RECORD"] = record.getvalue().encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / wheel_name()
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():  # dist-info last, as installers expect
            entry(zf, name, data)
    return dest
