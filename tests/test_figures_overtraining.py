"""Chapter 5's explorer and twin, without a browser: the readout and every twin view carry
``chalk.scaling``'s numbers, bad inputs show messages, and the session stays fast enough."""
import json
import re

import numpy as np
import pytest
from conftest import view_redraws

from chalk import scaling
from chalk.figures import overtraining, twin
from chalk.figures.overtraining import Explorer

PNG = b"\x89PNG\r\n\x1a\n"


def numbers(text):
    """The numbers of a readout, in order, as floats (thousands separators dropped)."""
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*(?:e[+-]?\d+)?", text)]


@pytest.fixture(scope="module")
def ex():
    return Explorer(fit="epoch", target_loss=2.1, inference_tokens=1e14, rl_tokens=0.0, inference_inefficiency=2.0)


def test_readout_is_scalings_lifetime_optimum(ex):
    n, d, total = scaling.lifetime_optimal(2.1, 1e14, "epoch", 0.5, rl_tokens=0.0,
                                           rl_flops_per_param_token=3, rl_efficiency=1 / 3)
    text = ex.text.value
    assert f"N* = {n / 1e9:,.3g} B" in text
    assert f"D<sub>pre</sub> = {d / 1e12:,.3g} T" in text
    assert f"lifetime {total:.3g} FLOPs" in text
    assert f"{scaling.overtraining_ratio(n, d):,.3g}&times; the 20:1 rule" in text
    assert bytes(ex.image.value).startswith(PNG)


def test_more_inference_means_a_smaller_model_on_more_tokens(ex):
    ex.update(inference_tokens=1e16)
    big = scaling.lifetime_optimal(2.1, 1e16, "epoch", 0.5)
    small = scaling.lifetime_optimal(2.1, 1e14, "epoch", 0.5)
    assert big[0] < small[0] and big[1] > small[1]
    assert f"N* = {big[0] / 1e9:,.3g} B" in ex.text.value
    ex.update(inference_tokens=1e14)


@pytest.mark.parametrize("params, words", [
    ({"target_loss": 1.7}, ["target_loss", "1.8172"]),           # at or below epoch's irreducible loss
    ({"rl_inefficiency": 0.5}, ["rl_inefficiency", "between 1"]),
    ({"inference_tokens": 0.0}, ["inference_tokens"]),
    ({"rl_flops_per_param_token": 11.0}, ["rl_flops_per_param_token", "2", "10"]),
])
def test_bad_inputs_show_a_message_naming_the_parameter(params, words):
    e = Explorer(fit="epoch", **params)
    assert "color:#b00" in e.text.value
    for w in words:
        assert w in e.text.value
    assert bytes(e.image.value).startswith(PNG)
    e.update(**{k: Explorer.defaults[k] for k in params})
    assert "color:#b00" not in e.text.value


def test_unknown_fit_lists_the_known_ones():
    e = Explorer()
    e.update(fit="kaplan")
    assert "hoffmann" in e.text.value and "epoch" in e.text.value


def test_defaults_are_the_lectures_scenario():
    d = Explorer.defaults
    # 50 M tokens/s per model for 60 days: the lecture's own numbers, computed by hand here.
    assert d["inference_tokens"] == pytest.approx(50e6 * 60 * 86_400, rel=0.005)
    assert d["rl_tokens"] == pytest.approx(d["inference_tokens"] / 1.5, rel=0.005)


def test_contours_lie_on_the_loss():
    n, d = overtraining.contour("hoffmann", 2.0)
    ok = np.isfinite(n)
    assert ok.sum() > 50
    assert np.allclose(scaling.loss(n[ok], d[ok], "hoffmann"), 2.0, atol=2e-3)


def test_moving_the_inference_volume_redraws_only_the_marker():
    """The session's commonest move (the inference volume) keeps the contours and curves: only the
    marker and cursor are drawn again. Any other control changes the view and redraws it."""
    session = overtraining.SESSION
    redrawn = view_redraws(Explorer(), session)
    volume_only = [i for i, step in enumerate(session) if i > 0 and set(step) == {"inference_tokens"}]
    assert len(volume_only) > 15
    assert not any(redrawn[i] for i in volume_only)
    others = [i for i, step in enumerate(session) if i > 0 and set(step) != {"inference_tokens"}]
    assert all(redrawn[i] for i in others)


@pytest.fixture(scope="module")
def data():
    return overtraining.twin_data()


def test_twin_views_are_scalings_numbers(data):
    stops = np.array(data["controls"][-1]["values"]) * 1e12
    for key, view in data["views"].items():
        fit, target, rl, ineff = key.split("|")
        n, d, _ = scaling.lifetime_optimal(float(target), stops, fit, 1 / float(ineff), rl_tokens=float(rl),
                                           rl_flops_per_param_token=3, rl_efficiency=1 / float(ineff))
        assert np.allclose(view["panels"][0]["series"]["N"], n / 1e9, rtol=0.006), key
        assert np.allclose(view["panels"][1]["series"]["D_pre"], d / 1e12, rtol=0.006), key
        rule = view["panels"][2]["series"]["vs_rule"]
        assert np.allclose(rule, d / (20 * n), rtol=0.01), key


def test_twin_is_small_and_loads_in_html(data):
    payload = json.dumps(data, separators=(",", ":"))
    assert len(payload) < 250_000
    assert 'class="chalk-twin"' in twin.twin_html(data)


def test_figures_are_drawn():
    from chalk.figures.canvas import png
    for fig in (overtraining.heuristic_figure(), overtraining.catalog_figure()):
        assert png(fig).startswith(PNG)
    assert overtraining.figure().startswith(PNG)
