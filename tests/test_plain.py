"""The plain form of MyST (chalk.teaching.plain) on small hand-written snippets, each expected
output written out by hand; one tiny notebook run in a kernel for the {eval} values and the cache.
The whole student edition is test_student_edition.py's."""
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from chalk.teaching import plain
from chalk.teaching.plain import Markdown, PlainError, Run, Site
from conftest import ROOT

BASE = "https://example.org/course/"
SITE = Site(BASE, {"moe": "term-MoE", "iso-flop line": "term-iso-FLOP-line"},
            {"pope2026": ("Pope and Patel", "2026")},
            frozenset({"notebooks/01_a.ipynb", "notebooks/01_a-deeper.ipynb", "exercises/01_a.ipynb"}),
            {"notebooks/01_a-deeper.ipynb": {"sec": "Sec:-one's"}, "notebooks/01_a.ipynb": {"top": "Top"}})
PAGE = "notebooks/01_a.ipynb"
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(source, **values):
    return Markdown(SITE, PAGE, values).convert(source)


def test_eval_becomes_the_value_and_markdown_shows_it_as_typed():
    assert md("roughly {eval}`rule_txt` tokens per parameter", rule_txt="20") == "roughly 20 tokens per parameter"
    assert md("{eval}`a_txt` and {eval}`b_txt`", a_txt="$2.10", b_txt="3*4_5") == r"\$2.10 and 3\*4\_5"
    with pytest.raises(PlainError, match=r"01_a.ipynb: no value for \{eval\}`missing_txt`"):
        md("{eval}`missing_txt`")


def test_an_admonition_is_a_headed_blockquote():
    source = ":::{admonition} Takeaways\n:class: tip\n* one, {eval}`n_txt` of them\n* two\n:::"
    assert md(source, n_txt="5") == "> **Takeaways**\n>\n> * one, 5 of them\n> * two"
    assert md("```{note}\nA point.\n```") == "> **Note**\n>\n> A point."


def test_a_dropdown_is_a_details_fold_with_markdown_inside_at_the_fence_indent():
    source = ("1. Why?\n\n   :::{admonition} Answer\n   :class: dropdown\n   Because $x = 2$.\n   :::\n"
              "Next paragraph.")
    assert md(source) == ("1. Why?\n\n   <details>\n   <summary>Answer</summary>\n\n   Because $x = 2$.\n\n"
                          "   </details>\n\nNext paragraph.")


def test_nested_directives_convert_inside_out():
    source = "::::{admonition} Worked\n:class: dropdown\n:::{note}\nInner.\n:::\nOuter.\n::::"
    assert md(source) == ("<details>\n<summary>Worked</summary>\n\n> **Note**\n>\n> Inner.\n\nOuter.\n\n"
                          "</details>")


def test_a_fold_title_is_html():
    assert md(":::{admonition} At {eval}`x_txt`\n:class: dropdown\nBody.\n:::", x_txt="a<b") == \
        "<details>\n<summary>At a&lt;b</summary>\n\nBody.\n\n</details>"


def test_glossary_terms_and_citations_link_to_the_site():
    assert md("a {term}`MoE` model") == f"a [MoE]({BASE}book/glossary.html#term-MoE) model"
    assert md("the {term}`iso-FLOP lines <iso-FLOP\nline>`") == \
        f"the [iso-FLOP lines]({BASE}book/glossary.html#term-iso-FLOP-line)"
    assert md("as {cite:p}`pope2026` say") == f"as [Pope and Patel, 2026]({BASE}book/references.html) say"
    assert md("{cite:t}`pope2026` say") == f"[Pope and Patel (2026)]({BASE}book/references.html) say"
    with pytest.raises(PlainError, match="names no entry"):
        md("{term}`no such term`")
    with pytest.raises(PlainError, match="lacks"):
        md("{cite}`nobody1999`")


def test_glossary_anchors_are_the_ids_sphinx_writes():
    # The ids of these entries on the built glossary page, read from its HTML.
    text = "# G\n\n```{glossary}\n:sorted:\niso-FLOP line\n  A line.\n\nKV cache\nFLOP per byte\n  Both.\n```\n"
    assert plain.glossary_terms(text) == {"iso-flop line": "term-iso-FLOP-line", "kv cache": "term-KV-cache",
                                          "flop per byte": "term-FLOP-per-byte"}


