"""The site as a reader meets it, on a desktop and on a phone: no console errors, tables that keep
their row names in view and their numbers on one line, figures whose smallest text stays legible
at 390 px, twin controls a finger can use, the front page's block for new readers, and the twins'
readouts in the words and units of the chapters beside them."""
import json
import re
from pathlib import Path

import pytest

from chalk.catalog import hardware
from chalk.figures import canvas
from conftest import ROOT, focus_ring_problem, focus_style

DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}
MIN_TEXT_PX = 9
"""The smallest text a reader should meet, in CSS px, at any width (issue 30's threshold)."""
SMALLEST_FIGURE_PT = 6.5
"""The smallest font size the chapter figures draw (lib/chalk/figures), in points; at the course's
100 dpi it is 9.03 image px, so a figure shown at its natural size keeps it at 9 CSS px."""
CATALOG_PAGES = ("book/hardware.html", "book/models.html", "book/systems.html", "book/deployments.html")


def pages(site: Path) -> list[str]:
    """Every page a reader reaches from the table of contents (Sphinx's own index pages aside)."""
    skip = {"genindex.html", "search.html", "index.html"}
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.relative_to(site).parts[0].startswith("_") and p.name not in skip)


def open_page(browser, site, rel_path, viewport, errors=None):
    """A page opened offline (every non-file request refused) at ``viewport``; console errors and
    uncaught exceptions go to ``errors``."""
    ctx = browser.new_context(viewport=viewport)
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort())
    page = ctx.new_page()
    if errors is not None:
        page.on("console", lambda m: m.type == "error" and errors.append(f"{rel_path}: {m.text}"))
        page.on("pageerror", lambda e: errors.append(f"{rel_path}: {e}"))
    page.goto((site / rel_path).as_uri(), wait_until="load")
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
        || (window.MathJax && MathJax.startup && MathJax.startup.promise)""")
    page.evaluate("() => window.MathJax && MathJax.startup.promise")
    return page


# --- page errors, favicon, focus ------------------------------------------------------------------
def test_no_console_error_on_any_page(built_site, chromium_browser):
    errors = []
    for rel_path in pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, DESKTOP, errors)
        page.wait_for_timeout(100)  # the theme's scripts are deferred
        page.context.close()
    assert not errors, "\n".join(errors)


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


@pytest.mark.parametrize("name", ["Toggle primary sidebar", "Download this page"])
def test_article_header_buttons_show_focus(built_site, chromium_browser, name):
    page = open_page(chromium_browser, built_site, "book/hardware.html", DESKTOP)
    button = page.locator(f'.bd-header-article button[title="{name}"], .bd-header-article button[aria-label="{name}"]').first
    unfocused = focus_style(button)
    page.keyboard.press("Tab")  # a keyboard user's focus: :focus-visible applies from here on
    button.focus()
    assert not (why := focus_ring_problem(unfocused, focus_style(button))), f"{name}: {why}"
    page.context.close()


# --- tables -----------------------------------------------------------------------------------------
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


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_wide_tables_keep_row_names_in_view_and_numbers_whole(built_site, chromium_browser, viewport):
    problems = []
    for rel_path in pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, viewport)
        for t in page.evaluate(TABLES):
            if t["wide"] and t["sticky"] != "sticky":
                problems.append(f"{rel_path} table '{t['head']}': {t['width']} px in {t['column']} px, "
                                f"first column not sticky")
            if rel_path in CATALOG_PAGES and t["wrapped"]:
                problems.append(f"{rel_path} table '{t['head']}': numbers broken across lines {t['wrapped'][:3]}")
        page.context.close()
    assert not problems, "\n".join(problems)


def test_catalog_tables_fit_a_desktop_column(built_site, chromium_browser):
    """Grouped into narrow tables, the catalog's figures are all in view on a desktop (the storage
    tiers' one table was 819 px in a 688 px column), and on a phone their text stays legible."""
    for rel_path in CATALOG_PAGES:
        page = open_page(chromium_browser, built_site, rel_path, DESKTOP)
        tables = page.evaluate(TABLES)
        assert tables, rel_path
        # A source link and a few figures: no more than a tenth past the column, scrolled within it.
        assert all(t["width"] <= 1.1 * t["column"] for t in tables), \
            [(rel_path, t["head"], t["width"], t["column"]) for t in tables if t["width"] > 1.1 * t["column"]]
        # The long printed tables keep their header row in view while they scroll.
        header = page.locator(".cell_output thead th").first
        assert header.evaluate("e => getComputedStyle(e).position") == "sticky"
        page.context.close()
        page = open_page(chromium_browser, built_site, rel_path, PHONE)
        sizes = page.evaluate("""() => Array.from(document.querySelectorAll('.bd-article table :is(td, th)'))
            .map((c) => parseFloat(getComputedStyle(c).fontSize))""")
        assert sizes and min(sizes) >= MIN_TEXT_PX, (rel_path, min(sizes))
        page.context.close()


