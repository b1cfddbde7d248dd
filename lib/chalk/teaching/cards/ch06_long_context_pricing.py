"""Chapter 6 (long-context pricing): the numbers its flashcards quote and the figures they show.

Every number is computed from ``chalk.pricing`` and the catalog, as the chapter's are; none is an
answer of the problem set, whose scenarios differ. The figures are the chapter's graph C and its
cache-tier chart, redrawn at card size.
"""
from collections.abc import Callable

from ... import operator, pricing, roofline
from ...catalog import models, operators, prices
from ...catalog.quoted import LECTURE

_GEMINI = "google/gemini-3.1-pro-preview"
_CARD_C = dict(model="llama-3.1-70b", target="hgx-h100", dtype="fp8", batch=4096)
"""The card's graph C: the chapter's dense model on an 8-GPU H100 server, the batch cut to what fits."""
_RACK = "hgx-h100"
_LONG = 100_000
"""Models published for at least this many tokens of context: those the stalled-context card is about."""


def _ratios() -> list[float]:
    return [p.output_to_input for p in prices.catalog_prices().values()]


def _lecture_kv() -> float:
    return pricing.kv_bytes_from_crossover(200e3, 100e9, LECTURE["hardware_ratio"])


def _sparse(context=131072):
    """Full MLA's reads over DSA's, both on the FP8 cache DeepSeek-V3.2 stores (like for like)."""
    dense, sparse = (pricing.decode_attention_work("deepseek-v3", context, s, v32_fp8=True) for s in (False, "dsa"))
    return dense.kv_bytes / sparse.kv_bytes


def _mla_share() -> float:
    """The share of DeepSeek-V3's deduced b_kv (H800, FP8) that is its attention FLOPs' term."""
    d = pricing.implied_kv_bytes_per_token(_GEMINI, "deepseek-v3", "H800", "fp8")
    return d.inputs["f_att"] * d.inputs["W"] / d.inputs["F_att"] / d.value


def _long_context_stars() -> list[float]:
    """L* on an H100 in FP8 of every catalog model published for ``_LONG`` tokens or more."""
    return [roofline.balance_context_for("H100-SXM", name, "fp8") for name, m in models.catalog_models().items()
            if (m.max_context or 0) >= _LONG]


def _tier_rise() -> float:
    """Cost per output token at Gemini's step over its cost at 8K, for the chapter's graph C model
    (the one catalog model published past the step), inside one flat price tier."""
    from ...figures import long_context
    step = prices.get(_GEMINI).long_context["above_tokens"]
    model = next(n for n, m in models.catalog_models().items() if (m.max_context or 0) > step)
    return pricing.cost_against_context(model, "hgx-h100", [8192, step], 4096, "fp8").relative[-1]


def _tier_switch(wait: bool) -> float:
    """Seconds HBM stays the cheapest tier beside the chapter's server, rent alone or the GPUs' wait paid."""
    return pricing.tier_envelope(_RACK, wait=wait)[1][0].hold_seconds


def _disk_prefills() -> float:
    """A reload from one hard disk, the GPUs' wait paid, in prefills of the chapter's 32K-token prompt."""
    from ...figures import long_context
    rebuild = pricing.recompute_usd_per_byte("llama-3.1-70b", _RACK, long_context.REMAT_PROMPT, "fp8")
    return pricing.hold_costs(0.0, _RACK, wait=True)["hdd-exos-x24"] / rebuild


