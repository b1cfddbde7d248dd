"""The chapter notebooks in a real JupyterLab, as a student runs them after `make lab`.

A JupyterLab server (with jupyterlab-myst, which `make lab` installs) is started on a free
localhost port with a token, serving a temporary copy of the repository so that nothing a run
changes can reach the committed notebooks. Debian's Chromium, driven by Playwright with every
request off that server blocked, opens each chapter in notebooks/, runs all cells from the Run
menu and reads what a student sees: MyST prose rendered (no raw roles or directives), the
"Check yourself" answers folded, no error output, and an explorer whose picture changes when a
control moves. Screenshots land in _build/screenshots/lab_<chapter>.png.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, SHOTS

CHAPTERS = ["01_batching.ipynb"]
"""One chapter stands for all in the browser: the one with the most {eval} numbers, folds and an
explorer with sliders and dropdowns. Running every chapter here took minutes of the suite; what
the others would add is covered faster elsewhere: each chapter's cells run without error in the
site build (-W), every explorer redraws in test_explorer.py, and the MyST they use is the same."""
RAW_MYST = ("{eval", "{glue", ":::{", "```{", "{cite", "{term")
# Settings a fresh JupyterLab would ask about or apply lazily: start the notebook's kernel
# without a dialog, attach every cell to the page (so all of it can be read), keep the news
# prompt away, and never autosave into the served copy.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none", "autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
RUN_TIMEOUT_MS = 120_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium_browser):
    """(base url, token) of a JupyterLab serving a copy of the repository."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "repo"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(".venv", ".git", "_build", ".pytest_cache", "__pycache__"))
    for rel, value in LAB_SETTINGS.items():
        (tmp / "settings" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "settings" / rel).write_text(json.dumps(value))
    port, token = free_port(), os.urandom(16).hex()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp / "server.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not answer within 60 s"
                time.sleep(0.3)
        yield base, token
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def run_all(browser, lab, chapter):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    """Open ``notebooks/<chapter>`` in JupyterLab, run all cells and wait for the kernel to be idle.
    Returns (page, urls that tried to leave the server)."""
    base, token = lab
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    blocked = []

    def guard(route):
        if route.request.url.startswith((base, "data:", "blob:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    page = ctx.new_page()
    page.goto(f"{base}/lab/tree/notebooks/{chapter}?reset&token={token}")
    # The notebook is loaded and its kernel up when the status bar names an idle kernel ("Python 3
    # (ipykernel) | Idle"); before that it shows a one-cell placeholder and "No Kernel".
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))"
        ".some(e => / \\| Idle$/.test(e.textContent) && !e.textContent.startsWith('No Kernel'))",
        timeout=60_000)
    queued = ("() => Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'))"
              ".some(e => /[*\\d]/.test(e.textContent))")
    for _ in range(8):  # a command given while the session still settles can be dropped: ask again
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            page.wait_for_function(queued, timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    try:
        # Every code cell numbered ([n]: rather than [ ] or [*]), or an error that stops the run.
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt'))"
            ".every(e => /\\d/.test(e.textContent))"
            " || document.querySelector(\"[data-mime-type='application/vnd.jupyter.error']\") !== null",
            timeout=RUN_TIMEOUT_MS)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=RUN_TIMEOUT_MS)
    except Exception:
        page.screenshot(path=str(SHOTS / f"lab_{Path(chapter).stem}_stuck.png"))
        raise
    return page, blocked


@pytest.fixture(scope="module", params=CHAPTERS)
def chapter(request, chromium_browser, lab):
    name = request.param
    page, blocked = run_all(chromium_browser, lab, name)
    yield name, page, blocked
    page.context.close()


def screenshot(page, path):
    """The whole notebook in one picture: the window is made as tall as the notebook's content."""
    height = page.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(height + 200, 16_000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_runs_without_errors_or_network(chapter):
    name, page, blocked = chapter
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], "
                          ".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    assert not blocked, blocked


def test_prose_is_rendered_myst(chapter):
    name, page, _ = chapter
    screenshot(page, SHOTS / f"lab_{Path(name).stem}.png")
    text = "\n".join(page.locator(".jp-MarkdownCell, .jp-OutputArea").all_inner_texts())
    for raw in RAW_MYST:
        assert raw not in text, f"{name}: raw MyST {raw!r} is visible: ...{text[text.find(raw) - 200:][:400]}..."
    # An {eval} role shows its number once the cell that defines it has run; a name it cannot
    # evaluate would show the name itself (every such name here ends in _txt).
    unevaluated = re.findall(r"\b\w+_txt\b", text)
    assert not unevaluated, f"{name}: inline expressions not evaluated: {sorted(set(unevaluated))}"


def test_answers_are_folded(chapter):
    name, page, _ = chapter
    folded = page.locator(".jp-MarkdownCell details")
    assert folded.count() > 0, f"{name}: no folded (dropdown) block"
    for i in range(folded.count()):
        assert folded.nth(i).get_attribute("open") is None, f"{name}: dropdown {i} is open"


def test_explorer_redraws(chapter):
    name, page, _ = chapter
    image = page.locator(".jp-OutputArea .widget-image").first
    image.wait_for(timeout=30_000)
    image.scroll_into_view_if_needed()
    before = image.get_attribute("src")
    # The explorer is an ipywidgets box of controls, a readout and this image. Move its first
    # control as a reader would: a slider one step with the keyboard, else a dropdown's next
    # option. The picture must change.
    box = image.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][1]")
    handles, selects = box.locator(".noUi-handle"), box.locator("select")
    assert handles.count() + selects.count() > 0, f"{name}: the explorer has no slider or dropdown"
    if handles.count():
        handle = handles.first
        at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        handle.focus()
        handle.press("ArrowLeft" if at_end else "ArrowRight")
    else:
        options = selects.first.locator("option")
        current = selects.first.input_value()
        other = next(v for v in (options.nth(i).get_attribute("value") for i in range(options.count())) if v != current)
        selects.first.select_option(other)
    page.wait_for_function("([el, src]) => el.getAttribute('src') !== src",
                           arg=[image.element_handle(), before], timeout=15_000)
    image.screenshot(path=str(SHOTS / f"lab_{Path(name).stem}_explorer.png"))
