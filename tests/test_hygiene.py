"""Notebooks are committed clean: no outputs, no execution counts, and the metadata JupyterLab writes."""
import copy
import json
import re
import subprocess

import pytest

from conftest import ROOT


def tracked_notebooks():
    try:
        out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [str(p.relative_to(ROOT)) for p in ROOT.glob("[ne]*/**/*.ipynb")]
    return out


@pytest.mark.parametrize("path", tracked_notebooks())
def test_notebook_has_no_outputs(path):
    nb = json.loads((ROOT / path).read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path}: a cell has outputs"
            assert cell.get("execution_count") is None, f"{path}: a cell has an execution count"


@pytest.fixture(scope="module")
def lab_metadata():
    from chalk.teaching.lab_metadata import expected
    return expected()


@pytest.mark.parametrize("path", [p for p in tracked_notebooks() if p.startswith(("notebooks/", "exercises/"))])
def test_notebook_metadata_is_what_jupyterlab_writes(path, lab_metadata):
    """JupyterLab rewrites any other kernelspec or language_info on opening, and the tab is marked
    modified before the student has touched it (tests/test_lab.py sees it happen)."""
    meta = json.loads((ROOT / path).read_text())["metadata"]
    assert lab_metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"  # ipykernel's own spec
    for key, value in lab_metadata.items():
        assert meta.get(key) == value, (f"{path}: {key} is {meta.get(key)}, JupyterLab writes {value}: "
                                        "run python -m chalk.teaching.lab_metadata")


MATH_AGAINST_NUMBER = re.compile(r"(?<!\\)\$\{eval\}|\{eval\}`\w+`\$")
"""An ``{eval}`` number written against a maths span's dollar (``$B^\\star/${eval}`x```): where the
number is substituted (the student edition), ``$...$6`` breaks the dollar pairing of markdown-it
front ends (VS Code, Colab), and the maths runs on into the following text. An escaped dollar
(``\\${eval}`price```) is a currency sign, not maths."""


def math_against_number(source: str) -> list[str]:
    return [source[max(0, m.start() - 30):m.end() + 10] for m in MATH_AGAINST_NUMBER.finditer(source)]


def test_math_against_number_rule_tells_both_ways():
    assert math_against_number("at $B^\\star/${eval}`fm_fast_txt`.") and math_against_number("{eval}`a_txt`$\\,D$")
    assert not math_against_number("at $B^\\star$ divided by {eval}`fm_fast_txt`, \\${eval}`usd_txt` per hour")


@pytest.mark.parametrize("path", [p for p in tracked_notebooks() if p.startswith(("notebooks/", "exercises/"))])
def test_no_number_is_written_against_a_maths_dollar(path):
    cells = json.loads((ROOT / path).read_text())["cells"]
    found = [hit for c in cells if c["cell_type"] == "markdown" for hit in math_against_number("".join(c["source"]))]
    assert not found, f"{path}: write a word or a space between the maths and the number: {found}"


def test_make_lab_saves_course_notebooks_without_outputs_and_a_students_own_as_they_are(tmp_path):
    """After Run All, JupyterLab's autosave would write every output into the tracked notebook; the
    pre-save hook that ``make lab`` names strips them there, and only there."""
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from test_lab import lab_options

    hooks = [o.split("=", 1)[1] for o in lab_options() if o.startswith("--ContentsManager.pre_save_hook=")]
    assert hooks == ["chalk.teaching.lab_metadata.clean_on_save"], lab_options()
    manager = FileContentsManager(root_dir=str(tmp_path), pre_save_hook=hooks[0])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "x = 1", execution_count=3, outputs=[nbformat.v4.new_output("stream", text="1\n")])])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for folder in ("notebooks", "exercises", "mine"):
        (tmp_path / folder).mkdir()
        manager.save({"type": "notebook", "format": "json", "content": copy.deepcopy(nb)}, f"{folder}/a.ipynb")
    for folder in ("notebooks", "exercises"):
        saved = json.loads((tmp_path / folder / "a.ipynb").read_text())
        assert saved["cells"][0]["outputs"] == [] and saved["cells"][0]["execution_count"] is None, folder
        assert "".join(saved["cells"][0]["source"]) == "x = 1" and "widgets" not in saved["metadata"], folder
    own = json.loads((tmp_path / "mine" / "a.ipynb").read_text())
    assert own["cells"][0]["outputs"] and own["cells"][0]["execution_count"] == 3


def describes_a_static_twin(source: str) -> bool:
    """Prose that reads right only beside the site's drawn twin: its "Static version." paragraph, or
    the count of views it was built from."""
    return source.startswith("**Static version.**") or "{eval}`twin_views_txt`" in source


def test_static_twin_rule_tells_both_ways():
    assert describes_a_static_twin("**Static version.** Its slider sets the batch.")
    assert describes_a_static_twin("Those are {eval}`twin_views_txt` views.")
    assert not describes_a_static_twin("The explorer below redraws both graphs; the website shows the static version after it.")


@pytest.mark.parametrize("path", [p for p in tracked_notebooks() if p.startswith("notebooks/")])
def test_prose_about_a_static_twin_is_kept_off_the_student_edition(path):
    """The edition shows a link to the site where the site draws a twin, so the prose describing
    the twin's menus and slider must be tagged for the site only (chalk.teaching.plain.SITE_ONLY)."""
    from chalk.teaching.plain import SITE_ONLY

    untagged = [c["id"] for c in json.loads((ROOT / path).read_text())["cells"]
                if c["cell_type"] == "markdown" and describes_a_static_twin("".join(c["source"]))
                and SITE_ONLY not in c.get("metadata", {}).get("tags", [])]
    assert not untagged, f"{path}: tag these cells {SITE_ONLY!r}: {untagged}"
