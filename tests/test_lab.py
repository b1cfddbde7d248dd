"""The course's notebooks in a real JupyterLab, as a student meets them, in two set-ups:

* ``source``: ``make lab``. A JupyterLab with jupyterlab-myst, started with the Makefile's
  ``LAB_OPTIONS`` over a temporary copy of the repository (nothing a run changes reaches the
  committed notebooks): it must open on the chapter list, and every chapter page and problem set
  must render.
* ``student``: the student edition as a student installs it (``chalk.teaching.edition.build``),
  served by a JupyterLab with jupyterlab-myst disabled (a labconfig in the test's
  JUPYTER_CONFIG_DIR), as a fresh venv with only the wheel and JupyterLab has it; the kernel is the
  repository's .venv (test_student_venv proves the wheel installs in a fresh one).

Debian's Chromium, driven by Playwright with every request off the server blocked, reads what a
student sees. What each notebook costs decides how it is checked:

* notebooks are opened without being run, which is cheap: every one in ``make lab``'s tree (15
  chapter pages and 7 problem sets), where jupyterlab-myst's rendering of each page's prose is the
  point, and the largest of each kind (chapter, deeper page, lab page, problem set) in the edition,
  whose pages' other properties its files settle (``to_open``). A notebook must not be marked
  modified once JupyterLab has applied what its kernel says (NotebookPanel rewrites
  ``language_info`` when the kernel's info arrives and ``kernelspec`` when its spec does, if they
  differ from the file's; ``chalk.teaching.lab_metadata``), no raw MyST may show, no link may be
  dead (``href="#"``, a file the server lacks, or a glossary role jupyterlab-myst cannot resolve),
  and a notebook that ships outputs (the edition's chapters) must hold no error output and, in the
  edition, no unsubstituted ``*_txt`` name and no answer fold left open or unrendered (the
  edition's folds are HTML ``<details>``, which JupyterLab's own Markdown renders). The notebooks of a set-up are opened one after the
  other on one running kernel (a kernel start per notebook cost a second or more of CPU and changed
  nothing JupyterLab checks: each opening is a new kernel connection, whose info and spec it
  applies as for a new kernel) and closed unsaved; the kernel is shut down after them, so the
  notebooks run below each start a kernel of their own. A notebook that is run below is read on
  opening in its run's own page, just before its run, instead of being opened twice (an opening
  costs 5 to 10 s of CPU). Every check is also run on doctored notebooks, which it must report;
* **Chapter 1 and problem set 1** are run (Run All) in ``make lab``'s set-up, from cleared outputs:
  every code cell run, no error output, every ``{eval}`` number filled in, the answers folded, and
  Chapter 1's explorer redrawing when a control moves. In the edition's set-up problem set 1 is run
  (the student's form of it, which differs from the instructor's in its code); its chapters hold
  the committed chapters' code cells unchanged (``code_differences``, over every chapter) and run
  on the same kernel in the same JupyterLab install (jupyterlab-myst, off there, renders Markdown
  cells only: code and outputs are JupyterLab's own in both), so Chapter 1's run in the other
  set-up stands for theirs (a second run of the same code checked nothing new; its folds, the
  edition's own Markdown, are checked on opening). The other chapters' cells run
  without error in the site build (-W) and in the edition's build (which keeps their outputs);
  every explorer redraws in test_explorer.py.

A time bound here only catches a hang (a server, a page, a run or a redraw that never comes);
every wait is for a state.

Slider to new image: the explorer of each chapter that is run here is timed over 10 slider moves
(input event to the image's new ``src``), median and max written to
``_build/bench/lab_explorers.json`` for ``make bench``, which compares them with a budget; no test
asserts a time. ``CHALK_LAB_EXPLORERS=all`` runs and times the explorers of all seven chapters
(source set-up), which takes several minutes. Screenshots land in _build/screenshots/lab_*.png.
"""
import fcntl
import http.client
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, SHOTS

MODES = ["source", "student"]
RUN = {"chapter": "notebooks/01_batching.ipynb", "problem set": "exercises/01_batching.ipynb"}
"""What is run: the chapter with the most {eval} numbers, folds and an explorer with sliders and
dropdowns, and its problem set; in the edition's set-up the problem set only (``runs``)."""


def runs(mode: str) -> list[str]:
    return list(RUN.values()) if mode == "source" else [RUN["problem set"]]
RAW_MYST = ("{eval", "{glue", ":::{", "```{", "{cite", "{term", "{admonition", "{dropdown")
NAME_LEFT = re.compile(r"\b\w+_txt\b")
"""A name where a number belongs: an {eval} role shows its number once the cell that defines it
has run (or, in the edition, as substituted); a name it cannot evaluate shows as the name itself,
and every such name here ends in _txt."""
UNRESOLVED = "Cross reference target was not found"
"""What jupyterlab-myst logs for a role it cannot resolve (it renders the link as href="#")."""
BENCH = ROOT / "_build" / "bench" / "lab_explorers.json"
MOVES = 10
# Settings a fresh JupyterLab would ask about or apply lazily: start the notebook's kernel
# without a dialog and shut it down when the notebook closes, attach every cell to the page (so all
# of it can be read), keep the news prompt away, and never autosave into the served copy.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none", "autoStartDefaultKernel": True, "kernelShutdown": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
RUN_TIMEOUT_MS = 300_000
RENDER_TIMEOUT_MS = 300_000
"""Only a notebook whose prose never renders reaches it (it is then reported, not waited for longer)."""


