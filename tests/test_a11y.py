"""Accessibility of every page the site publishes, and of the figures the chapters draw.

* axe-core (bundled by axe-playwright-python) runs on every built page in the browser the other
  site tests use, in the light colour scheme; the book's pages and one page of each other kind
  (chapter, lab, problem set) with every folded block opened, in both schemes, and again with every
  flashcard turned (READ_IN_FULL): no serious or critical violation anywhere; the moderate
  and minor ones are reported as warnings (they show in the test summary) so they stay in sight;
* the code highlighting's every token colour reaches 4.5:1 on its background in both schemes;
* every <img> says what it shows: alt text that is neither empty nor a file name;
* the flashcards work from the keyboard alone (the twins' keyboard paths are in test_twins.py);
* the chapters' figures tell their series apart without colour (line style or marker, or for
  filled boxes hatching or a difference in lightness), and say in words what they show.

Pages are found in the built site and figures in chalk.figures and the cards, so a chapter added
later is checked without a change here.
"""
import html.parser
import importlib
import inspect
import pkgutil
import re
import warnings
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import chalk.figures
from chalk import measure, timetable
from chalk.errors import ChalkError
from chalk.figures import canvas, overtraining, pipelining, revnets
from chalk.teaching.flashcards import FIGURES as CARD_FIGURES
from conftest import SHOTS, focus_ring_problem, focus_style, offline_guard

BLOCKING = ("serious", "critical")
EXPERIMENTAL_RULES = ("label-content-name-mismatch", "td-has-header", "table-fake-caption", "p-as-heading")
"""axe's experimental rules that test a WCAG success criterion (2.5.3 label in name, 1.3.1 tables and
headings), switched on: the first is how issue #16 found the search button and the folded code
cells. The other experimental rules stay off: css-orientation-lock needs axe to fetch and parse
every stylesheet, and hidden-content, focus-order-semantics are best practice, not WCAG, and slow."""


