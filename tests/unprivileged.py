"""For the tests that run the grader or the autograder's kernels as an unprivileged user while the
suite runs as root: a Python that user can run, a folder it can reach, and this checkout's
libraries in a virtual environment it can read."""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path


def reachable(path: Path) -> bool:
    """Whether a user with no rights of its own can reach and run (or read) ``path``."""
    path = path.resolve()
    return path.exists() and all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def base_python(as_root: bool) -> Path | None:
    """An interpreter of this Python's version that an unprivileged user can run (this checkout's
    base interpreter may sit in root's home), or None."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys._base_executable), Path("/usr/bin") / minor, Path("/usr/local/bin") / minor):
        if candidate.exists() and (not as_root or reachable(candidate)):
            return candidate
    return None


def libraries() -> list[Path]:
    """This environment's library folders, resolved."""
    return list(dict.fromkeys(Path(sysconfig.get_path(p)).resolve() for p in ("purelib", "platlib")))


def open_folder(prefix: str) -> Path:
    """A new temporary folder every user can traverse (pytest's own is closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    return folder


def _link_or_copy(source, dest):
    try:
        os.link(source, dest)  # the same bytes, no copy, where the folders share a file system
    except OSError:
        shutil.copy2(source, dest)


def environment(base: Path, dest: Path, checkout: Path) -> Path:
    """A virtual environment at ``dest`` made from ``base`` holding this environment's libraries
    (linked, not copied, where it can) and ``checkout``'s ``lib`` named by a .pth file, as an
    instructor's own environment with the course installed for editing has them; its python."""
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(dest)], check=True)
    site = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(dest), "platbase": str(dest)}))
    shutil.rmtree(site)
    for folder in libraries():
        shutil.copytree(folder, site, copy_function=_link_or_copy, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__editable__*", "__pycache__"))
    (site / "chalk-checkout.pth").write_text(f"{checkout / 'lib'}\n")
    return dest / "bin" / "python"
