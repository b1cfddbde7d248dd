"""The student edition to hand out (folder and zip) and the class site's student problem sets.

No solution line may reach a student file, no answer key the package, and no file of the edition
may print an answer; no MyST may reach a student notebook, the chapters ship the outputs of one run
and the problem sets none; the zip must be byte-identical across builds. The edition is checked as
text here (the plain form of each MyST construct: test_plain.py); test_student.py runs a student
notebook in a kernel, test_student_venv.py the whole edition in a clean environment with only what
a student installs.
"""
import base64
import csv
import fcntl
import hashlib
import io
import json
import os
import re
import tomllib
import zipfile
from types import SimpleNamespace

import nbformat
import pytest

from chalk.teaching import class_site, edition, leaks, package, plain
from chalk.teaching.seal import known_problem_sets
from chalk.teaching.student import BEGIN, END, FREE_TEXT, PLACEHOLDER
from conftest import ROOT
from test_student import solution_lines

WHEEL = package.wheel_name()

PROBLEM_SETS = edition.problem_sets()
CHAPTER_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def solution_text(path):
    """Distinctive lines inside the solution markers and the worked-solution cells of a problem set."""
    nb = nbformat.read(path, as_version=4)
    worked = [c.source for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    nb.cells = [c for c in nb.cells if "solution" not in c.metadata.get("tags", [])]
    return sorted(solution_lines(nb)) + worked


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("a") / "student"
    return out, edition.build(out)


def test_edition_holds_every_problem_set_and_chapter_notebook(built):
    out, zip_path = built
    assert PROBLEM_SETS and zip_path == out.with_suffix(".zip")
    assert sorted(p.name for p in out.iterdir()) == sorted(["README.md", WHEEL, "exercises", "notebooks"])
    assert sorted(p.name for p in (out / "exercises").iterdir()) == [p.name for p in PROBLEM_SETS]
    assert sorted(p.name for p in (out / "notebooks").iterdir()) == [p.name for p in CHAPTER_NOTEBOOKS]
    for src in CHAPTER_NOTEBOOKS:  # the same code, in the same order; only the Markdown is rewritten
        source, shipped = (nbformat.read(p, as_version=4) for p in (src, out / "notebooks" / src.name))
        assert [c.source for c in shipped.cells if c.cell_type == "code"] == \
            [c.source for c in source.cells if c.cell_type == "code"]
        assert shipped.metadata == source.metadata
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
    expected = [f"student/{p.relative_to(out).as_posix()}" for p in out.rglob("*") if p.is_file()]
    assert names == sorted(expected)


def test_no_solution_text_reaches_a_student_file(built):
    out, zip_path = built
    with zipfile.ZipFile(zip_path) as zf:
        shipped = "\n".join(zf.read(n).decode() for n in zf.namelist() if n.startswith("student/exercises/"))
    for src in PROBLEM_SETS:
        lines = solution_text(src)
        assert len(lines) > 10, "the search needs the solutions' lines to mean anything"
        student = (out / "exercises" / src.name).read_text()
        for text in (student, shipped):
            assert BEGIN not in text and END not in text
            leaked = [line for line in lines if line in text]
            assert not leaked, leaked[:3]


def test_a_written_answer_reaches_students_as_its_question_and_a_placeholder(built):
    # Chapter 1's written part hides its markers in HTML comments, which solution_lines does not
    # read as markers: its model answer is searched for here.
    out, _ = built
    name = "01_batching.ipynb"
    [cell] = [c for c in nbformat.read(ROOT / "exercises" / name, as_version=4).cells
              if FREE_TEXT in c.metadata.get("tags", [])]
    question, rest = cell.source.split(f"<!-- {BEGIN} -->")
    model, after = rest.split(f"<!-- {END} -->")
    assert not after.strip()
    [written] = [c for c in nbformat.read(out / "exercises" / name, as_version=4).cells
                 if FREE_TEXT in c.metadata.get("tags", [])]
    assert written.source == question + PLACEHOLDER
    text = (out / "exercises" / name).read_text()
    lines = [ln for ln in model.splitlines() if len(ln) > 12]
    assert lines and not [ln for ln in lines if json.dumps(ln)[1:-1] in text]


def test_student_problem_sets_keep_checks_and_name_their_chapter(built):
    out, _ = built
    for src in PROBLEM_SETS:
        nb = nbformat.read(out / "exercises" / src.name, as_version=4)
        assert nb.metadata["chalk"]["problem_set"] == src.stem
        checks = sum(c.source.strip().startswith("check(") for c in nb.cells)
        assert checks == sum(c.source.strip().startswith("check(")
                             for c in nbformat.read(src, as_version=4).cells) > 0


def test_zip_is_byte_identical_across_builds(built, tmp_path):
    _, first = built
    second = edition.build(tmp_path / "student")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(second) as zf:
        assert {i.date_time for i in zf.infolist()} == {edition.ZIP_TIME}


def test_the_class_site_reads_student_problem_sets_and_leaves_every_other_page(monkeypatch):
    app = SimpleNamespace(srcdir=str(ROOT))
    chapter = (ROOT / "notebooks" / CHAPTER_NOTEBOOKS[0].name).read_text()

    def read(docname, text):
        source = [text]
        class_site.swap_problem_set(app, docname, source)
        return source[0]

    for src in PROBLEM_SETS:  # the default site: nothing swapped, nothing read again
        assert read(f"exercises/{src.stem}", src.read_text()) == src.read_text()
    assert class_site.reread_problem_sets(app, None, set(), set(), set()) == []
    monkeypatch.setenv(class_site.ENV, "1")
    for src in PROBLEM_SETS:
        text = read(f"exercises/{src.stem}", src.read_text())
        assert BEGIN in src.read_text() and not [line for line in solution_text(src) if line in text]
        assert nbformat.reads(text, as_version=4).metadata["chalk"] == {"problem_set": src.stem}
    assert read(f"notebooks/{CHAPTER_NOTEBOOKS[0].stem}", chapter) == chapter
    assert class_site.reread_problem_sets(app, None, set(), set(), set()) == [f"exercises/{p.stem}" for p in PROBLEM_SETS]


def test_a_build_leaves_the_page_another_build_is_running_for_last(tmp_path, monkeypatch):
    # Two test workers building on a cold cache: each runs the pages the other is not running, and
    # reads the other's from the cache at the end, instead of both waiting at the same page's lock.
    monkeypatch.setenv(edition.CACHE_ENV, str(tmp_path / "cache"))
    made = []

    def make(src, root, course, library):
        made.append(src.relative_to(root).as_posix())
        return nbformat.v4.new_notebook()

    monkeypatch.setattr(edition, "plain_problem_set", make)
    monkeypatch.setattr(edition, "plain_chapter", make)
    monkeypatch.setattr(edition, "course_site", lambda root: None)
    monkeypatch.setattr(edition, "write_tree", lambda dest: dest)
    monkeypatch.setattr(edition, "write_wheel", lambda tree, out: None)
    busy = "exercises-" + PROBLEM_SETS[0].stem
    (tmp_path / "cache").mkdir()
    with open(tmp_path / "cache" / f"{busy}.lock", "w") as held:  # as plain.run holds it while it runs the page
        fcntl.flock(held, fcntl.LOCK_EX)
        edition.build(tmp_path / "student")
    every = [p.relative_to(ROOT).as_posix() for p in PROBLEM_SETS + CHAPTER_NOTEBOOKS]
    assert made == every[1:] + every[:1]
    made.clear()
    edition.build(tmp_path / "student")  # nobody else running: the usual order
    assert made == every


def test_cli_needs_a_destination(capsys):
    with pytest.raises(SystemExit) as exit_:
        edition.main([])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err


def wheel_files(out):
    with zipfile.ZipFile(out / WHEEL) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_wheel_has_no_plain_key_and_carries_each_key_sealed(built):
    names = set(wheel_files(built[0]))
    assert not [n for n in names if n.startswith("chalk/teaching/problems")]
    for tool in ("grading", "gradebook", "edition", "student", "seal", "package", "decks", "leaks", "plain"):
        assert f"chalk/teaching/{tool}.py" not in names, tool
    assert {n for n in names if n.startswith("chalk/teaching/cards/")} == {"chalk/teaching/cards/__init__.py"}
    assert {n for n in names if n.startswith("chalk/teaching/sealed/")} == \
        {f"chalk/teaching/sealed/{c}.json" for c in known_problem_sets()}
    assert "chalk/teaching/deck/cards.json" in names and "chalk/catalog/data/models.toml" in names


def test_wheel_metadata_and_record_are_what_pip_reads(built):
    files = wheel_files(built[0])
    project = tomllib.loads((ROOT / "lib" / "pyproject.toml").read_text())["project"]
    info = f"chalk-{project['version']}+student.dist-info"
    meta = files[f"{info}/METADATA"].decode()
    assert f"Version: {project['version']}+student" in meta
    assert [ln.split(": ", 1)[1] for ln in meta.splitlines() if ln.startswith("Requires-Dist")] == project["dependencies"]
    assert "Root-Is-Purelib: true" in files[f"{info}/WHEEL"].decode()
    record = list(csv.reader(io.StringIO(files[f"{info}/RECORD"].decode())))
    assert {r[0] for r in record} == set(files)
    for name, digest, size in record:
        if name != f"{info}/RECORD":
            expected = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={expected}", len(files[name])), name


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_nothing_a_student_reads_in_the_edition_prints_an_answer(built, chapter):
    """The README, the problem sets, the cards the package carries and the checks' hints and units.
    (That no sealed table holds a value at all is test_problem_keys.py's; that no module holds a
    key, the test above.)"""
    out, _ = built
    found = [a for a in leaks.answers([chapter]) if a.searchable]
    files = wheel_files(out)
    texts = {"README.md": (out / "README.md").read_text()}
    texts.update({p.name: leaks.notebook_text(nbformat.read(p, as_version=4)) for p in (out / "exercises").iterdir()})
    cards = [c for d in json.loads(files["chalk/teaching/deck/cards.json"]) for c in d["cards"]]
    texts.update({f"card {c['id']}": f"{c['front']}\n{c['back']}" for c in cards})
    for name in (n for n in files if n.startswith("chalk/teaching/sealed/")):
        table = json.loads(files[name])
        texts[name] = "\n".join(f"{e.get('unit', '')}\n{e['hint']}\n" + "\n".join(m["hint"] for m in e.get("mistakes", ()))
                                + "\n".join(e.get("options", {}).values()) for e in table["exercises"])
    printed = [str(leak) for name, text in texts.items() for leak in leaks.find(text, found, name)]
    assert not printed, printed[:5]


def test_readme_says_how_to_install_the_wheel_here_and_on_colab(built):
    text = (built[0] / "README.md").read_text()
    assert f"pip install {WHEEL} jupyterlab" in text and f"%pip install {WHEEL}" in text and "Colab" in text
    assert "open with their\nnumbers" in text and "Run All" in text


MYST = {
    "role": re.compile(r"\{[\w:+.-]+\}`"),
    "directive fence": re.compile(r"^\s*(?::{3,}|`{3,}|~{3,})\s*\{", re.M),
    "bare colon fence": re.compile(r"^\s*:{3,}\s*$", re.M),
    "target": re.compile(r"^\s*\([^()\s]+\)=\s*$", re.M),
    "block break": re.compile(r"^\+\+\+", re.M),
}
"""What a Jupyter without a MyST extension shows as typed."""


def raw_myst(text):
    return sorted(kind for kind, pattern in MYST.items() if pattern.search(text))


def edition_notebooks(out):
    return sorted((out / "exercises").glob("*.ipynb")) + sorted((out / "notebooks").glob("*.ipynb"))


def test_the_myst_search_finds_each_kind():
    assert raw_myst("it is {eval}`x_txt` and a {term}`MoE`") == ["role"]
    assert raw_myst(":::{admonition} Answer\n:class: dropdown\nIt.\n:::") == ["bare colon fence", "directive fence"]
    assert raw_myst("   ```{note}\nA.\n```") == ["directive fence"]
    assert raw_myst("(sec-one)=\n## One\n+++") == ["block break", "target"]
    assert raw_myst("plain $x_{i}$ text, `code`, [a link](b.ipynb) and <details>") == []


def test_no_myst_reaches_a_student_notebook(built):
    out, _ = built
    found = {}
    for path in edition_notebooks(out):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "markdown" and (kinds := raw_myst(cell.source)):
                found[f"{path.name} cell {i}"] = kinds
    assert not found, found
    sources = [nbformat.read(p, as_version=4) for p in PROBLEM_SETS + CHAPTER_NOTEBOOKS]
    assert sum(raw_myst(c.source) != [] for nb in sources for c in nb.cells if c.cell_type == "markdown") > 100


LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")


def test_every_link_in_the_edition_reaches_the_site_a_shipped_notebook_or_the_same_page(built):
    out, _ = built
    base, dead, to_site = plain.base_url(ROOT), [], 0
    for path in edition_notebooks(out):
        for cell in nbformat.read(path, as_version=4).cells:
            texts = [cell.source] if cell.cell_type == "markdown" else \
                [o.get("data", {}).get(k, "") for o in cell.get("outputs", []) for k in ("text/markdown", "text/html")]
            for text in texts:
                for m in LINK.finditer(text):
                    href = m[1] or m[2]
                    if href.startswith(base):
                        to_site += 1
                    elif not (href.startswith(("#", "https://", "data:"))
                              or (path.parent / href.split("#")[0]).resolve().is_file()):
                        dead.append(f"{path.name}: {href}")
    assert not dead, dead[:5]
    assert to_site > 100  # every citation and glossary term


def test_chapters_ship_the_outputs_of_one_run_and_problem_sets_none(built):
    out, _ = built
    for src in CHAPTER_NOTEBOOKS:
        text = (out / "notebooks" / src.name).read_text()
        assert plain.WIDGET_STATE not in text and plain.WIDGET_VIEW not in text and " at 0x" not in text, src.name
        assert plain.TWIN not in text, src.name  # drawn by the site's script only
        source = nbformat.read(src, as_version=4)
        shipped = nbformat.read(out / "notebooks" / src.name, as_version=4)
        code = [(s, c) for s, c in zip((c for c in source.cells if c.cell_type == "code"),
                                       (c for c in shipped.cells if c.cell_type == "code"))]
        run = [c for s, c in code if "skip-execution" not in s.metadata.get("tags", [])]
        assert [c.execution_count for c in run] == list(range(1, len(run) + 1)), src.name
        assert not [o for _, c in code for o in c.outputs if o.output_type == "error"], src.name
        for s, c in code:
            shown = not {"remove-output", "remove-cell", "skip-execution"} & set(s.metadata.get("tags", []))
            if shown and re.search(r"^\s*display\(picture\(", s.source, re.M):  # a figure the site shows
                assert any("image/png" in o.get("data", {}) for o in c.outputs), (src.name, s.source[:60])
            if not shown:
                assert c.outputs == [], (src.name, s.source[:60])
    for src in PROBLEM_SETS:
        cells = nbformat.read(out / "exercises" / src.name, as_version=4).cells
        assert all(c.outputs == [] and c.execution_count is None for c in cells if c.cell_type == "code")


def test_a_fresh_run_of_a_page_gives_the_bytes_the_edition_ships(built):
    """The zip is the same for the same tree on another machine, not only through the cache: a page
    with a figure, run again without the cache, is written to the same bytes. (The lab page is the
    exception: it measures the machine that runs it.)"""
    out, _ = built
    src = ROOT / "notebooks" / "03_pipelining-deeper.ipynb"
    nb = nbformat.read(src, as_version=4)
    fresh = plain.notebook(nb, "notebooks/" + src.name, edition.course_site(), plain.run(nb, src.parent))
    assert "image/png" in nbformat.writes(fresh)
    assert nbformat.writes(fresh).rstrip("\n") == (out / "notebooks" / src.name).read_text().rstrip("\n")


def test_the_class_site_reuses_the_default_build_only_if_it_is_newer_than_the_library(tmp_path):
    library, pickle = tmp_path / "lib" / "chalk" / "catalog" / "data" / "chips.toml", tmp_path / "_build" / ".doctrees" / "environment.pickle"
    library.parent.mkdir(parents=True)
    library.write_text("")
    assert class_site._reusable_environment(tmp_path) is None  # no default build
    pickle.parent.mkdir(parents=True)
    pickle.write_bytes(b"")
    os.utime(library, (1_000, 1_000))
    os.utime(pickle, (2_000, 2_000))
    assert class_site._reusable_environment(tmp_path) == pickle.parent
    os.utime(library, (3_000, 3_000))  # a price changed after the build: every page is read again
    assert class_site._reusable_environment(tmp_path) is None


def test_the_problem_sets_prose_is_handed_out_as_the_grader_reads_it(built):
    # The grader tells a student's own Markdown from what was handed out by comparing it with the
    # MyST student edition (grading.Key.markdown); the zip hands out the plain one, so the two must
    # read the same: no number, box or role in a problem set's student prose.
    for src in PROBLEM_SETS:
        handed_out = nbformat.read(built[0] / "exercises" / src.name, as_version=4)
        myst = {c.source.strip() for c in edition.student_problem_set(src).cells if c.cell_type == "markdown"}
        differ = [c.source[:120] for c in handed_out.cells if c.cell_type == "markdown" and c.source.strip() not in myst]
        assert not differ, (src.name, differ[:2])
