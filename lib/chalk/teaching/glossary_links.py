"""Sphinx extension: a Markdown link to a glossary entry is a glossary reference on the site.

The chapters link a term as ``[KV cache](../book/glossary.md#term-KV-cache)`` rather than with
MyST's ``{term}`` role, because JupyterLab (jupyterlab-myst) has no project glossary to resolve a
role against and renders it as a dead ``href="#"`` link, while a plain link opens the glossary page
there. On the site MyST-Parser would resolve that link as a link to a page heading and warn that
``term-KV-cache`` is no heading; this post-transform runs first and resolves it as Sphinx resolves
``{term}``: the same ``xref std std-term`` node and the same address. An anchor that names no
entry is a warning, so the ``-W`` build fails on it as it does on an unknown ``{term}``.
"""
from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.nodes import make_refnode

GLOSSARY = "book/glossary"
"""The glossary page's document name."""
logger = logging.getLogger(__name__)


class GlossaryLinks(SphinxPostTransform):
    # Before MyST-Parser's resolver (priority 9), which would treat the anchor as a heading's.
    default_priority = 8

    def run(self, **kwargs) -> None:
        std = self.env.get_domain("std")
        entries = {labelid: (docname, labelid)
                   for (kind, _), (docname, labelid) in std.objects.items() if kind == "term"}
        for node in list(self.document.findall(addnodes.pending_xref)):
            anchor = node.get("reftargetid") or ""
            if node.get("refdomain") != "doc" or node.get("reftarget") != GLOSSARY or not anchor.startswith("term-"):
                continue
            if anchor not in entries:
                logger.warning(f"glossary link: no entry of {GLOSSARY}.md has the anchor {anchor!r}",
                               location=node, type="chalk", subtype="glossary")
                node.replace_self(node[0].deepcopy())
                continue
            docname, labelid = entries[anchor]
            inner = nodes.inline("", "", classes=["xref", "std", "std-term"])
            inner.extend(child.deepcopy() for child in node[0].children)
            node.replace_self(make_refnode(self.app.builder, node.get("refdoc", self.env.docname), docname,
                                           labelid, inner))


def setup(app):
    app.add_post_transform(GlossaryLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
