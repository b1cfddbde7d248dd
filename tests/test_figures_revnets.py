"""Chapter 7's explorer and static twins: their numbers are chalk.reversible's, every control
moves something, bad input shows a message, and the update stays within a frame."""
import json

import numpy as np
import pytest
from conftest import view_redraws

from chalk import reversible as rv
from chalk.catalog import models
from chalk.figures import revnets, twin


@pytest.fixture(scope="module")
def explorer():
    return revnets.Explorer()



def test_readout_quotes_the_module(explorer):
    text = explorer.update(round_function="middle-square", rounds=3, model="llama-3.1-405b", tokens=65536,
                           policy="reversible", depth=48)
    m = models.get("llama-3.1-405b")
    kept = rv.activation_bytes(65536, m.d_model, 48, "reversible") / 1e9
    assert f"<b>{kept:,.3g} GB</b>" in text
    # The peak by hand: 2 kept + 2 recovered + 4 gradient buffers + head input, the running layer with
    # Llama 3.1 405B's own count (config.json: d 16384, 8 KV heads of 128, d_ff 53248), FP32 logits.
    t, d = 65536, m.d_model
    per_width = 2 * (6 * 16384 + 2 * 8 * 128 + 4 * 53248) / 16384
    peak = ((2 + 2 + 4 + 1) * t * d * 2 + per_width * t * d + t * m.vocab * 4) / 1e9
    assert f"peak {peak:,.3g} GB" in text
    mean = rv.avalanche_matrix(lambda x: rv.feistel_encrypt(x, revnets.KEY, 3, 16), 16, revnets.SAMPLES).mean()
    assert f"mean flip fraction {mean:.3f}" in text
    assert f"+{100 * rv.step_overhead('llama-3.1-405b', 'reversible', 8192):.1f}% FLOPs at 8,192-token" in text


def test_reversible_memory_does_not_grow_with_depth_but_block_does(explorer):
    a = revnets.memory_readout("llama-3-70b", 8192, "reversible", 16)
    b = revnets.memory_readout("llama-3-70b", 8192, "reversible", 160)
    assert a["kept_gb"] == b["kept_gb"]
    block = [revnets.memory_readout("llama-3-70b", 8192, "block", d)["kept_gb"] for d in (16, 160)]
    assert block[1] == pytest.approx(10 * block[0])


def test_ideal_cipher_reference_is_the_closed_form():
    # 2^15 / (2^16 - 1), by hand
    assert revnets.random_permutation_flip(16) == pytest.approx(32768 / 65535)


def test_mixing_round_reaches_the_random_permutation_and_sbox_stalls():
    ms = revnets.avalanche_matrices("middle-square").mean(axis=(1, 2))
    assert abs(ms[-1] - revnets.random_permutation_flip()) < 0.01
    assert revnets.avalanche_matrices("sbox").mean(axis=(1, 2))[-1] < 0.3
    lin = revnets.avalanche_matrices("linear")
    assert np.all((lin == 0) | (lin == 1))  # an affine cipher flips a fixed set of bits


@pytest.mark.parametrize("params, words", [
    ({"depth": 0.5}, ["depth", "1"]),
    ({"rounds": 2.5}, ["rounds", "whole number"]),
    ({"policy": "offload"}, ["policy", "offload"]),
    ({"tokens": 3}, ["tokens"]),
])
def test_bad_input_shows_a_message_not_a_traceback(params, words):
    e = revnets.Explorer()
    text = e.update(**params)
    assert text.startswith('<b style="color:#b00">')
    for w in words:
        assert w in text
    assert e.figure.render().startswith(b"\x89PNG")


def test_unknown_round_function_lists_the_known_ones():
    with pytest.raises(Exception, match="middle-square"):
        revnets.avalanche_matrices("rot13")


def test_cipher_twin_views_are_the_module_matrices():
    data = revnets.cipher_twin_data()
    view = data["views"]["middle-square"]
    means = revnets.avalanche_matrices("middle-square").mean(axis=(1, 2))
    assert view["panels"][1]["series"]["mean"] == twin.rounded(means)
    assert len(view["panels"][0]["frames"]) == revnets.MAX_ROUNDS
    # the heat map covers every cell of the matrix exactly once in each frame
    cells = [r for r in view["panels"][0]["frames"][0] if r["shape"] == "rect" and r["h"] == revnets.CELL
             and r["x"] >= revnets.ORIGIN_X and r["x"] < revnets.ORIGIN_X + revnets.CELL * revnets.WIDTH]
    assert sum(r["w"] for r in cells) == revnets.CELL * revnets.WIDTH ** 2


def test_memory_twin_views_are_the_module_formulas():
    data = revnets.memory_twin_data()
    view = data["views"]["gpt-3-175b|8192|block"]
    d = models.get("gpt-3-175b").d_model
    expected = [8192 * d * layers * 2 / 1e9 for layers in revnets.DEPTHS]
    assert view["panels"][0]["series"]["block"] == twin.rounded(expected)
    assert view["panels"][0]["series"]["chosen"] == view["panels"][0]["series"]["block"]


def test_twins_are_light():
    for data in (revnets.cipher_twin_data(), revnets.memory_twin_data()):
        assert len(twin.twin_html(data)) < 250_000
        json.dumps(data)


def test_depth_and_policy_moves_redraw_only_the_point():
    """Moving the depth or the policy moves one point on fixed curves: the avalanche matrix and
    the three memory curves are not drawn again. A new round count redraws the matrix."""
    session = revnets.SESSION
    redrawn = view_redraws(revnets.Explorer(), session)
    point_only = [i for i, step in enumerate(session) if i > 0 and set(step) <= {"depth", "policy"}]
    assert len(point_only) > 8
    assert not any(redrawn[i] for i in point_only)
    assert all(redrawn[i] for i, step in enumerate(session) if set(step) == {"rounds"})


def test_strict_avalanche_by_round_matches_the_independent_review():
    # Issue #27's re-implementation, from its own samples: at round 4 17 of 256 cells beyond 5 sigma
    # (worst 0.128), every cell within 5 sigma first at round 6, 30% of cells exactly 0 or 1 at round 2.
    stats = revnets.strict_avalanche_by_round("middle-square")
    assert 12 <= stats[3]["beyond"] <= 24 and abs(stats[3]["worst"] - 0.128) < 0.02
    assert revnets.first_sac_round("middle-square") == 6
    assert abs(stats[1]["binary"] - 0.30) < 0.02
    # The mean passes earlier: round 4 is within 0.01 of 1/2 where cells still fail.
    assert abs(stats[3]["mean"] - 0.5) < 0.01 and stats[3]["beyond"] > 0
    assert revnets.first_sac_round("sbox") is None and revnets.first_sac_round("linear") is None


def test_sweep_ranges_read_from_the_sweep():
    row = revnets.gain_sweep()[("plain tanh, 24 layers", 4.0)]
    low, high = revnets.sweep_range("plain tanh, 24 layers", 4.0).split("–")
    assert float(low.replace(",", "")) == pytest.approx(row.min(), abs=0.5)
    assert float(high.replace(",", "")) == pytest.approx(row.max(), abs=0.5)
    assert revnets.amplification_text(0.0273) == "0.027" and revnets.amplification_text(5.59) == "5.6"
    text = revnets.strict_avalanche_figure().chalk_description
    assert "first crossed below at round 6" in text