def lab_options() -> list[str]:
    """The options ``make lab`` gives ``jupyter lab`` (the Makefile's LAB_OPTIONS)."""
    m = re.search(r"^LAB_OPTIONS\s*:?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, "Makefile: no LAB_OPTIONS for the lab target"
    return shlex.split(m.group(1))


def served_tree(mode: str, tmp: Path) -> Path:
    if mode == "source":
        root = tmp / "repo"
        shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(".venv", ".git", "_build", ".pytest_cache",
                                                                  "__pycache__", ".hypothesis"))
        return root
    from chalk.teaching import edition
    edition.build(tmp / "student")
    return tmp / "student"


class Lab:
    def __init__(self, mode, root, base, token):
        self.mode, self.root, self.base, self.token = mode, root, base, token

    def notebooks(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix()
                      for p in [*self.root.glob("notebooks/*.ipynb"), *self.root.glob("exercises/*.ipynb")])


@pytest.fixture(scope="module", params=MODES)
def lab(request, tmp_path_factory, chromium_browser):
    """A JupyterLab serving ``make lab``'s tree (source) or the student edition (student)."""
    mode = request.param
    tmp = tmp_path_factory.mktemp(f"lab-{mode}")
    root = served_tree(mode, tmp)
    for rel, value in LAB_SETTINGS.items():
        (tmp / "settings" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "settings" / rel).write_text(json.dumps(value))
    if mode == "student":  # the edition is read without any MyST renderer
        (tmp / "config" / "labconfig").mkdir(parents=True)
        (tmp / "config" / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {"jupyterlab-myst": True}}))
    options = [o for o in lab_options() if not o.startswith("--ServerApp.root_dir")] if mode == "source" else []
    token = os.urandom(16).hex()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.expose_app_in_browser=True",
            *options]
    server, port = start_server(args, env, tmp / "runtime", tmp / "server.log")
    try:
        yield Lab(mode, root, f"http://127.0.0.1:{port}", token)
    finally:
        server.terminate()
        server.wait(timeout=60)


START_TIMEOUT_S = 300
"""Only a server or page that never starts reaches it (a loaded machine takes seconds)."""


def start_server(args: list[str], env: dict, runtime: Path, log_path: Path, tries: int = 3):
    """Start the Jupyter server ``args`` on a port the system picks (``--port=0``), and return it and
    the port it bound, read from the server's own record (``jpserver-<pid>.json`` in ``runtime``,
    written once it listens), so no other process can take the port between its choice and its use.
    The server binds a probe socket before it listens; another process taking that port in between
    stops it, and it is started again."""
    for attempt in range(tries):
        with open(log_path, "w") as log:
            server = subprocess.Popen([*args, "--port=0", "--ServerApp.port_retries=0"], env=env, stdout=log,
                                      stderr=subprocess.STDOUT)
        record, deadline = runtime / f"jpserver-{server.pid}.json", time.monotonic() + START_TIMEOUT_S
        while server.poll() is None:
            try:
                info = json.loads(record.read_text())
                urllib.request.urlopen(f"http://127.0.0.1:{info['port']}/api/status?token={info['token']}",
                                       timeout=60)
                return server, info["port"]
            except (OSError, ValueError, KeyError, http.client.HTTPException):
                # not written yet, half written, or not answering yet (a reset or a bad status line)
                if time.monotonic() > deadline:
                    server.terminate()
                    raise AssertionError(f"JupyterLab did not answer within {START_TIMEOUT_S} s: "
                                         + log_path.read_text()[-3000:])
                time.sleep(0.3)
        text = log_path.read_text()
        if "could not be started" not in text or attempt == tries - 1:
            raise AssertionError(f"JupyterLab stopped (exit {server.returncode}): {text[-3000:]}")


FAKE_SERVER = """
import http.server, json, os, sys
from pathlib import Path
runtime, first = Path(sys.argv[1]), Path(sys.argv[2])
if not first.exists():  # the first start loses its port to another process, as a Jupyter server reports it
    first.write_text("")
    print("ERROR: the Jupyter server could not be started because port 4242 is not available.")
    sys.exit(1)
class Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/api/status?token=t"
        self.send_response(200 if ok else 403)
        self.end_headers()
server = http.server.HTTPServer(("127.0.0.1", 0), Status)
runtime.mkdir(exist_ok=True)
(runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps({"port": server.server_port, "token": "t"}))
server.serve_forever()
"""


def test_the_server_is_reached_on_the_port_it_bound_after_a_start_that_lost_its_port(tmp_path):
    """start_server on a stand-in for the Jupyter server, which binds a port of the system's choosing
    and writes its record as the Jupyter server does, after a first start that loses its port."""
    server, port = start_server([sys.executable, "-c", FAKE_SERVER, str(tmp_path / "runtime"), str(tmp_path / "first")],
                                dict(os.environ), tmp_path / "runtime", tmp_path / "server.log")
    try:
        assert (tmp_path / "first").exists() and port == json.loads(
            (tmp_path / "runtime" / f"jpserver-{server.pid}.json").read_text())["port"]
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=t", timeout=60).status == 200
    finally:
        server.terminate()
        server.wait(timeout=60)


