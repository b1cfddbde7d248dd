"""Benchmarks of the course against its budgets: `make bench` prints them and writes _build/bench.json.

Each entry of BENCHMARKS is a step returning a dict of measurements; bench/budgets.toml bounds them
by name, and each budget prints PASS, FAIL or SKIP. BENCH_SKIP=test,build (any steps, comma
separated) leaves steps out while developing; skipping build measures the site already in _build/html.
"""
import fnmatch
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "bench.json"
SITE = ROOT / "_build" / "html"
BUDGETS = Path(__file__).with_name("budgets.toml")


def bench_widget() -> dict:
    """Median and worst wall time of each chapter's Explorer.update over its scripted session
    (the chapter's ``SESSION``, listed by ``chalk.figures.explorers``); budgets.toml bounds the
    medians."""
    from chalk.figures import explorers

    results = {}
    for chapter, (cls, session) in explorers().items():
        explorer = cls()
        times = []
        for params in session:
            start = time.perf_counter()
            explorer.update(**params)
            times.append(1e3 * (time.perf_counter() - start))
        results[f"explorer_{chapter}_update_median_ms"] = round(statistics.median(times), 1)
        results[f"explorer_{chapter}_update_max_ms"] = round(max(times), 1)
        results[f"explorer_{chapter}_updates"] = len(times)
    return results


def bench_roofline() -> dict:
    """Chapter 1's lab (``chalk.measure.lab``), run before the build so the machine is quiet: the
    dense step's measured over predicted balance batch and end-point step times. The ``*_factor``
    entries are each ratio or its inverse, whichever is larger, which budgets.toml bounds by 2;
    without a knee the balance factor is infinite."""
    from chalk import measure

    lab = measure.lab()
    cmp, batches = lab.dense_vs_roofline, lab.dense.batches
    ratio = cmp.balance_ratio
    results = {"roofline_r_flop_per_byte": round(lab.ceilings.ratio, 2),
               "roofline_balance_batch_predicted": round(cmp.predicted_balance_batch, 1),
               "roofline_balance_batch_measured": None if ratio is None else round(cmp.knee.balance_batch, 1),
               "roofline_balance_ratio": None if ratio is None else round(ratio, 2),
               "roofline_balance_factor": math.inf if ratio is None else round(max(ratio, 1 / ratio), 2)}
    for b, end in zip((batches[0], batches[-1]), cmp.end_ratios):
        results[f"roofline_step_ratio_batch_{b}"] = round(end, 2)
        results[f"roofline_step_batch_{b}_factor"] = round(max(end, 1 / end), 2)
    return results


def bench_build() -> dict:
    """Wall time of a clean site build (every notebook executed), as `make book` runs it."""
    for folder in ("html", "jupyter_execute", ".doctrees"):
        shutil.rmtree(ROOT / "_build" / folder, ignore_errors=True)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    seconds, log = _timed([str(jupyter_book), "build", str(ROOT), "--all"], "build")
    if log:
        sys.exit(f"bench: the site build failed, so its pages cannot be weighed:\n{log}")
    return {"build_clean_s": round(seconds, 1)}


def bench_class_site() -> dict:
    """Wall time of `make book STUDENT=1` right after the clean build, as an instructor runs it: the
    class site starts from the default build's environment and executes only the problem sets."""
    seconds, log = _timed(["make", "book", "STUDENT=1"], "class-site")
    if log:
        sys.exit(f"bench: the class site's build failed:\n{log}")
    return {"build_class_site_s": round(seconds, 1)}


def bench_test() -> dict:
    """Wall time of `make test`, the whole suite as CI runs it; a failing suite is timed all the same."""
    seconds, log = _timed(["make", "test"], "test")
    if log:
        print(f"bench: `make test` failed:\n{log}", file=sys.stderr)
    return {"make_test_s": round(seconds, 1), "make_test_passed": not log}


