"""API prices and what they imply: ratios, the lecture's deductions, cache tiers, and bad input."""
import pytest
import sympy as sp

from chalk import models, prices, pricing
from chalk.catalog import tiers
from chalk.errors import ChalkError, UnknownName
from chalk.notation import L_star, N_act, f_att, r


def test_every_provider_dated_and_old_entries_kept():
    names = prices.names()
    assert "deepseek/deepseek-chat@2025-02" in names and "deepseek/deepseek-chat@2025-09" in names
    for p in prices.catalog_prices().values():
        assert p.as_of and p.input > 0 and p.output > 0


def test_output_costs_three_to_eight_times_input():
    # Lecture: output 3-5x input; current lists: Anthropic 5x, Gemini 6x (3.1 Pro), GPT-5 8x.
    assert prices.get("anthropic/claude-opus-4.6").output_to_input == pytest.approx(5)
    assert prices.get("google/gemini-3.1-pro-preview").output_to_input == pytest.approx(6)
    assert prices.get("openai/gpt-5").output_to_input == pytest.approx(8)


def test_kv_formula_reduces_to_lecture_form_without_attention_flops():
    # With f_att = 0, L* = 2 N_act / (r b_kv) solved for b_kv (the full form is in test_pricing).
    assert sp.simplify(pricing.kv_bytes_from_step.subs(f_att, 0) - 2 * N_act / (r * L_star)) == 0


def test_lecture_kv_deduction_is_half_ours_in_bf16():
    # Lecture: N_act = 100B, "r ~ 300", L* = 200k -> ~1.7 KB per token (it writes N_act / (r L*)),
    # which is the FP8 reading; BF16 weights at the BF16 rate give twice as much.
    bf16 = pricing.kv_bytes_from_crossover(200e3, 100e9, 300, bytes_per_weight=2)
    assert bf16 / 2 == pytest.approx(1.7e3, rel=0.03)


def test_kv_deduction_shown_beside_the_model():
    d = pricing.implied_kv_bytes_per_token("google/gemini-2.5-pro", "deepseek-v3")
    assert d.actual == models.get("deepseek-v3").kv_bytes_per_token()
    assert 0 < d.value < d.actual


def test_cache_tiers_ordered_and_chosen_by_drain_time():
    held = tiers.tiers_with_hbm("H100-SXM")
    drains = [t.drain_time for t in held]
    assert drains == sorted(drains) and held[0].name.startswith("hbm")
    assert pricing.tier_for_hold(0.02).name.startswith("hbm")   # a step's worth: HBM
    assert pricing.tier_for_hold(24 * 3600).name == "hdd-exos-x24"
    assert pricing.tier_for_hold(3600).name == "3fs-storage-node"   # drain 1.7 h


def test_fast_tier_inversion():
    normal, fast = pricing.fast_tier_batches("anthropic/claude-opus-4.6")
    assert normal == pytest.approx(2.5) and fast == pytest.approx(1 / 6)
    assert pricing.fast_tier_batches("google/gemini-2.5-pro") is None


def test_deduce_lists_everything():
    kinds = [d.quantity for d in pricing.deduce("anthropic/claude-sonnet-4.5", "llama-3-70b")]
    assert kinds == ["decode MFU relative to prefill", "KV bytes per token", "storage tier", "storage tier"]


@pytest.mark.parametrize("call, param", [
    (lambda: prices.get("nope"), "price"),
    (lambda: pricing.implied_kv_bytes_per_token("openai/gpt-5", "deepseek-v3"), "price"),
    (lambda: pricing.implied_kv_bytes_per_token("google/gemini-2.5-pro", "nope"), "model"),
    (lambda: pricing.implied_kv_bytes_per_token("google/gemini-2.5-pro", "deepseek-v3", "nope"), "target"),
    (lambda: pricing.tier_for_hold(0), "hold_seconds"),
    (lambda: pricing.tier_for_hold(-5), "hold_seconds"),
    (lambda: prices.get("openai/gpt-5").ratio("cache_write_5m"), "field"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ChalkError) as info:
        call()
    assert str(info.value).startswith(param)


def test_unknown_price_lists_known():
    with pytest.raises(UnknownName, match="google/gemini-2.5-pro"):
        prices.get("nope")


def test_tiers_table_lists_every_tier_with_its_drain_time(capsys):
    from chalk import cli
    from chalk.catalog import reference
    table = reference.tiers_table()
    assert all(f"`{name}`" in table for name in tiers.catalog_tiers())
    # 3FS storage node (DeepSeek's 3FS README): 16 x 14 TiB of NVMe, read at 6.6 TiB/s over 180 nodes
    # = 40.3 GB/s, drains in 16 * 14 * 2**40 / 40.3e9 = 6,111 s, shown to three figures.
    assert "| 6,110 |" in table
    assert cli.main(["list", "tiers"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "## tiers" in out and "hdd-exos-x24" in out and "## prices" not in out


def test_no_price_rests_on_memory_and_restatements_are_marked():
    # Issue #26, Chapter 6 finding 2: a figure not found on the provider's own page is marked [secondary].
    for p in prices.catalog_prices().values():
        assert "[recalled" not in p.note, p.name
        assert p.label.endswith("[secondary]") == p.secondary
    assert prices.get("deepseek/deepseek-chat@2025-09").secondary


def test_gemini_25_cache_hit_dated_twice():
    # $0.31 per million at general availability (a quarter of the $1.25 input), $0.125 (a tenth) later.
    early, late = prices.get("google/gemini-2.5-pro"), prices.get("google/gemini-2.5-pro@2026-01")
    assert early.as_of < late.as_of
    assert early.ratio("cache_read") == pytest.approx(0.248) and late.ratio("cache_read") == pytest.approx(0.1)
    assert early.long_context == late.long_context


def test_anthropic_1m_context_flat_from_march_2026():
    # Sonnet 4.5's beta stepped 2x / 1.5x above 200K; the 4.6 models' GA price is flat over 1M.
    assert prices.get("anthropic/claude-sonnet-4.5").long_context_multipliers == pytest.approx((2.0, 1.5))
    for name in ("anthropic/claude-opus-4.6@2026-03-13", "anthropic/claude-sonnet-4.6@2026-03-13"):
        p = prices.get(name)
        assert p.long_context is None and p.context_window == 1_000_000 and p.as_of == "2026-03-13"
