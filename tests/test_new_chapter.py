"""A new chapter is picked up from its files alone.

A throwaway chapter ``99_fixture`` (a problem set with two exercises, one weighing 2 points, and a
written answer; its answer key, a deck of two cards and the module computing the cards' number) is
added to a copy of the tree in a temporary folder, never to the repository. A script run against
that copy, with the copied ``chalk`` first on the path, then asks every consumer what it sees: the
decks, the Anki export, the review session, the student edition and its sealed key, the grader
and the chapter links. No code is changed for it.

The expected values come from the fixture (its two card ids, its exercise ids, the answers typed
into the submission from the H100's published specifications), not from the code under test.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import nbformat
import pytest

from chalk.teaching import edition
from conftest import ROOT

CHAPTER = "99_fixture"
H100_FLOPS, H100_BANDWIDTH, H100_HBM = 989.4e12, 3.35e12, 81_559 * 2**20
"""NVIDIA's H100 SXM data sheet: dense BF16 FLOP/s and HBM bytes/s; HBM bytes as nvidia-smi reports them (81,559
MiB, 80 GB nominal), as the answers type them."""

KEY = '''\
"""Answer key of the fixture chapter."""
from ...catalog import hardware
from ..exercises import Exercise

EXERCISES = (
    Exercise("fixture_r_h100", lambda: hardware.get("H100-SXM").intensity("bf16"), "FLOP/B", 0.01, "r = F/W"),
    Exercise("fixture_drain_ms", lambda: 1e3 * hardware.get("H100-SXM").drain_time, "ms", 0.01, "C/W", points=2),
)
'''
CARD_VALUES = '''\
"""The number the fixture's cards quote."""
from ...catalog import hardware

VALUES = {"fixture_drain_h100_ms": lambda: f"{1e3 * hardware.get('H100-SXM').drain_time:.0f}"}
'''
DECK = '''\
chapter: "99_fixture"
title: "Fixture"
cards:
  - id: fixture_intensity
    front: "What is $r$?"
    back: "FLOP per byte of HBM traffic, $F/W$."
    tags: [definition]
    section: the-hardware-ratio
  - id: fixture_drain
    front: "How long does an H100 take to read its HBM once?"
    back: "About {{ fixture_drain_h100_ms }} ms."
    tags: [number]
    section: drain-time
'''
SOLUTION_R = "fixture_r_h100 = h100.flops('bf16') / h100.hbm_bandwidth"
SOLUTION_DRAIN = "fixture_drain_ms = 1e3 * h100.drain_time"
MODEL_ANSWER = "Reading HBM once takes capacity over bandwidth."
WRITTEN = "Because C/W is the time to read everything once."


def problem_set() -> nbformat.NotebookNode:
    cell = nbformat.v4
    return cell.new_notebook(cells=[
        cell.new_markdown_cell("# Problem set 99: fixture"),
        cell.new_code_cell('from chalk import hardware\nfrom chalk.teaching.exercises import checker\n\n'
                           'check = checker("99_fixture")\nh100 = hardware.get("H100-SXM")'),
        cell.new_code_cell(f"### BEGIN SOLUTION\n{SOLUTION_R}\n### END SOLUTION"),
        cell.new_code_cell('check("fixture_r_h100", fixture_r_h100)'),
        cell.new_markdown_cell("## Drain time: `fixture_drain_ms`"),
        cell.new_code_cell(f"### BEGIN SOLUTION\n{SOLUTION_DRAIN}\n### END SOLUTION"),
        cell.new_code_cell('check("fixture_drain_ms", fixture_drain_ms)'),
        cell.new_markdown_cell(f"Say why, in one sentence.\n\n### BEGIN SOLUTION\n{MODEL_ANSWER}\n### END SOLUTION",
                               metadata={"tags": ["free-text"], "chalk": {"points": 3}}),
        cell.new_markdown_cell("Worked solution: divide.", metadata={"tags": ["solution"]}),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


PROBE = textwrap.dedent('''\
    import json, sys, zipfile
    from pathlib import Path
    import nbformat
    import chalk
    from chalk.teaching import chapters, decks, edition, grading, review
    from chalk.teaching.flashcards import load_decks

    tmp = Path(sys.argv[1])
    found = {"chalk": chalk.__file__}
    deck = {d.chapter: d for d in load_decks()}["99_fixture"]
    found["cards"] = {c.id: c.back for c in deck.cards}
    found["review"] = [c.id for c in review.cards("99_fixture")]
    found["anki"] = sorted(p.name for p in decks.build(tmp / "decks"))
    edition.build(tmp / "student")
    student = nbformat.read(tmp / "student" / "exercises" / "99_fixture.ipynb", as_version=4)
    found["student_sources"] = [c.source for c in student.cells]
    found["student_metadata"] = student.metadata.get("chalk")
    wheel = zipfile.ZipFile(next((tmp / "student").glob("*.whl")))
    found["sealed"] = json.loads(wheel.read("chalk/teaching/sealed/99_fixture.json"))
    found["problem_sets"] = grading.known_problem_sets()
    found["chapters"] = [c.name for c in chapters.chapters()]
    found["links"] = chapters.links("99_fixture")

    # A student's submission: the edition's answer cells filled in from the data sheet.
    answers = {"fixture_r_h100": sys.argv[2], "fixture_drain_ms": sys.argv[3]}
    for cell in student.cells:
        for ex_id, value in answers.items():
            cell.source = cell.source.replace(f"{ex_id} = ...  # your answer", f"{ex_id} = {value}")
        if "free-text" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace("*Your answer here.*", sys.argv[4])
    (tmp / "submissions").mkdir()
    nbformat.write(student, tmp / "submissions" / "alice.ipynb")
    batch = grading.grade(tmp / "submissions", out=tmp / "grades", workers=1)
    found["grades"] = [(r.file, r.problem_set, r.score, r.maximum, {i: x.status for i, x in r.results.items()},
                        r.written) for r in batch.rows]
    print(json.dumps(found))