def bench_cli(runs: int = 5) -> dict:
    """Start-up of `python -m chalk --help` and `python -m chalk list` against `python -c "import numpy"`
    on the same machine: the median of ``runs`` fresh interpreters each, and each command's ratio
    to the numpy import (issue 23 asks for at most 2)."""
    commands = {"numpy_import": ["-c", "import numpy"], "cli_help": ["-m", "chalk", "--help"],
                "cli_list": ["-m", "chalk", "list"]}
    medians = {}
    for name, args in commands.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
        medians[name] = statistics.median(times)
    results = {f"{name}_s": round(t, 3) for name, t in medians.items()}
    for name in ("cli_help", "cli_list"):
        results[f"{name}_over_numpy"] = round(medians[name] / medians["numpy_import"], 1)
    return results


GRADED = 40
"""Notebooks in the grading step's batch: the instructor's problem sets, in turn, as submissions."""
CLASS = 500
"""The class issue 28 sizes the grader for: its batch time is projected from the step's."""


def bench_grading(count: int = GRADED) -> dict:
    """Wall time of grading a generated batch of ``count`` notebooks (every problem set in turn,
    answered as the instructor's edition answers it) with the grader's two workers, each in its
    sandbox; the median notebook's own seconds, and the batch time projected to ``CLASS``.

    A batch loads the keys and writes the student package once, whatever its size (computing and
    sealing every key, rendering the cards: 10-20 s of CPU), so the projection counts that part
    (``Batch.setup_seconds``) once and scales the rest."""
    import tempfile

    from chalk.teaching import grading
    from chalk.teaching.edition import problem_sets
    sets = problem_sets(ROOT)
    with tempfile.TemporaryDirectory(prefix="chalk-bench-grading-") as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        for n in range(count):
            shutil.copyfile(sets[n % len(sets)], folder / f"student{n:03d}_{sets[n % len(sets)].name}")
        start = time.perf_counter()
        batch = grading.grade(folder, Path(tmp) / "out", workers=2)
        seconds = time.perf_counter() - start
    ok = sum(r.status == "ok" for r in batch.rows)
    return {"grading_batch_s": round(seconds, 1), "grading_notebooks": count, "grading_ok": ok,
            "grading_notebook_median_s": round(statistics.median(r.seconds for r in batch.rows), 2),
            "grading_setup_s": round(batch.setup_seconds, 1),
            f"grading_{CLASS}_projected_s": round(batch.setup_seconds + (seconds - batch.setup_seconds) / count * CLASS)}


