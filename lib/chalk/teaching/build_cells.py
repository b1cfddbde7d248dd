"""Code cells the site build runs in its own process, for the book's pages that only print what
``chalk`` computes (the reference tables, the cards, the corrections).

A page written as a notebook gets a kernel of its own: about 3 s of CPU to start it and import
``chalk`` again, on every build, for a page whose code prints one table. This Sphinx extension
(listed in ``_config.yml``) runs such a page's code in the build's process instead:

* the ``chalk-cell`` directive's content is Python, run when the page is read, in a namespace of
  the page's own (its cells share it, in order, as a kernel's would). The value of its last line
  is shown as the notebook showed it: its ``_repr_html_`` as raw HTML, otherwise its
  ``_repr_markdown_`` parsed as MyST, in the ``cell``/``cell_output`` containers myst-nb makes
  for a code cell tagged ``remove-input``; a cell that ends in a statement shows nothing.
* the ``chalk-eval`` role prints a name from that namespace, as myst-nb's ``{eval}`` does in a
  notebook: ``{chalk-eval}`routed_txt```.

An exception in a cell, or a name the role cannot find, is a build error naming the page and line,
as a failing cell is in an executed notebook (``allow_errors: false``).
"""
import ast
import traceback

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective, SphinxRole

_NAMESPACES = "chalk_build_cells"
"""Key of ``env.temp_data`` (emptied for each page Sphinx reads) holding the page's namespace."""


def _namespace(env) -> dict:
    return env.temp_data.setdefault(_NAMESPACES, {"__name__": "__main__"})


def run_cell(source: str, namespace: dict):
    """Run ``source`` in ``namespace`` and return the value of its last line if that line is an
    expression (None otherwise), as a notebook cell shows it."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<chalk-cell>", "exec"), namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), "<chalk-cell>", "eval"), namespace)


def _repr(value, kind: str) -> str | None:
    """``value``'s ``_repr_<kind>_`` text, or None; IPython's display objects return (data,
    metadata) when they carry metadata."""
    method = getattr(value, f"_repr_{kind}_", None)
    data = method() if method else None
    return data[0] if isinstance(data, tuple) else data


class ChalkCell(SphinxDirective):
    """``chalk-cell``: Python run in the page's namespace, its last value shown (module docstring)."""
    has_content = True

    def run(self) -> list[nodes.Node]:
        try:
            value = run_cell("\n".join(self.content), _namespace(self.env))
        except Exception:
            raise self.error(f"chalk-cell failed:\n{traceback.format_exc(limit=-3)}")
        if value is None:
            return []
        output = nodes.container(nb_element="cell_code_output", classes=["cell_output"])
        if (html := _repr(value, "html")) is not None:
            output += nodes.raw(text=html, format="html", classes=["output", "text_html"])
        elif (markdown := _repr(value, "markdown")) is not None:
            self.state.nested_parse(StringList(markdown.splitlines()), self.content_offset, output)
        else:
            raise self.error(f"chalk-cell shows HTML or Markdown (an object with _repr_html_ or "
                             f"_repr_markdown_), not {type(value).__name__}")
        cell = nodes.container(nb_element="cell_code", classes=["cell", "tag_remove-input"])
        cell += output
        self.set_source_info(cell)
        return [cell]


class ChalkEval(SphinxRole):
    """``chalk-eval``: the text of a name set by an earlier ``chalk-cell`` of the page."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        namespace = _namespace(self.env)
        if self.text not in namespace:
            msg = self.inliner.reporter.error(f"chalk-eval: no {self.text!r} set by a chalk-cell above it",
                                              line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        return [nodes.inline(self.rawtext, str(namespace[self.text]), classes=["output", "text_plain"])], []


def setup(app):
    app.add_directive("chalk-cell", ChalkCell)
    app.add_role("chalk-eval", ChalkEval())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
