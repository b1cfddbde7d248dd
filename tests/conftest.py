"""Shared test settings: the repository root, a bounded Hypothesis profile for CI, and the built
website with a browser to read it (shared by the browser tests, so the site is built once)."""
import fcntl
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from xdist.scheduler import LoadScopeScheduling

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


SITE_LOCK, SITE_STAMP = ROOT / "_build" / ".site.lock", ROOT / "_build" / ".site.stamp"
NO_SITE_LONG = ("test_lab.py", "test_student_edition.py", "test_student_venv.py", "test_grading.py",
                "test_problem_keys.py", "test_explorer.py")
"""The longest files that need no site, longest first: the workers start on them, then go through
the other files that need none, while the site builds in a third process."""
SITE_LONG = ("test_reader.py", "test_a11y.py", "test_instructors_guide.py", "test_answers_not_printed.py")
"""The files that read the site, longest first, then the other files that read it: last, so the site
is most likely built when a worker reaches them, and split in units (SPLIT) so the ends even out."""
SPLIT = {"test_lab.py": ("lab",), "test_a11y.py": ("chunk",), "test_reader.py": ("viewport", "desktop", "phone")}
"""Files whose tests xdist may share between its workers, each by its costly fixture: JupyterLab's
set-ups (each its own server), the accessibility crawl's chunks of pages, the reader's crawl at each
width. A test's unit is named by the first of these that is a parameter of it (by its value) or a
fixture it uses (by its name); a test of such a file that uses none is in the file's unit. Every
other file is one unit."""


def _run_id() -> str:
    return os.environ.get("PYTEST_XDIST_TESTRUNUID", f"solo-{os.getpid()}")


def _stamp_status() -> str | None:
    """This run's site build status ('ok' or its log), or None if this run has not built the site."""
    if SITE_STAMP.is_file():
        run, _, status = SITE_STAMP.read_text().partition("\n")
        if run == _run_id():
            return status
    return None


def work_unit(item) -> str:
    """The unit of work a test belongs to, which runs on one worker: its file, so a module's costly
    fixture (a grading batch, a crawl of the site) is made once, or for a file in SPLIT, the file and
    the parameter or fixture that splits it."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for key in SPLIT.get(item.path.name, ()):
        if key in params or key in item.fixturenames:
            return f"{item.path.name}[{params.get(key, key)}]"
    return item.path.name


def _units_file(controller_pid: int) -> Path:
    return ROOT / "_build" / f".work-units-{controller_pid}.json"


def pytest_collection_modifyitems(config, items):
    """Order the tests for two workers: the long files that need no site first, then the other files
    that need none, then the site's long readers and the rest (order within a rank: as collected); a
    worker writes each test's unit for the controller's scheduler (UnitScheduling). Start building the
    site now, in the background, if any collected test reads it."""
    def needs_site(item):
        return "built_site" in getattr(item, "fixturenames", ())

    def rank(item):
        name = item.path.name
        if name in NO_SITE_LONG:
            return NO_SITE_LONG.index(name)
        if name in SITE_LONG:
            return len(NO_SITE_LONG) + 1 + SITE_LONG.index(name)
        return len(NO_SITE_LONG) + (len(SITE_LONG) + 1 if needs_site(item) else 0)

    items.sort(key=rank)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Every worker collects the same tests; the last to write leaves the same map. Its controller
        # is its parent process (execnet starts the workers).
        units = _units_file(os.getppid())
        units.parent.mkdir(parents=True, exist_ok=True)
        scratch = units.with_suffix(f".{os.getpid()}")
        scratch.write_text(json.dumps({item.nodeid: work_unit(item) for item in items}))
        os.replace(scratch, units)
    if any(needs_site(item) for item in items) and "CHALK_SITE" not in os.environ:
        _start_site_build()


def pytest_xdist_make_scheduler(config, log):
    return UnitScheduling(config, log)


class UnitScheduling(LoadScopeScheduling):
    """xdist's scope scheduling over conftest's units of work (work_unit), in the collected order
    (``make test`` passes --no-loadscope-reorder). Not xdist's loadgroup: it names a test's group by
    rewriting the test's id, which pytest 9 no longer allows (its ids are not a settable string), so
    its groups silently fell back to one test per unit. The units come from the workers' collection."""

    def _reschedule(self, node) -> None:
        # xdist hands a node another unit while it has two tests or fewer pending. A node that runs a
        # one-test unit (an accessibility chunk) then takes the next two units as well, which the other
        # node may be free to run: 2c089f1's and 1012555's runs read all three chunks on one worker while
        # the other waited. A node must know one test beyond the one it runs, so it gets a unit when it
        # has fewer than two pending (or, with none left, is shut down).
        if node.shutting_down or not self.workqueue or self._pending_of(self.assigned_work[node]) < 2:
            super()._reschedule(node)

    def _split_scope(self, nodeid: str) -> str:
        if not hasattr(self, "_units"):
            path = _units_file(os.getpid())
            self._units = json.loads(path.read_text())
            path.unlink()
        return self._units.get(nodeid) or nodeid.split("::")[0]