def new_page(browser, lab, path="lab"):
    """A page on ``lab`` with every request off the server blocked; returns (page, blocked, console)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    blocked, console = [], []

    def guard(route):
        if route.request.url.startswith((lab.base, "data:", "blob:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    page = ctx.new_page()
    page.on("console", lambda m: console.append(m.text))
    page.goto(f"{lab.base}/{path}?reset&token={lab.token}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=START_TIMEOUT_S * 1000)
    page.evaluate("() => window.jupyterapp.restored")
    return page, blocked, console


OPEN = """async ({path, kernel}) => {
    const app = window.jupyterapp;
    const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook', kernel: kernel ? {id: kernel} : undefined});
    await panel.context.ready;
    await panel.sessionContext.ready;
    const current = () => panel.sessionContext.session && panel.sessionContext.session.kernel;
    for (let i = 0; i < 600 && !current(); i++)
        await new Promise(r => setTimeout(r, 100));
    const k = current();
    if (!k) return false;
    // NotebookPanel._onKernelChanged, called when the session got this kernel, writes language_info
    // in a handler of k.info and kernelspec after awaiting k.spec; both were registered before these
    // awaits, so they have run once these resolve (the macrotask is one more turn for safety).
    // Bounded: a kernel that never answers fails this notebook instead of holding the suite.
    await Promise.race([Promise.all([k.info, k.spec]),
        new Promise((_, no) => setTimeout(() => no(new Error(`no kernel info within 300 s: ${path}`)), 300000))]);
    await new Promise(r => setTimeout(r, 0));
    window.__panel = panel;
    return true;
}"""
RENDERED = """async ({myst, timeout}) => {
    // Every Markdown cell rendered (by jupyterlab-myst where it runs: it renders a cell once it has
    // resolved the whole notebook's references), then no render pending: a cell that another cell's
    // resolution hands a new model renders again, so this waits until a pass over every pending
    // render and two frames changes nothing on the page. Returns false if it never got there.
    const nb = window.__panel.content;
    const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
    const shown = c => c.node.querySelector(myst ? '.myst' : '.jp-RenderedMarkdown > *');
    const cells = () => nb.widgets.filter(c => c.model.type === 'markdown' && c.model.sharedModel.getSource().trim());
    const look = () => nb.node.innerHTML;
    const end = performance.now() + timeout;
    while (!cells().every(shown)) {
        if (performance.now() > end) return false;
        await frame();
    }
    let before = null;
    while (look() !== before) {
        if (performance.now() > end) return false;
        before = look();
        await Promise.all(nb.widgets.map(c => c._mystWidget && c._mystWidget.renderPromise).filter(Boolean));
        await frame();
        await frame();
    }
    return true;
}"""
CLOSE = """async (timeout) => {
    // Close every open notebook unsaved, as a student who closes a tab and answers "Discard": a
    // notebook JupyterLab marked modified (a doctored one) would otherwise hold the close behind
    // its save dialog. A notebook on the shared kernel leaves it running (kernelShutdown is on).
    // Returns what is left: open documents and dialogs (none, once every close has finished).
    const app = window.jupyterapp;
    const open = () => Array.from(app.shell.widgets('main')).filter(w => w.context);
    const dialogs = () => document.querySelectorAll('.jp-Dialog').length;
    for (const w of open()) {
        if (w.sessionContext) w.sessionContext.kernelPreference = {...w.sessionContext.kernelPreference, shutdownOnDispose: false};
        w.context.model.dirty = false;
        w.close();
    }
    const end = performance.now() + timeout;
    while (open().length && !dialogs() && performance.now() < end)
        await new Promise(r => setTimeout(r, 50));
    return {open: open().map(w => w.context.path), dialogs: dialogs()};
}"""
STATE = """() => {
    const panel = window.__panel;
    const node = panel.node;
    const hrefs = Array.from(node.querySelectorAll('.jp-Cell a')).map(a => a.getAttribute('href'));
    const text = Array.from(node.querySelectorAll('.jp-MarkdownCell .jp-MarkdownOutput, .jp-MarkdownCell .jp-RenderedMarkdown, .jp-MarkdownCell .myst, .jp-OutputArea'))
        .map(e => e.innerText).join('\\n');
    const errors = Array.from(node.querySelectorAll("[data-mime-type='application/vnd.jupyter.stderr'], [data-mime-type='application/vnd.jupyter.error']"))
        .map(e => e.innerText);
    const folds = node.querySelectorAll('.jp-MarkdownCell details');
    return {dirty: panel.context.model.dirty, hrefs, text, errors, folds: folds.length,
            open: Array.from(folds).filter(d => d.open).length,
            myst: node.querySelectorAll('.jp-MarkdownCell .myst').length,
            markdown: panel.content.widgets.filter(c => c.model.type === 'markdown').length};
}"""


def dead_links(lab, page_path: str, hrefs: list) -> list[str]:
    """The links of a notebook a student cannot follow: empty or ``#``, or a file the server lacks.
    Addresses off the server (the edition links the published site) are not fetched here."""
    dead = []
    for href in hrefs:
        if href in (None, "", "#"):
            dead.append(repr(href))
            continue
        url = urllib.parse.urlsplit(urllib.parse.urljoin(f"{lab.base}/lab/tree/{page_path}", href))
        if f"{url.scheme}://{url.netloc}" != lab.base:
            continue
        path = urllib.parse.unquote(url.path)
        for prefix in ("/files/", "/lab/tree/"):
            if path.startswith(prefix) and not (lab.root / path[len(prefix):]).exists():
                dead.append(href)
    return dead


@pytest.fixture(scope="module")
def lab_page(chromium_browser, lab):
    """(page, blocked urls, console, landing) of the page on which the module's notebooks are opened.
    In ``make lab``'s set-up it is loaded at the server's root, as a student's browser opens
    it, and ``landing`` is where that led: its address, the file browser's listing and the urls
    blocked by then (a page load costs 10 s of CPU: one serves both)."""
    page, blocked, console = new_page(chromium_browser, lab, path="" if lab.mode == "source" else "lab")
    landing = None
    if lab.mode == "source":
        url = page.url
        page.locator(".jp-DirListing-itemText", has_text="01_batching.ipynb").first.wait_for(timeout=START_TIMEOUT_S * 1000)
        landing = {"url": url, "listed": page.locator(".jp-DirListing-itemText").all_inner_texts(), "blocked": list(blocked)}
    yield page, blocked, console, landing
    page.context.close()


def test_make_lab_opens_on_the_chapter_list(lab, lab_page):
    if lab.mode != "source":
        pytest.skip("the student edition is started as its README says, on its own folder")
    landing = lab_page[3]
    assert "/lab/tree/notebooks" in landing["url"], landing["url"]
    assert {"01_batching.ipynb", "07_ciphers_revnets.ipynb"} <= set(landing["listed"]), landing["listed"]
    assert not landing["blocked"], landing["blocked"]


def close(page) -> None:
    """Close the page's notebooks unsaved; fails if one stays open or a dialog shows."""
    left = page.evaluate(CLOSE, START_TIMEOUT_S * 1000)
    assert left == {"open": [], "dialogs": 0}, f"closing the notebooks left {left}"


