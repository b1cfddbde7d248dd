"""The website: built with warnings as errors, then read in a real browser with no network.

The build is the one README's `make book` runs, with `-W -n --keep-going` so a failing cell, a
broken reference or any Sphinx warning fails it. The browser is Debian's Chromium, driven by
Playwright without a browser download; screenshots of each page's first screen land in
_build/screenshots/ (a full-page shot of a 21,000 px chapter took as long as loading it).
"""
import re

from chalk.teaching import chapters
from conftest import ROOT, SHOTS, SITE


def toc_pages() -> list[str]:
    """Every page _toc.yml names (its root and each file entry), without an extension."""
    return re.findall(r"^\s*(?:root|- file):\s*(\S+?)\s*$", (ROOT / "_toc.yml").read_text(), re.M)


def test_build_has_every_page(built_site):
    pages = [f"{folder}/{p.stem}" for folder in ("notebooks", "exercises")
             for p in (ROOT / folder).glob("[0-9][0-9]_*.ipynb")]
    assert len(pages) >= 2
    assert set(pages) <= set(toc_pages()), "a chapter or problem set missing from _toc.yml"
    for page in toc_pages():
        assert (built_site / f"{page}.html").is_file(), page


def test_intro_map_links_every_chapter_and_problem_set():
    text = (ROOT / "book" / "intro.md").read_text()
    for chapter in chapters.chapters():
        if chapter.written:
            assert f"[{chapter.number} {chapter.title}](../notebooks/{chapter.name}.ipynb)" in text, chapter.name
            assert f"(../exercises/{chapter.name}.ipynb)" in text, chapter.name
        else:
            assert f"{chapter.number} {chapter.title} (coming)" in text, chapter.name


def test_no_default_theme_text_or_cdn(built_site):
    for html in built_site.rglob("*.html"):
        text = html.read_text(errors="replace")
        assert "cdn.jsdelivr.net/npm/mathjax" not in text, html
        for default in ("My sample book", "The Jupyter Book Community", "Powered by"):
            assert default not in text, (html, default)


def open_page(browser, rel_path):
    """Open a built page with every non-file request blocked; return (page, blocked urls)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    blocked = []

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    page = ctx.new_page()
    page.goto((SITE / rel_path).as_uri(), wait_until="load")
    # Sphinx loads MathJax only on pages with math; wait for its typesetting where it is loaded.
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
        || (window.MathJax && MathJax.startup && MathJax.startup.promise)""")
    page.evaluate("() => window.MathJax && MathJax.startup.promise")
    return page, blocked


TYPESET = """() => {
    const main = document.querySelector('main') || document.body;
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    const raw = [];
    while (walker.nextNode()) {
        const n = walker.currentNode, p = n.parentElement;
        if (p.closest('script, style, pre, code, mjx-container, .MathJax')) continue;
        if (/\\$\\$|\\\\\\(|\\\\\\[|\\\\frac|\\\\text\\{/.test(n.textContent)) raw.push(n.textContent.slice(0, 80));
    }
    const broken = Array.from(document.images).filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src);
    return {math: document.querySelectorAll('mjx-container').length, raw, broken};
}"""
"""What the typeset check reads, in one round trip: typeset formulas, text with raw TeX left in it
outside code and math, and images that did not load."""


def assert_math_typeset_and_images_load(page, math=True):
    """Raw TeX nowhere and every image loaded; with ``math``, some typeset math on the page."""
    found = page.evaluate(TYPESET)
    if math:
        assert found["math"] > 0, "no typeset math on the page"
    assert found["raw"] == [], f"raw TeX left on the page: {found['raw'][:5]}"
    assert found["broken"] == [], f"images that did not load: {found['broken']}"


def test_chapter_pages_typeset(chromium_browser):
    # The twins on them are driven control by control in test_twins.py.
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        page, blocked = open_page(chromium_browser, f"notebooks/{notebook.stem}.html")
        assert_math_typeset_and_images_load(page)
        page.screenshot(path=str(SHOTS / f"{notebook.stem}.png"))
        assert not [u for u in blocked if u.startswith("http")], (notebook.stem, blocked)
        page.context.close()


def test_flashcards_flip(chromium_browser):
    page, _ = open_page(chromium_browser, "book/flashcards.html")
    assert_math_typeset_and_images_load(page)
    card = page.locator(".chalk-card").first
    assert page.locator(".chalk-card").count() >= 15
    assert "flipped" not in (card.get_attribute("class") or "")
    card.click()
    assert "flipped" in (card.get_attribute("class") or "")
    page.screenshot(path=str(SHOTS / "flashcards.png"))


def screenshot(page, rel_path):
    page.screenshot(path=str(SHOTS / rel_path.replace("/", "_").replace(".html", ".png")))
    page.context.close()


def test_reference_pages_render(chromium_browser):
    # The data pages print tables of figures without math; the others typeset some.
    for rel_path, math in (("book/notation.html", True), ("book/hardware.html", True), ("book/models.html", True),
                           ("book/systems.html", True), ("book/corrections.html", True),
                           ("book/glossary.html", True), ("book/prices.html", False),
                           ("book/deployments.html", False), ("book/memory.html", False),
                           ("book/quoted.html", False)):
        page, _ = open_page(chromium_browser, rel_path)
        assert_math_typeset_and_images_load(page, math)
        screenshot(page, rel_path)


def test_every_problem_set_page_renders(built_site, chromium_browser):
    # Found in the built site, so a new chapter's problem set is covered once the book builds it.
    pages = sorted(built_site.glob("exercises/[0-9][0-9]_*.html"))
    assert len(pages) >= len(list((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))) >= 1
    for html in pages:
        rel_path = html.relative_to(built_site).as_posix()
        page, blocked = open_page(chromium_browser, rel_path)
        assert_math_typeset_and_images_load(page)
        assert not [u for u in blocked if u.startswith("http")], (rel_path, blocked)
        screenshot(page, rel_path)
