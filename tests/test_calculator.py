"""The serving calculator: fit, back-solving, passes, efficiency knobs, money, and bad input."""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import DoesNotFit, calculator, hardware, models, roofline, systems
from chalk.errors import ChalkError, UnknownName
from chalk.notation import n


def test_pass_formula_reduces_to_roofline_at_one_token_and_full_efficiency():
    from chalk.notation import eta_c, eta_m
    one = calculator.t_pass.subs({n: 1, eta_c: 1, eta_m: 1})
    assert sp.simplify(one - roofline.t_step) == 0
    cost = calculator.cost_per_token_pass.subs({n: 1, eta_c: 1, eta_m: 1})
    assert sp.simplify(cost - roofline.cost_per_token) == 0


def test_decode_matches_roofline_decode_point():
    ours = calculator.decode("llama-3-70b", "hgx-h100", 64, 4096, headroom=0)
    theirs = roofline.decode_point("H100-SXM", "llama-3-70b", 64, 4096, chips=8, allreduce=True)
    assert ours.t_step == pytest.approx(theirs.t_step)
    assert ours.t_comm == pytest.approx(theirs.t_comm) and ours.t_comm > 0
    assert ours.regime == theirs.regime
    assert ours.tokens_per_second == pytest.approx(theirs.tokens_per_second)


def test_efficiency_knobs_scale_the_bound():
    base = calculator.decode("llama-3.1-8b", "H100-SXM", 1, 1024)
    slow = calculator.decode("llama-3.1-8b", "H100-SXM", 1, 1024, memory_efficiency=0.5)
    assert slow.t_step == pytest.approx(2 * base.t_step)  # batch 1 is memory-bound
    busy = calculator.decode("llama-3.1-8b", "H100-SXM", 4096, 16, mfu=0.5)
    assert busy.t_compute == pytest.approx(2 * busy.t_compute_peak)
    assert busy.mfu <= 0.5 + 1e-12


def test_prefill_is_compute_bound_and_decode_memory_bound():
    pre = calculator.prefill("llama-3-70b", "hgx-h100", 4, 8192)
    dec = calculator.decode("llama-3-70b", "hgx-h100", 4, 8192)
    assert pre.regime == "compute-bound"
    assert dec.regime.startswith("memory-bound")
    assert pre.tokens_per_second > 50 * dec.tokens_per_second


def test_money_output_dearer_than_input():
    cost = calculator.money("llama-3-70b", "hgx-h100", 32, 4096, 4096, usd_per_chip_hour=2.0)
    assert cost["output"] > cost["input"] > 0


def test_fit_and_shortfall():
    f = calculator.fit("llama-3.1-405b", "hgx-h100", 1, 1000, dtype="bf16")
    assert not f.fits and f.shortfall == pytest.approx(f.needed - f.available)
    assert f.available == pytest.approx(0.9 * 8 * 81_559 * 2**20)  # 10% headroom of nvidia-smi's 81,559 MiB per H100
    with pytest.raises(DoesNotFit):
        calculator.decode("llama-3.1-405b", "hgx-h100", 1, 1000)
    assert calculator.fit("llama-3.1-405b", "hgx-h100", 1, 1000, dtype="fp8").fits


def test_back_solves_are_tight():
    model, target = "llama-3-70b", "hgx-h100"
    b = int(calculator.max_batch(model, target, 8192))
    assert calculator.fit(model, target, b, 8192).fits and not calculator.fit(model, target, b + 1, 8192).fits
    L = int(calculator.max_context(model, target, 16))
    assert calculator.fit(model, target, 16, L).fits and not calculator.fit(model, target, 16, L + 1).fits


def test_max_context_with_sliding_windows_is_exact():
    L = int(calculator.max_context("gemma-2-9b", "H100-SXM", 16))
    assert calculator.fit("gemma-2-9b", "H100-SXM", 16, L).fits
    assert not calculator.fit("gemma-2-9b", "H100-SXM", 16, L + 1).fits


def test_systems_are_built_from_chips():
    s = systems.get("hgx-h100")
    chip = hardware.get("H100-SXM")
    assert s.flops("bf16") == 8 * chip.flops("bf16") and s.hbm_capacity == 8 * chip.hbm_capacity
    assert s.intensity() == pytest.approx(chip.intensity())
    assert calculator.resolve("gb200-nvl72").count == 72
    assert calculator.resolve("H100-SXM", chips=4).count == 4