def test_links_reach_the_site_or_stay_between_notebooks():
    assert md("[the refs](../book/references.md)") == f"[the refs]({BASE}book/references.html)"
    assert md("[box](../book/corrections.md#ch1-box)") == f"[box]({BASE}book/corrections.html#ch1-box)"
    # a section of a notebook: the id JupyterLab gives that heading, not the site's
    assert md("[check](01_a-deeper.ipynb#sec) and [set](../exercises/01_a.ipynb)") == \
        "[check](01_a-deeper.ipynb#Sec:-one's) and [set](../exercises/01_a.ipynb)"
    assert md("[web](https://a.b/c) and [up](#top)") == "[web](https://a.b/c) and [up](#Top)"
    with pytest.raises(PlainError, match="the link to #gone names no heading of notebooks/01_a-deeper.ipynb"):
        md("[check](01_a-deeper.ipynb#gone)")
    assert SITE.link("../notebooks/01_a-deeper.html", "exercises/01_a.ipynb") == "../notebooks/01_a-deeper.ipynb"
    with pytest.raises(PlainError, match="data/x.csv"):
        md("[data](../data/x.csv)")


@pytest.mark.parametrize("heading, lab_id", [
    # JupyterLab's id is the rendered heading's text with each space a hyphen (rendermime's
    # createHeaderId): case and punctuation kept, marks gone, maths as typed (set before MathJax runs)
    ("A real operator: DeepSeek's own numbers", "A-real-operator:-DeepSeek's-own-numbers"),
    ("Balance batch on an H100: `balance_h100`", "Balance-batch-on-an-H100:-balance_h100"),
    ("Fast mode past $L^\\star$: **why**", "Fast-mode-past-$L^\\star$:-why"),
    ("The [peak](x.md), term by term", "The-peak,-term-by-term"),
    ("$D_\\text{pre}$ and _RL_ &amp; more", "$D_\\text{pre}$-and-RL-&-more"),
])
def test_a_headings_jupyterlab_id(heading, lab_id):
    assert plain.lab_heading_id(heading) == lab_id


def test_every_section_link_of_the_edition_names_a_heading_of_its_notebook():
    """Every link of a shipped notebook's prose to a section of a shipped notebook resolves to that
    heading's JupyterLab id (a PlainError otherwise); tested over the course's own notebooks."""
    import html
    import re

    from chalk.teaching import edition

    site = edition.course_site(ROOT)
    resolved = {}
    for page in sorted(site.shipped):
        for cell in json.loads((ROOT / page).read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                for href in re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'href="([^"]+)"', text):
                    if "#" in href and not href.startswith(("http", "../book/")):
                        resolved[(page, href)] = site.link(html.unescape(href), page)
    assert len(resolved) >= 30, resolved
    assert resolved[("notebooks/01_batching.ipynb", "01_batching-deeper.ipynb#a-real-operator-deepseek-s-own-numbers")] \
        == "01_batching-deeper.ipynb#A-real-operator:-DeepSeek's-own-numbers"


def test_targets_breaks_comments_and_options_go():
    assert md("(sec-label)=\n## Title\n+++\n% a note to authors\nText.") == "## Title\nText."


def test_math_figure_and_code_directives_get_their_markdown_form():
    assert md("```{math}\n:label: eq-one\nE = mc^2\n```") == "$$\nE = mc^2\n$$"
    assert md(":::{figure} ../book/roofline.md\n:alt: A roofline\nThe caption.\n:::") == \
        f"![A roofline]({BASE}book/roofline.html)\n\nThe caption."
    assert md("```{code-block} python\n:linenos:\nx = 1\n```") == "```python\nx = 1\n```"


def test_code_is_left_as_typed():
    source = "```python\n%pip install x\n{eval}`y`\n```\nUse ``{eval}`name` `` in prose."
    assert md(source) == source


@pytest.mark.parametrize("source, named", [
    ("```{toctree}\nintro\n```", "{toctree}"),
    (":::{unknown-box} Title\nBody.\n:::", "{unknown-box}"),
    ("See {ref}`sec-label`.", "{ref}"),
])
def test_a_construct_without_a_plain_form_is_an_error_naming_it(source, named):
    with pytest.raises(PlainError, match=f"01_a.ipynb: the (directive|role) {named}"):
        md(source)


def test_an_unclosed_directive_is_an_error():
    with pytest.raises(PlainError, match="never closed"):
        md(":::{note}\nBody.")


