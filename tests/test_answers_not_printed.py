"""No problem-set answer is printed where a student reads: on the class site or on a card; and on
the default site no problem-set page shows an answer before a fold is opened.

The class site (``make book STUDENT=1``) is the default site with the problem sets swapped for their
student editions, so it is searched as the chapters, book pages and cards of the built site
(``built_site``: built once per test run, or CHALK_SITE) plus the student problem sets as a run of
them shows them: their cells, outputs and ``{eval}`` numbers, from the one run the student edition
makes of each (``edition.problem_set_run``, cached by notebook and library, so a test run executes
each once whichever test asks first). Every answer is searched for at its tolerance
(``chalk.teaching.leaks`` says what counts as printed); a round answer (one significant digit,
like 6 layers) cannot be told from the site's other 6s and is checked by reading instead.

The default site (``make book``) keeps the instructor's problem sets, each solution in a fold
(``chalk.teaching.tags``): their pages are read as a visitor sees them before opening anything.
"""
import pytest

from chalk.teaching import leaks
from chalk.teaching.edition import problem_set_run, problem_sets
from chalk.teaching.exercises import NUMBER, problem_set
from chalk.teaching.flashcards import load_decks
from chalk.teaching.seal import known_problem_sets

NOT_PAGES = ("exercises/", "_", "genindex", "search", *(f"notebooks/{m}" for m in leaks.MEASURED))
"""The instructor's problem-set pages (replaced by the student editions below), Sphinx's own files,
and the pages of measured numbers (``leaks.MEASURED``: about one build in fifty, one of them matched
some key by chance)."""


def ran_text(nb, ran) -> str:
    """What a run of ``nb`` shows (``leaks.notebook_text``; its cells take the run's outputs) and the
    numbers its ``{eval}`` roles print. A cell that failed fails the class site's build
    (allow_errors: false), so it fails here."""
    values = []
    for cell, result in zip(nb.cells, ran.cells, strict=True):
        if cell.cell_type == "code":
            cell.outputs = result["outputs"]
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            assert not errors, f"a cell of the student edition fails: {errors[0].get('ename')}: {errors[0].get('evalue')}"
        values += result.get("values", {}).values()
    return leaks.notebook_text(nb) + "\n" + "\n".join(values)


@pytest.fixture(scope="module")
def texts(built_site):
    """{where: text} of every page, card and student problem set a student reads."""
    found = {p.relative_to(built_site).as_posix(): leaks.file_text(p) for p in sorted(built_site.rglob("*.html"))
             if not p.relative_to(built_site).as_posix().startswith(NOT_PAGES)}
    assert any(k.startswith("notebooks/") for k in found) and "book/flashcards.html" in found
    found.update({f"card {c.id}": f"{c.front}\n{c.back}" for d in load_decks() for c in d.cards})
    for src in problem_sets():
        found[f"exercises/{src.stem} (student edition, run)"] = ran_text(*problem_set_run(src))
    return found


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_no_answer_of_the_chapter_is_printed_on_the_site_or_a_card(texts, chapter):
    answers = [a for a in leaks.answers([chapter]) if a.searchable]
    printed = [str(leak) for where, text in texts.items() for leak in leaks.find(text, answers, where)]
    assert not printed, "\n".join(printed[:10])


@pytest.mark.parametrize("chapter", known_problem_sets())
def test_the_default_sites_problem_set_page_shows_no_answer_until_a_fold_is_opened(built_site, chapter):
    page = built_site / "exercises" / f"{chapter}.html"
    shown = leaks.html_text(page.read_text(encoding="utf-8"), folded=True)
    assert "✔" not in shown and "[right]" not in shown, "a check's verdict is printed outside a fold"
    answers = [a for a in leaks.answers([chapter]) if a.searchable]
    printed = [str(leak) for leak in leaks.find(shown, answers, f"exercises/{chapter}.html")]
    assert not printed, "\n".join(printed[:10])
    exercises = problem_set(chapter)
    assert shown.count("Show solution") >= len(exercises)  # every exercise has its fold
    assigned = [i for i, ex in exercises.items() if ex.kind != NUMBER and f"{i} = " in shown]
    assert not assigned, f"a choice's answer is assigned outside a fold: {assigned}"


FOLDED_PAGE = """<html><head><script>var key = 42.5</script></head><body><h2>Exercise 17.9</h2><p>prompt<br>here</p>
<details class="admonition hide above-input"><summary><p class="collapsed admonition-title">Show solution</p></summary>
<div class="cell_input"><pre>x = 42.5</pre></div><div class="cell_output">✔ right 42.5</div></details>
<div class="admonition dropdown"><p class="admonition-title">Worked solution</p><p>It is 42.5 <img alt="fig 3.1"></p>
<div><p>deeper 99.1</p></div></div><details open><summary>Opened</summary>shown 7.7</details><p>after</p></body></html>"""


