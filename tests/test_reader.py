"""The site as a reader meets it, on a desktop and on a phone: no console errors, tables that keep
their row names in view and their numbers on one line, figures whose smallest text stays legible
at 390 px, twin controls a finger can use, the front page's block for new readers, and the twins'
readouts in the words and units of the chapters beside them.

The browser reads the site once per width (``crawl``): each page is opened once, every probe the
tests below need runs on it (the read-only ones first, then those that move the twins) and leaves
plain data; each test asserts on that data and names the page and the defect."""
import json
import re
from pathlib import Path

import pytest

from chalk.catalog import hardware
from chalk.figures import canvas, twin
from conftest import ROOT, SHOTS, focus_ring_problem, focus_style, offline_guard
from test_twins import check_keyboard, check_twin, gantt_view, pages_with_twins, shapes_page

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PHONE = VIEWPORTS["phone"]
MIN_TEXT_PX = 9
"""The smallest text a reader should meet, in CSS px, at any width (issue 30's threshold)."""
SMALLEST_FIGURE_PT = 6.5
"""The smallest font size the chapter figures draw (lib/chalk/figures), in points; at the course's
100 dpi it is 9.03 image px, so a figure shown at its natural size keeps it at 9 CSS px."""
CATALOG_PAGES = ("book/hardware.html", "book/models.html", "book/systems.html", "book/deployments.html")
FRONT_PAGE = "book/intro.html"
HEADER_BUTTONS = ("Toggle primary sidebar", "Download this page")


def pages(site: Path) -> list[str]:
    """Every page a reader reaches from the table of contents (Sphinx's own index pages aside)."""
    skip = {"genindex.html", "search.html", "index.html"}
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.relative_to(site).parts[0].startswith("_") and p.name not in skip)


def is_chapter(rel_path: str) -> bool:
    """A chapter's page (its main line, deeper page or lab): where the twins are."""
    return rel_path.startswith("notebooks/") and rel_path.count("/") == 1


def scripts(html: str) -> tuple[str, ...]:
    """The scripts a page runs, in order: each <script>'s file (its ../ prefix and version query
    dropped) or inline text (its page's name dropped); data blocks (a twin's JSON) left out."""
    tags = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    return tuple(re.sub(r"^(\.\./)+", "", src.group(1).split("?")[0]) if (src := re.search(r'src="([^"]+)"', attrs))
                 else re.sub(r"pagename = '[^']*'", "", text) for attrs, text in tags if "application/json" not in attrs)


def phone_pages(site: Path) -> list[str]:
    """The pages read at phone width: each with what the phone's probes read (a table, or a chapter's
    figures and twins, or the front page), and one page of each set of scripts, for a console error
    only a narrow screen's code path meets. A page left out has no table, twin or figure the phone
    checks, and runs the same scripts as a page read there; its content's own errors (a missing
    file, a script failing on its data) show at any width, and the desktop crawl reads every page."""
    chosen, kinds = [], set()
    for rel_path in pages(site):
        html = (site / rel_path).read_text(errors="replace")
        kind = scripts(html)
        if "<table" in html or is_chapter(rel_path) or rel_path == FRONT_PAGE or kind not in kinds:
            chosen.append(rel_path)
            kinds.add(kind)
    return chosen


# --- what the browser reads on each page ---------------------------------------------------------
TABLES = """() => Array.from(document.querySelectorAll('.bd-article table')).map((t) => {
    const box = t.closest('.pst-scrollable-table-container') || t.parentElement;
    const first = t.querySelector('tbody tr td, tbody tr th');
    // the lines a cell's text takes: its text boxes' tops, those within half a line of each other
    // counted once (a word joiner or a thin space drawn from a fallback font sits a pixel or two off)
    const lines = (td) => {
      const tops = [], walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        if (!n.textContent.trim()) continue;
        const r = document.createRange(); r.selectNodeContents(n);
        for (const q of r.getClientRects()) if (q.width > 0) tops.push(q.top);
      }
      const half = 0.5 * parseFloat(getComputedStyle(td).fontSize);
      tops.sort((a, b) => a - b);
      return tops.filter((top, i) => i === 0 || top - tops[i - 1] > half).length;
    };
    // figures alone (no link, no name beside them): "1,979 (3,958)", "0.80–3.00", "1.2 (FP8)"
    const figure = /^\\d[\\d.,\\s\u00a0\u2060–×%()]*(\\(?[A-Z0-9]{2,4}\\))?$/;
    const wrapped = Array.from(t.querySelectorAll('tbody td'))
      .filter((td) => !td.querySelector('a') && figure.test(td.textContent.trim()))
      .filter((td) => lines(td) > 1).map((td) => td.textContent.trim());
    return {head: t.querySelector('th') ? t.querySelector('th').textContent.trim() : '',
            wide: t.scrollWidth > box.clientWidth + 1, width: t.scrollWidth, column: box.clientWidth,
            sticky: first ? getComputedStyle(first).position : 'none', wrapped};
})"""

STICKY_HEADER = """() => { const th = document.querySelector('.cell_output thead th');
    return th ? getComputedStyle(th).position : 'no header cell'; }"""

CELL_FONT_PX = """() => Array.from(document.querySelectorAll('.bd-article table :is(td, th)'))
    .map((c) => parseFloat(getComputedStyle(c).fontSize))"""

FIGURES = """() => Array.from(document.querySelectorAll('.bd-article img.chalk-figure')).map((img) => {
    const box = img.closest('.output') || img.parentElement;
    return {shown: img.getBoundingClientRect().width, natural: img.naturalWidth,
            scrolls: getComputedStyle(box).overflowX, alt: img.alt.slice(0, 60)};
})"""

