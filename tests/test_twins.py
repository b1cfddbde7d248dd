"""Every static twin on every built page, read in a real browser: each control changes the drawing
or the readout, with the mouse and with the keyboard alone (Tab to each control, arrow keys to move
it, a visible focus ring), the words a screen reader gets follow the drawing, and nothing is left
blank. The checks are here (check_keyboard, check_twin); test_reader.py's crawl runs them on every
page with a twin, which it opens anyway. Series sharing a chart differ by their dashes, not only by
colour. A fixture twin covers the shapes path (Gantt charts, racks), and shows each check fails.

Runs on the site conftest's ``built_site`` builds (ROOT/_build/html), or on the one CHALK_SITE
names; screenshots land in the screenshots folder beside it.
"""
import json
import re

import pytest

from chalk.figures import twin
from conftest import FOCUS_STYLE, SHOTS, focus_ring_problem, offline_guard

SCRIPT_TAG = re.compile(r'<script[^>]+src="[^"]*_static/chalk-twin\.js[^"]*"')

def pages_with_twins(site):
    return sorted(p for p in site.rglob("*.html") if 'class="chalk-twin"' in p.read_text(errors="replace"))


def open_offline(browser, url):
    """Open ``url`` with every request that leaves the disk refused; returns (page, refused urls)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    refused = []
    ctx.route("**/*", offline_guard(refused))
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    return page, refused


# What a twin shows (every panel's SVG and the readout, as one string to compare before and after),
# whether any panel is blank, and the words its panels give a screen reader; put into each call's
# script so that a check runs in the page, one round trip for many reads.
IN_PAGE = """
const state = el => Array.from(el.querySelectorAll('svg')).map(s => s.innerHTML).join('')
    + '|' + el.querySelector('.chalk-twin-readout').textContent;
