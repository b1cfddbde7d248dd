"""The package layout README describes is the one on disk, and the public names survive moves."""
import importlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT

PACKAGE = ROOT / "lib" / "chalk"


def readme_layout_paths() -> list[str]:
    """Every backticked path in the first column of README's layout table."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Layout"):]
    paths = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            if paths:
                break
            continue
        first = line.split("|")[1]
        paths += re.findall(r"`([^`]+)`", first)
    return paths


def test_every_path_in_readme_layout_exists():
    paths = readme_layout_paths()
    assert len(paths) >= 10, paths
    for path in paths:
        assert (ROOT / path.rstrip("/")).exists(), f"README's layout names {path}, which is not there"


def test_readme_layout_names_every_part_of_the_package():
    named = set(readme_layout_paths())
    parts = [p for p in PACKAGE.iterdir()
             if p.name not in ("__init__.py", "__main__.py", "__pycache__") and not p.name.endswith(".egg-info")]
    for part in parts:
        rel = f"{part.relative_to(ROOT)}{'/' if part.is_dir() else ''}"
        assert rel in named, f"README's layout table does not name {rel}"


@pytest.mark.parametrize("short, home", [("hardware", "catalog.hardware"), ("models", "catalog.models"),
                                         ("systems", "catalog.systems"), ("prices", "catalog.prices")])
def test_short_names_are_the_catalog_modules(short, home):
    assert importlib.import_module(f"chalk.{short}") is importlib.import_module(f"chalk.{home}")
    import chalk
    assert getattr(chalk, short) is importlib.import_module(f"chalk.{home}")


def test_documented_calls_work_from_a_fresh_interpreter():
    # The README's examples, in a new process so no earlier import hides a broken alias.
    code = ("import chalk.hardware, chalk.models, chalk.systems, chalk.prices\n"
            "from chalk import roofline, calculator\n"
            "assert chalk.hardware.get('H100-SXM').name == 'H100-SXM'\n"
            "assert chalk.systems.get('gb200-nvl72').count == 72\n"
            "assert chalk.prices.get('google/gemini-2.5-pro').input > 0\n"
            "assert roofline.balance_batch('H100-SXM', 'deepseek-v3', dtype='bf16') > 0\n"
            "assert calculator.fit('llama-3.1-8b', 'H100-SXM', 1, 1).fits\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