TWIN_TEXT = """() => Array.from(document.querySelectorAll('.chalk-twin svg.chalk-twin-panel')).flatMap((svg) => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return Array.from(svg.querySelectorAll('text')).filter((t) => t.textContent.trim())
      .map((t) => ({px: parseFloat(t.getAttribute('font-size')) * scale, text: t.textContent.slice(0, 40)}));
})"""

CONTROLS = """() => Array.from(document.querySelectorAll('.chalk-twin select, .chalk-twin input[type=range]'))
    .map((e) => { const r = e.getBoundingClientRect();
                  return {type: e.type, width: r.width, height: r.height, max: e.max ? +e.max : null}; })"""

CONTROL_TEXT_CUT = """() => {
  const cut = [];
  document.querySelectorAll('.chalk-twin').forEach((root, n) => {
    // A menu shows its chosen option whole when it is as wide as the browser makes it unconstrained
    // (the widest option, its padding and the arrow): a copy with every option, outside any box.
    for (const s of root.querySelectorAll('select')) {
      const probe = s.cloneNode(true);
      probe.style.cssText = 'position:absolute;left:0;top:0;width:auto;max-width:none;visibility:hidden';
      root.appendChild(probe);  // inside the twin, so that the twin's font size applies to it
      const whole = probe.getBoundingClientRect().width;
      probe.remove();
      const shown = s.getBoundingClientRect().width;
      if (shown < whole - 0.5) cut.push(`twin ${n} menu '${s.className}': ${shown.toFixed(0)} px of ${whole.toFixed(0)}`);
    }
    for (const e of root.querySelectorAll('label, .chalk-twin-readout')) {
      if (e.scrollWidth > e.clientWidth + 1) cut.push(`twin ${n} '${e.textContent.trim().slice(0, 40)}': ` +
                                                      `${e.scrollWidth} px of text in ${e.clientWidth}`);
    }
  });
  return cut;
}"""

SILENT_HEADERS = """() => Array.from(document.querySelectorAll('.bd-article th')).filter((th) => {
    const words = th.cloneNode(true);
    words.querySelectorAll('mjx-container').forEach((m) => m.remove());
    return !words.textContent.trim() && th.querySelector('mjx-container');
}).map((th) => th.textContent.slice(0, 40))"""

MATHS_HEADERS = "() => document.querySelectorAll('.bd-article th mjx-container').length"

TWIN_TEXT_OUTSIDE = """() => {
  // Every view a reader can reach, sampled: each combination of the menus, and every stop of the
  // opening combination; the twin then back as it opened. A view is set with one event (the twin
  // redraws from all its controls' values) and measured in place. A chart's texts (title, ticks,
  // labels) follow the view alone, the slider only moves its marker, so a combination is drawn at
  // one stop unless one of its panels draws a frame per stop (shapes), then at the first, opening and
  // last stops. Which the opening combination's every stop checks: a twin whose texts move with the
  // slider where its data says they cannot is reported.
  const outside = new Set();
  let views = 0;
  document.querySelectorAll('.chalk-twin').forEach((root, n) => {
    const data = JSON.parse(root.querySelector('.chalk-twin-data').textContent);
    const selects = Array.from(root.querySelectorAll('.chalk-twin-controls select'));
    const slider = root.querySelector('input[type=range]');
    const show = (combo, i) => {
      combo.forEach((v, j) => { selects[j].value = v; });
      if (slider) slider.value = i;
      const last = slider || selects[selects.length - 1];
      if (last) last.dispatchEvent(new Event('input', {bubbles: true}));
    };
    const texts = () => Array.from(root.querySelectorAll('svg.chalk-twin-panel text')).map((t) => t.outerHTML).join('');
    const measure = () => {
      views++;
      root.querySelectorAll('svg.chalk-twin-panel').forEach((svg, k) => {
        const box = svg.getBoundingClientRect();
        for (const t of svg.querySelectorAll('text')) {
          const r = t.getBoundingClientRect();
          if (t.textContent.trim() && (r.left < box.left - 0.5 || r.right > box.right + 0.5
                                       || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5))
            outside.add(`twin ${n} panel ${k}: '${t.textContent.slice(0, 50)}' by ` +
                        `${Math.max(box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom).toFixed(1)} px`);
        }
      });
    };
    const framed = () => {  // the view shown now, looked up as the twin does (its data's order of menus)
      const v = data.views[data.controls.filter((c) => c.kind === 'select')
        .map((c) => root.querySelector('.chalk-twin-' + c.name).value).join('|')];
      return !v || (v.panels || []).some((p) => p && p.frames && p.frames.length > 1);
    };
    const combos = selects.reduce((acc, s) => acc.flatMap((c) => Array.from(s.options).map((o) => [...c, o.value])), [[]]);
    const opened = selects.map((s) => s.value), start = slider ? +slider.value : 0;
    const stops = slider ? Array.from({length: +slider.max + 1}, (_, i) => i) : [0];
    combos.forEach((combo) => {
      show(combo, start);
      measure();
      const every = combo.join('|') === opened.join('|'), seen = new Set([texts()]);
      const more = every ? stops : framed() ? [0, stops.length - 1] : [];
      for (const i of more.filter((i) => i !== start)) {
        show(combo, i);
        measure();
        seen.add(texts());
      }
      if (every && seen.size > 1 && !framed())
        outside.add(`twin ${n}: its texts move with the slider, though no panel draws a frame per stop ` +
                    `(the sample draws such a combination at one stop)`);
    });
    show(opened, start);
  });
  return {views, outside: Array.from(outside)};
}"""


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


