"""chalk.teaching.build_cells: the book's table pages run their code inside the site build. Each test
builds a two-page Sphinx project with MyST and the extension (about a second)."""
import io

import pytest
from sphinx.application import Sphinx

from chalk.teaching.build_cells import run_cell

PAGE = """# Tables

```{chalk-cell}
from IPython.display import HTML, Markdown
rows = [("H100", 3 * 330), ("B200", 2 * 1125)]
total_txt = f"{sum(n for _, n in rows):,}"
```

The two chips sum to {chalk-eval}`total_txt` units.

```{chalk-cell}
Markdown("| chip | units |\\n|---|---|\\n" + "\\n".join(f"| {c} | {n} |" for c, n in rows))
```

```{chalk-cell}
HTML('<p class="probe">raw <b>html</b></p>')
```
"""
OTHER = """# Other

{chalk-eval}`total_txt` is not set on this page.
"""


def build(tmp_path, pages: dict[str, str]) -> tuple[dict[str, str], str]:
    """The HTML of each page and the build's warnings."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["myst_parser", "chalk.teaching.build_cells"]\n'
                                 'exclude_patterns = ["_build"]\n')
    (src / "index.md").write_text("# Index\n\n```{toctree}\n" + "\n".join(pages) + "\n```\n")
    for name, text in pages.items():
        (src / f"{name}.md").write_text(text)
    warnings = io.StringIO()
    app = Sphinx(str(src), str(src), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                 status=None, warning=warnings, freshenv=True)
    app.build()
    return {name: (tmp_path / "html" / f"{name}.html").read_text() for name in pages}, warnings.getvalue()


def test_a_page_runs_its_cells_in_order_and_shows_their_last_values(tmp_path):
    html, warnings = build(tmp_path, {"tables": PAGE})
    page = html["tables"]
    assert "chalk-cell" not in warnings and "chalk-eval" not in warnings, warnings
    # 3 x 330 + 2 x 1125 = 3,240, set by the first cell and printed by the role
    assert 'The two chips sum to <span class="output text_plain">3,240</span> units.' in page
    # the Markdown table is parsed as MyST, inside the containers myst-nb gives a remove-input cell
    table = page[page.index('<div class="cell tag_remove-input docutils container">'):]
    assert table.index('<div class="cell_output docutils container">') < table.index("<table")
    assert "<td><p>H100</p></td>" in table and "<td><p>990</p></td>" in table and "<td><p>2250</p></td>" in table
    assert '<p class="probe">raw <b>html</b></p>' in page  # the HTML as it is, not escaped
    # the first cell ends in a statement: no output, so three cells make two containers
    assert page.count('class="cell tag_remove-input docutils container"') == 2


def test_a_failing_cell_or_an_unknown_name_is_a_build_error_on_its_page(tmp_path):
    broken = PAGE.replace('rows = [("H100"', 'rows = 1 / 0\nrows = [("H100"')
    _, warnings = build(tmp_path, {"tables": broken, "other": OTHER})
    assert "tables.md:3: ERROR: chalk-cell failed" in warnings and "ZeroDivisionError" in warnings, warnings
    # each page has a namespace of its own: another page's names are not visible
    assert "other.md:3: ERROR: chalk-eval: no 'total_txt'" in warnings, warnings


def test_a_cell_shows_html_or_markdown_and_refuses_anything_else(tmp_path):
    _, warnings = build(tmp_path, {"tables": PAGE.replace("HTML('<p class=\"probe\">raw <b>html</b></p>')", "42")})
    assert "ERROR: chalk-cell shows HTML or Markdown" in warnings and "not int" in warnings, warnings


@pytest.mark.parametrize("source, shown", [("x = 2\nx * 3", 6), ("x = 2", None), ("x = 2\nx * 3\ny = 1", None),
                                          ("", None)])
def test_a_cell_shows_the_value_of_its_last_line_only_when_it_is_an_expression(source, shown):
    namespace = {}
    assert run_cell(source, namespace) == shown
