"""Chapter 1's live explorer and its static twin, without a browser.

The browser test in test_site.py moves the twin's slider on the built page; here the HTML, the
embedded JSON and the explorer's readouts are checked against hand-computed values.
"""
import json
import re

import numpy as np
import pytest

from chalk import hardware, models
from chalk.figures import twin
from chalk.errors import ChalkError
from chalk.figures.explorer import Explorer

PNG = b"\x89PNG\r\n\x1a\n"


def hand_usd_per_mtok(chip, model, batch, context, dtype, chips, usd):
    c, m = hardware.get(chip), models.get(model)
    b_w = hardware.BYTES_PER_ELEMENT[dtype]
    compute = 2 * batch * m.active_params / (chips * c.flops(dtype))
    memory = (m.total_params * b_w + batch * context * m.kv_bytes_per_token(2)) / (chips * c.hbm_bandwidth)
    return 1e6 * max(compute, memory) * chips * usd / 3600 / batch


@pytest.fixture(scope="module")
def explorer():
    return Explorer(model="llama-3-70b", chip="H100-SXM", chips=8, dtype="bf16", context=1024,
                    batch=100, usd_per_chip_hour=2.0)


def test_update_reports_the_operating_point(explorer):
    text = explorer.update(batch=100, context=1024)
    assert "memory-bound (weights)" in text
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 2.0)
    assert f"${usd:.3g} per million tokens" in text
    assert bytes(explorer.image.value).startswith(PNG)
    assert explorer.controls["batch"].value == 100


def test_price_parameter_scales_the_cost(explorer):
    text = explorer.update(batch=100, context=1024, usd_per_chip_hour=4.0)
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 4.0)
    assert f"${usd:.3g} per million tokens" in text
    explorer.update(usd_per_chip_hour=2.0)


def test_moving_a_control_redraws(explorer):
    explorer.update(batch=100)
    before = explorer.image.value
    explorer.controls["batch"].value = 1000
    assert explorer.params["batch"] == 1000
    assert explorer.image.value != before


def test_does_not_fit_is_said_instead_of_numbers(explorer):
    text = explorer.update(batch=20000, context=32768)
    assert "does not fit" in text and "short by" in text
    assert "tokens/s" not in text
    text = explorer.update(model="deepseek-v3", chips=1, batch=1, context=0)
    assert "does not fit" in text
    text = explorer.update(model="llama-3-70b", chip="A100-80GB", chips=8, dtype="fp8")
    assert "A100-80GB" in text and "bf16" in text
    explorer.update(chip="H100-SXM", dtype="bf16", batch=100, context=1024)


def test_unknown_parameter_is_refused(explorer):
    with pytest.raises(ChalkError, match="colour"):
        explorer.update(colour="red")


# --- static twin ------------------------------------------------------------------------------
SMALL = dict(model_names=("llama-3-70b", "deepseek-v3"), systems=(("H100-SXM", 8), ("A100-80GB", 8)),
             dtypes=("bf16", "fp8"), contexts=(1024,))


@pytest.fixture(scope="module")
def small():
    data = twin.twin_data(**SMALL)
    return data, twin.twin_html(data)


def embedded_json(html):
    m = re.search(r'<script type="application/json" class="chalk-twin-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_twin_html_has_the_elements_the_browser_test_uses(small):
    data, html = small
    assert 'class="chalk-twin"' in html
    slider = re.search(r'<input type="range" class="chalk-twin-batch" min="0" max="(\d+)"', html)
    assert slider and int(slider.group(1)) == len(data["batch"]) - 1
    assert 'class="chalk-twin-readout"' in html
    assert html.count("<svg") == 2
    assert embedded_json(html) == json.loads(json.dumps(data))


def test_twin_json_has_one_view_per_combination_of_the_right_shape(small):
    data, _ = small
    assert len(data["views"]) == 2 * 2 * 2 * 1
    n = len(data["batch"])
    ok = data["views"]["llama-3-70b|H100-SXM|8|bf16|1024"]
    for series in data["series"]:
        assert len(ok["time"][series]) == n and len(ok["cost"][series]) == n
    for key in ("regime", "mfu", "tokens_per_s", "usd_per_mtok", "short_gb"):
        assert len(ok[key]) == n


def test_twin_values_match_hand_formulas(small):
    data, _ = small
    view = data["views"]["llama-3-70b|H100-SXM|8|bf16|1024"]
    i = data["batch"].index(100.0)
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 2.0)
    assert view["usd_per_mtok"][i] == pytest.approx(usd, rel=5e-3)  # 3 significant digits
    assert view["cost"]["t_step"][i] == pytest.approx(usd, rel=5e-3)
    # Past the fit limit the readout carries the shortfall, not a price.
    last = len(data["batch"]) - 1
    assert view["regime"][last] == -1 and view["usd_per_mtok"][last] is None and view["short_gb"][last] > 0


def test_twin_explains_views_that_cannot_run(small):
    data, _ = small
    assert "does not fit" in data["views"]["deepseek-v3|H100-SXM|8|bf16|1024"]["message"]
    assert "bf16" in data["views"]["llama-3-70b|A100-80GB|8|fp8|1024"]["message"]


def test_twin_script_only_looks_values_up():
    # No catalog figure or physical constant appears in the script: it indexes the JSON.
    for needle in ("3600", "1e6", "flops", "bandwidth", "capacity", "active", "kv_bytes"):
        assert needle not in twin._JS


def test_full_twin_stays_light():
    html = twin.twin_html()
    assert len(html.encode()) < 1_000_000
    assert np.isfinite([v for v in embedded_json(html)["batch"]]).all()