def first_screen(page):
    """The page's first screen as a picture in the screenshots folder, for a reviewer's eye (a
    full-page shot of a 21,000 px chapter took as long as loading it)."""
    path = SHOTS / (page.url.rsplit("/", 2)[-2] + "_" + page.url.rsplit("/", 1)[-1].replace(".html", ".png"))
    page.screenshot(path=str(path))
    return path.name


def move(root, selector, value):
    root.locator(selector).evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", str(value))


def header_button_focus(name):
    """The button's outline and box-shadow unfocused, then focused from the keyboard."""
    def probe(page):
        button = page.locator(f'.bd-header-article button[title="{name}"], '
                              f'.bd-header-article button[aria-label="{name}"]').first
        unfocused = focus_style(button)
        page.keyboard.press("Tab")  # a keyboard user's focus: :focus-visible applies from here on
        button.focus()
        return {"unfocused": unfocused, "focused": focus_style(button)}
    return probe


def front_page(page):
    return {"text": page.locator(".bd-article").inner_text(),
            "episode_links": page.locator('a[href="https://www.dwarkesh.com/p/reiner-pope"]').count(),
            "figure_alts": page.locator(".bd-article img.chalk-figure").evaluate_all("(es) => es.map((e) => e.alt)")}


def chapter_1_readouts(page):
    """Chapter 1's twin set to Llama 3 70B on 8 H100s in bf16 at 32k context: its readout at B = 1
    and at the slider's last stop."""
    root = page.locator(".chalk-twin").filter(has=page.locator(".chalk-twin-batch")).first
    move(root, ".chalk-twin-model", "llama-3-70b")
    move(root, ".chalk-twin-hardware", "H100-SXM|8")
    move(root, ".chalk-twin-dtype", "bf16")
    move(root, ".chalk-twin-context", "32768")
    move(root, ".chalk-twin-batch", 0)
    at_1 = root.locator(".chalk-twin-readout").inner_text()
    move(root, ".chalk-twin-batch", int(root.locator(".chalk-twin-batch").get_attribute("max")))
    return {"b_1": at_1, "last": root.locator(".chalk-twin-readout").inner_text()}


def pipeline_twin(page):
    return page.locator(".chalk-twin").filter(has=page.locator(".chalk-twin-microbatches")).first


def chapter_3_opening(page):
    root = pipeline_twin(page)
    return {"schedule": root.locator(".chalk-twin-schedule").input_value(),
            "stages": root.locator(".chalk-twin-stages").input_value(),
            "readout": root.locator(".chalk-twin-readout").inner_text()}


def chapter_3_one_microbatch(page):
    root = pipeline_twin(page)
    move(root, ".chalk-twin-microbatches", 0)
    return root.locator(".chalk-twin-readout").inner_text()


def open_page(page, url):
    """Load ``url`` and wait until MathJax, where the page has it, has typeset the page."""
    page.goto(url, wait_until="load")
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
        || (window.MathJax && MathJax.startup && MathJax.startup.promise)""")
    page.evaluate("() => window.MathJax && MathJax.startup.promise")


TWIN_OPENINGS = """() => { window.chalkTwinOpenings = Array.from(document.querySelectorAll('.chalk-twin'))
    .map((root) => Array.from(root.querySelectorAll('select, input')).map((e) => e.value).join('|'));
    return window.chalkTwinOpenings.length; }"""
"""Each twin's controls as the page opened, kept in the page for twins_respond (read before any probe moves a twin)."""
AT_OPENING = "(root, k) => Array.from(root.querySelectorAll('select, input')).map((e) => e.value).join('|') === window.chalkTwinOpenings[k]"


def twins_respond(page):
    """Every twin on the page driven as test_twins.py drives one: with the keyboard alone
    (check_keyboard), then every control with the mouse (check_twin); its JupyterLab note hidden
    and its text left to the twin (not typeset by MathJax). What is wrong, per twin, and how many.
    Each check starts at a twin's first view: the probes before this one put every control back
    as it opened (a twin draws from its controls), and a twin found otherwise is reported."""
    where = "/".join(page.url.rsplit("/", 2)[-2:])
    twins, problems = page.locator(".chalk-twin"), []
    for k in range(twins.count()):
        root, name = twins.nth(k), f"{where} twin {k}"
        if not root.evaluate(AT_OPENING, k):
            problems.append(f"{name}: not at its first view when driven (a probe before moved it)")
            continue
        root.scroll_into_view_if_needed()
        try:
            assert root.locator(".chalk-twin-note").is_hidden(), f"{name}: the JupyterLab note shows"
            assert root.locator("mjx-container").count() == 0, f"{name}: MathJax typeset the twin's text"
            check_keyboard(page, root, name)
            check_twin(root, name)
        except AssertionError as e:
            problems.append(str(e))
        except Exception as e:  # noqa: BLE001 - a twin that hangs or raises is this twin's problem; the next is driven
            problems.append(f"{name}: {type(e).__name__}: {e}")
        root.screenshot(path=str(SHOTS / f"twin_{where.split('/')[-1].replace('.html', '')}_{k}.png"))
    return {"twins": twins.count(), "problems": problems}


def script(js):
    return lambda page: page.evaluate(js)


def every(rel_path):
    return True


def legible(rel_path):
    return rel_path == FRONT_PAGE or is_chapter(rel_path)  # the front page's figure too