def test_substituted_formula_shows_values():
    point = calculator.decode("deepseek-v3", "gb200-nvl72", 2048, 32768, dtype="fp8")
    plain, filled = calculator.substituted(point, "deepseek-v3", "gb200-nvl72", dtype="fp8")
    assert "N_act" in plain and "2048" in filled and "32768" in filled


@pytest.mark.parametrize("call, param", [
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", -1, 10), "batch"),
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", 1, -10), "context"),
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", 1, 10, headroom=1.5), "headroom"),
    (lambda: calculator.fit("nope", "H100-SXM", 1, 10), "model"),
    (lambda: calculator.fit("llama-3.1-8b", "nope", 1, 10), "system"),
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", 1, 10, dtype="fp7"), "dtype"),
    (lambda: calculator.resolve("hgx-h100", chips=4), "chips"),
    (lambda: calculator.resolve("H100-SXM", chips=0), "chips"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 0, 10), "batch"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, mfu=0), "mfu"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, mfu=1.5), "mfu"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, memory_efficiency=-1), "memory_efficiency"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, usd_per_chip_hour=0), "usd_per_chip_hour"),
    (lambda: calculator.decode("llama-3.1-8b", "A100-80GB", 1, 10, dtype="fp8"), "dtype"),
    (lambda: calculator.prefill("llama-3.1-8b", "H100-SXM", 1, 0), "prompt"),
    (lambda: calculator.max_batch("llama-3.1-8b", "H100-SXM", -5), "context"),
    (lambda: calculator.max_context("llama-3.1-8b", "H100-SXM", 0), "batch"),
    (lambda: calculator.rental_prices("H100-SXM", usd_per_chip_hour=-2), "usd_per_chip_hour"),
    (lambda: models.get("llama-3.1-8b").kv_bytes(-1), "context"),
    (lambda: models.get("llama-3.1-8b").kv_bytes(10, 0), "bytes_per_element"),
    (lambda: models.get("llama-3.1-8b").forward_flops_per_token(-1), "context"),
    (lambda: models.get("jamba-v0.1").training_flops(), "tokens"),
    (lambda: models.get("gpt-3-175b").training_flops(-5), "tokens"),
    (lambda: systems.get("nope"), "system"),
    (lambda: roofline.check_fit("H100-SXM", "llama-3.1-8b", 1, 1, headroom=2), "headroom"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param) or f" {param}" in str(info.value) or param in str(info.value)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(UnknownName, match="gb200-nvl72"):
        calculator.resolve("nope")
    with pytest.raises(UnknownName, match="hgx-h100"):
        systems.get("nope")


def test_max_context_unbounded_when_cache_stops_growing():
    local_only = models.from_config("toy-local", dict(
        display="toy", attention="gqa", n_layers=4, d_model=256, n_heads=4, n_kv_heads=2, d_head=64,
        d_ff=512, ffn_gated=True, vocab=1000, tied_embeddings=True, layer_pattern="L", sliding_window=128))
    assert local_only.kv_bytes_per_token() == 0
    assert math.isinf(calculator.max_context(local_only, "H100-SXM", 1))


def test_windowed_memory_matches_kv_bytes():
    g = models.get("gemma-2-9b")
    need = roofline.memory_needed(g, 3, np.array([100, 4096, 50_000]))
    assert need == pytest.approx(g.total_params * 2 + 3 * g.kv_bytes(np.array([100, 4096, 50_000])))


@pytest.mark.parametrize("call, words", [
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", 1e20, 10), ("batch", "1,000,000,000")),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, chips=10**9), ("chips", "1,000,000")),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 10, usd_per_chip_hour=1e308), ("usd_per_chip_hour", "10,000")),
    (lambda: calculator.max_batch("llama-3.1-8b", "H100-SXM", 1e12), ("context", "1,000,000,000")),
])
def test_absurd_inputs_name_the_valid_range(call, words):
    with pytest.raises(ChalkError) as err:
        call()
    assert all(w in str(err.value) for w in words), str(err.value)


def test_names_resolve_ignoring_case_at_the_boundary():
    assert calculator.resolve("GB200-NVL72").count == 72
    assert calculator.fit("LLAMA-3.1-8B", "h100-sxm", 1, 1, dtype="BF16").fits


def test_context_past_the_published_maximum_warns():
    # Llama 3 70B's config sets max_position_embeddings = 8192.
    with pytest.warns(calculator.ContextWarning, match="8,192"):
        calculator.decode("llama-3-70b", "hgx-h100", 1, 10_000)