def test_base_url_comes_from_the_config():
    assert plain.base_url(ROOT).startswith("https://") and plain.base_url(ROOT).endswith("/")


def widget(*extra):
    data = {plain.WIDGET_VIEW: {"model_id": "a1b2", "version_major": 2, "version_minor": 0},
            "text/plain": "VBox(children=(IntSlider(value=3),))"}
    data.update(extra)
    return new_output("display_data", data=data)


def test_a_notebook_keeps_what_the_site_shows_and_drops_what_only_a_kernel_can_draw():
    nb = new_notebook(cells=[
        new_markdown_cell("A note the site removes.", metadata={"tags": ["remove-cell"]}),
        new_code_cell("x_txt = '3'", metadata={"tags": ["remove-input"]}),
        new_markdown_cell("It is {eval}`x_txt`."),
        new_code_cell("Explorer()"),
        new_code_cell("hidden()", metadata={"tags": ["remove-output"]}),
        new_markdown_cell("**Static version.** Its slider moves the batch.", metadata={"tags": ["site-only"]}),
        new_code_cell("twin()"),
    ], metadata={"widgets": {plain.WIDGET_STATE: {"state": {}}}, "kernelspec": KERNEL})
    figure = new_output("display_data", data={"image/png": "iVBO", "text/plain": "<chalk.Picture at 0x7f3a2c>",
                                              "text/html": '<a href="../book/flashcards.html#ch1">cards</a>'})
    twin = new_output("execute_result", data={"text/html": '<div class="chalk-twin">...</div>',
                                              "text/plain": "<HTML object>"}, execution_count=4)
    ran = Run([{}, {"outputs": [], "execution_count": 1}, {"values": {"x_txt": "'3'"}},
               {"outputs": [widget(), widget(("image/png", "iVBO")), figure], "execution_count": 2},
               {"outputs": [new_output("stream", name="stdout", text="secret")], "execution_count": 3},
               {}, {"outputs": [twin], "execution_count": 4}])
    out = plain.notebook(nb, PAGE, SITE, ran)
    assert [c.source for c in out.cells] == ["x_txt = '3'", "It is 3.", "Explorer()", "hidden()", "twin()"]
    assert out.metadata == {"kernelspec": KERNEL}
    setup, _, explorer, hidden, twin_cell = out.cells
    assert setup.metadata.jupyter == {"source_hidden": True} and setup.outputs == []
    assert [o.data for o in explorer.outputs] == [
        {"image/png": "iVBO", "text/plain": "VBox(children=(IntSlider(value=3),))"},
        {"image/png": "iVBO", "text/plain": "<chalk.Picture>",
         "text/html": f'<a href="{BASE}book/flashcards.html#ch1">cards</a>'}]
    assert hidden.outputs == [] and [c.execution_count for c in out.cells if c.cell_type == "code"] == [1, 2, 3, 4]
    [note] = twin_cell.outputs
    assert f"({BASE}notebooks/01_a.html)" in note.data["text/markdown"] and "chalk-twin" not in json.dumps(note)
    bare = plain.notebook(nb, PAGE, SITE, ran, outputs=False)
    assert all(c.outputs == [] and c.execution_count is None for c in bare.cells if c.cell_type == "code")


def test_a_run_is_kept_whole_or_not_at_all(tmp_path, monkeypatch):
    # A write that fails (a full disk) raises and leaves neither the entry nor its temporary file,
    # so that no build reads half a run.
    def failing(obj, f):
        f.write('{"cells": [')
        raise OSError("No space left on device")

    monkeypatch.setattr(plain.json, "dump", failing)
    with pytest.raises(OSError, match="No space"):
        plain.keep(tmp_path / f"nb-{'0' * 24}.json", Run([{}], {}))
    assert list(tmp_path.iterdir()) == []