def opening_problems(lab, page, console, name: str, kernel: str) -> list[str]:
    """What is wrong with notebook ``name`` opened (not run) on ``kernel`` in ``page`` (see the
    module's docstring); ``console`` is the page's console, read for jupyterlab-myst's warnings."""
    problems = opened_problems(lab, page, console, name, kernel)
    close(page)
    return problems


def opened_problems(lab, page, console, name: str, kernel: str | None) -> list[str]:
    """``opening_problems`` of ``name``, left open (its panel is ``window.__panel``); on a new kernel
    if ``kernel`` is None."""
    console.clear()
    assert page.evaluate(OPEN, {"path": name, "kernel": kernel}), f"{name}: no kernel"
    rendered = page.evaluate(RENDERED, {"myst": lab.mode == "source", "timeout": RENDER_TIMEOUT_MS})
    state = page.evaluate(STATE)
    where = f"{lab.mode} {name}"
    problems = []
    if state["dirty"]:
        problems.append(f"{where}: marked modified on opening")
    if lab.mode == "source" and state["myst"] < state["markdown"]:
        problems.append(f"{where}: {state['markdown'] - state['myst']} Markdown cells not rendered by jupyterlab-myst")
    if lab.mode == "student" and state["myst"]:
        problems.append(f"{where}: rendered by jupyterlab-myst, which a student's JupyterLab lacks")
    if not rendered:
        problems.append(f"{where}: its prose did not finish rendering within {RENDER_TIMEOUT_MS // 1000} s")
    problems += [f"{where}: raw MyST {raw!r}" for raw in RAW_MYST if raw in state["text"]]
    problems += [f"{where}: dead link {h}" for h in dead_links(lab, name, state["hrefs"])]
    problems += [f"{where}: {m[:150]}" for m in console if UNRESOLVED in m][:3]
    problems += [f"{where}: error output {e[:300]}" for e in state["errors"]][:2]
    if lab.mode == "student":
        names_left = sorted(set(NAME_LEFT.findall(state["text"])))
        if names_left:
            problems.append(f"{where}: names where numbers belong: {names_left[:8]}")
        written = sum(c.source.count("<details") for c in nbformat.read(lab.root / name, as_version=4).cells
                      if c.cell_type == "markdown")
        if state["folds"] < written:
            problems.append(f"{where}: {written - state['folds']} of its {written} answer folds not rendered")
        if state["open"]:
            problems.append(f"{where}: {state['open']} answer folds open")
    return problems