# --- figures and twins on a phone ------------------------------------------------------------------
def test_no_chapter_figure_draws_text_below_the_smallest_size():
    """What the phone test below relies on: no chapter figure module asks for text under 6.5 pt."""
    sizes = [(p.name, float(m)) for p in (ROOT / "lib" / "chalk" / "figures").glob("*.py")
             for m in re.findall(r"fontsize=([\d.]+)", p.read_text())]
    assert sizes and min(s for _, s in sizes) >= SMALLEST_FIGURE_PT, sorted(sizes, key=lambda x: x[1])[:3]
    assert canvas.STYLE["legend.fontsize"] >= SMALLEST_FIGURE_PT


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


def chapter_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in (site / "notebooks").glob("*.html"))


def test_figures_and_twins_stay_legible_at_phone_width(built_site, chromium_browser):
    px_per_pt = canvas.DPI / 72
    problems, figures, twin_texts = [], 0, 0
    for rel_path in ["book/intro.html", *chapter_pages(built_site)]:  # the front page's figure too
        page = open_page(chromium_browser, built_site, rel_path, PHONE)
        for f in page.evaluate(FIGURES):
            figures += 1
            smallest = SMALLEST_FIGURE_PT * px_per_pt * f["shown"] / f["natural"]
            if smallest < MIN_TEXT_PX - 0.05:
                problems.append(f"{rel_path} figure '{f['alt']}': smallest text {smallest:.1f} px")
            if f["shown"] > PHONE["width"] and f["scrolls"] not in ("auto", "scroll"):
                problems.append(f"{rel_path} figure '{f['alt']}': wider than the phone and its box does not scroll")
        for t in page.evaluate(TWIN_TEXT):
            twin_texts += 1
            if t["px"] < MIN_TEXT_PX - 0.05:
                problems.append(f"{rel_path} twin text '{t['text']}': {t['px']:.1f} px")
        page.context.close()
    assert figures and twin_texts, "no figure or twin found on the chapter pages"
    assert not problems, "\n".join(problems[:20])


def test_twin_controls_are_usable_by_touch(built_site, chromium_browser):
    for rel_path in chapter_pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, PHONE)
        for control in page.locator(".chalk-twin select, .chalk-twin input[type=range]").all():
            box = control.bounding_box()
            assert box["height"] >= 44, (rel_path, box)  # WCAG 2.5.5's 44 CSS px target
            if control.evaluate("e => e.type") == "range":
                stops = int(control.get_attribute("max")) + 1
                assert box["width"] >= 250 and box["width"] / stops >= 5, (rel_path, box, stops)
        page.context.close()


TWIN_TEXT_OUTSIDE = """() => {
  // Every view a reader can reach, sampled: each combination of the menus at the slider's first,
  // opening and last stops, and every stop of the opening combination; the twin then back as it opened.
  const outside = new Set();
  let views = 0;
  document.querySelectorAll('.chalk-twin').forEach((root, n) => {
    const selects = Array.from(root.querySelectorAll('.chalk-twin-controls select'));
    const slider = root.querySelector('input[type=range]');
    const set = (e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); };
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
    const combos = selects.reduce((acc, s) => acc.flatMap((c) => Array.from(s.options).map((o) => [...c, o.value])), [[]]);
    const opened = selects.map((s) => s.value), start = slider ? +slider.value : 0;
    const stops = slider ? Array.from({length: +slider.max + 1}, (_, i) => i) : [0];
    combos.forEach((combo, c) => {
      combo.forEach((v, j) => set(selects[j], v));
      for (const i of (c === 0 ? stops : [...new Set([0, start, stops.length - 1])])) {
        if (slider) set(slider, i);
        measure();
      }
    });
    opened.forEach((v, j) => set(selects[j], v));
    if (slider) set(slider, start);
  });
  return {views, outside: Array.from(outside)};
}"""


def test_no_twin_text_runs_off_its_panel(built_site, chromium_browser):
    """Chapter 6's twin cut its bar labels and a value short, and a y label of 1,000,000 ran off the
    left edge of Chapters 5's and 7's panels (issue 30): every text of every twin on the site lies
    inside its panel, in every view sampled. (The panels scale with the column, text with them: one
    width tells for all.)"""
    problems, views = [], 0
    for rel_path in chapter_pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, DESKTOP)
        found = page.evaluate(TWIN_TEXT_OUTSIDE)
        views += found["views"]
        problems += [f"{rel_path} {o}" for o in found["outside"]]
        page.context.close()
    assert views, "no twin found on the chapter pages"
    assert not problems, "\n".join(problems[:20])


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


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_twin_controls_show_their_whole_text(built_site, chromium_browser, viewport):
    """Chapter 5's efficiency menu read "RL and decode at 1/3 of pre-training's" (issue 30): a menu
    is as wide as its longest option needs, and no label or readout is cut."""
    problems, menus = [], 0
    for rel_path in chapter_pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, viewport)
        menus += page.locator(".chalk-twin select").count()
        problems += [f"{rel_path} {c}" for c in page.evaluate(CONTROL_TEXT_CUT)]
        page.context.close()
    assert menus, "no twin menu found"
    assert not problems, "\n".join(problems)


