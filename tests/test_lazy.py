"""chalk.lazy: derived formulas stay module attributes, and importing a module builds none of them."""
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chalk.lazy import REGISTRIES, Lazy

LIB = Path(__file__).resolve().parents[1] / "lib"


def _lazy_modules() -> list[str]:
    """Every chalk module that registers lazy names, found from its source so that a new one is
    tested without being listed here."""
    return sorted(".".join(path.relative_to(LIB).with_suffix("").parts)
                  for path in (LIB / "chalk").rglob("*.py")
                  if re.search(r"^\w+ = Lazy\(__name__\)", path.read_text(), re.M))


MODULES = _lazy_modules()


def test_the_scan_finds_the_chapter_modules():
    # A scan that found nothing would make every test below pass vacuously.
    assert {"chalk.roofline", "chalk.calculator", "chalk.pricing", "chalk.moe", "chalk.pipeline",
            "chalk.memory", "chalk.timetable", "chalk.operator", "chalk.scaling", "chalk.reversible"} <= set(MODULES)


def test_importing_builds_nothing():
    """In a fresh interpreter, importing every lazy module runs no builder: module-level code that
    reads a lazy name (its own or another module's) would build it at import and show up here."""
    code = (f"import importlib, json\nfor m in {MODULES!r}: importlib.import_module(m)\n"
            "from chalk.lazy import REGISTRIES\n"
            "print(json.dumps({m: r.built for m, r in REGISTRIES.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    built = json.loads(out.stdout.splitlines()[-1])
    assert set(MODULES) <= set(built)
    assert {m: names for m, names in built.items() if names} == {}


@pytest.mark.parametrize("name", MODULES)
def test_every_lazy_name_resolves_once_and_is_listed(name):
    module = importlib.import_module(name)
    registry = REGISTRIES[name]
    assert registry.builders, f"{name} creates a registry but registers nothing"
    listed = dir(module)
    for attr, builder in registry.builders.items():
        value = getattr(module, attr)
        assert value is builder() is getattr(module, attr), attr
        assert registry.built.count(attr) == 1, attr
        assert attr in listed, attr
    assert not hasattr(module, "no_such_formula")


def test_from_import_reaches_a_lazy_name():
    from chalk.pipeline import MIN_LAYERS  # noqa: F401 -- PEP 562 serves from-imports too
    from chalk.notation import E, k, rho
    # rho E / (2 k (E - 1)), the rack-boundary layers per stage, worked by hand.
    assert float(MIN_LAYERS.subs({rho: 8, E: 64, k: 8})) == pytest.approx(8 * 64 / (2 * 8 * 63))


def test_a_builder_must_name_its_value_with_an_underscore():
    registry = Lazy("test_lazy_scratch")
    try:
        with pytest.raises(ValueError, match="leading underscore"):
            registry(lambda: 1)
    finally:
        del REGISTRIES["test_lazy_scratch"]


def test_model_formulas_cover_the_kinds_and_phases_the_catalog_checks():
    # chalk.models validates the catalog without SymPy, against plain tuples of attention kinds and
    # phases; the formulas it evaluates later must be written for exactly those.
    from chalk.catalog import model_formulas, models
    assert set(model_formulas.ATTENTION_PARAMS) == set(models._ATTENTION_KINDS)
    assert tuple(model_formulas.ATTENTION_PHASE_FLOPS) == models.PHASES
    assert models.KV_BYTES_LONG is model_formulas.KV_BYTES_LONG  # the old names still reach them