def catalog(rel_path):
    return rel_path in CATALOG_PAGES


def only(path):
    return lambda rel_path: rel_path == path


BOTH, DESKTOP, PHONE_ONLY = ("desktop", "phone"), ("desktop",), ("phone",)
PROBES = [  # (what, at which widths, on which pages, how): run in this order, those that move a twin last
    # (twin text outside puts each twin back as it opened, so twins respond starts at its first view)
    ("tables", BOTH, every, script(TABLES)),
    ("sticky header", DESKTOP, catalog, script(STICKY_HEADER)),
    ("cell font px", PHONE_ONLY, catalog, script(CELL_FONT_PX)),
    ("figures", PHONE_ONLY, legible, script(FIGURES)),
    ("twin text", PHONE_ONLY, legible, script(TWIN_TEXT)),
    ("controls", PHONE_ONLY, is_chapter, script(CONTROLS)),
    ("menus", BOTH, is_chapter, script("() => document.querySelectorAll('.chalk-twin select').length")),
    ("control text cut", BOTH, is_chapter, script(CONTROL_TEXT_CUT)),
    ("maths headers", DESKTOP, is_chapter, script(MATHS_HEADERS)),
    ("silent headers", DESKTOP, is_chapter, script(SILENT_HEADERS)),
    ("typeset", DESKTOP, every, script(TYPESET)),
    ("twin openings", DESKTOP, is_chapter, script(TWIN_OPENINGS)),
    ("first screen", DESKTOP, every, first_screen),
    ("front page", PHONE_ONLY, only(FRONT_PAGE), front_page),
    *[(f"focus: {name}", DESKTOP, only("book/hardware.html"), header_button_focus(name)) for name in HEADER_BUTTONS],
    ("chapter 3 opening", DESKTOP, only("notebooks/03_pipelining.html"), chapter_3_opening),
    ("twin text outside", DESKTOP, is_chapter, script(TWIN_TEXT_OUTSIDE)),
    ("twins respond", DESKTOP, is_chapter, twins_respond),
    ("chapter 1 readouts", DESKTOP, only("notebooks/01_batching.html"), chapter_1_readouts),
    ("chapter 3 one micro-batch", DESKTOP, only("notebooks/03_pipelining.html"), chapter_3_one_microbatch),
]


class ProbeFailed(str):
    """A probe that raised: the tests that read it fail with this message, the others go on."""


class SiteRead(dict):
    """{page: what was read there}, named in one line in a failing test's report."""
    width = ""

    def __repr__(self):
        return f"<{len(self)} pages read at {self.width} width>"


def crawl(browser, site: Path, width: str) -> SiteRead:
    """Every page (at phone width, phone_pages) opened once, offline (every non-file request refused), at ``width``: for each, its
    console errors and uncaught exceptions ('errors'), the requests refused ('refused'), why it did
    not load ('load'), and what each of its PROBES read."""
    ctx = browser.new_context(viewport=VIEWPORTS[width])
    read = SiteRead()
    read.width = width
    for rel_path in pages(site) if width == "desktop" else phone_pages(site):
        record = read[rel_path] = {"errors": [], "refused": []}
        page = ctx.new_page()
        page.route("**/*", offline_guard(record["refused"]))
        page.on("console", lambda m, errors=record["errors"]: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e, errors=record["errors"]: errors.append(str(e)))
        try:
            open_page(page, (site / rel_path).as_uri())
        except Exception as e:  # noqa: BLE001 - every test reading this page says so
            record["load"] = ProbeFailed(f"{type(e).__name__}: {e}")
        for what, widths, which, probe in PROBES if "load" not in record else ():
            if width in widths and which(rel_path):
                try:
                    record[what] = probe(page)
                except Exception as e:  # noqa: BLE001 - the tests reading it fail, the others go on
                    record[what] = ProbeFailed(f"{type(e).__name__}: {e}")
        page.wait_for_timeout(100)  # the theme's deferred work, for the console errors
        page.close()
    ctx.close()
    return read


@pytest.fixture(scope="module")
def desktop(built_site, chromium_browser):
    return crawl(chromium_browser, built_site, "desktop")


@pytest.fixture(scope="module")
def phone(built_site, chromium_browser):
    return crawl(chromium_browser, built_site, "phone")


def found(read: dict[str, dict], what: str) -> dict:
    """{page: what its probe ``what`` read} over the pages it ran on; a page that did not load, or
    whose probe raised, fails the test."""
    out = {}
    for rel_path, record in read.items():
        if "load" in record:
            pytest.fail(f"{rel_path} did not load: {record['load']}")
        if isinstance(record.get(what), ProbeFailed):
            pytest.fail(f"{rel_path}: reading '{what}' failed: {record[what]}")
        if what in record:
            out[rel_path] = record[what]
    return out


def one(read: dict[str, dict], what: str, rel_path: str):
    got = found(read, what)
    assert rel_path in got, f"{rel_path} was not read ({what})"
    return got[rel_path]


