"""The website: built with warnings as errors, then read in a real browser with no network.

The build is the one README's `make book` runs, with `-W -n --keep-going` so a failing cell, a
broken reference or any Sphinx warning fails it. The browser is Debian's Chromium, driven by
Playwright without a browser download. Every page's maths, images and offline loading are read in
test_reader.py's crawl at desktop width, which opens every page once for all its checks (it also
leaves each page's first screen in _build/screenshots/); here, the flashcards turn with a click.
"""
import re

from chalk.teaching import chapters
from conftest import ROOT, SHOTS, SITE, offline_guard


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
    ctx.route("**/*", offline_guard(blocked))
    page = ctx.new_page()
    page.goto((SITE / rel_path).as_uri(), wait_until="load")
    # Sphinx loads MathJax only on pages with math; wait for its typesetting where it is loaded.
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
        || (window.MathJax && MathJax.startup && MathJax.startup.promise)""")
    page.evaluate("() => window.MathJax && MathJax.startup.promise")
    return page, blocked


def test_flashcards_flip(chromium_browser):
    page, _ = open_page(chromium_browser, "book/flashcards.html")
    card = page.locator(".chalk-card").first
    assert page.locator(".chalk-card").count() >= 15
    assert "flipped" not in (card.get_attribute("class") or "")
    card.click()
    assert "flipped" in (card.get_attribute("class") or "")
    page.screenshot(path=str(SHOTS / "flashcards.png"))
