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
    text = explorer.update(model="jamba-v0.1", target="hgx-h100", dtype="fp8", batch=4096, hold=3600.0)
    kink = float(re.search(r"L = ([\d,]+)", text).group(1).replace(",", ""))
    assert kink == pytest.approx(lc.curves("jamba-v0.1", "hgx-h100", "fp8", 4096).decode.kink, abs=0.5)
    # With the batch cut to what fits, the kink lies below L*, the limit of an unbounded batch.
    assert kink < roofline.balance_context_for("H100-SXM", "jamba-v0.1", "fp8")
    assert "262,144 tokens" in text  # the curves stop at the model's maximum context
    # The cache panel charges the GPUs that wait for a reload (pricing's wait=True).
    assert pricing.cheapest_tier(3600.0, "hgx-h100", wait=True).display in text


def test_curves_stop_at_the_models_maximum_context():
    c = lc.curves("llama-3.1-70b", "hgx-h100", "fp8", 4096)
    assert c.contexts[-1] == c.top == 131_072 and c.contexts.max() == 131_072
    series = c.on(lc.CONTEXTS)
    beyond = lc.CONTEXTS > 131_072
    assert np.all(np.isnan(series["cost"][beyond])) and np.all(np.isfinite(series["cost"][~beyond]))
    assert np.all(np.isfinite(series["prefill"][~beyond]))


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
    view = lc.twin_view("qwen3-235b-a22b", "gb200-nvl72", "google/gemini-3.1-pro-preview", 300.0)
    inside = lc.CONTEXTS <= 131_072
    dec = pricing.cost_against_context("qwen3-235b-a22b", "gb200-nvl72", lc.CONTEXTS[inside], lc.TWIN_BATCH, lc.TWIN_DTYPE)
    pre = pricing.prefill_cost_against_context("qwen3-235b-a22b", "gb200-nvl72", lc.CONTEXTS[inside], lc.TWIN_DTYPE)
    series = view["panels"][0]["series"]
    assert np.allclose(series["cost"][:inside.sum()], dec.usd_per_million_tokens, rtol=5e-3)  # 3 significant digits
    assert np.allclose(series["prefill"][:inside.sum()], pre.usd_per_million_tokens, rtol=5e-3)
    assert all(v is None for v in series["cost"][inside.sum():])  # past the model's maximum context
    # Prices in the same unit: Gemini 3.1 Pro's $12 output per million below the step, $18 above.
    assert series["output"][0] == 12.0 and series["output"][-1] == 18.0
    assert view["readout"]["constants"]["tier"] == lc._short(pricing.cheapest_tier(300.0, "gb200-nvl72", wait=True).display)


def test_graph_c_puts_the_price_above_the_cost_in_dollars():
    # Jamba on 8 H100s at $2 per GPU-hour: every chip-second of decode is 8 x 2 / 3600 dollars, and
    # Gemini's $12 output sits far above decode's cost at short context (the lecture's "step above the cost").
    c = lc.curves("jamba-v0.1", "hgx-h100", "fp8", 4096)
    usd = c.on(c.contexts)
    assert usd["cost"][0] == pytest.approx(1e6 * 8 * 2.0 / 3600 * max(c.decode.compute[0], c.decode.memory[0]), rel=1e-9)
    assert 12.0 > 10 * usd["cost"][0]


@pytest.mark.parametrize("figure", [lc.cost_figure, lc.pass_figure, lc.tier_figure])
def test_static_figures_say_what_they_show(figure):
    text = alt_text(figure())
    assert re.search(r"\d", text) and len(text) > 200


@pytest.mark.parametrize("hold", [300.0, 1e7])
def test_cache_panel_says_whether_holding_or_recomputing_wins(explorer, hold):
    text = explorer.update(model="llama-3.1-70b", target="hgx-h100", dtype="fp8", batch=4096, hold=hold)
    remat = pricing.recompute_usd_per_byte("llama-3.1-70b", "hgx-h100", lc.REMAT_PROMPT, "fp8")
    held = min(pricing.hold_costs(hold, "hgx-h100", wait=True).values())
    assert f"{1e9 * remat:,.3g} USD per GB" in text
    # The rule's own break-even (pricing.rematerialise_after) decides which side of it the hold lies.
    after = pricing.rematerialise_after("llama-3.1-70b", "hgx-h100", lc.REMAT_PROMPT, "fp8", wait=True)
    assert ("recomputing wins" in text) == (hold >= after) == (held >= remat)


def test_twin_cache_bars_include_recompute():
    view = lc.twin_view("llama-3.1-70b", "hgx-h100", "google/gemini-3.1-pro-preview", 86400.0)
    labels = [s.get("label", "") for s in view["panels"][1]["frames"][0]]
    assert any(label.startswith("recompute the prefill") for label in labels)
    assert view["readout"]["constants"]["winner"] in ("holding it wins", "recomputing wins")
