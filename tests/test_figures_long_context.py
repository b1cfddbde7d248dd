"""Chapter 6's explorer and twin: their numbers are chalk.pricing's, and a bad choice shows a message
instead of a chart."""
import json
import re

import numpy as np
import pytest

from chalk import pricing, roofline
from chalk.figures import long_context as lc
from chalk.figures.canvas import alt_text


@pytest.fixture(scope="module")
def explorer():
    return lc.Explorer()


def test_readout_kink_and_tier_are_pricings(explorer):
    text = explorer.update(model="llama-3.1-70b", target="H100-SXM", dtype="fp8", batch=1e6, hold=3600.0)
    kink = float(re.search(r"L = ([\d,]+)", text).group(1).replace(",", ""))
    # At a million sequences the kink is within the grid's step (10 stops a decade) of L*.
    assert kink == pytest.approx(roofline.balance_context_for("H100-SXM", "llama-3.1-70b", "fp8"), rel=0.26)
    assert pricing.cheapest_tier(3600.0, "H100-SXM").display in text


def test_hold_moves_only_the_marker(explorer):
    explorer.update(hold=10.0)
    view = explorer.figure._view
    explorer.update(hold=1e5)
    assert explorer.figure._view == view
    assert explorer.figure.here.get_xdata()[0] == 1e5


def test_bad_batch_shows_a_message(explorer):
    text = explorer.update(batch=0)
    assert "color:#b00" in text and "batch" in text
    assert explorer.image.value[:4] == b"\x89PNG"
    assert "color:#b00" not in explorer.update(batch=1e4)


def test_twin_views_cover_every_combination_and_hold_no_dollar():
    data = lc.twin_data()
    assert len(data["views"]) == len(lc.TWIN_MODELS) * len(lc.TWIN_TARGETS) * len(lc.TWIN_PRICES) * len(lc.TWIN_HOLDS)
    assert "$" not in json.dumps(data)


def test_twin_cost_series_is_the_libraries():
    view = lc.twin_view("deepseek-v3", "gb200-nvl72", "google/gemini-2.5-pro", 300.0)
    c = pricing.cost_against_context("deepseek-v3", "gb200-nvl72", lc.CONTEXTS, lc.TWIN_BATCH, lc.TWIN_DTYPE)
    assert np.allclose(view["panels"][0]["series"]["cost"], c.relative, rtol=5e-3)  # 3 significant digits
    assert view["readout"]["constants"]["tier"] == lc._short(pricing.cheapest_tier(300.0, "gb200-nvl72").display)


@pytest.mark.parametrize("figure", [lc.cost_figure, lc.pass_figure, lc.tier_figure])
def test_static_figures_say_what_they_show(figure):
    text = alt_text(figure())
    assert re.search(r"\d", text) and len(text) > 200