const blank = el => {
    const svgs = Array.from(el.querySelectorAll('svg.chalk-twin-panel'));
    return {empty: svgs.filter(s => s.childElementCount === 0).length, svgs: svgs.length,
            readout: el.querySelector('.chalk-twin-readout').textContent.trim()};
};
const blankProblem = (el, what) => {
    const shown = blank(el);
    if (!(shown.svgs > 0 && shown.empty === 0)) return `${what}: ${shown.empty} of ${shown.svgs} panels blank`;
    return shown.readout ? null : `${what}: empty readout`;
};
const words = el => Array.from(el.querySelectorAll('svg.chalk-twin-panel')).map(s => s.getAttribute('aria-label'));
const focusStyle = """ + FOCUS_STYLE + """;
const controls = el => Array.from(el.querySelectorAll('select, input'));
"""


def in_page(body: str) -> str:
    """A function of the twin's root element run in the page, with IN_PAGE's helpers in scope."""
    return f"(root, arg) => {{ {IN_PAGE}\n{body} }}"


def move(root, control, value):
    """Set a control as a reader would and let the twin redraw."""
    if control.evaluate("el => el.tagName") == "SELECT":
        control.select_option(value)
    else:
        control.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)


MOVE_EVERY_CONTROL = in_page("""
    // As a reader's mouse would: a slider's 'input', a dropdown's 'input' and 'change' (what
    // Playwright's select_option sends); the twin redraws within the event.
    const move = (el, v) => {
        el.value = v;
        el.dispatchEvent(new Event('input', {bubbles: true}));
        if (el.tagName === 'SELECT') el.dispatchEvent(new Event('change', {bubbles: true}));
    };
    const problems = [], check = (el, v, changed, what) => {
        const before = state(root);
        move(el, v);
        if (state(root) === before) problems.push(`${arg}: ${changed} changed nothing`);
        const empty = blankProblem(root, `${arg}, ${what}`);
        if (empty) problems.push(empty);
    };
    const start = blankProblem(root, `${arg} at start`);
    if (start) return [start];
    for (const slider of root.querySelectorAll('input[type="range"]')) {
        const lo = slider.getAttribute('min'), hi = slider.getAttribute('max'), now = slider.value;
        for (const target of [now !== hi ? hi : lo, String(Math.floor((+lo + +hi) / 2))])
            check(slider, target, `slider to ${target}`, `slider at ${target}`);
    }
    for (const select of root.querySelectorAll('select')) {
        const label = select.getAttribute('class'), current = select.value;
        const values = Array.from(select.options).map(o => o.value);
        for (const value of [...values.filter(v => v !== current), current])
            check(select, value, `${label} = ${value}`, `${label} = ${value}`);
    }
    return problems;""")


def check_twin(root, name):
    """Move every control of one twin: the slider first (at the twin's first view), then each
    option of each dropdown in turn; each move must change the drawing or the readout and leave no
    panel blank. One round trip in all: the moves run in the page."""
    problems = root.evaluate(MOVE_EVERY_CONTROL, name)
    assert not problems, "\n".join(problems)


KEYBOARD_START = in_page("""
    const data = JSON.parse(root.querySelector('.chalk-twin-data').textContent);
    return {titles: data.panels.map(p => p.title), stops: data.controls[data.controls.length - 1].values,
            live: root.querySelector('.chalk-twin-readout').getAttribute('aria-live'),
            unfocused: controls(root).map(focusStyle)};""")
BEFORE_KEY = in_page("""
    const c = controls(root)[arg];
    window.chalkTwinBefore = state(root);
    return {focused: c === document.activeElement, look: focusStyle(c), tag: c.tagName, type: c.type,
            label: c.getAttribute('class'),
            last: c.tagName === 'SELECT' ? c.selectedIndex === c.options.length - 1 : +c.value === +c.max};""")
AFTER_KEY = in_page("""
    const c = controls(root)[arg];
    return {changed: state(root) !== window.chalkTwinBefore, words: words(root), value: c.value,
            valuetext: c.getAttribute('aria-valuetext')};""")
RESTORED = in_page("return state(root) === window.chalkTwinBefore;")


def check_keyboard(page, root, name):
    """Reach every control of one twin with Tab from the first, move each with an arrow key and
    back (each from the twin's first view): the drawing or the readout changes, the panels keep
    their words for a screen reader, and the slider speaks its value. The keys are real key
    presses; what they did is read in one round trip after each."""
    start = root.evaluate(KEYBOARD_START)
    assert start["live"] == "polite", f"{name}: the readout is not a live region"
    root.locator("select, input").first.focus()
    for k, unfocused in enumerate(start["unfocused"]):
        c = root.evaluate(BEFORE_KEY, k)
        what = f"{name}, control {k} ({c['label']})"
        assert c["focused"], f"{what}: Tab does not reach it"
        assert not (why := focus_ring_problem(unfocused, c["look"])), f"{what}: {why}"
        if c["tag"] == "SELECT":  # the next option, or the one before the last
            key, back = ("ArrowUp", "ArrowDown") if c["last"] else ("ArrowDown", "ArrowUp")
        else:  # the next stop, or the one before the last
            key, back = ("ArrowLeft", "ArrowRight") if c["last"] else ("ArrowRight", "ArrowLeft")
        page.keyboard.press(key)
        after = root.evaluate(AFTER_KEY, k)
        assert after["changed"], f"{what}: an arrow key changed nothing"
        assert all(w and w.startswith(t) for w, t in zip(after["words"], start["titles"])), \
            f"{what}: panels without words: {after['words']}"
        if c["type"] == "range":
            stop = start["stops"][int(after["value"])]
            assert after["valuetext"] == f"{stop:,}", f"{what}: the slider speaks its index"
        page.keyboard.press(back)
        assert root.evaluate(RESTORED), f"{what}: the arrow key back did not restore the view"
        if k + 1 < len(start["unfocused"]):
            page.keyboard.press("Tab")


def series_clashes(data) -> list[str]:
    """Line series drawn in one chart panel with the same dash pattern: told apart by colour alone."""
    clashes = []
    for k, panel in enumerate(data["panels"]):
        if panel["kind"] != "chart":
            continue
        names = sorted({n for v in data["views"].values() if "panels" in v for n in v["panels"][k].get("series", {})})
        lines = [n for n in names if data["styles"][n]["kind"] == "line"]
        for i, a in enumerate(lines):
            clashes += [f"{panel['title']!r}: {data['styles'][a]['label']!r} and {data['styles'][b]['label']!r} "
                        f"both dashed {data['styles'][a]['dash']!r}"
                        for b in lines[i + 1:] if data["styles"][a]["dash"] == data["styles"][b]["dash"]]
    return clashes


def test_twin_series_differ_by_more_than_colour(built_site):
    found, clashes = 0, []
    for page in pages_with_twins(built_site):
        for payload in re.findall(r'<script type="application/json" class="chalk-twin-data">(.*?)</script>',
                                  page.read_text(), re.S):
            found += 1
            clashes += [f"{page.relative_to(built_site)}: {c}" for c in series_clashes(json.loads(payload))]
    assert found >= 1
    assert not clashes, ("series a reader tells apart only by colour; give each a dash pattern of its "
                         "own (twin.line_style(..., dash=...)):\n" + "\n".join(clashes))


def test_twin_pages_load_the_shared_script_once(built_site):
    pages = pages_with_twins(built_site)
    assert any(p.name == "01_batching.html" for p in pages), "Chapter 1's twin is missing"
    assert (built_site / "_static" / "chalk-twin.js").is_file()
    for page in pages:
        html = page.read_text()
        assert len(SCRIPT_TAG.findall(html)) == 1, page
        assert "function setup(root" not in html, f"{page}: the drawing code is inlined"


def gantt_view(stages, shift):
    """A pipeline schedule as rectangles, one frame per slider stop: micro-batches move right."""
    frames = []
    for step in range(3):
        shapes = [twin.text(10, 40 + 30 * s, f"stage {s}") for s in range(stages)]
        shapes += [twin.rect(70 + 40 * (m + s + step * shift), 28 + 30 * s, 36, 20, "#0072B2", f"micro-batch {m}")
                   for s in range(stages) for m in range(2)]
        shapes.append(twin.line(70, 25, 70, 30 + 30 * stages))
        frames.append(shapes)
    return {"panels": [{"frames": frames}],
            "readout": {"pick": [0, 0, 1], "values": {"bubble": [0.5, 0.25, None]}, "constants": {"stages": stages}}}


def shapes_page(path, views, templates):
    """A page holding one shapes twin: a menu of stages (2 or 4) and a slider of three steps."""
    data = twin.twin_data(
        controls=[twin.select("stages", "stages", [("2", "2 stages"), ("4", "4 stages")]),
                  twin.slider("step", "step", [1, 2, 3], 1)],
        panels=[twin.shapes("pipeline schedule", 400, 160)],
        styles={}, legend=[], templates=templates, views=views)
    path.write_text(f'<!doctype html><html><head><script src="{twin.SCRIPT.as_uri()}"></script></head>'
                    f'<body>{twin.twin_html(data)}</body></html>')
    return path


@pytest.fixture
def shapes_twin_page(tmp_path):
    return shapes_page(tmp_path / "shapes.html", {"2": gantt_view(2, 1), "4": gantt_view(4, 1)},
                       ["{stages} stages, step {step}: bubble {bubble}", "!{stages} stages: done"])


def test_a_control_that_changes_nothing_is_reported(tmp_path, chromium_browser):
    """The stages menu of a twin whose two views are the same, and whose readout does not name the
    stages, changes nothing: moved with the mouse or with an arrow key, it is reported."""
    dead = shapes_page(tmp_path / "dead.html", {"2": gantt_view(2, 1), "4": gantt_view(2, 1)},
                       ["step {step}: bubble {bubble}", "!done"])
    page, _ = open_offline(chromium_browser, dead.as_uri())
    root = page.locator(".chalk-twin")
    with pytest.raises(AssertionError, match="stages = 4 changed nothing"):
        check_twin(root, "dead menu")
    with pytest.raises(AssertionError, match=r"control 0 \(chalk-twin-stages\): an arrow key changed nothing"):
        check_keyboard(page, root, "dead menu")
    page.context.close()


def test_shapes_twin_draws_and_switches_frames(shapes_twin_page, chromium_browser):
    page, _ = open_offline(chromium_browser, shapes_twin_page.as_uri())
    root = page.locator(".chalk-twin")
    check_keyboard(page, root, "shapes fixture")
    move(root, root.locator("select"), "2")
    move(root, root.locator("input"), "0")
    assert root.locator("svg rect").count() == 2 * 2
    assert root.locator(".chalk-twin-readout").inner_text() == "2 stages, step 1: bubble 0.5"
    check_twin(root, "shapes fixture")
    move(root, root.locator("select"), "4")
    assert root.locator("svg rect").count() == 4 * 2
    assert root.locator("svg rect title").first.text_content() == "micro-batch 0"
    root.screenshot(path=str(SHOTS / "twin_shapes_fixture.png"))
    page.context.close()


def test_in_jupyterlab_the_twin_gives_way_to_the_live_explorer(shapes_twin_page, chromium_browser):
    # JupyterLab wraps each output in .jp-OutputArea-output and does not load the site's script.
    body = re.search(r"<body>(.*)</body>", shapes_twin_page.read_text(), re.S).group(1)
    lab = shapes_twin_page.with_name("lab.html")
    lab.write_text(f'<!doctype html><html><body><div class="jp-OutputArea-output">{body}</div></body></html>')
    page, _ = open_offline(chromium_browser, lab.as_uri())
    assert page.locator(".chalk-twin-body").is_hidden()
    assert "static version" in page.locator(".chalk-twin-note").inner_text()
    page.context.close()