def _start_site_build() -> None:
    """Start the site build in a child process holding the site lock, unless another process of
    this run holds it or has built the site already."""
    SITE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    lock = open(SITE_LOCK, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another worker's build is under way
        lock.close()
        return
    try:
        if _stamp_status() is None:
            # The child inherits the locked file and keeps the lock until it has written the stamp.
            subprocess.Popen([sys.executable, __file__, "--build-site", _run_id(), str(lock.fileno())],
                             pass_fds=(lock.fileno(),), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        lock.close()


@pytest.fixture(scope="session")
def built_site():
    """The site as `make book` builds it, with `-W -n --keep-going` so a failing cell, a broken
    reference or any Sphinx warning fails it; with CHALK_SITE set, the site already there.

    Built once per test run, in the background from collection on (``_start_site_build``): a test
    that needs it waits at the lock and reads the stamp the build leaves with the run's id; if no
    build of this run is found, the test builds the site itself.
    """
    if "CHALK_SITE" in os.environ:
        return SITE
    SITE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(SITE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        status = _stamp_status()
        if status is None:
            status = _build_site()
            SITE_STAMP.write_text(f"{_run_id()}\n{status}")
    assert status == "ok", f"the site build of this run failed:\n{status}"
    return SITE


BUILD_TIMEOUT_S = 3600
"""Only a hung build should reach it: the build shares two cores with the unit tests from the start
of the run, and took 15 minutes on a machine loaded by other work."""


PORT_RACE = re.compile(r"ZMQError: Address already in use[\s\S]*Kernel died before replying to kernel_info")
"""A kernel that lost its port: jupyter_client picks a free TCP port, closes it and hands it to the
kernel, and any process on the machine may take it in between (seen once in about 35 kernel starts
on a heavily loaded machine). It says nothing about the course, so the build runs once more."""


def _build_site(attempts: int = 2) -> str:
    """'ok', or the end of the build log and its warnings."""
    jb = Path(sys.executable).with_name("jupyter-book")
    try:
        proc = subprocess.run([str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going"],
                              cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the site build ran past {BUILD_TIMEOUT_S} s"
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 and attempts > 1 and PORT_RACE.search(log):
        return _build_site(attempts - 1)
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


def offline_guard(refused: list):
    """A Playwright route handler that keeps the browser on the disk: a file:// request goes on,
    any other is recorded in ``refused`` and aborted (``context.route("**/*", offline_guard(urls))``)."""
    def route_to_disk(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()
    return route_to_disk


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


if __name__ == "__main__" and sys.argv[1:2] == ["--build-site"]:
    # The background build started by _start_site_build: it holds the site lock (inherited fd).
    os.environ["PYTEST_XDIST_TESTRUNUID"] = sys.argv[2]
    SITE_STAMP.write_text(f"{sys.argv[2]}\n{_build_site()}")


# --- generated numeric modules ----------------------------------------------------------------------
def assert_function_is_expression(expr, function, names, seed, choices, sweep):
    """A function of a generated plain-Python module (moe_numeric, overtraining_numeric) against the
    SymPy expression it was written from: at 20 random points drawn from ``choices``, and over arrays
    (each symbol swept over the four values of ``sweep``), to 1e-12 relative. Either may be a dict
    instead, by symbol name, ``"*"`` for the symbols it does not name; a swept value that is not an
    array (a scalar of the dict) stays one."""
    from sympy import sympify

    rng = random.Random(seed)
    of = lambda table, s: table.get(names[s], table["*"]) if isinstance(table, dict) else table  # noqa: E731
    for _ in range(20):
        values = {s: rng.choice(of(choices, s)) for s in sorted(expr.free_symbols, key=names.get)}
        exact = float(expr.xreplace({s: sympify(v) for s, v in values.items()}))  # subs: seconds on a Max
        assert function(**{names[s]: v for s, v in values.items()}) == pytest.approx(exact, rel=1e-12)
    swept = {s: np.asarray(of(sweep, s), dtype=float) for s in expr.free_symbols}
    exact = [float(expr.xreplace({s: sympify((v[i] if v.ndim else v).item()) for s, v in swept.items()})) for i in range(4)]
    assert np.allclose(function(**{names[s]: v for s, v in swept.items()}), exact, rtol=1e-12)
