"""Benchmarks of the course, written to _build/bench.json.

Each entry of BENCHMARKS is a function returning a dict of measurements; add one (build time,
page weight, ...) and it is run and recorded with the others. Budgets are stated beside each.
"""
import json
import statistics
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
    from chalk.explorer import Explorer

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


BENCHMARKS = [bench_widget]


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
