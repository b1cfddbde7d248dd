"""The site's build and the student edition share one run of each page (chalk.teaching.shared_runs).

A tiny book in a temporary folder is built with jupyter-book as the course's site is (inline
execution, ``-W``): its chapter page's run must be kept in the edition's cache exactly as
``plain.run`` records it (outputs, counts, widgets, ``{eval}`` values), under the key the edition
looks up, so that the edition runs no kernel for it; a second build must show a kept run without a
kernel and give the page a live run gives; a page whose cell fails is neither kept nor, when a run
with the error is kept (the class site's problem sets run with errors allowed), shown from it, so
``-W`` still fails it.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from chalk.teaching import class_site, edition, plain, shared_runs
from conftest import ROOT

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
CONFIG = """\
title: tiny
only_build_toc_files: true
execute:
  execute_notebooks: inline
  allow_errors: false
sphinx:
  extra_extensions:
    - chalk.teaching.shared_runs
  config:
    nb_merge_streams: true
"""
HELD = """\
import fcntl
with open({lock!r}, "a") as f:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held_txt = "free"
    except BlockingIOError:
        held_txt = "held"
"""


def page():
    """A page with a stream, a display, a widget, an allowed error, a hidden and a removed cell,
    and {eval} values before and after them."""
    return new_notebook(cells=[
        new_markdown_cell("# A page"),
        new_code_cell("x_txt, n = '1.5 GB', 3\nquote = \"it's\"\nprint('a stream')"),
        new_markdown_cell("It is {eval}`x_txt`, {eval}`n` and {eval}`quote`."),
        new_code_cell("from IPython.display import display, HTML\ndisplay(HTML('<b>bold</b>'))\n"
                      "import ipywidgets\nipywidgets.IntSlider(value=n)"),
        new_code_cell("1 / 0", metadata={"tags": ["raises-exception"]}),
        new_code_cell("x_txt = 'second'", metadata={"tags": ["remove-input"]}),
        new_markdown_cell("Then {eval}`x_txt`."),
        new_code_cell("x_txt = 'last'", metadata={"tags": ["remove-cell"]}),
    ], metadata={"kernelspec": KERNEL})


def locked_page(root):
    """A page that says whether the lock on its run is held while it runs."""
    lock = plain.cache_lock(edition.cache_folder(root), "notebooks-c")
    return new_notebook(cells=[new_markdown_cell("# C"), new_code_cell(HELD.format(lock=str(lock))),
                               new_markdown_cell("{eval}`held_txt`")],
                        metadata={"kernelspec": KERNEL})


def failing_page():
    return new_notebook(cells=[new_markdown_cell("# B"), new_code_cell("y_txt = 'before'"), new_code_cell("1 / 0"),
                               new_markdown_cell("{eval}`y_txt`")], metadata={"kernelspec": KERNEL})


def removed_before_eval_page():
    """A page whose {eval} follows a removed code cell: MyST-NB evaluates it before that cell runs,
    a kept run after, so the page is never shown from its kept run."""
    return new_notebook(cells=[new_markdown_cell("# D"), new_code_cell("z_txt = 'before'"),
                               new_code_cell("z_txt = 'after'", metadata={"tags": ["remove-cell"]}),
                               new_markdown_cell("{eval}`z_txt`")], metadata={"kernelspec": KERNEL})


def build(root, out):
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jupyter_book), "build", str(root), "--all", "-W", "-n", "--keep-going", "-v",
                           "--path-output", str(out)], capture_output=True, text=True, timeout=900,
                          env={k: v for k, v in os.environ.items() if k not in (edition.CACHE_ENV, class_site.ENV)})
    return proc.returncode, proc.stdout + proc.stderr


MODEL_ID = re.compile(r"[0-9a-f]{32}")


def without_ids(value):
    """``value`` with every widget model id (random in every run) as ``ID``, a widget state keyed by
    model ids as the sorted list of its states, and the number of ids."""
    def strip(v):
        if isinstance(v, dict) and v and all(MODEL_ID.fullmatch(k) for k in v):
            return sorted((strip(x) for x in v.values()), key=json.dumps)
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return MODEL_ID.sub("ID", v) if isinstance(v, str) else v
    return strip(value), len(set(MODEL_ID.findall(json.dumps(value))))


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The tiny book, built once from a cold cache: (root, exit status, log, the runs kept of the
    failing page)."""
    root = tmp_path_factory.mktemp("book")
    (root / "notebooks").mkdir()
    (root / "_config.yml").write_text(CONFIG)
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: notebooks/a\n- file: notebooks/b\n- file: notebooks/c\n"
                                      "- file: notebooks/d\n")
    (root / "index.md").write_text("# Tiny\n")
    nbformat.write(page(), root / "notebooks" / "a.ipynb")
    nbformat.write(failing_page(), root / "notebooks" / "b.ipynb")
    nbformat.write(locked_page(root), root / "notebooks" / "c.ipynb")
    nbformat.write(removed_before_eval_page(), root / "notebooks" / "d.ipynb")
    status, log = build(root, root / "first")
    return root, status, log, list(edition.cache_folder(root).glob("notebooks-b-*.json"))


