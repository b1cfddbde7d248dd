"""Benchmarks of the course, written to _build/bench.json.

Each entry of BENCHMARKS is a function returning a dict of measurements; add one (build time,
page weight, ...) and it is run and recorded with the others. Budgets are stated beside each.
"""
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "bench.json"

WIDGET_BUDGET_MS = 50.0
"""Median time of one explorer update (formulas and redraw) that still feels live."""

# A user's session: one control moved at a time, batch and context most often.
WIDGET_UPDATES = [
    {"batch": 10}, {"batch": 30}, {"batch": 100}, {"batch": 300}, {"batch": 3000},
    {"context": 1000}, {"context": 8000}, {"context": 32000}, {"batch": 20000}, {"batch": 500},
    {"dtype": "bf16"}, {"batch": 800}, {"context": 2000}, {"usd_per_chip_hour": 3.5},
    {"chip": "B200", "chips": 8}, {"batch": 50}, {"batch": 5000}, {"context": 16000},
    {"model": "llama-3-70b"}, {"batch": 200}, {"batch": 2000}, {"context": 500},
    {"chip": "H100-SXM"}, {"dtype": "fp8"}, {"batch": 64}, {"batch": 640}, {"context": 4000},
    {"model": "mixtral-8x7b"}, {"batch": 5}, {"batch": 12000},
]


def bench_widget() -> dict:
    """Median and worst wall time of Explorer.update over a scripted session of 30 updates."""
    from chalk.figures.explorer import Explorer

    explorer = Explorer()
    times = []
    for params in WIDGET_UPDATES:
        start = time.perf_counter()
        explorer.update(**params)
        times.append(1e3 * (time.perf_counter() - start))
    median = statistics.median(times)
    return {"widget_update_median_ms": round(median, 1), "widget_update_max_ms": round(max(times), 1),
            "widget_updates": len(times), "widget_budget_ms": WIDGET_BUDGET_MS,
            "widget_within_budget": median <= WIDGET_BUDGET_MS}


BUILD_BUDGET_S = 180.0
"""`make book` on a clean tree, after the install."""
PAGE_BUDGET_MB = 3.0
"""The Chapter 1 page with its images and static twin."""
CHAPTER = ROOT / "_build" / "html" / "notebooks" / "01_batching.html"


def bench_build() -> dict:
    """Wall time of a clean site build (every notebook executed), as `make book` runs it."""
    for folder in ("html", "jupyter_execute", ".doctrees"):
        shutil.rmtree(ROOT / "_build" / folder, ignore_errors=True)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    start = time.perf_counter()
    subprocess.run([str(jupyter_book), "build", str(ROOT), "--all"], cwd=ROOT, check=True,
                   capture_output=True)
    seconds = time.perf_counter() - start
    return {"build_clean_s": round(seconds, 1), "build_budget_s": BUILD_BUDGET_S,
            "build_within_budget": seconds <= BUILD_BUDGET_S}


def bench_page_weight() -> dict:
    """Bytes of the Chapter 1 page: its HTML and images, and everything a browser loads for it."""
    from playwright.sync_api import sync_playwright

    own = CHAPTER.stat().st_size + sum(
        (CHAPTER.parent / src).stat().st_size
        for src in _image_sources(CHAPTER.read_text()))
    loaded = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page()
        sizes = []
        page.on("requestfinished", lambda req: sizes.append(len(req.response().body())))
        page.goto(CHAPTER.as_uri(), wait_until="networkidle")
        loaded = sum(sizes)
        browser.close()
    return {"chapter1_page_mb": round(own / 1e6, 2), "chapter1_all_loaded_mb": round(loaded / 1e6, 2),
            "page_budget_mb": PAGE_BUDGET_MB, "page_within_budget": own / 1e6 <= PAGE_BUDGET_MB}


def _image_sources(html: str) -> list[str]:
    return sorted(set(re.findall(r'<img[^>]+src="([^"]+)"', html)) - {""})


BENCHMARKS = [bench_widget, bench_build, bench_page_weight]


def main() -> dict:
    results = {}
    for bench in BENCHMARKS:
        results.update(bench())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    for key, value in results.items():
        print(f"{key}: {value}")
    return results


if __name__ == "__main__":
    main()