def site_pages(site) -> list[str]:
    """Every page of the built site, less index.html, which is only a redirect to book/intro.html
    (a <meta http-equiv="Refresh">: the browser leaves it before axe could read it)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.relative_to(site).parts[0].startswith("_") and p.relative_to(site).as_posix() != "index.html")


SCHEMES = ("light", "dark")
"""The theme follows the reader's system setting (its default mode is auto), so each page is read in
both; the test asks the theme which it drew, so a theme that stopped following the setting fails."""

OPEN_FOLDS = """() => {
    const shut = document.querySelectorAll('details:not([open])');
    shut.forEach(d => { d.open = true; });
    return shut.length; }"""
"""Open every folded block (answers, hidden code, the sidebar's sections), as a reader would; returns
how many there were. Opening a fold only adds to what the page shows, so the page opened is read
once per scheme, folds and all, instead of as it loads and then again in its folds."""
TURN_CARDS = """() => {
    const cards = document.querySelectorAll('.chalk-card:not(.flipped)');
    cards.forEach(c => c.click());
    return cards.length; }"""
"""Turn every flashcard with a click; returns how many there were. A turned card hides its question,
so the cards are read once with their questions (with the page) and once turned."""
CARDS = ".chalk-card"


def open_offline(browser):
    """One page object for the whole run, every request off the disk refused."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.route("**/*", offline_guard([]))
    return ctx.new_page()


SETTLED = """async () => {
    if (window.MathJax?.startup?.promise) await MathJax.startup.promise;
    await document.fonts.ready;
    // A looping animation (a spinner) never finishes: wait only for those that end.
    const ending = () => document.getAnimations().filter(a => a.playState === 'running'
        && Number.isFinite(a.effect?.getComputedTiming().endTime));
    await Promise.all(ending().map(a => a.finished.catch(() => null)));
    return ending().length; }"""


def settle(page):
    """Wait, by state rather than by time, until what axe reads is final: MathJax has typeset the
    page, the web fonts are in, and no animation is running (sphinx-togglebutton fades a fold's
    content in over 0.3 s when it opens: axe reading during the fade saw half-transparent code,
    which is how the dark scheme's comments in opened solutions failed at random)."""
    # A page that never settles fails here, rather than holding the suite: the limit is no wait.
    running = page.evaluate(f"""() => Promise.race([({SETTLED})(),
        new Promise((_, no) => setTimeout(() => no(new Error('not settled within 60 s')), 60000))])""")
    assert running == 0, f"{running} animations still running after all finished"


def use_scheme(page, scheme):
    """Tell the page the reader's system prefers ``scheme`` and wait until the theme draws it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    page.emulate_media(color_scheme=scheme)
    try:
        # A state wait, bounded like settle's: redrawing a long page in the other scheme took 6 s on a loaded machine.
        page.wait_for_function("s => document.documentElement.dataset.theme === s", arg=scheme, timeout=60000)
    except PlaywrightTimeout:
        drawn = page.evaluate("document.documentElement.dataset.theme")
        pytest.fail(f"the theme drew {drawn!r} for a reader whose system prefers {scheme}")


def load_axe(page):
    """Put axe's 0.6 MB script into the page, once per page load, not once per run."""
    from axe_playwright_python.sync_playwright import Axe
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(Axe().axe_script)


CODE_COLOURS_READ = "exercises/02_moe_racks.html"
"""The one page where axe reads the contrast of highlighted code (its solutions' code, opened, in
both schemes: where the dark scheme's comments once failed). Elsewhere highlighted source code (a
``.highlight`` block that is not a cell's output: outputs, such as printed streams, are read
everywhere) is left out of the contrast rule: it is drawn by one stylesheet, whose every token colour
test_code_highlighting_reads_in_both_schemes checks against the code background in both schemes,
and it was most of axe's time on a chapter read in full (Chapter 1: 4,230 spans)."""
SKIP_CODE_COLOURS = """() => {
    const rule = axe._audit.rules.find(r => r.id === 'color-contrast');
    const matches = rule.matches.bind(rule);
    axe.configure({rules: [{id: 'color-contrast',
        matches: (node, virtualNode) => !(node.closest('.highlight') && !node.closest('.output'))
            && matches(node, virtualNode)}]}); }"""


CONTRAST_ONCE_PER_STYLE = """() => {
    const rule = axe._audit.rules.find(r => r.id === 'color-contrast');
    const matches = rule.matches.bind(rule);
    const once = window.chalkContrastOnce = {seen: new Set(), chains: new Map(), numbers: new Map(), boxes: null};
    const paints = (s) => s.backgroundColor !== 'rgba(0, 0, 0, 0)' || s.backgroundImage !== 'none';
    // Where a text's contrast comes from: each box from the element up to the root, by tag, class
    // and what it paints beneath or over the text.
    // (each chain is numbered: a number stands for the element's boxes, whatever their depth)
    const chain = (el) => {
        if (!el) return 0;
        let c = once.chains.get(el);
        if (c === undefined) {
            const s = getComputedStyle(el);
            const own = [el.tagName, el.className?.baseVal ?? el.className, s.backgroundColor, s.backgroundImage,
                         s.opacity, s.filter, s.mixBlendMode, s.backdropFilter, chain(el.parentElement)].join(' ');
            c = once.numbers.get(own);
            if (c === undefined) once.numbers.set(own, c = once.numbers.size + 1);
            once.chains.set(el, c);
        }
        return c;
    };
    // A positioned box that paints may lie under (or over) a text it does not contain: such a text
    // is read on its own.
    const overlapped = (node) => {
        once.boxes ??= Array.from(document.querySelectorAll('*')).filter((e) => {
            const s = getComputedStyle(e);
            return s.position !== 'static' && paints(s); }).map((e) => [e, e.getBoundingClientRect()])
            .filter(([e, b]) => b.width && b.height);
        const r = node.getBoundingClientRect();
        return once.boxes.some(([e, b]) => r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom
            && !e.contains(node) && !node.contains(e));
    };
    // axe leaves some texts undecided (a single character, a pseudo-element's content or box):
    // reading one of those does not stand for its style, so the next text of the style is read too.
    const decisive = (node) => node.textContent.trim().length > 1
        && ['::before', '::after'].every((p) => ['none', 'normal'].includes(getComputedStyle(node, p).content));
    axe.configure({rules: [{id: 'color-contrast', matches: (node, virtualNode) => {
        const s = getComputedStyle(node);
        const style = [s.color, s.fontSize, s.fontWeight, s.textShadow, chain(node)].join(' ');
        if (once.seen.has(style) && !overlapped(node)) return false;
        const read = matches(node, virtualNode);
        if (read && decisive(node)) once.seen.add(style);
        return read; }}]}); }"""
"""axe's colour-contrast rule reads one text per style on a page: the same colour, size and weight of
text in the same boxes (tag, class, background, opacity, filters, from the element to the root) has
the same contrast wherever it is, and reading each of a chapter's thousands of spans and cells was
most of axe's time (Chapter 2 at 1280 px: 9.3 CPU-s of contrast, 4.1 once per style; the hardware
page's tables 3.4 and 0.9). A text drawn in another colour, size, weight or box is read, and so is
every text that a positioned box with a background overlaps without containing it (what lies under
it is then not its ancestors alone); a text axe may leave undecided (one character, a pseudo-element)
does not stand for its style. Set once per page load; each axe run starts afresh
(axe_violations), so each scheme and state is read in full."""


def axe_violations(page, context=None, rules=None) -> list[dict]:
    """axe's violations on ``page`` (or ``context``), every rule or only ``rules``."""
    options = {"resultTypes": ["violations"], "rules": {r: {"enabled": True} for r in EXPERIMENTAL_RULES}}
    if rules:
        options = {"resultTypes": ["violations"], "runOnly": {"type": "rule", "values": list(rules)}}
    load_axe(page)
    return page.evaluate("""([context, options]) => {
        if (window.chalkContrastOnce) Object.assign(chalkContrastOnce, {seen: new Set(), chains: new Map(), numbers: new Map(), boxes: null});
        return axe.run(context ?? document, options); }""", [context, options])["violations"]


COLOUR_RULES = ("color-contrast", "link-in-text-block")
"""The rules whose verdict can change with the colour scheme; the others read the same markup in
either, so the second scheme runs only these."""
READ_IN_FULL = ("book/", "notebooks/01_batching.html", "notebooks/01_lab-roofline.html", "exercises/02_moe_racks.html")
"""Pages read in every state: the book's pages (each a kind of its own: reference tables, cards,
corrections, the guide) and one chapter, the lab and one problem set standing for their kinds.
The other chapters and problem sets are read as they load in the light scheme, all rules: they
share the representatives' markup (chalk's tables, twins, readouts, folds) and stylesheets, and
the code inside their folds is checked at its source (test_code_highlighting_reads_in_both_schemes).
Reading every chapter in four states took axe about a minute of a core per chapter."""


def read_page(page, url, full=True, code=True) -> list[tuple[str, dict]]:
    """axe's violations on one page as (the state it was read in, violation): as it loads, in the light
    scheme with every rule; or (``full``) with its folded blocks opened, in the light scheme with
    every rule and in the dark scheme with the colour rules, then with its flashcards turned, in each
    scheme likewise. One axe run per scheme and state: most of a run's time is axe reading the whole
    document, whatever part of it the run checks (the folds alone cost as much as the page). Without
    ``code``, the highlighted code's colours are not read (CODE_COLOURS_READ)."""
    page.emulate_media(color_scheme=SCHEMES[0])
    page.goto(url, wait_until="load")
    load_axe(page)
    if not code:
        page.evaluate(SKIP_CODE_COLOURS)
    page.evaluate(CONTRAST_ONCE_PER_STYLE)
    # The theme fades colours in over 0.15 s and the folds fade their content in: axe must read the
    # colours the page ends on, so transitions and animations jump to their end.
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; animation: none !important; }")
    if full and page.evaluate(OPEN_FOLDS):
        page.wait_for_function("() => !document.querySelector('details:not([open])')")
    settle(page)
    found = []
    for scheme in SCHEMES if full else SCHEMES[:1]:
        use_scheme(page, scheme)
        settle(page)
        found += [(scheme, v) for v in axe_violations(page, rules=None if scheme == SCHEMES[0] else COLOUR_RULES)]
    if full and page.evaluate(TURN_CARDS):
        settle(page)
        for scheme in reversed(SCHEMES):
            use_scheme(page, scheme)
            settle(page)
            found += [(f"{scheme}, cards turned", v) for v in axe_violations(
                page, context=CARDS, rules=None if scheme == SCHEMES[0] else COLOUR_RULES)]
    return found


def test_code_colours_are_left_out_only_where_said(chromium_browser, tmp_path):
    """A faint comment in highlighted code, a faint printed output (a stream, highlighted too) and
    faint prose: read with code, all three fail contrast; without, the output and the prose, so the
    skip hides nothing but source code."""
    assert CODE_COLOURS_READ.startswith(READ_IN_FULL)
    page_file = tmp_path / "faint.html"
    page_file.write_text('<html lang="en" data-theme="light"><head><title>t</title></head><body><main>'
                         '<div class="highlight"><pre><span id="comment" style="color:#bbb">### BEGIN SOLUTION</span></pre></div>'
                         '<div class="output stream highlight-myst-ansi"><div class="highlight"><pre>'
                         '<span id="printed" style="color:#bbb">printed</span></pre></div></div>'
                         '<p id="prose" style="color:#bbb">Faint prose.</p></main></body></html>')
    page = open_offline(chromium_browser)
    try:
        def faint(code):
            return sorted(target for state, v in read_page(page, page_file.as_uri(), full=False, code=code)
                          if v["id"] == "color-contrast" for n in v["nodes"] for target in n["target"])
        assert faint(code=True) == ["#comment", "#printed", "#prose"]
        assert faint(code=False) == ["#printed", "#prose"]
    finally:
        page.context.close()


def test_contrast_is_read_once_per_style_and_on_every_background(chromium_browser, tmp_path):
    """Two faint texts of one style: one is reported, the page fails all the same. A dark text that
    passes on white fails inside a dark box, and over a positioned dark box it does not sit in (a
    box painted beneath the flow, behind a text whose own boxes match the passing one's): both are
    reported although a text of their style was read, and passed, before them. A faint single
    character, which axe leaves undecided, does not hide a faint sentence of its style after it."""
    page_file = tmp_path / "styles.html"
    page_file.write_text(
        '<html lang="en" data-theme="light"><head><title>t</title></head><body><main>'
        '<p class="t" id="faint" style="color:#bbb">Faint.</p><p class="t" id="faint-again" style="color:#bbb">Faint.</p>'
        '<p class="t" id="dark" style="color:#555">Dark on white.</p>'
        '<div class="box" style="background:#444"><p class="t" id="in-box" style="color:#555">Dark on dark.</p></div>'
        '<div style="position:relative"><p class="t" id="beside" style="color:#555">Dark on white.</p></div>'
        '<div style="position:relative"><div style="position:absolute;inset:0;z-index:-1;background:#444"></div>'
        '<p class="t" id="over-box" style="color:#555">Dark over a dark box.</p></div>'
        '<p class="u" id="one" style="color:#bbb">8</p><p class="u" id="sentence" style="color:#bbb">Faint too.</p>'
        '</main></body></html>')
    page = open_offline(chromium_browser)
    try:
        found = read_page(page, page_file.as_uri(), full=False)
        assert sorted(target for _, v in found if v["id"] == "color-contrast" for n in v["nodes"]
                      for target in n["target"]) == ["#faint", "#in-box", "#over-box", "#sentence"]
    finally:
        page.context.close()


def describe_violation(v: dict, pages: list[str]) -> str:
    nodes = v["nodes"]
    where = "\n".join(f"      {', '.join(map(str, n['target']))}: {n['html'][:160]}" for n in nodes[:3])
    return (f"{v['id']} ({v['impact']}): {v['help']} [{v['helpUrl']}]\n"
            f"    on {', '.join(pages)}; first nodes:\n{where}")


CHUNKS = 3
"""The pages are read in this many chunks, each a test of its own, so the suite's two workers share
the crawl (conftest.SPLIT) instead of one reading every page while the other waits."""


def chunk_of(pages: list[str], chunk: int) -> list[str]:
    """The pages of ``chunk``: the costly ones (read in full, then the chapters') dealt out first, one
    to each chunk in turn, then the rest likewise, so the chunks take about as long."""
    def cost(rel):
        return (rel.startswith(READ_IN_FULL), rel.startswith("notebooks/"))
    return sorted(pages, key=cost, reverse=True)[chunk::CHUNKS]


def test_the_chunks_read_every_page_once():
    pages = [f"book/p{i}.html" for i in range(5)] + ["notebooks/01_batching.html", "notebooks/02_moe_racks.html",
                                                     "exercises/03_pipelining.html", "search.html"]
    chunks = [chunk_of(pages, k) for k in range(CHUNKS)]
    assert sorted(sum(chunks, [])) == sorted(pages)
    assert [c[0] for c in chunks] == ["notebooks/01_batching.html", *[f"book/p{i}.html" for i in range(2)]]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_page_has_no_serious_axe_violation(built_site, chromium_browser, chunk):
    page = open_offline(chromium_browser)
    blocking, reported = defaultdict(list), defaultdict(set)
    pages = site_pages(built_site)
    assert any(p.startswith("notebooks/") for p in pages) and "book/flashcards.html" in pages
    assert all(any(p.startswith(full) for p in pages) for full in READ_IN_FULL), "a representative page is gone"
    assert CODE_COLOURS_READ in pages, "the page where code colours are read is gone"
    for rel in chunk_of(pages, chunk):
        for state, v in read_page(page, (built_site / rel).as_uri(), full=rel.startswith(READ_IN_FULL),
                                  code=rel == CODE_COLOURS_READ):
            if v["impact"] in BLOCKING:
                blocking[v["id"]].append((f"{rel} ({state})", v))
            else:  # an element counts once however many states show it
                reported[(v["id"], v["impact"], v["help"])] |= {(rel, str(n["target"])) for n in v["nodes"]}
    page.context.close()
    for (rule, impact, what), nodes in sorted(reported.items()):
        where = sorted({rel for rel, _ in nodes})
        warnings.warn(f"axe {impact}: {rule} ({what}): {len(nodes)} elements on {len(where)} pages, "
                      f"e.g. {', '.join(where[:3])}", stacklevel=1)
    assert not blocking, "serious or critical accessibility violations:\n" + "\n".join(
        describe_violation(found[0][1], [where for where, _ in found]) for found in blocking.values())


# --- code highlighting ----------------------------------------------------------------------------
def contrast(a, b) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    def luminance(color):
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def highlight_contrasts(css: str) -> dict[str, list[tuple[str, str, float]]]:
    """For each scheme of a Pygments stylesheet as the theme writes it (``html[data-theme="dark"]
    .highlight .c1 { color: #FFD900 }``), every token class with its colour and its contrast
    against that scheme's code background."""
    found = {}
    for scheme in SCHEMES:
        prefix = re.escape(f'html[data-theme="{scheme}"] .highlight')
        background = re.search(prefix + r" \{[^}]*background(?:-color)?: (#[0-9a-fA-F]{3,6})", css).group(1)
        tokens = re.findall(prefix + r" \.(\w+) \{[^}]*?(?<![-\w])color: (#[0-9a-fA-F]{3,6})", css)
        found[scheme] = [(token, color, contrast(color, background)) for token, color in tokens]
    return found


def test_contrast_formula_against_wcag_examples():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # WCAG's lightest grey for 4.5:1


def test_code_highlighting_reads_in_both_schemes(built_site):
    """Every token colour of the highlighting style, in each scheme, against its code background:
    4.5:1 (WCAG 1.4.3), checked at the source for every page's code at once (axe reads it page by
    page, and only what the page shows)."""
    found = highlight_contrasts((built_site / "_static" / "pygments.css").read_text())
    assert all(len(tokens) > 20 for tokens in found.values()), {k: len(v) for k, v in found.items()}
    weak = [f"{scheme}: .{token} {color} at {ratio:.2f}:1" for scheme, tokens in found.items()
            for token, color, ratio in tokens if ratio < 4.5]
    assert not weak, "code colours below 4.5:1 against their background:\n" + "\n".join(weak)


def test_highlight_check_finds_a_weak_colour():
    css = ('html[data-theme="light"] .highlight { background: #f8f8f8; }\n'
           'html[data-theme="light"] .highlight .c1 { color: #aaaaaa; font-style: italic }\n'
           'html[data-theme="dark"] .highlight { background: #2b2b2b; color: #F8F8F2 }\n'
           'html[data-theme="dark"] .highlight .c1 { color: #FFD900 }\n')
    found = highlight_contrasts(css)
    assert [t for t, _, r in found["light"] if r < 4.5] == ["c1"] and [t for t, _, r in found["dark"] if r < 4.5] == []


# --- alt text -----------------------------------------------------------------------------------
class _Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.alts = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            a = dict(attrs)
            self.alts.append((a.get("alt"), (a.get("src") or "")[:60]))


FILE_NAME = re.compile(r"(^|/)[\w.-]+\.(png|jpe?g|gif|svg|webp)$|_images/", re.I)


def alt_problem(alt) -> str | None:
    """Why ``alt`` does not say what an image shows, or None."""
    if alt is None:
        return "no alt attribute"
    words = alt.split()
    if FILE_NAME.search(alt.strip()):
        return f"a file name ({alt!r})"
    if len(words) < 4:
        return f"too short to say what it shows ({alt!r})"
    return None


@pytest.mark.parametrize("alt, ok", [
    (None, False), ("", False), ("../_images/3fa2c1.png", False), ("figure: graph_a", False),
    ("bubble against micro-batches, falling from 75% to 4.5%", True)])
def test_alt_text_rule_catches_empty_and_file_names(alt, ok):
    assert (alt_problem(alt) is None) == ok


def test_every_image_says_what_it_shows(built_site):
    bad = []
    for rel in site_pages(built_site):
        parser = _Images()
        parser.feed((built_site / rel).read_text(errors="replace"))
        bad += [f"{rel}: <img src={src!r}...>: {why}" for alt, src in parser.alts if (why := alt_problem(alt))]
    assert not bad, ("images without alternative text that says what they show; show a figure with "
                     "chalk.figures.canvas.picture(fig), its words set by canvas.describe(fig, ...) from the "
                     "data it drew (see canvas's docstring), not IPython.display.Image:\n" + "\n".join(bad[:20]))


# --- keyboard -----------------------------------------------------------------------------------
def test_flashcards_work_from_the_keyboard(built_site, chromium_browser):
    page = open_offline(chromium_browser)
    page.goto((built_site / "book/flashcards.html").as_uri(), wait_until="load")
    settle(page)
    page.focus(".chalk-filter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "chalk-reset"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "chalk-forget"
    cards = page.locator(".chalk-card")
    first, second = cards.nth(0), cards.nth(1)
    unfocused = focus_style(first)
    page.keyboard.press("Tab")
    assert first.evaluate("el => el === document.activeElement"), "Tab from the controls does not reach a card"
    assert not (why := focus_ring_problem(unfocused, focus_style(first))), f"the focused card: {why}"
    page.keyboard.press("Enter")
    assert "flipped" in first.get_attribute("class") and first.get_attribute("aria-pressed") == "true"
    assert first.locator(".chalk-back").is_visible() and first.locator(".chalk-front").is_hidden()
    assert not (why := focus_ring_problem(unfocused, focus_style(first))), f"the turned card: {why}"
    # The answer side, hidden until now, is read too.
    flipped = axe_violations(page, context=f"#{first.get_attribute('id')}")
    assert not flipped, [describe_violation(v, ["flashcards, turned card"]) for v in flipped]
    first.screenshot(path=str(SHOTS / "flashcard_keyboard.png"))
    scrolled = page.evaluate("window.scrollY")
    page.keyboard.press(" ")
    assert "flipped" not in first.get_attribute("class") and first.get_attribute("aria-pressed") == "false"
    assert page.evaluate("window.scrollY") == scrolled, "Space turned the card and scrolled the page too"
    # Marking a turned card from the keyboard: its buttons follow it, and focus returns to the card.
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.mark") == "again"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.mark") == "known"
    page.keyboard.press("Tab")  # then the section that explains the card
    assert page.evaluate("document.activeElement.closest('.chalk-read') !== null"), "the card's reading is not reachable"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    assert "known" in first.get_attribute("class").split() and "flipped" not in first.get_attribute("class")
    assert first.evaluate("el => el === document.activeElement"), "focus did not return to the marked card"
    page.keyboard.press("Tab")
    assert second.evaluate("el => el === document.activeElement")
    page.keyboard.press("Space")
    assert "flipped" in second.get_attribute("class")
    # The chapter filter, from the keyboard: Shift+Tab back to it, then an arrow key.
    for _ in range(4):
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.className") == "chalk-filter"
    page.keyboard.press("ArrowDown")
    chapter = page.eval_on_selector(".chalk-filter", "el => el.value")
    shown = page.eval_on_selector_all(".chalk-chapter", "els => els.filter(s => !s.hidden).map(s => s.dataset.chapter)")
    assert chapter and shown == [chapter]
    page.context.close()


def test_focus_check_needs_an_outline_that_focus_draws():
    """The card's resting look has a box-shadow; a check satisfied by any box-shadow passed it unfocused."""
    resting = {"outlineStyle": "none", "outlineWidth": 3, "outlineColor": "rgb(34, 40, 50)",
               "boxShadow": "rgba(0, 0, 0, 0.08) 0px 1px 3px 0px"}
    ring = {**resting, "outlineStyle": "solid", "outlineColor": "rgb(0, 114, 178)"}
    assert focus_ring_problem(resting, resting).startswith("focus changes neither")
    assert focus_ring_problem(resting, {**resting, "boxShadow": "none"}).startswith("no visible outline")
    assert focus_ring_problem(resting, {**ring, "outlineWidth": 1}).startswith("no visible outline")
    assert focus_ring_problem(resting, {**ring, "outlineColor": "rgba(0, 0, 0, 0)"}).startswith("no visible outline")
    assert focus_ring_problem(resting, ring) is None


def test_explorer_picture_has_words():
    """The live explorer's picture has a hidden caption saying what its axes show (ipywidgets'
    Image has no alt); the base class does it for every chapter, Chapter 7's explorer stands for them."""
    explorer = revnets.Explorer()
    words = explorer.picture_words
    assert alt_problem(words) is None, words
    assert explorer.caption in explorer.widget().children and html.escape(words) in explorer.caption.value
    assert words.startswith("avalanche matrix: P(output bit flips): input bit flipped against output bit flipped")


# --- colour -------------------------------------------------------------------------------------
def lightness(color) -> float:
    """CIE L* (0 black to 100 white): how light a colour looks, what greyscale keeps of it."""
    lin = np.array([c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)])
    y = float(lin @ [0.2126, 0.7152, 0.0722])
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else 24389 / 27 * y


MIN_LIGHTNESS_STEP = 20
"""L* between two filled keys of one legend: 20 is about the step between neighbouring greys a
reader tells apart on a printed or greyscale page."""


NONE = ("None", "none", " ", "", None)


def _line_key(h: Line2D):
    """What a legend line looks like in greyscale: its dash pattern, its marker and whether the
    marker is hollow. (get_linestyle() reads '--' for every custom dash tuple; the pattern itself
    is only kept in a private attribute, which legend handles copy from their lines.)"""
    style = None if h.get_linestyle() in NONE else h._unscaled_dash_pattern[1]
    marker = None if h.get_marker() in NONE else h.get_marker()
    return style, marker, bool(marker) and h.get_markerfacecolor() == "white"


def colour_only(fig) -> list[str]:
    """Pairs of legend entries that differ only by colour: lines with the same dashes and marker,
    or filled keys with the same hatching (or none) closer than MIN_LIGHTNESS_STEP in lightness."""
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    clashes = []
    for lg in filter(None, legends):
        entries = list(zip(lg.legend_handles, (t.get_text() for t in lg.get_texts())))
        for i, (a, la) in enumerate(entries):
            for b, lb in entries[i + 1:]:
                if isinstance(a, Line2D) and isinstance(b, Line2D) and _line_key(a) == _line_key(b):
                    clashes.append(f"{la!r} and {lb!r}: same line style and marker")
                elif (isinstance(a, Patch) and isinstance(b, Patch) and (a.get_hatch() or "") == (b.get_hatch() or "")
                      and abs(lightness(a.get_facecolor()) - lightness(b.get_facecolor())) < MIN_LIGHTNESS_STEP):
                    clashes.append(f"{la!r} and {lb!r}: fills of nearly the same lightness")
    return clashes


NOT_FIGURES = {"canvas.new_figure"}
"""Named like a figure, drawn by none: the blank canvas every figure starts from."""


def _serving_runs():
    """Chapter 1's serving simulations at its own loads, with fewer requests where the figure allows."""
    serve = dict(chip="H100-SXM", model="llama-3-70b", dtype="bf16", chips=8)
    rates, prompts = [25, 100], [256, 4096]
    crowded_load = timetable.offered_load(**serve, rate=12, prompt=1024, output=2048)
    return dict(
        loads=[timetable.offered_load(**serve, rate=r, prompt=128, output=256) for r in rates],
        by_rate=[timetable.simulate(**serve, rate=r, n_requests=10 * r, prompt=128, output=256, seed=1).steady()
                 for r in rates],
        prompts=prompts,
        by_prompt=timetable.sweep("prompt", prompts, **serve, rate=4, n_requests=150, output=256, seed=1),
        # enough requests that the seats fill, which the third panel draws
        crowded=timetable.simulate(**serve, rate=12, n_requests=3000, prompt=1024, output=2048, seed=1),
        crowded_load=crowded_load)


def _closed_form(draw):
    run = timetable.simulate(chip="H100-SXM", model="llama-3-70b", dtype="bf16", chips=8, rate=190,
                             n_requests=1000, prompt=16, output=32, seed=1)
    steady = run.steady()
    return draw(run, steady.start, steady.stop)


def _lab_without_measuring():
    """Chapter 1's lab figures drawn from a made-up machine (60 GFLOP/s, 12 GB/s) whose steps sit
    20% above the roofline: measuring this machine would take a minute per figure and check nothing
    more about colour or words."""
    c = measure.Ceilings(flops=60e9, bandwidth=12e9, threads=1, matmul_size=1024, stream_bytes=2**28)
    d = np.array(measure.DENSE_BATCHES)
    dense = measure.StepSweep(d, np.ones(len(d)), 8 * 2048.0**2, 8 * 2048.0**2, layers=8)
    dense = replace(dense, seconds=1.2 * measure.predicted(dense, c.flops, c.bandwidth))
    m = np.array(measure.MOE_BATCHES)
    touched = measure.predicted_experts_touched(m, 2, 16)
    routed = measure.StepSweep(m, np.ones(len(m)), 2 * 2 * 1024.0**2, 2 * 16 * 1024.0**2, 16, 2, touched, layers=2)
    routed = replace(routed, seconds=1.2 * measure.predicted(routed, c.flops, c.bandwidth))
    return measure.Lab(c, dense, routed, measure.compare(dense, c.flops, c.bandwidth),
                       measure.compare(routed, c.flops, c.bandwidth))


EXAMPLES = {
    "measured.roofline_figure": lambda draw: draw(_lab_without_measuring()),
    "measured.moe_figure": lambda draw: draw(_lab_without_measuring()),
    "pipelining.gantt_figure": lambda draw: draw(
        [pipelining.run(4, 4, "gpipe"), pipelining.run(4, 4, "1f1b")], ["GPipe", "1F1B"]),
    "plotting.roofline_figure": lambda draw: draw("GB200", "deepseek-v3", 4096, "fp8", 72, batch=512),
    "plotting.balance_context_figure": lambda draw: draw(
        [("H100-SXM", "llama-3-70b", "bf16"), ("H100-SXM", "deepseek-v3", "bf16"), ("H200", "deepseek-v3", "bf16")]),
    "serving.closed_form_figure": _closed_form,
    "serving.where_it_breaks_figure": lambda draw: draw(**_serving_runs()),
}
"""How to call the figure functions that have no default for some argument, as their chapter does."""


def _needs_arguments(draw) -> bool:
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               for p in inspect.signature(draw).parameters.values())


def _no_example(name):
    def draw():
        pytest.fail(f"{name} has arguments without defaults: say how its chapter calls it in EXAMPLES")
    return draw


def chapter_figures() -> dict:
    """Every figure the course draws, found rather than listed, so a new chapter's are checked without
    a change here: each ``chalk.figures`` module's ``*_figure`` functions and ``*Figure`` classes (an
    explorer's picture, its ``.fig``), and every flashcard figure."""
    found = {}
    for module in pkgutil.iter_modules(chalk.figures.__path__):
        mod = importlib.import_module(f"chalk.figures.{module.name}")
        for attr, obj in vars(mod).items():
            name = f"{module.name}.{attr}"
            if getattr(obj, "__module__", None) != mod.__name__ or name in NOT_FIGURES:
                continue
            if inspect.isclass(obj) and attr.endswith("Figure"):
                found[name] = lambda cls=obj: cls().fig
            elif inspect.isfunction(obj) and attr.endswith("_figure"):
                found[name] = ((lambda draw=obj, call=EXAMPLES[name]: call(draw)) if name in EXAMPLES
                               else _no_example(name) if _needs_arguments(obj) else obj)
    return found | {f"card {name}": draw for name, draw in CARD_FIGURES.items()}


FIGURES = chapter_figures()


def labelled_series(fig) -> list:
    """The artists a legend could name: lines, patches and collections with a label of their own."""
    return [a for ax in fig.axes for a in (*ax.lines, *ax.patches, *ax.collections)
            if not a.get_label().startswith("_")]


def test_the_colour_check_finds_every_chapters_figures():
    """Found: figures of Chapters 2, 4 and 6, which the first, hand-written list left out, an
    explorer's picture, a function that needs arguments, and every card's figure."""
    for name in ("moe_racks.imbalance_figure", "memory_capacity.wall_figure", "long_context.tier_figure",
                 "pipelining.GanttFigure", "serving.where_it_breaks_figure"):
        assert name in FIGURES, name
    assert {f"card {name}" for name in CARD_FIGURES} <= set(FIGURES) and set(EXAMPLES) <= set(FIGURES)
    assert _needs_arguments(pipelining.gantt_figure) and not _needs_arguments(pipelining.bubble_figure)
    with pytest.raises(pytest.fail.Exception, match="EXAMPLES"):
        _no_example("pipelining.gantt_figure")()


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_series_differ_by_more_than_colour(name):
    fig = FIGURES[name]()
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    # A picture with no legend (a heat map, a drawing) has no series for the check to compare.
    assert any(lg is not None for lg in legends) or not labelled_series(fig), f"{name}: labelled series, no legend"
    assert colour_only(fig) == [], name


def test_colour_check_can_fail():
    fig, (ax,) = canvas.new_figure(3, 2)
    ax.plot([0, 1], [0, 1], color="#0072B2", label="one")
    ax.plot([0, 1], [1, 0], color="#D55E00", label="two")
    ax.plot([0, 1], [1, 1], color="#D55E00", ls=(0, (6, 2)), label="custom dashes")
    ax.plot([0, 1], [0, 0], color="#D55E00", ls=(0, (1, 1.5)), label="other custom dashes")
    ax.bar([0], [1], color="#0072B2", label="three")
    ax.bar([1], [1], color="#009E73", label="four")  # L* 46 and 58: too close
    ax.bar([2], [1], color="#009E73", hatch="//", label="five")  # as close to three, but hatched
    ax.legend()
    assert colour_only(fig) == ["'one' and 'two': same line style and marker",
                                "'three' and 'four': fills of nearly the same lightness"]


# --- what a figure says in words ----------------------------------------------------------------
def test_gantt_alt_text_gives_what_the_chart_shows():
    # GPipe, P = 4, m = 4, t_B = 2 t_F: the step is (m + P - 1)(t_F + t_B) = 7 x 3 = 21 t_F, idle
    # (P - 1)/(m + P - 1) = 3/7 = 43% of it.
    alt = canvas.alt_text(pipelining.gantt_figure([pipelining.run(4, 4, "gpipe")], ["GPipe"]))
    for said in ("4 micro-batches through 4 stages", "backward box 2 t_F long", "lasts 21 t_F", "idle 43%"):
        assert said in alt, (said, alt)


def test_bubble_alt_text_gives_the_ends_of_each_curve():
    # (P - 1)/(m + P - 1): P = 4, m = 1: 3/4 = 75%; m = 64: 3/67 = 4.5%; interleaved v = 2: 3/131 = 2.3%.
    alt = canvas.alt_text(pipelining.bubble_figure(stages=(4,)))
    assert "P = 4: from 75% at m = 1 to 4.5% at m = 64, 2.3% interleaved" in alt, alt


def test_heuristic_alt_text_gives_the_minimum_and_the_equal_terms_point():
    # f = x + x^-3: minimum where 1 = 3 x^-4, x = 3^(1/4) = 1.316, f = 1.316 + 0.439 = 1.755;
    # the terms are equal at x = 1, f = 2, which is 2/1.755 - 1 = 14% above the minimum.
    alt = canvas.alt_text(overtraining.heuristic_figure(((1.0, 3.0),)))
    for said in ("minimum is at x = 1.32", "equal at x = 1, where f = 2", "14% above the minimum"):
        assert said in alt, (said, alt)


def test_alt_text_reads_the_figure_and_needs_words():
    fig, (ax,) = canvas.new_figure(3, 2)
    with pytest.raises(ChalkError, match="describe"):
        canvas.alt_text(fig)
    ax.set(title="bubble", xlabel="micro-batches m", ylabel="idle fraction")
    ax.plot([1, 2], [0.5, 0.3], label="$P = 4$")
    ax.legend()
    canvas.describe(fig, "falls from 0.5 to 0.3")
    assert canvas.alt_text(fig) == "bubble: idle fraction against micro-batches m. Series: P = 4. falls from 0.5 to 0.3"
    with pytest.raises(ChalkError, match="describe"):
        canvas.describe(fig, "  ")


def test_picture_gives_html_with_alt_text_and_a_png():
    picture = canvas.picture(pipelining.bubble_figure(stages=(4,)))
    page = picture._repr_html_()
    assert page.startswith('<img class="chalk-figure" src="data:image/png;base64,')
    assert 'alt="bubble: idle fraction of the step against micro-batches per step, m.' in page
    assert picture._repr_png_().startswith(b"\x89PNG")
    # The palette PNG carried inline is lighter than Agg's full-colour one it replaces.
    assert len(picture._repr_png_()) < 0.6 * len(canvas.png(pipelining.bubble_figure(stages=(4,))))