def kept(root, name):
    src = root / "notebooks" / f"{name}.ipynb"
    entry = plain.cache_entry(edition.cache_folder(root), edition.cache_name(src, root),
                              nbformat.read(src, as_version=4), plain.library_digest(root))
    return entry, plain.cached(entry)


def test_the_site_build_keeps_a_page_run_as_plain_run_records_it(book):
    root, status, log, _ = book
    entry, run = kept(root, "a")
    assert run is not None, f"the build kept no run of its page (is shared_runs' client still used?)\n{log[-3000:]}"
    fresh = plain.run(nbformat.read(root / "notebooks" / "a.ipynb", as_version=4), root / "notebooks")
    assert without_ids(run.cells) == without_ids(fresh.cells)
    assert without_ids(run.metadata) == without_ids(fresh.metadata)
    assert set(run.metadata) == {"language_info", "widgets"}
    # What the run holds, by hand: the stream, the display and widget, the allowed error, the values
    # before and after the cells the site hides or removes, and the lock the build held meanwhile.
    outputs = [[o["output_type"] for o in cell.get("outputs", [])] for cell in run.cells]
    assert outputs == [[], ["stream"], [], ["display_data", "execute_result"], ["error"], [], [], []]
    assert [c.get("execution_count") for c in run.cells] == [None, 1, None, 2, 3, 4, None, 5]
    assert run.cells[2]["values"] == {"x_txt": "'1.5 GB'", "n": "3", "quote": '"it\'s"'}
    assert run.cells[6]["values"] == {"x_txt": "'second'"}
    assert "kept for the edition" in log


def test_the_build_holds_the_pages_lock_while_it_runs_the_page(book):
    # plain.run holds it too: the edition leaves such a page for last, or waits for it.
    assert kept(book[0], "c")[1].cells[2] == {"values": {"held_txt": "'held'"}}


def test_the_edition_reads_the_sites_run_instead_of_running_the_page(book, monkeypatch):
    root = book[0]
    src = root / "notebooks" / "a.ipynb"
    monkeypatch.setattr(plain, "_execute", lambda *a, **k: pytest.fail("the edition ran the page again"))
    assert edition.page_run(nbformat.read(src, as_version=4), src, root).cells == kept(root, "a")[1].cells


def test_a_failing_page_fails_the_build_and_is_not_kept(book):
    root, status, log, failing_kept = book
    assert status != 0 and "Executing notebook failed" in log
    assert failing_kept == []


def test_a_kept_run_is_shown_without_a_kernel_and_gives_the_page_a_live_run_gives(book, tmp_path):
    root = book[0]
    entry, run = kept(root, "a")
    live = (root / "first" / "_build" / "html" / "notebooks" / "a.html").read_text()
    # A run of the failing page with its error (as the edition runs a problem set) must not be shown:
    # the build runs the page and fails on it.
    b = root / "notebooks" / "b.ipynb"
    edition.page_run(nbformat.read(b, as_version=4), b, root, allow_errors=True)
    doctored = entry.read_text().replace("'1.5 GB'", "'1.5 GB (kept)'")
    entry.write_text(doctored)
    try:
        status, log = build(root, tmp_path / "second")
    finally:
        entry.write_text(doctored.replace("'1.5 GB (kept)'", "'1.5 GB'"))
    assert status != 0 and "Executing notebook failed" in log
    assert "shown from the edition's run: notebooks-a-" in log and "shown from the edition's run: notebooks-b-" not in log
    assert kept(root, "d")[1] is not None and "shown from the edition's run: notebooks-d-" not in log  # run, not shown
    shown = (tmp_path / "second" / "_build" / "html" / "notebooks" / "a.html").read_text()
    assert shown.count("1.5 GB (kept)") == 1
    assert shown.replace("1.5 GB (kept)", "1.5 GB") == live  # the same bytes, widget state and all


def test_only_the_editions_pages_are_shared(monkeypatch):
    monkeypatch.delenv(class_site.ENV, raising=False)
    chapter, problems = ROOT / "notebooks" / "01_batching.ipynb", ROOT / "exercises" / "01_batching.ipynb"
    nb, name = shared_runs.edition_page(chapter, ROOT)
    assert nb == nbformat.read(chapter, as_version=4) and name == "notebooks-01_batching"
    assert shared_runs.edition_page(problems, ROOT) is None  # the instructor's set: the edition runs no such page
    assert shared_runs.edition_page(ROOT / "book" / "glossary.md", ROOT) is None
    monkeypatch.setenv(class_site.ENV, "1")
    assert shared_runs.edition_page(problems, ROOT) == (edition.student_problem_set(problems), "exercises-01_batching")
    # a problem set's run is kept for the edition but never shown: its key leaves out the checks it imports
    assert shared_runs.may_show(chapter, ROOT) and not shared_runs.may_show(problems, ROOT)


def test_the_editions_cells_have_the_sites_time_limit():
    assert plain.cell_timeout() == yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]