@pytest.fixture
def kernel(lab):
    """The id of one kernel (the default, python3) started on ``lab``, on which a test's notebooks are
    opened; shut down after the test, so the server drops the sessions opened on it and a notebook
    run later (``ran``) starts its own kernel instead of reusing this one's namespace and folder."""
    def call(method, path, body=None):
        request = urllib.request.Request(f"{lab.base}/api/kernels{path}?token={lab.token}", method=method,
                                         data=body and json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.read()
    kernel_id = json.loads(call("POST", "", {"name": "python3"}))["id"]
    yield kernel_id
    call("DELETE", f"/{kernel_id}")


def kind(name: str) -> str:
    """What a served notebook is: a problem set, a chapter's deeper page, a lab page or a chapter page."""
    stem = Path(name).stem
    if name.startswith("exercises/"):
        return "problem set"
    return "deeper page" if stem.endswith("-deeper") else "lab page" if "_lab-" in stem else "chapter"


def to_open(lab) -> list[str]:
    """The notebooks opened in the browser: in ``make lab``'s tree every one, since jupyterlab-myst's
    rendering of each page's prose is what is checked; in the edition the largest page of each kind,
    since there what the browser alone sees (JupyterLab's own Markdown and output rendering, and
    whether opening marks the page modified) depends on the kind of page, and the rest holds for
    every page in the files (test_the_editions_files_hold_what_jupyterlab_keeps here; raw MyST, dead
    links and error outputs: test_student_edition.py over every page)."""
    names = lab.notebooks()
    if lab.mode == "source":
        return names
    largest = {}
    for name in sorted(names, key=lambda n: (lab.root / n).stat().st_size):
        largest[kind(name)] = name
    return sorted(largest.values())


def test_notebooks_open_unmodified_with_their_prose_rendered_and_their_links_alive(lab, lab_page, kernel, ran):
    """The served notebooks of ``to_open``, opened and not run (see the module's docstring); those
    that are run (``ran``) were read on opening in their own page, before their run."""
    page, blocked, console, _ = lab_page
    names = lab.notebooks()
    assert len([n for n in names if n.startswith("exercises/")]) == 7 and len(names) >= 22, names
    opened = to_open(lab)
    assert {kind(n) for n in opened} == {"problem set", "deeper page", "lab page", "chapter"}, opened
    problems = [p for name in opened if name in ran for p in ran[name][2]]
    problems += [p for name in opened if name not in ran for p in opening_problems(lab, page, console, name, kernel)]
    assert not blocked, blocked
    assert not problems, "\n".join(problems)


def file_problems(nb, name: str, wanted: dict) -> list[str]:
    """What the file of notebook ``name`` shows wrong without a browser: metadata other than
    ``wanted`` (what JupyterLab writes on opening), a ``*_txt`` name in its prose or outputs."""
    problems = [f"{name}: {key} is not JupyterLab's" for key in wanted if nb.metadata.get(key) != wanted[key]]
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"]
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            texts += [output.get("text", ""), *(v for k, v in output.get("data", {}).items() if k.startswith("text/"))]
    if names_left := sorted(set(NAME_LEFT.findall("\n".join(texts)))):
        problems.append(f"{name}: names where numbers belong: {names_left[:8]}")
    return problems


def test_the_editions_files_hold_what_jupyterlab_keeps(lab):
    """Every page of the edition, read from its file, for what the browser checks on the pages it
    opens and the file settles (``file_problems``): the metadata, whose difference from what
    JupyterLab writes marks a page modified on opening (``chalk.teaching.lab_metadata``), and the
    numbers filled in. (The committed notebooks, which the source set-up serves: test_hygiene.py.)"""
    if lab.mode != "student":
        pytest.skip("make lab serves the committed notebooks, whose metadata test_hygiene.py reads")
    from chalk.teaching.lab_metadata import expected
    wanted = expected()
    problems = [p for name in lab.notebooks() for p in file_problems(nbformat.read(lab.root / name, as_version=4),
                                                                       name, wanted)]
    assert not problems, problems


def code_differences(committed, shipped) -> list[str]:
    """Where the code cells of ``shipped`` (an edition's chapter) differ from ``committed``'s."""
    ours, theirs = ([c.source for c in nb.cells if c.cell_type == "code"] for nb in (committed, shipped))
    if len(ours) != len(theirs):
        return [f"{len(theirs)} code cells, not {len(ours)}"]
    return [f"code cell {i}" for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]


def test_the_editions_chapters_hold_the_committed_code(lab):
    """Every chapter of the edition runs the committed chapter's code, cell for cell: Chapter 1's run
    in make lab's set-up (same kernel, same JupyterLab) then stands for the edition's."""
    if lab.mode != "student":
        pytest.skip("the edition's chapters are compared with the committed ones")
    shipped = sorted(lab.root.glob("notebooks/*.ipynb"))
    assert [p.name for p in shipped] == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    problems = {p.name: d for p in shipped if (d := code_differences(nbformat.read(ROOT / "notebooks" / p.name, as_version=4),
                                                                      nbformat.read(p, as_version=4)))}
    assert not problems, problems


def test_the_code_comparison_reports_a_changed_or_dropped_cell():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A"), nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("print(x)")])
    same = nbformat.from_dict(json.loads(json.dumps(nb)))
    same.cells[0].source = "# A, in plain Markdown"
    assert code_differences(nb, same) == []
    changed = nbformat.from_dict(json.loads(json.dumps(nb)))
    changed.cells[2].source = "print(x + 1)"
    assert code_differences(nb, changed) == ["code cell 1"]
    dropped = nbformat.from_dict(json.loads(json.dumps(nb)))
    del dropped.cells[1]
    assert code_differences(nb, dropped) == ["1 code cells, not 2"]


def test_the_file_check_reports_doctored_notebooks():
    from chalk.teaching.lab_metadata import expected
    wanted = expected()
    nb = nbformat.v4.new_notebook(metadata=json.loads(json.dumps(wanted)), cells=[
        nbformat.v4.new_markdown_cell("The batch is 64 sequences."),
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "64"})])])
    assert file_problems(nb, "a", wanted) == []
    bad = nbformat.from_dict(json.loads(json.dumps(nb)))
    bad.metadata.language_info["version"] = "3.0.1"
    bad.cells[0].source = "The batch is batch_txt sequences."
    assert file_problems(bad, "a", wanted) == ["a: language_info is not JupyterLab's",
                                               "a: names where numbers belong: ['batch_txt']"]
    bad = nbformat.from_dict(json.loads(json.dumps(nb)))
    bad.cells[1].outputs[0]["data"]["text/plain"] = "'peak_txt'"
    assert file_problems(bad, "a", wanted) == ["a: names where numbers belong: ['peak_txt']"]


