"""Accessibility of every page the site publishes, and of the figures the chapters draw.

* axe-core (bundled by axe-playwright-python) runs on every built page in the browser the other
  site tests use: no serious or critical violation anywhere; the moderate and minor ones are
  reported as warnings (they show in the test summary) so they stay in sight;
* every <img> says what it shows: alt text that is neither empty nor a file name;
* the flashcards work from the keyboard alone (the twins' keyboard paths are in test_twins.py);
* the chapters' figures tell their series apart without colour (line style or marker, or for
  filled boxes a difference in lightness), and say in words what they show.

Pages are found in the built site, so a chapter added later is checked without a change here.
"""
import html.parser
import re
import warnings
from collections import defaultdict

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from chalk.errors import ChalkError
from chalk.figures import canvas, overtraining, pipelining, plotting, revnets
from chalk.teaching.cards import ch03_pipelining, ch05_overtraining, ch07_ciphers_revnets
from conftest import SHOTS

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


def open_offline(browser):
    """One page object for the whole run, every request off the disk refused."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
              else route.abort())
    return ctx.new_page()


def settle(page):
    """Wait until MathJax has typeset the page (its output is part of what axe reads)."""
    page.evaluate("async () => { if (window.MathJax?.startup?.promise) await MathJax.startup.promise; }")


def axe_violations(page, context=None) -> list[dict]:
    from axe_playwright_python.sync_playwright import Axe
    options = {"resultTypes": ["violations"], "rules": {r: {"enabled": True} for r in EXPERIMENTAL_RULES}}
    return Axe().run(page, context=context, options=options).response["violations"]


def describe_violation(v: dict, pages: list[str]) -> str:
    nodes = v["nodes"]
    where = "\n".join(f"      {', '.join(map(str, n['target']))}: {n['html'][:160]}" for n in nodes[:3])
    return (f"{v['id']} ({v['impact']}): {v['help']} [{v['helpUrl']}]\n"
            f"    on {', '.join(pages)}; first nodes:\n{where}")


def test_every_page_has_no_serious_axe_violation(built_site, chromium_browser):
    page = open_offline(chromium_browser)
    blocking, reported = defaultdict(list), defaultdict(lambda: [0, []])
    pages = site_pages(built_site)
    assert any(p.startswith("notebooks/") for p in pages) and "book/flashcards.html" in pages
    for rel in pages:
        page.goto((built_site / rel).as_uri(), wait_until="load")
        settle(page)
        for v in axe_violations(page):
            if v["impact"] in BLOCKING:
                blocking[v["id"]].append((rel, v))
            else:
                reported[(v["id"], v["impact"], v["help"])][0] += len(v["nodes"])
                reported[(v["id"], v["impact"], v["help"])][1].append(rel)
    page.context.close()
    for (rule, impact, what), (count, where) in sorted(reported.items()):
        warnings.warn(f"axe {impact}: {rule} ({what}): {count} elements on {len(where)} pages, "
                      f"e.g. {', '.join(where[:3])}", stacklevel=1)
    assert not blocking, "serious or critical accessibility violations:\n" + "\n".join(
        describe_violation(found[0][1], [rel for rel, _ in found]) for found in blocking.values())


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
FOCUS_RING = """el => { const s = getComputedStyle(el);
    return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none'; }"""


def test_flashcards_work_from_the_keyboard(built_site, chromium_browser):
    page = open_offline(chromium_browser)
    page.goto((built_site / "book/flashcards.html").as_uri(), wait_until="load")
    settle(page)
    page.focus(".chalk-filter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "chalk-reset"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "chalk-forget"
    page.keyboard.press("Tab")
    cards = page.locator(".chalk-card")
    first, second = cards.nth(0), cards.nth(1)
    assert first.evaluate("el => el === document.activeElement"), "Tab from the controls does not reach a card"
    assert first.evaluate(FOCUS_RING), "the focused card shows no focus ring"
    page.keyboard.press("Enter")
    assert "flipped" in first.get_attribute("class") and first.get_attribute("aria-pressed") == "true"
    assert first.locator(".chalk-back").is_visible() and first.locator(".chalk-front").is_hidden()
    assert first.evaluate(FOCUS_RING), "the focus ring is lost on a turned card"
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
    or filled keys closer than MIN_LIGHTNESS_STEP in lightness."""
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    clashes = []
    for lg in filter(None, legends):
        entries = list(zip(lg.legend_handles, (t.get_text() for t in lg.get_texts())))
        for i, (a, la) in enumerate(entries):
            for b, lb in entries[i + 1:]:
                if isinstance(a, Line2D) and isinstance(b, Line2D) and _line_key(a) == _line_key(b):
                    clashes.append(f"{la!r} and {lb!r}: same line style and marker")
                elif (isinstance(a, Patch) and isinstance(b, Patch)
                      and abs(lightness(a.get_facecolor()) - lightness(b.get_facecolor())) < MIN_LIGHTNESS_STEP):
                    clashes.append(f"{la!r} and {lb!r}: fills of nearly the same lightness")
    return clashes


FIGURES = {
    "pipelining.gantt_figure": lambda: pipelining.gantt_figure(
        [pipelining.run(4, 4, "gpipe"), pipelining.run(4, 4, "1f1b")], ["GPipe", "1F1B"]),
    "pipelining.bubble_figure": pipelining.bubble_figure,
    "pipelining.GanttFigure": lambda: pipelining.GanttFigure().fig,
    "overtraining.heuristic_figure": overtraining.heuristic_figure,
    "overtraining.catalog_figure": overtraining.catalog_figure,
    "overtraining.scenario_figure": overtraining.scenario_figure,
    "revnets.mixing_figure": revnets.mixing_figure,
    "revnets.round_trip_figure": revnets.round_trip_figure,
    "revnets.RevnetFigure": lambda: revnets.RevnetFigure().fig,
    "plotting.roofline_figure": lambda: plotting.roofline_figure("GB200", "deepseek-v3", 4096, "fp8", 72, batch=512),
    "plotting.balance_context_figure": lambda: plotting.balance_context_figure(
        [("H100-SXM", "llama-3-70b", "bf16"), ("H100-SXM", "deepseek-v3", "bf16"), ("H200", "deepseek-v3", "bf16")]),
    **{f"card {name}": draw for cards in (ch03_pipelining, ch05_overtraining, ch07_ciphers_revnets)
       for name, draw in cards.FIGURES.items()},
}
"""Every figure Chapters 1, 3, 5 and 7 draw, their explorers' and their cards' included."""


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_series_differ_by_more_than_colour(name):
    fig = FIGURES[name]()
    assert any(lg is not None for lg in [ax.get_legend() for ax in fig.axes] + list(fig.legends)), name
    assert colour_only(fig) == [], name


def test_colour_check_can_fail():
    fig, (ax,) = canvas.new_figure(3, 2)
    ax.plot([0, 1], [0, 1], color="#0072B2", label="one")
    ax.plot([0, 1], [1, 0], color="#D55E00", label="two")
    ax.plot([0, 1], [1, 1], color="#D55E00", ls=(0, (6, 2)), label="custom dashes")
    ax.plot([0, 1], [0, 0], color="#D55E00", ls=(0, (1, 1.5)), label="other custom dashes")
    ax.bar([0], [1], color="#0072B2", label="three")
    ax.bar([1], [1], color="#009E73", label="four")  # L* 46 and 58: too close
    ax.legend()
    assert len(colour_only(fig)) == 2


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