def test_folded_text_leaves_out_what_a_closed_fold_holds():
    shown = leaks.html_text(FOLDED_PAGE, folded=True).split()
    assert shown == ["Exercise", "17.9", "prompt", "here", "Show", "solution", "Worked", "solution", "Opened",
                     "shown", "7.7", "after"]
    everything = leaks.html_text(FOLDED_PAGE)
    assert all(x in everything for x in ("42.5", "✔ right", "deeper 99.1", "fig 3.1"))


# --- what counts as printed: hand-made cases --------------------------------------------------------
SPARSITY = leaks.Answer("x", "sparsity", 17.87, 0.03, "dimensionless ratio")
FLOOR = leaks.Answer("x", "floor_ms", 1.165, 0.02, "ms")
TOKENS = leaks.Answer("x", "tokens", 15.605e12, 0.02, "tokens")
BUBBLE = leaks.Answer("x", "bubble", 0.2174, 0.01, "fraction of the step (0 to 1)")
SHRINK = leaks.Answer("x", "shrink", 15.0, 0.02, "ratio (normal batch / fast batch)")
LAYERS = leaks.Answer("x", "layers", 6.0, 0.005, "MoE layers (a whole number)")
SEQUENCES = leaks.Answer("x", "batch_from_price", 25.0, 0.005, "sequences", exact=True)


@pytest.mark.parametrize("text, answer", [
    ("the sparsity s = 17.9 for V3", SPARSITY), ("a sparsity of about 18× ...", SPARSITY),
    (r"a floor of \(1.16\) ms", FLOOR), ("trained on 15.60 T tokens", TOKENS), ("15.6 trillion tokens", TOKENS),
    ("1.56e13 tokens", TOKENS), (r"1.56 \times 10^{13} tokens", TOKENS), ("idles 21.7% of the step", BUBBLE),
    ("the batch shrinks about 15×", SHRINK), ("a batch of 25 sequences", SEQUENCES),
])
def test_a_printed_answer_is_found(text, answer):
    assert [leak.answer for leak in leaks.find(text, [answer], "page")] == [answer]


@pytest.mark.parametrize("text, answer", [
    ("PaLM has 540.4 B parameters", leaks.Answer("x", "gb", 541.17, 0.01, "GB")),  # in tolerance, not the same number
    ("s = 17.3 for another model", SPARSITY), ("about 15 chips", SHRINK), ("2,048 tokens of context", TOKENS),
    ("17.9% of the time", SPARSITY),  # a percentage is another quantity than a ratio of 17.9
    ("a price ratio of 15×", SHRINK),  # a ratio, but not this one
    ("6 layers per stage", LAYERS),   # a round answer: not searchable
    ('"0448c30ee5860e80"', leaks.Answer("x", "kink", 448.6, 0.1, "sequences")),
    ("chips 32; source, 2026-04-29", leaks.Answer("x", "per_chip_gb", 28.86, 0.02, "GB per GPU")),  # a date
    ("Llama 2 13B   800   25.00   4,096", SEQUENCES),  # an exact count is never printed with decimals
])
def test_a_number_that_only_resembles_an_answer_is_not(text, answer):
    assert leaks.find(text, [answer], "page") == []


def test_round_answers_are_the_unsearchable_ones():
    assert not LAYERS.searchable and SHRINK.searchable and BUBBLE.searchable
    assert leaks.unsearchable([LAYERS, SHRINK, leaks.Answer("x", "m", 60.0, 0.005, "micro-batches")]) == \
        [LAYERS, leaks.Answer("x", "m", 60.0, 0.005, "micro-batches")]


def test_the_command_line_searches_what_the_test_searches(tmp_path, capsys):
    """A round answer (the 8 of a micro-batch count) is listed to be checked by reading, not matched
    against every "8.0" of a page; a page of measured numbers is not read."""
    (tmp_path / "page.html").write_text("<p>8.0 ms of decode compute; a batch of 8 micro-batches</p>")
    (tmp_path / f"{leaks.MEASURED[0]}.html").write_text("<p>%s</p>" % " ".join(
        f"{a.value:.6g} {a.unit}" for a in leaks.answers() if a.searchable))
    assert leaks.main([str(tmp_path)]) == 0
    assert "0 printed answer(s)" in capsys.readouterr().err
