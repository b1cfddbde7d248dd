"""Shared test settings: the repository root, a bounded Hypothesis profile for CI, and the built
website with a browser to read it (shared by the browser tests, so the site is built once)."""
import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

settings.register_profile("chalk", max_examples=60, deadline=None)
settings.load_profile("chalk")

SITE = Path(os.environ.get("CHALK_SITE", ROOT / "_build" / "html"))
"""The built site; CHALK_SITE=<folder of HTML> points the browser tests at one built elsewhere."""
SHOTS = SITE.parent / "screenshots"


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def built_site():
    """The site as `make book` builds it, with `-W -n --keep-going` so a failing cell, a broken
    reference or any Sphinx warning fails it; with CHALK_SITE set, the site already there.

    Built once per test run: the xdist workers that need it queue on a lock, and the first one
    builds and leaves a stamp with the run's id that the others read instead of building again.
    """
    if "CHALK_SITE" in os.environ:
        return SITE
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"solo-{os.getpid()}")
    lock_path, stamp = ROOT / "_build" / ".site.lock", ROOT / "_build" / ".site.stamp"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text().split("\n")[0] == run_id:
            status = stamp.read_text().split("\n", 1)[1]
            assert status == "ok", f"the site build of this run failed (see the first failing test):\n{status}"
            return SITE
        status = _build_site()
        stamp.write_text(f"{run_id}\n{status}")
    assert status == "ok", status
    return SITE


def _build_site() -> str:
    """'ok', or the end of the build log and its warnings."""
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        return log[-6000:]
    # Sphinx prints "<where>: WARNING: ..."; the kernels' own "[IPKernelApp] WARNING |" notes are not build warnings.
    warnings = [line for line in log.splitlines() if re.search(r": (WARNING|ERROR|CRITICAL):", line)]
    return "\n".join(warnings[:20]) if warnings else "ok"


@pytest.fixture(scope="session")
def chromium_browser():
    """Debian's Chromium driven by Playwright, without a browser download."""
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


# --- focus ----------------------------------------------------------------------------------------
FOCUS_STYLE = """el => { const s = getComputedStyle(el);
    return {outlineStyle: s.outlineStyle, outlineWidth: parseFloat(s.outlineWidth), outlineColor: s.outlineColor,
            boxShadow: s.boxShadow}; }"""
MIN_RING_PX = 2
"""The thinnest outline taken as a visible focus ring: WCAG 2.4.13 asks for a ring at least 2 CSS px thick."""


def focus_style(element) -> dict:
    """The computed outline and box-shadow of a Playwright locator's element, as drawn now."""
    return element.evaluate(FOCUS_STYLE)


def focus_ring_problem(unfocused: dict, focused: dict) -> str | None:
    """Why an element's look when focused (``focus_style`` then) does not show the focus, against
    its look unfocused, or None: focus must change the outline or box-shadow, and draw an outline."""
    if focused == unfocused:
        return f"focus changes neither its outline nor its box-shadow ({focused})"
    transparent = focused["outlineColor"] == "transparent" or re.fullmatch(r"rgba\(.*, 0\)", focused["outlineColor"])
    if focused["outlineStyle"] == "none" or focused["outlineWidth"] < MIN_RING_PX or transparent:
        return f"no visible outline when focused ({focused})"
    return None


# --- explorer work counts -------------------------------------------------------------------------
def view_redraws(explorer, session) -> list[bool]:
    """For each step of ``session`` (a list of parameter dicts), whether ``explorer.update`` redrew
    the view layer of its figure (curves, labels) rather than only the moving artists. Speed is
    make bench's to measure; this counts the work an update does, which load cannot change."""
    layers = explorer.figure.layers
    redrawn, draw = [], layers._draw

    def spy(artists):
        if artists is layers.view:
            redrawn[-1] = True
        return draw(artists)

    layers._draw = spy
    try:
        for step in session:
            redrawn.append(False)
            explorer.update(**step)
    finally:
        layers._draw = draw
    return redrawn
