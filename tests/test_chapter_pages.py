"""A chapter's pages: its "Going deeper" page, and the prose count that bounds its main line."""
import json
import re

import pytest

from chalk.teaching.chapters import Chapter, chapters, links, markdown_cells, prose_words
from chalk.teaching.flashcards import chapter_sections

PROSE = """\
# A heading of four words

The balance batch is {eval}`b_star_txt` sequences.

```python
x = 1  # code is not prose
```

$$
B^\\star = r\\,b_w\\,s/2
$$

| chip | r |
|---|---|
| H100 | 295 |

:::{admonition} Check yourself
:class: dropdown
Two words.
:::
"""
"""Prose a reader reads: 5 words of heading, 6 of sentence with the number one word, 2 in the fold's
body, 2 of the admonition's title; the code, the display math, the table and the option are not prose."""


def notebook(tmp_path, *sources, as_list=False):
    cells = [{"cell_type": "markdown", "metadata": {}, "id": f"c{i}",
              "source": s.splitlines(keepends=True) if as_list else s} for i, s in enumerate(sources)]
    cells.insert(1, {"cell_type": "code", "metadata": {}, "id": "x", "execution_count": None, "outputs": [],
                     "source": "prose = 'in a code cell is not counted either'"})
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("as_list", [False, True])
def test_prose_words_counts_what_a_reader_reads(tmp_path, as_list):
    assert prose_words(notebook(tmp_path, PROSE, as_list=as_list)) == 5 + 6 + 2 + 2
    assert markdown_cells(notebook(tmp_path, "a", "b c", as_list=as_list)) == ["a", "b c"]


def test_an_unclosed_fence_hides_the_rest_of_its_cell_only(tmp_path):
    assert prose_words(notebook(tmp_path, "one two\n```\nnot prose", "three")) == 3


def test_every_chapter_has_a_going_deeper_page_linked_from_its_foot():
    for ch in (c for c in chapters() if c.written):
        assert ch.deeper.is_file(), ch.name
        assert markdown_cells(ch.deeper)[0].startswith("# Going deeper"), ch.name
        assert f'href="../notebooks/{ch.name}-deeper.html"' in links(ch.name)
    assert Chapter("01_batching").url("deeper", "x") == "../notebooks/01_batching-deeper.html#x"


WRITTEN = [c for c in chapters() if c.written]
PAGES = [page for c in WRITTEN for page in (c.notebook, c.deeper)]
LINK = re.compile(r"\]\(([\w-]+\.ipynb)?#([\w-]+)\)")
"""A link to a heading of a page in notebooks/: "[the check](01_batching-deeper.ipynb#anchor)", or "(#anchor)"."""


@pytest.mark.parametrize("chapter", WRITTEN, ids=lambda c: c.name)
def test_the_main_line_is_at_most_4500_words(chapter):
    # Issues #24-#27: about twenty minutes of reading; the depth goes to the "Going deeper" page.
    assert prose_words(chapter.notebook) <= 4_500


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_link_to_a_heading_names_one(page):
    for target, anchor in LINK.findall("\n".join(markdown_cells(page))):
        where = page.parent / target if target else page
        assert anchor in chapter_sections(where), f"{page.name}: {target or '(this page)'}#{anchor}"