def add_prose(nb):
    nb.cells.append(nbformat.v4.new_markdown_cell("See [the missing page](nowhere.ipynb)."))
    nb.cells.append(nbformat.v4.new_markdown_cell("The batch is {eval}`batch_txt` sequences."))
    nb.cells.append(nbformat.v4.new_markdown_cell("<details open>\n<summary>Answer</summary>\n\n64\n\n</details>"))


DOCTORED = {
    "language_info": ([r"marked modified on opening"], lambda nb: nb.metadata.language_info.update(version="3.0.1")),
    "kernelspec": ([r"marked modified on opening"], lambda nb: nb.metadata.kernelspec.update(display_name="Python 3")),
    "prose": ([r"dead link (\S*/)?nowhere\.ipynb(\?\S*)?", r"raw MyST '\{eval'", r"1 answer folds open"], add_prose),
}
"""Doctored copies of a notebook and the reports each must get: each metadata edit alone in its
copy (either marks it modified), the prose's defects together (each is its own report). Under
jupyterlab-myst an {eval} role renders, so it shows raw only in the edition's set-up, where alone
the answer folds are HTML that the check counts."""


def test_the_opening_check_reports_doctored_notebooks(lab, lab_page, kernel):
    page, _, console, _ = lab_page
    source = lab.root / min(lab.notebooks(), key=lambda name: (lab.root / name).stat().st_size)
    copies = {what: source.with_name(f"doctored_{what}.ipynb") for what in [*DOCTORED, "untouched"]}
    try:
        for what, path in copies.items():  # beside the original, so that its relative links hold
            nb = nbformat.read(source, as_version=4)
            if what in DOCTORED:
                DOCTORED[what][1](nb)
            nbformat.write(nb, path)
        for what, (reports, _) in DOCTORED.items():
            name = copies[what].relative_to(lab.root).as_posix()
            problems = opening_problems(lab, page, console, name, kernel)
            for report in reports:
                if ("eval" in report or "folds" in report) and lab.mode == "source":
                    continue
                assert any(re.fullmatch(re.escape(f"{lab.mode} {name}: ") + report, p) for p in problems), (what, problems)
        untouched = copies["untouched"].relative_to(lab.root).as_posix()
        assert opening_problems(lab, page, console, untouched, kernel) == []
    finally:
        for path in copies.values():
            path.unlink(missing_ok=True)


CLEAR = """async () => {
    // Outputs and execution counts off every cell, so that what the run leaves is the run's own (the
    // edition's chapters ship the outputs of a run). Returns the code cells still holding either.
    await window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs');
    return window.__panel.content.widgets.filter(c => c.model.type === 'code'
        && (c.model.executionCount !== null || c.model.outputs.length)).length;
}"""
RUN_COMMAND = """async ({command, timeout}) => {
    // A run command resolves once the kernel has answered every cell it sent (or has stopped at an
    // error); bounded, so that a hang fails the run instead of holding the suite.
    return await Promise.race([window.jupyterapp.commands.execute(command).then(() => true),
        new Promise(r => setTimeout(() => r(false), timeout))]);
}"""
NOT_RUN = """() => window.__panel.content.widgets.map((c, i) => [c, i])
    .filter(([c]) => c.model.type === 'code' && c.model.sharedModel.getSource().trim() && c.model.executionCount === null)
    .map(([, i]) => i)"""
"""The indexes of the notebook's code cells that hold no execution count: after CLEAR, those the
run did not reach (none after a whole run without error)."""


def run_all(browser, lab, path, only_to_explorer=False, read_opening=False):
    """Open ``path`` in a new page on JupyterLab and run it there (``run_in``) on a kernel of its
    own. Returns (page, urls that tried to leave the server, its ``opening_problems`` if
    ``read_opening``, read before the run, else None): a notebook that is run is opened once."""
    page, blocked, console = new_page(browser, lab)
    problems = opened_problems(lab, page, console, path, None) if read_opening else None
    run_in(page, lab, path, only_to_explorer=only_to_explorer, is_open=read_opening)
    return page, blocked, problems