def test_phone_pages_are_those_with_what_it_checks_and_one_of_each_set_of_scripts(tmp_path):
    head = '<html><head><script src="../_static/theme.js?v=1"></script><script>DOCUMENTATION_OPTIONS.pagename = \'{}\';</script>{}</head><body>{}</body></html>'
    site = tmp_path / "site"
    for rel_path, extra, body in [
            ("book/a.html", "", "<p>words</p>"), ("book/b.html", "", "<p>words</p>"),  # b: a's scripts, nothing to check
            ("book/c.html", "", "<table><tr><td>1</td></tr></table>"),  # a table
            ("book/d.html", '<script src="../_static/cards.js"></script>', "<p>cards</p>"),  # scripts of its own
            ("book/e.html", "<script>const only = 'here';</script>", ""),  # an inline script of its own
            ("exercises/01_x.html", "", ""), ("exercises/02_x.html", "", ""),  # same scripts as book/a, from a folder
            ("notebooks/01_x.html", "", ""),  # a chapter page
            ("notebooks/02_x.html", '<script type="application/json">{"twin": 1}</script>', "")]:  # data is no script
        (site / rel_path).parent.mkdir(parents=True, exist_ok=True)
        (site / rel_path).write_text(head.format(rel_path[:-5], extra, body))
    assert phone_pages(site) == ["book/a.html", "book/c.html", "book/d.html", "book/e.html",
                                 "notebooks/01_x.html", "notebooks/02_x.html"]


# --- page errors, favicon, focus ------------------------------------------------------------------
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_no_console_error_on_any_page(request, viewport):
    errors = []
    for rel_path, record in request.getfixturevalue(viewport).items():
        errors += [f"{viewport} {rel_path} did not load: {record['load']}"] if "load" in record else []
        errors += [f"{viewport} {rel_path}: {e}" for e in record["errors"]]
    assert not errors, "\n".join(errors)


MATHS_PAGES = ("book/notation.html", "book/hardware.html", "book/models.html", "book/systems.html",
               "book/corrections.html", "book/glossary.html", "book/flashcards.html")
"""The book's pages that typeset maths; its data pages (prices, deployments, memory, quoted) print
tables of figures without."""


def maths_pages() -> list[str]:
    """The pages that must show typeset maths: every chapter page and problem set of the course's
    notebooks (found, so a new chapter's are covered), and MATHS_PAGES."""
    return sorted([f"{folder}/{nb.stem}.html" for folder in ("notebooks", "exercises")
                   for nb in (ROOT / folder).glob("[0-9][0-9]_*.ipynb")] + list(MATHS_PAGES))


def typeset_problems(read: dict[str, dict], with_maths) -> list[str]:
    """What a crawl found wrong with the maths and images: a page of ``with_maths`` without typeset
    maths (or not read), raw TeX left outside code on any page, an image that did not load, and a
    request that left the disk for the network."""
    typeset = found(read, "typeset")
    problems = [f"{rel_path}: not read" if rel_path not in typeset else f"{rel_path}: no typeset maths"
                for rel_path in with_maths if typeset.get(rel_path, {}).get("math", 0) == 0]
    for rel_path, t in typeset.items():
        problems += [f"{rel_path}: raw TeX left: {raw!r}" for raw in t["raw"][:5]]
        problems += [f"{rel_path}: an image did not load: {src}" for src in t["broken"]]
    problems += [f"{rel_path}: asked the network for {url}" for rel_path, record in read.items()
                 for url in record["refused"] if url.startswith("http")]
    return problems


def test_every_page_typesets_its_maths_and_loads_its_images(desktop):
    """MathJax typeset every page (no raw TeX left outside code), the pages that have maths show it,
    every image loaded, and no page asked the network for anything (the site works offline)."""
    problems = typeset_problems(desktop, maths_pages())
    assert not problems, "\n".join(problems[:20])


def test_typeset_check_reports_each_fault(chromium_browser, tmp_path):
    """A page with raw TeX, an image that is not there and one from the network, and a page without
    the maths it should have: each is reported; a page with nothing wrong is not named."""
    site = tmp_path / "site"
    (site / "notebooks").mkdir(parents=True)
    (site / "notebooks" / "01_doctored.html").write_text(
        '<html lang="en"><head><title>t</title></head><body><main><p>A formula left as \\(x^2\\).</p>'
        '<img alt="a figure that is not there" src="gone.png">'
        '<img alt="a figure from the network" src="http://example.invalid/far.png"></main></body></html>')
    for name in ("02_no_maths", "03_fine"):
        (site / "notebooks" / f"{name}.html").write_text(
            '<html lang="en"><head><title>t</title></head><body><main><p>Words.</p></main></body></html>')
    problems = typeset_problems(crawl(chromium_browser, site, "desktop"), ["notebooks/02_no_maths.html"])
    gone = (site / "notebooks" / "gone.png").as_uri()
    assert problems == ["notebooks/02_no_maths.html: no typeset maths",
                        "notebooks/01_doctored.html: raw TeX left: 'A formula left as \\\\(x^2\\\\).'",
                        f"notebooks/01_doctored.html: an image did not load: {gone}",
                        "notebooks/01_doctored.html: an image did not load: http://example.invalid/far.png",
                        "notebooks/01_doctored.html: asked the network for http://example.invalid/far.png"]


def test_each_page_script_is_emitted_once(built_site):
    for rel_path in pages(built_site):
        head = (built_site / rel_path).read_text().split("</head>", 1)[0]
        scripts = re.findall(r"<script\b[^>]*>.*?</script>", head, re.S)
        repeated = {s[:80] for s in scripts if scripts.count(s) > 1}
        assert not repeated, f"{rel_path}: {repeated}"


def test_every_page_names_a_favicon_that_exists(built_site):
    for rel_path in pages(built_site):
        html = (built_site / rel_path).read_text()
        icon = re.search(r'<link rel="icon" href="([^"]+)"', html)
        assert icon, f"{rel_path}: no <link rel=icon>, so the browser asks for /favicon.ico and gets a 404"
        assert (built_site / rel_path).parent.joinpath(icon.group(1)).resolve().is_file(), (rel_path, icon.group(1))


