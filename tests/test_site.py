"""The website: built with warnings as errors, then read in a real browser with no network.

The build is the one README's `make book` runs, with `-W -n --keep-going` so a failing cell, a
broken reference or any Sphinx warning fails it. The browser is Debian's Chromium, driven by
Playwright without a browser download; screenshots land in _build/screenshots/.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def site():
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    # Sphinx prints "<where>: WARNING: ..."; the kernels' own "[IPKernelApp] WARNING |" notes are not build warnings.
    warnings = [line for line in log.splitlines() if re.search(r": (WARNING|ERROR|CRITICAL):", line)]
    assert not warnings, "\n".join(warnings[:20])
    return SITE


def test_build_has_every_page(site):
    for page in ("book/intro", "book/how_to_use", "book/instructors", "book/notation", "notebooks/01_batching", "exercises/01_batching",
                 "book/flashcards", "book/hardware", "book/models", "book/references"):
        assert (site / f"{page}.html").is_file(), page


def test_no_default_theme_text_or_cdn(site):
    for html in site.rglob("*.html"):
        text = html.read_text(errors="replace")
        assert "cdn.jsdelivr.net/npm/mathjax" not in text, html
        for default in ("My sample book", "The Jupyter Book Community", "Powered by"):
            assert default not in text, (html, default)


@pytest.fixture(scope="module")
def browser(site):
    chromium = find_chromium()
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Chromium was found: install Debian's chromium")
        pytest.skip("no Chromium found (install Debian's chromium to run the browser tests)")
    from playwright.sync_api import sync_playwright
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


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
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    return page, blocked


def assert_math_typeset_and_images_load(page):
    assert page.locator("mjx-container").count() > 0, "no typeset math on the page"
    raw = page.evaluate("""() => {
        const main = document.querySelector('main') || document.body;
        const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
        const bad = [];
        while (walker.nextNode()) {
            const n = walker.currentNode, p = n.parentElement;
            if (p.closest('script, style, pre, code, mjx-container, .MathJax')) continue;
            if (/\\$\\$|\\\\\\(|\\\\\\[|\\\\frac|\\\\text\\{/.test(n.textContent)) bad.push(n.textContent.slice(0, 80));
        }
        return bad;
    }""")
    assert raw == [], f"raw TeX left on the page: {raw[:5]}"
    broken = page.evaluate("""() => Array.from(document.images)
        .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)""")
    assert broken == [], f"images that did not load: {broken}"


def test_chapter_page_typesets_and_twin_responds(browser):
    page, blocked = open_page(browser, "notebooks/01_batching.html")
    assert_math_typeset_and_images_load(page)
    page.screenshot(path=str(SHOTS / "01_batching.png"), full_page=True)
    twin = page.locator(".chalk-twin").first
    twin.scroll_into_view_if_needed()
    readout = twin.locator(".chalk-twin-readout")
    before_text = readout.inner_text()
    before_svg = twin.locator("svg").first.inner_html()
    slider = twin.locator("input.chalk-twin-batch")
    lo, hi = slider.get_attribute("min"), slider.get_attribute("max")
    target = hi if slider.input_value() != hi else lo
    slider.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", target)
    assert readout.inner_text() != before_text, "the twin's readout did not change"
    assert twin.locator("svg").first.inner_html() != before_svg, "the twin's figure did not change"
    twin.screenshot(path=str(SHOTS / "01_batching_twin.png"))
    assert blocked == [] or all(not u.startswith("http") for u in blocked), blocked


def test_flashcards_flip(browser):
    page, _ = open_page(browser, "book/flashcards.html")
    assert_math_typeset_and_images_load(page)
    card = page.locator(".chalk-card").first
    assert page.locator(".chalk-card").count() >= 15
    assert "flipped" not in (card.get_attribute("class") or "")
    card.click()
    assert "flipped" in (card.get_attribute("class") or "")
    page.screenshot(path=str(SHOTS / "flashcards.png"), full_page=True)


def test_reference_and_exercise_pages_render(browser):
    for rel_path in ("book/notation.html", "book/hardware.html", "book/models.html",
                     "exercises/01_batching.html"):
        page, _ = open_page(browser, rel_path)
        assert_math_typeset_and_images_load(page)
        page.screenshot(path=str(SHOTS / (rel_path.replace("/", "_").replace(".html", ".png"))),
                        full_page=True)