def run_in(page, lab, path, kernel=None, only_to_explorer=False, command="notebook:run-all-cells", is_open=False):
    """Open ``path`` in ``page`` on ``kernel`` (by default a new one; unless ``is_open``: opened so
    already), clear its outputs, run all its cells (or those up to its explorer, then the
    explorer's) with ``command`` and wait for the kernel to be idle. NOT_RUN on the page then says
    which cells did not run."""
    if not is_open:
        assert page.evaluate(OPEN, {"path": path, "kernel": kernel}), f"{path}: no kernel"
    assert page.evaluate(CLEAR) == 0, f"{lab.mode} {path}: outputs left after clearing them"
    if only_to_explorer:
        page.evaluate("""() => { const nb = window.__panel.content;
            const i = nb.widgets.findIndex(c => c.model.type === 'code' && /^Explorer\\(/m.test(c.model.sharedModel.getSource()));
            nb.activeCellIndex = i < 0 ? nb.widgets.length - 1 : i; }""")
        command = "notebook:run-all-above"
    cells = len(page.evaluate(NOT_RUN))
    try:
        for _ in range(3):  # a command that reached no cell at all (a session still settling) is given again
            assert page.evaluate(RUN_COMMAND, {"command": command, "timeout": RUN_TIMEOUT_MS}), \
                f"{lab.mode} {path}: the run did not end within {RUN_TIMEOUT_MS // 1000} s"
            if len(page.evaluate(NOT_RUN)) < cells:
                break
        page.wait_for_function("() => window.__panel.sessionContext.session.kernel.status === 'idle'",
                               timeout=RUN_TIMEOUT_MS, polling=500)
        if only_to_explorer:
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            page.wait_for_selector(".jp-OutputArea .widget-image", timeout=RUN_TIMEOUT_MS)
    except Exception:
        page.screenshot(path=str(SHOTS / f"lab_{Path(path).stem}_stuck.png"))
        raise


SHIPPED = "output of an earlier run"