def _timed(command: list[str], name: str) -> tuple[float, str]:
    """(seconds `command` took, "" or the tail of its log if it failed); the log is _build/bench-<name>.log."""
    log = OUT.with_name(f"bench-{name}.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log.open("w") as sink:
        proc = subprocess.run(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    return seconds, "" if proc.returncode == 0 else f"{log}:\n{log.read_text()[-3000:]}"


def bench_pages(site: Path = SITE) -> dict:
    """Bytes of every file a browser requests for each built page, and any request that leaves the site.

    Each page opens in a fresh Chromium context (a cold cache, as a first visit) with the network
    cut off; it counts as loaded once MathJax has typeset and the fonts it asked for have arrived.
    """
    from playwright.sync_api import sync_playwright
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import offline_guard  # the browser tests' own rule: a file:// request goes on, no other

    results, files, external = {}, {}, {}
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.relative_to(site).parts[0].startswith("_"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"),
                                     args=["--no-sandbox", "--disable-gpu"])
        for rel in pages:
            files[rel], external[rel] = _load(browser, site, rel, offline_guard)
            results[f"page_mb:{rel}"] = round(sum(files[rel].values()) / 1e6, 2)
        browser.close()
    results["external_requests"] = sum(len(urls) for urls in external.values())
    results["page_files"] = {rel: {"files": files[rel], "external": external[rel]} for rel in pages}
    return results


def _load(browser, site: Path, rel: str, offline_guard) -> tuple[dict, list]:
    """({file under the site: bytes}, [urls outside it]) of one page as Chromium loads it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside = []
    context.route("**/*", offline_guard(outside))
    page = context.new_page()
    loaded = {}

    def count(request):
        # The file's size on disk is what Chromium read (file:// has no compression); asking
        # Chromium for the body fails for a response the page has moved on from.
        path = Path(urllib.parse.unquote(urllib.parse.urlsplit(request.url).path))
        name = path.relative_to(site).as_posix() if path.is_relative_to(site) else str(path)
        loaded[name] = loaded.get(name, 0) + path.stat().st_size

    page.on("requestfinished", count)
    page.goto((site / rel).as_uri(), wait_until="networkidle")
    page.evaluate("async () => { if (window.MathJax?.startup?.promise) await MathJax.startup.promise;"
                  " await document.fonts.ready; }")
    page.wait_for_load_state("networkidle")
    context.close()
    return dict(sorted(loaded.items(), key=lambda item: -item[1])), outside


def bench_lab() -> dict:
    """Slider to new image in JupyterLab, median and max ms over 10 moves of every chapter's
    explorer: tests/test_lab.py's explorer tests, run here with CHALK_LAB_EXPLORERS=all (the suite
    times Chapter 1's only), write them to _build/bench/lab_explorers.json, which this step reads."""
    path = ROOT / "_build" / "bench" / "lab_explorers.json"
    path.unlink(missing_ok=True)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "tests/test_lab.py", "-k", "source and explorer_redraws"],
                         cwd=ROOT, env=dict(os.environ, CHALK_LAB_EXPLORERS="all"), capture_output=True, text=True)
    if run.returncode != 0:  # the explorers it did time still count; the one that failed reads "not measured"
        print(f"bench: tests/test_lab.py's explorer timing failed (rc {run.returncode}):\n{run.stdout[-2000:]}", file=sys.stderr)
    if not path.exists():
        return {}
    results = {}
    for key, timing in json.loads(path.read_text()).items():
        name = key.replace(":", "_")
        results[f"lab_explorer_{name}_median_ms"] = timing["median_ms"]
        results[f"lab_explorer_{name}_max_ms"] = timing["max_ms"]
    return results


BENCHMARKS = {"widget": bench_widget, "cli": bench_cli, "roofline": bench_roofline, "build": bench_build,
              "class_site": bench_class_site, "pages": bench_pages, "grading": bench_grading, "test": bench_test,
              "lab": bench_lab}


def budgets() -> dict[str, float]:
    """{pattern of measurement names: most allowed}, from bench/budgets.toml."""
    with BUDGETS.open("rb") as f:
        return tomllib.load(f)["max"]


def verdicts(results: dict, limits: dict[str, float]) -> list[tuple[str, str]]:
    """(PASS, FAIL or SKIP, line) for every budget: each measurement whose name matches its pattern."""
    lines = []
    for pattern, limit in limits.items():
        measured = {k: v for k, v in results.items() if fnmatch.fnmatchcase(k, pattern)}
        if not measured:
            lines.append(("SKIP", f"{pattern} <= {limit}: not measured"))
        for key, value in measured.items():
            lines.append(("PASS" if value <= limit else "FAIL", f"{key} = {value} (budget {limit})"))
    return lines


def main() -> dict:
    limits = budgets()
    skip = set(filter(None, os.environ.get("BENCH_SKIP", "").split(",")))
    unknown = skip - set(BENCHMARKS)
    if unknown:
        sys.exit(f"BENCH_SKIP: unknown step(s) {sorted(unknown)}; the steps are {list(BENCHMARKS)}")
    results = {}
    for name, bench in BENCHMARKS.items():
        if name not in skip:
            results.update(bench())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    pages = results.pop("page_files", {})
    for key, value in results.items():
        print(f"{key}: {value}")
    for rel, page in pages.items():
        if any(fnmatch.fnmatchcase(f"page_mb:{rel}", pattern) for pattern in limits):
            largest = list(page["files"].items())[:5]
            print(f"largest files of {rel}: " + ", ".join(f"{n} {b / 1e6:.2f} MB" for n, b in largest))
    for verdict, line in verdicts(results, limits):
        print(f"{verdict} {line}")
    return results


if __name__ == "__main__":
    main()