def test_twin_menus_read_as_phrases_after_their_labels():
    """The efficiency menu's options end in a word the label completes ("RL and decode efficiency:
    a third of pre-training's"), not in a phrase cut short that repeats the label."""
    from chalk.figures import overtraining
    menu = next(c for c in overtraining.twin_data()["controls"] if c["name"] == "inefficiency")
    for _, text in menu["options"]:
        assert not text.startswith(("RL", "all")), text


# --- the front page ----------------------------------------------------------------------------------
def test_front_page_says_who_it_is_for_and_links_the_episode(built_site, chromium_browser):
    page = open_page(chromium_browser, built_site, "book/intro.html", PHONE)
    text = page.locator(".bd-article").inner_text()
    for words in ("Who this is for", "You need", "How long", "minutes", "The argument at a glance"):
        assert words in text, words
    assert page.locator('a[href="https://www.dwarkesh.com/p/reiner-pope"]').count() >= 1
    # every chapter's row in the map gives its segment of the episode
    assert len(re.findall(r"\d:\d\d[–-]", text)) >= 7
    figure = page.locator(".bd-article img.chalk-figure")
    assert figure.count() == 1 and "balance batch" in figure.get_attribute("alt")
    page.context.close()


# --- twins' readouts ------------------------------------------------------------------------------------
def move(root, selector, value):
    root.locator(selector).evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", str(value))


def test_chapter_1_twin_readout_reads_right_at_b_1_and_when_it_does_not_fit(built_site, chromium_browser):
    page = open_page(chromium_browser, built_site, "notebooks/01_batching.html", DESKTOP)
    root = page.locator(".chalk-twin").filter(has=page.locator(".chalk-twin-batch")).first
    move(root, ".chalk-twin-model", "llama-3-70b")
    move(root, ".chalk-twin-hardware", "H100-SXM|8")
    move(root, ".chalk-twin-dtype", "bf16")
    move(root, ".chalk-twin-context", "32768")
    move(root, ".chalk-twin-batch", 0)
    readout = root.locator(".chalk-twin-readout").inner_text()
    assert readout.startswith("batch B = 1:") and "sequences:" not in readout, readout
    mfu = float(re.search(r"MFU ≤ ([\d.]+)%", readout).group(1))
    assert 0 < mfu < 1, readout  # one sequence leaves the chips nearly idle, but not at 0%
    move(root, ".chalk-twin-batch", int(root.locator(".chalk-twin-batch").get_attribute("max")))
    readout = root.locator(".chalk-twin-readout").inner_text()
    # 8 chips of 80 GB, 10% kept free (roofline.HEADROOM): the shortfall is against 576 GB.
    usable = 8 * hardware.get("H100-SXM").hbm_capacity / 1e9 * 0.9
    assert "does not fit" in readout and f"of the {usable:,.0f} GB usable" in readout, readout
    page.context.close()


def test_chapter_3_twin_opens_at_the_code_above_it_in_percent(built_site, chromium_browser):
    page = open_page(chromium_browser, built_site, "notebooks/03_pipelining.html", DESKTOP)
    root = page.locator(".chalk-twin").filter(has=page.locator(".chalk-twin-microbatches")).first
    # the explorer cell above it: Explorer(schedule="1f1b", stages=4, microbatches=8)
    assert root.locator(".chalk-twin-schedule").input_value() == "1f1b-1"
    assert root.locator(".chalk-twin-stages").input_value() == "4"
    readout = root.locator(".chalk-twin-readout").inner_text()
    assert readout.startswith("P = 4, m = 8:"), readout
    # 1F1B's bubble (P-1)/(m+P-1) = 3/11 = 27.3%
    assert re.search(r"closed form 27\.3%", readout), readout
    move(root, ".chalk-twin-microbatches", 0)
    assert "1 micro-batches" not in root.locator(".chalk-twin-readout").inner_text()
    page.context.close()


# --- table headers ------------------------------------------------------------------------------------
SILENT_HEADERS = """() => Array.from(document.querySelectorAll('.bd-article th')).filter((th) => {
    const words = th.cloneNode(true);
    words.querySelectorAll('mjx-container').forEach((m) => m.remove());
    return !words.textContent.trim() && th.querySelector('mjx-container');
}).map((th) => th.textContent.slice(0, 40))"""


def test_header_cells_holding_only_maths_have_words(built_site, chromium_browser):
    """axe's empty-table-header: a header of typeset maths alone says nothing to assistive technology."""
    checked = 0
    for rel_path in chapter_pages(built_site):
        page = open_page(chromium_browser, built_site, rel_path, DESKTOP)
        checked += page.locator(".bd-article th mjx-container").count()
        assert not (silent := page.evaluate(SILENT_HEADERS)), (rel_path, silent)
        page.context.close()
    assert checked, "no header cell with maths found: the check checked nothing"


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