@pytest.mark.parametrize("name", HEADER_BUTTONS)
def test_article_header_buttons_show_focus(desktop, name):
    style = one(desktop, f"focus: {name}", "book/hardware.html")
    assert not (why := focus_ring_problem(style["unfocused"], style["focused"])), f"{name}: {why}"


# --- tables -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_wide_tables_keep_row_names_in_view_and_numbers_whole(request, viewport):
    problems = []
    for rel_path, tables in found(request.getfixturevalue(viewport), "tables").items():
        for t in tables:
            if t["wide"] and t["sticky"] != "sticky":
                problems.append(f"{rel_path} table '{t['head']}': {t['width']} px in {t['column']} px, "
                                f"first column not sticky")
            if rel_path in CATALOG_PAGES and t["wrapped"]:
                problems.append(f"{rel_path} table '{t['head']}': numbers broken across lines {t['wrapped'][:3]}")
    assert not problems, "\n".join(problems)


def test_catalog_tables_fit_a_desktop_column(desktop):
    """Grouped into narrow tables, the catalog's figures are all in view on a desktop (the storage
    tiers' one table was 819 px in a 688 px column)."""
    for rel_path in CATALOG_PAGES:
        tables = one(desktop, "tables", rel_path)
        assert tables, rel_path
        # A source link and a few figures: no more than a tenth past the column, scrolled within it.
        assert all(t["width"] <= 1.1 * t["column"] for t in tables), \
            [(rel_path, t["head"], t["width"], t["column"]) for t in tables if t["width"] > 1.1 * t["column"]]
        # The long printed tables keep their header row in view while they scroll.
        assert one(desktop, "sticky header", rel_path) == "sticky", rel_path


def test_catalog_tables_stay_legible_on_a_phone(phone):
    for rel_path in CATALOG_PAGES:
        sizes = one(phone, "cell font px", rel_path)
        assert sizes and min(sizes) >= MIN_TEXT_PX, (rel_path, min(sizes, default=None))


# --- figures and twins on a phone ------------------------------------------------------------------
def test_no_chapter_figure_draws_text_below_the_smallest_size():
    """What the phone test below relies on: no chapter figure module asks for text under 6.5 pt."""
    sizes = [(p.name, float(m)) for p in (ROOT / "lib" / "chalk" / "figures").glob("*.py")
             for m in re.findall(r"fontsize=([\d.]+)", p.read_text())]
    assert sizes and min(s for _, s in sizes) >= SMALLEST_FIGURE_PT, sorted(sizes, key=lambda x: x[1])[:3]
    assert canvas.STYLE["legend.fontsize"] >= SMALLEST_FIGURE_PT


def test_figures_and_twins_stay_legible_at_phone_width(phone):
    px_per_pt = canvas.DPI / 72
    problems, figures, twin_texts = [], 0, 0
    for rel_path, shown in found(phone, "figures").items():
        for f in shown:
            figures += 1
            smallest = SMALLEST_FIGURE_PT * px_per_pt * f["shown"] / f["natural"]
            if smallest < MIN_TEXT_PX - 0.05:
                problems.append(f"{rel_path} figure '{f['alt']}': smallest text {smallest:.1f} px")
            if f["shown"] > PHONE["width"] and f["scrolls"] not in ("auto", "scroll"):
                problems.append(f"{rel_path} figure '{f['alt']}': wider than the phone and its box does not scroll")
    for rel_path, texts in found(phone, "twin text").items():
        for t in texts:
            twin_texts += 1
            if t["px"] < MIN_TEXT_PX - 0.05:
                problems.append(f"{rel_path} twin text '{t['text']}': {t['px']:.1f} px")
    assert figures and twin_texts, "no figure or twin found on the chapter pages"
    assert not problems, "\n".join(problems[:20])


def test_twin_controls_are_usable_by_touch(phone):
    problems, controls = [], 0
    for rel_path, boxes in found(phone, "controls").items():
        for box in boxes:
            controls += 1
            if box["height"] < 44:  # WCAG 2.5.5's 44 CSS px target
                problems.append(f"{rel_path} {box['type']}: {box['height']:.0f} px high, under 44")
            if box["type"] == "range" and (box["width"] < 250 or box["width"] / (box["max"] + 1) < 5):
                problems.append(f"{rel_path} slider of {box['max'] + 1} stops: {box['width']:.0f} px wide")
    assert controls, "no twin control found on the chapter pages"
    assert not problems, "\n".join(problems)


def test_no_twin_text_runs_off_its_panel(desktop):
    """Chapter 6's twin cut its bar labels and a value short, and a y label of 1,000,000 ran off the
    left edge of Chapters 5's and 7's panels (issue 30): every text of every twin on the site lies
    inside its panel, in every view sampled. (The panels scale with the column, text with them: one
    width tells for all.)"""
    read = found(desktop, "twin text outside")
    assert sum(r["views"] for r in read.values()), "no twin found on the chapter pages"
    problems = [f"{rel_path} {o}" for rel_path, r in read.items() for o in r["outside"]]
    assert not problems, "\n".join(problems[:20])