''')


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("new_chapter")
    tree = tmp / "tree"
    shutil.copytree(ROOT / "lib" / "chalk", tree / "lib" / "chalk",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "lib" / "pyproject.toml", tree / "lib")  # the student wheel's metadata
    for folder in ("exercises", "notebooks"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("_config.yml", "book/glossary.md", "book/references.bib"):  # where the edition's links go
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    teaching = tree / "lib" / "chalk" / "teaching"
    (teaching / "problems" / "ch99_fixture.py").write_text(KEY)
    (teaching / "cards" / "ch99_fixture.py").write_text(CARD_VALUES)
    (tree / "exercises" / "flashcards" / "99_fixture.yml").write_text(DECK)
    nbformat.write(problem_set(), tree / "exercises" / "99_fixture.ipynb")
    # The copy's chapters are the repository's, and a new key or deck leaves their runs valid: the
    # edition reads them from the repository's cache (run there first if it is cold).
    env = {**os.environ, "PYTHONPATH": str(tree / "lib"), "PYTHONDONTWRITEBYTECODE": "1",
           edition.CACHE_ENV: str(edition.cache_folder(ROOT))}
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp), repr(H100_FLOPS / H100_BANDWIDTH),
                          repr(1e3 * H100_HBM / H100_BANDWIDTH), WRITTEN],
                         cwd=tree, env=env, capture_output=True, text=True, timeout=3600)  # a hang, not a cold cache
    assert out.returncode == 0, out.stderr[-3000:]
    return tree, json.loads(out.stdout.strip().splitlines()[-1])


def test_the_probe_ran_against_the_copy_not_the_repository(probe):
    tree, found = probe
    assert found["chalk"].startswith(str(tree))
    assert not (ROOT / "exercises" / f"{CHAPTER}.ipynb").exists()


def test_decks_and_review_pick_up_the_new_deck_and_its_computed_number(probe):
    cards = probe[1]["cards"]
    assert set(cards) == {"fixture_intensity", "fixture_drain"}
    assert cards["fixture_drain"] == f"About {round(1e3 * H100_HBM / H100_BANDWIDTH)} ms."
    assert probe[1]["review"] == ["fixture_intensity", "fixture_drain"]


def test_anki_export_has_a_package_for_the_new_chapter(probe):
    assert "chalk_99_fixture.apkg" in probe[1]["anki"]
    assert "chalk_01_batching.apkg" in probe[1]["anki"]


def test_student_edition_strips_the_new_problem_set_and_tags_its_chapter(probe):
    sources = "\n".join(probe[1]["student_sources"])
    assert SOLUTION_R not in sources and SOLUTION_DRAIN not in sources and MODEL_ANSWER not in sources
    assert "fixture_r_h100 = ...  # your answer" in sources and "Say why, in one sentence.\n\n*Your answer here.*" in sources
    assert "Worked solution" not in sources
    assert probe[1]["student_metadata"] == {"problem_set": CHAPTER}


def test_the_student_package_carries_the_new_key_sealed(probe):
    sealed = probe[1]["sealed"]
    assert [e["id"] for e in sealed["exercises"]] == ["fixture_r_h100", "fixture_drain_ms"]
    assert [e["points"] for e in sealed["exercises"]] == [1, 2]
    hashes = re.compile(r'"[0-9a-f]{16}"')  # a cell's hash may hold any run of digits, "295" among them
    assert f"{H100_FLOPS / H100_BANDWIDTH:.0f}" not in hashes.sub('""', json.dumps(sealed))


def test_grader_knows_the_new_key_and_grades_a_submission_of_it(probe):
    found = probe[1]
    # Every real chapter's key, found from the files, and the fixture's beside them.
    real = sorted(p.stem for p in (ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))
    assert found["problem_sets"] == real + [CHAPTER]
    [(name, problem_set, score, maximum, statuses, written)] = found["grades"]
    assert (name, problem_set) == ("alice.ipynb", CHAPTER)
    assert statuses == {"fixture_r_h100": "right", "fixture_drain_ms": "right"}
    assert (score, maximum) == (3, 3)  # 1 + 2 points; the written answer is not marked yet
    assert written == [{"exercise": "fixture_drain_ms", "part": "written", "text": WRITTEN,
                        "max_points": 3.0}]


def test_chapter_list_and_links_include_the_new_chapter(probe):
    found = probe[1]
    assert found["chapters"][-1] == CHAPTER
    assert '<a href="../exercises/99_fixture.html">Problem set</a>' in found["links"]
    assert '<a href="../book/flashcards.html#deck-99_fixture">Flashcards</a>' in found["links"]
