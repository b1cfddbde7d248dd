"""The glossary: the course's vocabulary defined once, and every {term} link in the book resolving
to an entry (Sphinx only warns about a missing term, and only when the page is built)."""
import re

import pytest
from sphinx.util.nodes import _make_id

from conftest import ROOT

GLOSSARY = ROOT / "book" / "glossary.md"
REQUIRED = ["roofline", "decode", "prefill", "balance batch", "hardware intensity", "HBM", "KV cache",
            "MFU", "MoE", "sparsity", "scale-up domain", "replica", "drain time", "MLA", "GQA"]
"""Terms the chapters so far cannot do without."""
TERM_ROLE = re.compile(r"\{term\}`([^`<]+?)(?:\s*<([^>]+)>)?`")
GLOSSARY_LINK = re.compile(r"\]\((?:\.\./)?(?:book/)?glossary\.md#([^)\s]*)\)")
"""A notebook links a term as ``[shown](../book/glossary.md#term-<id>)``, which JupyterLab can follow
(chalk.teaching.glossary_links makes it a glossary reference on the site)."""


def entries() -> dict[str, str]:
    """{term: definition} from the glossary directive."""
    block = re.search(r"```\{glossary\}\n(.*?)\n```", GLOSSARY.read_text(), re.S).group(1)
    terms, current = {}, None
    for line in block.splitlines():
        if line and not line.startswith(" "):
            current = line.strip()
            assert current not in terms, f"{current} is defined twice"
            terms[current] = ""
        elif line.strip():
            terms[current] += line.strip() + " "
    return terms


def test_glossary_covers_the_course_vocabulary():
    terms = entries()
    assert len(terms) >= 25
    missing = [t for t in REQUIRED if t not in terms]
    assert not missing, f"not in the glossary: {missing}"


def test_terms_are_in_alphabetical_order_and_each_has_a_definition():
    terms = entries()
    assert list(terms) == sorted(terms, key=str.lower)
    for term, definition in terms.items():
        if see := re.fullmatch(r"See \{term\}`([^`]+)`\. ", definition):
            assert see.group(1) in terms and see.group(1) != term, f"{term}: refers to no other entry"
        else:
            assert len(definition.split()) >= 5, f"{term}: definition too short"


@pytest.mark.parametrize("path", sorted([*ROOT.glob("book/*.md"), *ROOT.glob("notebooks/*.ipynb"),
                                          *ROOT.glob("exercises/*.ipynb")]), ids=lambda p: p.name)
def test_every_term_link_in_the_book_names_a_glossary_entry(path):
    known = {t.lower() for t in entries()}
    for text, target in TERM_ROLE.findall(path.read_text(encoding="utf-8")):
        assert (target or text).strip().lower() in known, f"{path.name}: {{term}}`{text}` has no entry"
    anchors = {_make_id("term-" + t) for t in entries()}
    for anchor in GLOSSARY_LINK.findall(path.read_text(encoding="utf-8")):
        assert anchor in anchors, f"{path.name}: the glossary link #{anchor} names no entry"


def test_notebooks_link_terms_rather_than_use_the_term_role():
    """jupyterlab-myst has no glossary to resolve {term} against: it renders a dead href="#"."""
    for path in [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("exercises/*.ipynb")]:
        assert not TERM_ROLE.search(path.read_text(encoding="utf-8")), f"{path.name}: a {{term}} role"