def test_twin_text_check_samples_each_kind_of_view(chromium_browser, tmp_path):
    """The sample of twin views reaches a text that runs off its panel only at the last stop of a
    combination the twin does not open at (its panel draws a frame per stop), and reports a twin
    whose texts move with the slider though no panel draws a frame per stop (the sample draws such a
    combination at one stop: a chart's texts follow the view, not the slider); a clean twin passes."""
    TEMPLATES = ["{stages} stages, step {step}: bubble {bubble}", "!{stages} stages: done"]
    site = tmp_path / "site"
    (site / "notebooks").mkdir(parents=True)
    runs_off = gantt_view(4, 1)
    runs_off["panels"][0]["frames"][-1].append(twin.text(395, 50, "runs off the edge"))
    shapes_page(site / "notebooks" / "01_runs_off.html", {"2": gantt_view(2, 1), "4": runs_off}, TEMPLATES)
    still = {k: gantt_view(int(k), 1) for k in ("2", "4")}
    for view in still.values():
        view["panels"][0]["frames"] = view["panels"][0]["frames"][:1]
    moving = shapes_page(site / "notebooks" / "02_moving.html", still, TEMPLATES)
    moving.write_text(moving.read_text().replace("</body>", """<script>
        document.addEventListener('DOMContentLoaded', () => {  // after the twin's own listeners
          const slider = document.querySelector('.chalk-twin input[type=range]');
          slider.addEventListener('input', () => {
            const svg = document.querySelector('svg.chalk-twin-panel');
            const t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
            t.setAttribute('x', 20 + 40 * slider.value); t.setAttribute('y', 150); t.textContent = 'moves';
            svg.appendChild(t); }); });</script></body>"""))
    shapes_page(site / "notebooks" / "03_clean.html", still, TEMPLATES)
    page, read = chromium_browser.new_page(), {}
    for rel_path in ("notebooks/01_runs_off.html", "notebooks/02_moving.html", "notebooks/03_clean.html"):
        open_page(page, (site / rel_path).as_uri())
        read[rel_path] = page.evaluate(TWIN_TEXT_OUTSIDE)
    page.close()
    assert [o.split(" by ")[0] for o in read["notebooks/01_runs_off.html"]["outside"]] == \
        ["twin 0 panel 0: 'runs off the edge'"]
    assert read["notebooks/02_moving.html"]["outside"] == [
        "twin 0: its texts move with the slider, though no panel draws a frame per stop "
        "(the sample draws such a combination at one stop)"]
    assert read["notebooks/03_clean.html"] == {"views": 4, "outside": []}


def test_twins_are_driven_from_their_first_view(chromium_browser, tmp_path):
    """twins_respond drives a twin that the text sample moved and put back, and reports one a probe
    left moved instead of checking it from elsewhere than its first view."""
    page_file = shapes_page(tmp_path / "twin.html", {k: gantt_view(int(k), 1) for k in ("2", "4")},
                            ["{stages} stages, step {step}: bubble {bubble}", "!{stages} stages: done"])
    page = chromium_browser.new_page()
    try:
        open_page(page, page_file.as_uri())
        assert page.evaluate(TWIN_OPENINGS) == 1
        # a frame per stop: the opening menu at its 3 stops, the other at its first and last
        assert page.evaluate(TWIN_TEXT_OUTSIDE) == {"views": 5, "outside": []}
        assert twins_respond(page) == {"twins": 1, "problems": []}
        move(page.locator(".chalk-twin"), ".chalk-twin-step", 2)
        assert twins_respond(page)["problems"] == [
            f"{tmp_path.name}/twin.html twin 0: not at its first view when driven (a probe before moved it)"]
    finally:
        page.close()


def test_every_twin_responds_to_every_control(desktop, built_site):
    """Every twin of every page that has one (test_twins.py's checks, run in the crawl): each control
    changes the drawing or the readout, with the mouse and from the keyboard alone, with a visible
    focus ring, and the panels keep their words for a screen reader."""
    read = found(desktop, "twins respond")
    with_twins = {p.relative_to(built_site).as_posix() for p in pages_with_twins(built_site)}
    assert with_twins and with_twins <= {rel_path for rel_path, r in read.items() if r["twins"]}, \
        f"pages with twins not driven: {sorted(with_twins - set(read))}"
    problems = [problem for r in read.values() for problem in r["problems"]]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_twin_controls_show_their_whole_text(request, viewport):
    """Chapter 5's efficiency menu read "RL and decode at 1/3 of pre-training's" (issue 30): a menu
    is as wide as its longest option needs, and no label or readout is cut."""
    read = request.getfixturevalue(viewport)
    assert sum(found(read, "menus").values()), "no twin menu found"
    problems = [f"{rel_path} {c}" for rel_path, cut in found(read, "control text cut").items() for c in cut]
    assert not problems, "\n".join(problems)


def test_twin_menus_read_as_phrases_after_their_labels():
    """The efficiency menu's options end in a word the label completes ("RL and decode efficiency:
    a third of pre-training's"), not in a phrase cut short that repeats the label."""
    from chalk.figures import overtraining
    menu = next(c for c in overtraining.twin_data()["controls"] if c["name"] == "inefficiency")
    for _, text in menu["options"]:
        assert not text.startswith(("RL", "all")), text


# --- the front page ----------------------------------------------------------------------------------
def test_front_page_says_who_it_is_for_and_links_the_episode(phone):
    front = one(phone, "front page", FRONT_PAGE)
    text = front["text"]
    for words in ("Who this is for", "You need", "How long", "minutes", "The argument at a glance"):
        assert words in text, words
    assert front["episode_links"] >= 1
    # every chapter's row in the map gives its segment of the episode
    assert len(re.findall(r"\d:\d\d[–-]", text)) >= 7
    alts = front["figure_alts"]
    assert len(alts) == 1 and "balance batch" in alts[0], alts


