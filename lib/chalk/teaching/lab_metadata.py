"""The notebook metadata JupyterLab writes when it opens a notebook, committed so that it opens unmodified.

    python -m chalk.teaching.lab_metadata            # rewrite every notebooks/ and exercises/ notebook's
    python -m chalk.teaching.lab_metadata --check    # only list the notebooks that differ (exit 1)

On opening a notebook JupyterLab starts its kernel, then sets the notebook's ``kernelspec`` from the
kernel's spec (display name "Python 3 (ipykernel)") and its ``language_info`` from the kernel's
reply, the interpreter's version included. Anything else in the file and the tab is marked modified
within seconds, before the student has touched it. The values are ipykernel's for the interpreter
that runs this module: the course's pinned Python, the one in ``.venv``.
"""
import argparse
import json
import sys
from pathlib import Path

from .chapters import ROOT

KEYS = ("kernelspec", "language_info")


def expected() -> dict:
    """``{"kernelspec": ..., "language_info": ...}`` as JupyterLab writes them for this interpreter's ipykernel."""
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"kernelspec": {"display_name": spec.display_name, "language": spec.language, "name": "python3"},
            "language_info": json.loads(json.dumps(IPythonKernel.language_info))}


def notebooks(root: Path = ROOT) -> list[Path]:
    """The course's notebooks a student opens: the chapters' pages and the problem sets."""
    return sorted([*root.glob("notebooks/*.ipynb"), *root.glob("exercises/*.ipynb")])


def normalise(path: Path, wanted: dict) -> bool:
    """Give the notebook at ``path`` the metadata ``wanted``, written as the repository writes
    notebooks (1-space indent, keys sorted); True if it changed."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    nb["metadata"] = {**nb.get("metadata", {}), **wanted}
    new = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


TRACKED = ("notebooks/", "exercises/")
"""The folders (from the repository root, ``make lab``'s root) whose notebooks git keeps clean."""


def clean_on_save(model: dict, path: str, **_) -> None:
    """``make lab``'s pre-save hook (``ContentsManager.pre_save_hook``): a course notebook is saved
    without outputs, execution counts or widget state, as the repository commits it, so that a Run
    All followed by JupyterLab's autosave does not write thousands of lines of outputs into a
    tracked file. Other notebooks (a student's own) are saved as they are."""
    if model.get("type") != "notebook" or not path.lstrip("/").startswith(TRACKED):
        return
    nb = model["content"]
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.get("metadata", {}).pop("widgets", None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list the notebooks that differ; change nothing")
    args = parser.parse_args(argv)
    wanted = expected()
    if args.check:
        off = [p for p in notebooks() if {k: json.loads(p.read_text(encoding="utf-8"))["metadata"].get(k)
                                          for k in KEYS} != wanted]
        for p in off:
            print(f"{p.relative_to(ROOT)}: metadata is not JupyterLab's", file=sys.stderr)
        return 1 if off else 0
    for p in notebooks():
        if normalise(p, wanted):
            print(f"{p.relative_to(ROOT)}: metadata rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
