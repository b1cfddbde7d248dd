"""The slower, cheaper tiers in the price catalog (batch APIs, off-peak windows) against the
providers' published price pages: the figures below are typed from those pages, each with its
address and date, not copied from the catalog."""
import pytest

from chalk import prices

PUBLISHED = {
    # Anthropic, "Batch processing" (platform.claude.com/docs/en/build-with-claude/batch-processing,
    # as of 2026-11-23): the Message Batches API costs 50% of the standard prices; Claude Opus 4.6 at
    # $5 / $25 per million input / output tokens is $2.50 / $12.50 in a batch, results within 24 h.
    ("anthropic/claude-opus-4.6", "batch"): dict(input=2.50, output=12.50, discount=0.50, within_hours=24),
    # OpenAI, "Batch API" (platform.openai.com/docs/guides/batch, as of 2026-11-23): 50% off the
    # synchronous prices within a 24-hour window; GPT-5 at $1.25 / $10 is $0.625 / $5.00.
    ("openai/gpt-5", "batch"): dict(input=0.625, output=5.00, discount=0.50, within_hours=24),
    # DeepSeek, "Models & Pricing" (api-docs.deepseek.com/quick_start/pricing-details-usd, from
    # 2025-02-26): 16:30-00:30 UTC, deepseek-chat 50% off: $0.135 per million input tokens (cache
    # miss) and $0.55 output, against $0.27 and $1.10.
    ("deepseek/deepseek-chat@2025-02", "off-peak"): dict(input=0.135, output=0.55, discount=0.50,
                                                         hours_utc="16:30-00:30"),
}
SOURCES = {
    "batch": {"anthropic/claude-opus-4.6": "https://platform.claude.com/docs/en/build-with-claude/batch-processing",
              "openai/gpt-5": "https://platform.openai.com/docs/guides/batch"},
    "off-peak": {"deepseek/deepseek-chat@2025-02": "https://api-docs.deepseek.com/quick_start/pricing-details-usd"},
}


def _tier(name: str, kind: str) -> dict:
    price = prices.get(name)
    return price.batch if kind == "batch" else price.off_peak


def test_every_slow_tier_in_the_catalog_is_checked_here():
    listed = {(name, kind) for name in prices.names() for kind in prices.get(name).slow_discounts}
    assert listed == set(PUBLISHED), "a slow tier was added or removed: type its published figures here"


@pytest.mark.parametrize("name, kind", sorted(PUBLISHED))
def test_slow_tier_prices_are_the_published_ones(name, kind):
    published, tier = PUBLISHED[name, kind], _tier(name, kind)
    assert tier["input"] == pytest.approx(published["input"], rel=1e-9)
    assert tier["output"] == pytest.approx(published["output"], rel=1e-9)
    for field in ("within_hours", "hours_utc"):
        if field in published:
            assert tier[field] == published[field]
    assert tier["source"] == SOURCES[kind][name]


@pytest.mark.parametrize("name, kind", sorted(PUBLISHED))
def test_slow_discount_is_the_published_percentage(name, kind):
    # The published discount applies to input and output alike; slow_discounts reports the output's.
    price, published = prices.get(name), PUBLISHED[name, kind]
    assert price.slow_discounts[kind] == pytest.approx(1 - published["discount"], rel=1e-9)
    assert _tier(name, kind)["input"] / price.input == pytest.approx(1 - published["discount"], rel=1e-9)