def test_run_evaluates_each_cell_after_the_cells_above_and_caches_by_notebook_and_library(tmp_path):
    nb = new_notebook(cells=[
        new_code_cell("x_txt, n = 'first', 3\nquote = \"it's\""),
        new_markdown_cell("{eval}`x_txt`, {eval}`n`, {eval}`quote`"),
        new_code_cell("x_txt = 'second'\nprint('ran')"),
        new_markdown_cell("{eval}`x_txt`"),
    ])
    stale = tmp_path / "nb-000000000000000000000000.json"
    stale.write_text("{}")
    ran = plain.run(nb, tmp_path, tmp_path, name="nb", library="one")
    assert ran.cells[1] == {"values": {"x_txt": "'first'", "n": "3", "quote": '"it\'s"'}}  # as the kernel shows them
    assert [plain.shown(v) for v in ran.cells[1]["values"].values()] == ["first", "3", "it's"]  # as the site prints them
    assert ran.cells[3] == {"values": {"x_txt": "'second'"}}
    assert ran.metadata["language_info"]["name"] == "python"
    assert [o["text"] for o in ran.cells[2]["outputs"]] == ["ran\n"]
    [kept] = tmp_path.glob("nb-*.json")
    assert kept != stale
    # The same notebook and library read the kept run (here doctored, so reading it shows).
    kept.write_text(kept.read_text().replace("'second'", "'from the cache'"))
    assert plain.run(nb, tmp_path, tmp_path, name="nb", library="one").cells[3] == {"values": {"x_txt": "'from the cache'"}}
    with pytest.raises(PlainError, match=r"bad, cell 0: \{eval\}`nope` failed: NameError"):
        plain.run(new_notebook(cells=[new_markdown_cell("{eval}`nope`")]), tmp_path, name="bad")


def test_the_library_digest_follows_the_installed_packages(monkeypatch):
    import numpy
    assert f"numpy=={numpy.__version__}" in plain.environment().splitlines()
    before = plain.library_digest()
    monkeypatch.setattr(plain, "environment", lambda: f"numpy=={numpy.__version__}.post1")
    assert plain.library_digest() != before  # an upgraded package runs every page again


def test_the_key_follows_the_code_that_makes_a_run_and_not_the_converter(tmp_path, monkeypatch):
    """plain.py and shared_runs.py are left out of the key as files, so that an edit to the Markdown
    converter leaves every kept run valid; but an edit to what records or keeps a run (here
    ``record``, and the site's recorder ``SharedRun``) must run every page again."""
    teaching = Path(plain.__file__).parent
    for name in ("plain.py", "shared_runs.py"):
        shutil.copy(teaching / name, tmp_path / name)

    def edit(name, old, new):
        text = (tmp_path / name).read_text()
        assert old in text, old
        (tmp_path / name).write_text(text.replace(old, new, 1))

    before = plain.run_code(tmp_path)
    assert before == plain.run_code()
    edit("plain.py", "def _quote(lines", "def _quote(lines: list, *, _unused=None) -> list:\n    pass\n\n\ndef _q2(lines")
    assert plain.run_code(tmp_path) == before  # the converter is not part of a run
    edit("plain.py", "client.set_widgets_metadata()", "client.set_widgets_metadata()  # records no more")
    after_record = plain.run_code(tmp_path)
    assert after_record != before
    edit("shared_runs.py", "class SharedRun(NotebookClientInline):", "class SharedRun(NotebookClientInline):\n    extra = 1")
    after_recorder = plain.run_code(tmp_path)
    assert after_recorder != after_record
    # what those use is followed through: the pattern eval_names reads, a helper split out of record
    edit("plain.py", "_INLINE = re.compile(r\"", "_INLINE = re.compile(r\"(?:)")
    after_pattern = plain.run_code(tmp_path)
    assert after_pattern != after_recorder
    edit("plain.py", "    client.set_widgets_metadata()", "    _split_out(client)")
    split = plain.run_code(tmp_path)
    (tmp_path / "plain.py").write_text((tmp_path / "plain.py").read_text()
                                       + "\n\ndef _split_out(client):\n    client.set_widgets_metadata()\n")
    assert plain.run_code(tmp_path) != split
    with_helper = plain.run_code(tmp_path)
    (tmp_path / "plain.py").write_text((tmp_path / "plain.py").read_text().replace(
        "    client.set_widgets_metadata()\n", "    client.nb.metadata.pop('widgets', None)\n"))
    assert plain.run_code(tmp_path) != with_helper  # a change inside the split-out helper
    monkeypatch.setitem(plain.RUN_CODE, "plain.py", ("record_gone",))
    with pytest.raises(PlainError, match=r"plain.py: RUN_CODE names \['record_gone'\]"):
        plain.run_code(tmp_path)
    monkeypatch.undo()
    # the key holds that code: this process's runs are keyed by the code it runs
    digest = plain.library_digest()
    monkeypatch.setattr(plain, "run_code", lambda: after_record)
    assert plain.library_digest() != digest