# --- twins' readouts ------------------------------------------------------------------------------------
def test_chapter_1_twin_readout_reads_right_at_b_1_and_when_it_does_not_fit(desktop):
    read = one(desktop, "chapter 1 readouts", "notebooks/01_batching.html")
    readout = read["b_1"]
    assert readout.startswith("batch B = 1:") and "sequences:" not in readout, readout
    mfu = float(re.search(r"MFU ≤ ([\d.]+)%", readout).group(1))
    assert 0 < mfu < 1, readout  # one sequence leaves the chips nearly idle, but not at 0%
    readout = read["last"]
    # 8 chips of 80 GB, 10% kept free (roofline.HEADROOM): the shortfall is against 576 GB.
    usable = 8 * hardware.get("H100-SXM").hbm_capacity / 1e9 * 0.9
    assert "does not fit" in readout and f"of the {usable:,.0f} GB usable" in readout, readout


def test_chapter_3_twin_opens_at_the_code_above_it_in_percent(desktop):
    opening = one(desktop, "chapter 3 opening", "notebooks/03_pipelining.html")
    # the explorer cell above it: Explorer(schedule="1f1b", stages=4, microbatches=8)
    assert opening["schedule"] == "1f1b-1"
    assert opening["stages"] == "4"
    readout = opening["readout"]
    assert readout.startswith("P = 4, m = 8:"), readout
    # 1F1B's bubble (P-1)/(m+P-1) = 3/11 = 27.3%
    assert re.search(r"closed form 27\.3%", readout), readout
    assert "1 micro-batches" not in one(desktop, "chapter 3 one micro-batch", "notebooks/03_pipelining.html")


# --- table headers ------------------------------------------------------------------------------------
def test_header_cells_holding_only_maths_have_words(desktop):
    """axe's empty-table-header: a header of typeset maths alone says nothing to assistive technology."""
    assert sum(found(desktop, "maths headers").values()), "no header cell with maths found: the check checked nothing"
    silent = {rel_path: s for rel_path, s in found(desktop, "silent headers").items() if s}
    assert not silent, silent


# --- plumbing cells --------------------------------------------------------------------------------
FOLDED = {"hide-input", "remove-input", "hide-cell", "remove-cell"}
"""Tags with which the site folds a code cell's source or leaves it out."""


def prose_plumbing(cell) -> bool:
    """A code cell that mostly formats the prose's numbers: half or more of its statements assign
    only ``*_txt`` names, or it assigns five or more of them."""
    import ast
    try:
        body = ast.parse("".join(cell["source"])).body
    except SyntaxError:  # IPython magics: no prose plumbing of ours
        return False
    names = []
    for statement in body:
        targets = statement.targets if isinstance(statement, ast.Assign) else \
            [statement.target] if isinstance(statement, ast.AnnAssign) else []
        assigned = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if assigned and all(name.endswith("_txt") for name in assigned):
            names.append(assigned)
    return bool(names) and (2 * len(names) >= len(body) or sum(map(len, names)) >= 5)


def test_prose_plumbing_rule_tells_plumbing_from_teaching_code():
    cell = lambda src: {"cell_type": "code", "source": src}  # noqa: E731
    assert prose_plumbing(cell('a_txt = f"{a:.1f}"\nb_txt, c_txt = "1", "2"\nshow("x", y)\n'))
    assert prose_plumbing(cell("".join(f'x{i}_txt = "{i}"\n' for i in range(5)) + "f()\n" * 6))
    assert not prose_plumbing(cell('show(r"t", roofline.t_matmul)\nshow(r"u", roofline.t_u)\nk_txt = "3"\n'))
    assert not prose_plumbing(cell("x = 1\nshow(x)\n"))


def test_prose_plumbing_cells_are_folded_on_the_site():
    """Chapter 1's cell of `*_txt` assignments and Chapter 3's hops section showed their code
    unfolded (issue 30): a cell that formats the prose's numbers folds its source."""
    shown = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        shown += [f"{path.name} cell {i}: {''.join(c['source']).splitlines()[0][:60]}"
                  for i, c in enumerate(cells) if c["cell_type"] == "code" and prose_plumbing(c)
                  and not FOLDED & set(c.get("metadata", {}).get("tags", []))]
    assert not shown, "\n".join(shown)


# --- search -----------------------------------------------------------------------------------------
@pytest.fixture
def served_site(built_site):
    """The site over HTTP on localhost: the search page fetches each result's page for its snippet,
    which a browser refuses from file://."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_search_snippets_show_maths_in_words(served_site, chromium_browser):
    r"""A result's snippet is its page's text, where inline maths is still TeX (MathJax has not run
    there): it read "\(N_\text{tot}\)" (issue 30); search.html shows it in words, N_tot."""
    page = chromium_browser.new_page()
    page.goto(f"{served_site}/search.html?q=tokens")
    # every result's snippet arrives (each is fetched on its own), or the wait fails the test
    page.wait_for_function("""() => {
        const items = document.querySelectorAll('#search-results ul.search > li');
        return items.length > 5 && Array.from(items).every((li) => li.querySelector('p.context'));
    }""", timeout=120_000)
    snippets = page.locator("#search-results p.context").all_inner_texts()
    raw = [s for s in snippets if re.search(r"\\[()\[\]]", s)]
    assert not raw, raw[:3]
    # the notation page's snippet lists its symbols: N_tot among them, from $N_\text{tot}$
    assert any("N_tot" in s for s in snippets), snippets[:5]
    page.close()