def test_a_run_that_runs_nothing_is_reported(lab, lab_page, kernel):
    """The run's check (NOT_RUN after CLEAR) on a run whose command runs no cell, of a page that
    holds the counts and outputs of an earlier run, as the edition's chapters do: every code cell
    is reported, and the earlier outputs are gone. Left in place, they would hide a dropped run."""
    page = lab_page[0]
    source = lab.root / min((n for n in lab.notebooks() if n.startswith("notebooks/")),
                            key=lambda n: (lab.root / n).stat().st_size)
    nb = nbformat.read(source, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for count, cell in enumerate(code, 1):
        cell.execution_count, cell.outputs = count, [nbformat.v4.new_output("stream", text=SHIPPED)]
    shipped = source.with_name("shipped_run.ipynb")
    nbformat.write(nb, shipped)
    try:
        run_in(page, lab, shipped.relative_to(lab.root).as_posix(), kernel, command="notebook:select-all")
        assert len(page.evaluate(NOT_RUN)) == len(code) > 0
        assert SHIPPED not in page.evaluate(STATE)["text"]
    finally:
        close(page)
        shipped.unlink()


@pytest.fixture(scope="module")
def ran(chromium_browser, lab):
    """{path: (page, blocked urls, opening problems or None)} of the notebooks run in this set-up
    (``runs``), each in its own page; those that ``to_open`` names are read on opening first."""
    pages = {path: run_all(chromium_browser, lab, path, read_opening=path in to_open(lab)) for path in runs(lab.mode)}
    kernels = {page.evaluate("() => window.__panel.sessionContext.session.kernel.id") for page, *_ in pages.values()}
    assert len(kernels) == len(pages), "two notebooks were run in one kernel"
    yield pages
    for page, *_ in pages.values():
        page.context.close()


def screenshot(page, path):
    """The whole notebook in one picture: the window is made as tall as the notebook's content."""
    height = page.evaluate("() => window.__panel.node.querySelector('.jp-WindowedPanel-outer').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(height + 200, 16_000)})
    # Lumino lays the panels out again in an animation frame after the resize: two frames and it has.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_runs_without_errors_or_network(lab, ran):
    for path, (page, blocked, _) in ran.items():
        state = page.evaluate(STATE)
        assert not state["errors"], f"{lab.mode} {path}: {state['errors'][0][:2000]}"
        assert page.evaluate(NOT_RUN) == [], f"{lab.mode} {path}: code cells the run did not reach"
        assert not blocked, blocked


def test_prose_is_rendered_with_its_numbers(lab, ran):
    for path, (page, *_) in ran.items():
        screenshot(page, SHOTS / f"lab_{lab.mode}_{Path(path).parent.name}_{Path(path).stem}.png")
        text = page.evaluate(STATE)["text"]
        for raw in RAW_MYST:
            assert raw not in text, f"{path}: raw MyST {raw!r} is visible: ...{text[text.find(raw) - 200:][:400]}..."
        unevaluated = NAME_LEFT.findall(text)
        assert not unevaluated, f"{lab.mode} {path}: inline expressions not evaluated: {sorted(set(unevaluated))}"


def test_answers_are_folded(lab, ran):
    if lab.mode != "source":
        pytest.skip("the edition's problem sets hold no answer; its chapters' folds are checked on opening")
    for path, (page, *_) in ran.items():
        folded = page.locator(".jp-MarkdownCell details")
        assert folded.count() > 0, f"{lab.mode} {path}: no folded (dropdown) block"
        for i in range(folded.count()):
            assert folded.nth(i).get_attribute("open") is None, f"{lab.mode} {path}: dropdown {i} is open"


def explorer_times(page, name: str) -> list[float]:
    """Milliseconds from each of ``MOVES`` control moves of the explorer to its new image: a slider
    moved one step with the keyboard toward its farther end (back at an end), else a dropdown's next
    option. Toward the farther end, because near an end the picture can stop changing (Chapter 6's
    batch is cut to what fits, so 562,000 and 1,000,000 sequences draw the same image), and a move
    that changes nothing sends no new image to time."""
    image = page.locator(".jp-OutputArea .widget-image").first
    image.wait_for(timeout=RUN_TIMEOUT_MS)
    image.scroll_into_view_if_needed()
    box = image.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][1]")
    handles, selects = box.locator(".noUi-handle"), box.locator("select")
    assert handles.count() + selects.count() > 0, f"{name}: the explorer has no slider or dropdown"
    times, step = [], "ArrowRight"
    if handles.count():
        now, low, high = (float(handles.first.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemin", "aria-valuemax"))
        step = "ArrowLeft" if now - low > high - now else "ArrowRight"
    for _ in range(MOVES):
        # The clock starts at the input event and stops when the image's src changes, both in the page.
        page.evaluate("""(img) => { window.__t0 = null; window.__t1 = null; const before = img.getAttribute('src');
            document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, {capture: true, once: true});
            document.addEventListener('change', () => { window.__t0 = window.__t0 || performance.now(); }, {capture: true, once: true});
            const o = new MutationObserver(() => { if (img.getAttribute('src') !== before) {
                window.__t1 = performance.now(); o.disconnect(); } });
            o.observe(img, {attributes: true, attributeFilter: ['src']}); }""", image.element_handle())
        if handles.count():
            handle = handles.first
            if handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax"):
                step = "ArrowLeft"
            elif handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemin"):
                step = "ArrowRight"
            handle.focus()
            handle.press(step)
        else:
            select = selects.first
            values = [o.get_attribute("value") for o in select.locator("option").all()]
            select.select_option(values[(values.index(select.input_value()) + 1) % len(values)])
        try:  # the bound only catches a move that never redraws; speed is make bench's
            page.wait_for_function("() => window.__t1 !== null && window.__t0 !== null", timeout=RUN_TIMEOUT_MS)
        except Exception as e:
            raise AssertionError(f"{name}: move {len(times) + 1} of {MOVES} ({step if handles.count() else 'menu'}) "
                                 f"brought no new image within {RUN_TIMEOUT_MS // 1000} s") from e
        times.append(page.evaluate("() => window.__t1 - window.__t0"))
    image.screenshot(path=str(SHOTS / f"lab_{name}_explorer.png"))
    return times


def record(key: str, times: list[float]) -> None:
    """Add one explorer's timings to ``BENCH`` (read by bench/bench.py)."""
    BENCH.parent.mkdir(parents=True, exist_ok=True)
    # The two set-ups run on the two test workers at once: one writer at a time, and a whole file.
    with open(BENCH.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(BENCH.read_text()) if BENCH.exists() else {}
        data[key] = {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
                     "moves": len(times), "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
        scratch = BENCH.with_suffix(f".{os.getpid()}")
        scratch.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(scratch, BENCH)


def test_explorer_redraws(lab, ran):
    if lab.mode != "source":
        pytest.skip("Chapter 1 is run in make lab's set-up: the edition's holds the same code (code_differences)")
    path = RUN["chapter"]
    times = explorer_times(ran[path][0], f"{lab.mode}_{Path(path).stem}")
    record(f"{lab.mode}:{Path(path).stem}", times)


def chapters_to_time() -> list[str]:
    if os.environ.get("CHALK_LAB_EXPLORERS") != "all":
        return []
    return sorted(p.name for p in (ROOT / "notebooks").glob("0[0-9]_*.ipynb")
                  if not p.stem.endswith("-deeper") and "_lab-" not in p.stem and p.name != Path(RUN["chapter"]).name)


@pytest.mark.parametrize("chapter", chapters_to_time() or [pytest.param(None, marks=pytest.mark.skip(
    reason="CHALK_LAB_EXPLORERS=all times every chapter's explorer (minutes); Chapter 1's is timed in every run"))])
def test_every_explorer_redraws(chromium_browser, lab, chapter):
    if lab.mode != "source":
        pytest.skip("the explorers are the same code in both set-ups")
    page, blocked, _ = run_all(chromium_browser, lab, f"notebooks/{chapter}", only_to_explorer=True)
    try:
        times = explorer_times(page, f"source_{Path(chapter).stem}")
        record(f"source:{Path(chapter).stem}", times)
        assert not blocked, blocked
    finally:
        page.context.close()