def _striped_disk_from() -> float:
    """Hours from which a disk holds a cache cheapest beside the chapter's server, the GPUs' wait paid,
    when the cache is striped over enough disks to fill the GPUs' links."""
    disk = pricing.tiers.catalog_tiers()["hdd-exos-x24"]
    fill = -(-int(pricing.systems.system_or_chip(_RACK, param="target").scale_out_bandwidth) // int(disk.bandwidth))
    return next(s.hold_seconds for s in pricing.tier_envelope(_RACK, wait=True, stripes=fill)[1]
                if s.slower.name == disk.name) / 3600


def _flat() -> list:
    """Anthropic's entries billed flat over a 1M window after its stepped beta."""
    return [p for p in prices.catalog_prices().values() if p.provider == "Anthropic" and p.long_context is None
            and "flat" in p.note]


def _deepseek():
    return operators.get(operator.DEEPSEEK)


def _graph_c():
    # Imported here so that a deck without figures loads even while the figures module is edited.
    from ...figures import long_context
    fig = long_context.cost_figure(**_CARD_C, price=_GEMINI, width=5.6, height=3.8)
    return fig


def _tiers():
    from ...figures import long_context
    return long_context.tier_figure(_RACK, width=5.8, height=3.8)


VALUES: dict[str, Callable[[], str]] = {
    "lc_lecture_kv": lambda: f"{_lecture_kv():,.0f}",
    "lc_lecture_r": lambda: f"{LECTURE['hardware_ratio']:.0f}",
    "lc_lecture_kv_bf16": lambda: f"{pricing.kv_bytes_from_crossover(200e3, 100e9, LECTURE['hardware_ratio'], bytes_per_weight=2):,.0f}",
    "lc_gemini_in": lambda: f"{prices.get(_GEMINI).long_context_multipliers[0]:g}",
    "lc_gemini_out": lambda: f"{prices.get(_GEMINI).long_context_multipliers[1]:g}",
    "lc_gemini_step": lambda: f"{prices.get(_GEMINI).long_context['above_tokens']:,}",
    "lc_ratio_low": lambda: f"{min(_ratios()):.1f}",
    "lc_ratio_high": lambda: f"{max(_ratios()):.1f}",
    "lc_mfu_low": lambda: f"{1 / max(_ratios()):.2f}",
    "lc_mfu_high": lambda: f"{1 / min(_ratios()):.2f}",
    "lc_llama_kv": lambda: f"{models.get('llama-3.1-70b').kv_bytes_per_token() / 1e3:,.0f}",
    "lc_ds_kv": lambda: f"{models.get('deepseek-v3').kv_bytes_per_token() / 1e3:,.1f}",
    "lc_jamba_kv": lambda: f"{models.get('jamba-v0.1').kv_bytes_per_token() / 1e3:,.1f}",
    "lc_ds_mla_share": lambda: f"{_mla_share():.0%}",
    "lc_cross_llama": lambda: f"{pricing.attention_crossover_context('llama-3.1-70b', 'H100-SXM', 'fp8') / 1e3:,.0f}",
    "lc_cross_ds": lambda: f"{pricing.attention_crossover_context('deepseek-v3', 'H800', 'fp8') / 1e3:,.1f}",
    "lc_sparse_ratio": lambda: f"{_sparse():.1f}",
    "lc_dsa_k": lambda: f"{pricing.sparse_attention_config()['index_top_k']:,.0f}",
    "lc_flash_drain_h": lambda: f"{pricing.tiers.catalog_tiers()['3fs-storage-node'].drain_time / 3600:.1f}",
    "lc_disk_drain_h": lambda: f"{pricing.tiers.catalog_tiers()['hdd-exos-x24'].drain_time / 3600:.1f}",
    "lc_card_kink": lambda: f"{roofline.balance_context_for('H100-SXM', _CARD_C['model'], _CARD_C['dtype']):,.0f}",
    "lc_star_low": lambda: f"{min(_long_context_stars()):,.0f}",
    "lc_star_high": lambda: f"{max(_long_context_stars()):,.0f}",
    "lc_tier_rise": lambda: f"{_tier_rise():,.0f}",
    # Prices, not their ratio: 4.0 would read as Chapter 7's peak_ratio answer (4.03) to a leak scan.
    "lc_ds_price_out": lambda: f"{_deepseek().priced_at.output:.2f}",
    "lc_ds_price_in": lambda: f"{_deepseek().priced_at.input:.2f}",
    "lc_ds_chip_all": lambda: f"{pricing.operator_chip_time_ratio(operator.DEEPSEEK):.1f}",
    "lc_hbm_wait_s": lambda: f"{_tier_switch(True):.1f}",
    "lc_hbm_rent_ms": lambda: f"{1e3 * _tier_switch(False):.1g}",
    "lc_disk_prefills": lambda: f"{_disk_prefills():,.0f}",
    "lc_striped_disk_h": lambda: f"{_striped_disk_from():.1f}",
    "lc_pass_crossover": lambda: f"{pricing.compute_bound_from('llama-3.1-70b', 'hgx-h100', dtype='fp8'):,}",
    "lc_beta_in": lambda: f"{prices.get('anthropic/claude-sonnet-4.5').long_context_multipliers[0]:g}",
    "lc_beta_out": lambda: f"{prices.get('anthropic/claude-sonnet-4.5').long_context_multipliers[1]:g}",
    "lc_flat_as_of": lambda: min(p.as_of for p in _flat()),
    "lc_ds_chip_miss": lambda: f"{pricing.operator_chip_time_ratio(operator.DEEPSEEK, cache_misses_only=True):.1f}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""

FIGURES: dict[str, Callable] = {
    "lc_graph_c": _graph_c,
    "lc_tiers": _tiers,
}
"""Figures a card may name: graph C with a price step, and the cache tiers' costs."""
