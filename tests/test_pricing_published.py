"""Chapter 6 against published figures: each computed by chalk (``chalk.pricing``, the catalog's
models and prices) and compared with the number the source prints, with its citation and tolerance."""
import pytest
import sympy as sp

from chalk import models, prices, pricing
from chalk.notation import C, T_hold, W, p_hold

EXACT = 1e-9
GiB = 2**30


def test_lecture_kv_bytes_from_the_200k_step():
    """Lecture (lecture-notes §7.2, ~1:35:47): N_act = 100B, r ≈ 300, L* = 200k give "about 1.7 KB"
    per token: N_act / (r L*) = 1,667 B. Printed to two figures: tolerance 3%."""
    assert pricing.kv_bytes_from_crossover(200e3, 100e9, 300) == pytest.approx(1.7e3, rel=0.03)


def test_vllm_opt13b_800kb_per_token():
    """Kwon et al. 2023 (vLLM / PagedAttention, arXiv 2309.06180) section 3: one token of OPT-13B's
    KV cache takes 800 KB, "2 (key and value vectors) x 5120 (hidden state size) x 40 (number of
    layers) x 2 (bytes per FP16)". Llama 2 13B is multi-head with the same width and depth.
    819,200 B is 800 KiB: tolerance 3% (covers KB read as 1000 B)."""
    assert models.get("llama-2-13b").kv_bytes_per_token() == pytest.approx(800e3, rel=0.03)


def test_jamba_table1_kv_cache_at_256k():
    """Lieber et al. 2024 (Jamba, arXiv 2403.19887) Table 1: KV cache at 256K tokens in 16-bit,
    Jamba 4 GB (4 attention layers of 32): printed in GB meaning GiB, tolerance 1%."""
    assert models.get("jamba-v0.1").kv_bytes(256 * 1024) == pytest.approx(4 * GiB, rel=0.01)


def test_jamba_table1_mixtral_kv_cache_at_256k():
    """Jamba paper Table 1: Mixtral 8x7B needs 32 GB of KV cache at 256K tokens (GQA, 8 KV heads,
    32 layers): tolerance 1%."""
    assert models.get("mixtral-8x7b").kv_bytes(256 * 1024) == pytest.approx(32 * GiB, rel=0.01)


def test_deepseek_v2_mla_caches_576_elements_per_layer():
    """DeepSeek-V2 report (arXiv 2405.04434) section 2.1 and Table 1: MLA caches (d_c + d_h^R) l
    elements per token, d_c = 4 d_h = 512 and d_h^R = d_h / 2 = 64; DeepSeek-V3 keeps the shapes
    (arXiv 2412.19437 section 4.2) over 61 layers. Exact."""
    m = models.get("deepseek-v3")
    assert m.kv_bytes_per_token(bytes_per_element=1) / m.n_layers == pytest.approx(576, rel=EXACT)


@pytest.mark.parametrize("field, published", [("cache_read", 0.1), ("cache_write_5m", 1.25), ("cache_write_1h", 2.0)])
def test_anthropic_cache_multipliers(field, published):
    """Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing, 2025-09): cache
    hits cost 0.1x base input, 5-minute cache writes 1.25x, 1-hour cache writes 2x; recomputed
    from Claude Sonnet 4.5's dollar prices. Exact."""
    assert pricing.cache_multipliers("anthropic/claude-sonnet-4.5")[field] == pytest.approx(published, rel=EXACT)


@pytest.mark.parametrize("index, published", [(0, 2.0), (1, 1.5)])
def test_gemini_long_context_multipliers(index, published):
    """Google's Gemini API pricing (ai.google.dev/gemini-api/docs/pricing, 2026-02): Gemini 3.1 Pro
    above 200K prompt tokens, input $4 vs $2 and output $18 vs $12: 2x input, 1.5x output (the
    lecture's "+50%" is the output step). Exact."""
    assert prices.get("google/gemini-3.1-pro-preview").long_context_multipliers[index] == \
        pytest.approx(published, rel=EXACT)


def test_gpt5_implied_decode_mfu():
    """OpenAI's GPT-5 list prices (openai.com/api/pricing, 2025-08): $1.25 input, $10 output, so
    decode MFU relative to prefill 1/8 if prices track cost. Exact."""
    assert pricing.implied_decode_mfu("openai/gpt-5").value == pytest.approx(1 / 8, rel=EXACT)


def test_gray_graefe_five_minute_rule_1997():
    """Gray and Graefe 1997, "The Five-Minute Rule Ten Years Later" (SIGMOD Record 26(4)), Eq. 1:
    BreakEvenReferenceInterval = (PagesPerMBofRAM / AccessesPerSecondPerDisk) x (PricePerDiskDrive
    / PricePerMBofDRAM) = (128 / 64) x (2000 / 15) = 266 s for 8 KB pages. The chapter's
    break-even hold time between RAM (drain time ~ 0) and a disk whose capacity cost vanishes
    beside its access cost must reduce to it: the disk's "bandwidth" is 64 pages of 8 KB a second,
    and its price per byte-second is its price spread over its capacity. Printed to 3 figures: 0.5%."""
    p_ram, p_disk, c_disk, w_disk, life = sp.symbols("p_ram p_disk c_disk w_disk life", positive=True)
    expr = pricing.break_even_hold.subs({
        p_hold: p_ram / life, C: sp.Symbol("c_ram", positive=True),
        sp.Symbol("p'", positive=True): p_disk / (c_disk * life), sp.Symbol("C'", positive=True): c_disk,
        sp.Symbol("W'", positive=True): w_disk})
    gray = sp.limit(sp.limit(sp.simplify(expr), W, sp.oo), c_disk, sp.oo)  # RAM drains at once
    value = gray.subs({p_ram: 15 / 2**20, p_disk: 2000, w_disk: 64 * 8192})
    assert float(value) == pytest.approx(266, rel=0.005)
    assert T_hold not in gray.free_symbols


def test_cross_layer_attention_halves_the_cache():
    """Brandon et al. 2024 (Cross-Layer Attention, arXiv 2405.12981), abstract: sharing key/value
    heads between adjacent layers (CLA2) reduces "the size of the KV cache by another 2x". The KV
    table's sharing variant of Llama 3 70B against the model itself. Exact."""
    rows = {row.model: row.kv_bytes_per_token for row in pricing.kv_table(share={"llama-3-70b": 2})}
    assert rows["llama-3-70b"] / rows["llama-3-70b with KV shared by 2 layers"] == pytest.approx(2.0, rel=EXACT)


def test_deepseek_v32_cache_hit_is_a_tenth():
    """DeepSeek API pricing (api-docs.deepseek.com/quick_start/pricing, 2025-09-29): DeepSeek-V3.2
    input $0.28 per million on a cache miss and $0.028 on a cache hit, a tenth. Exact."""
    assert pricing.cache_multipliers("deepseek/deepseek-chat@2025-09")["cache_read"] == pytest.approx(0.1, rel=EXACT)


def test_deepseek_v32_core_attention_is_o_lk():
    """DeepSeek-V3.2 report (arXiv 2512.02556) section 2: DSA "reduces the core attention complexity
    of the main model from O(L^2) to O(Lk)" with k = 2048 selected tokens, the indexer staying
    O(L^2). Per token past k, the extra work of a longer context is the indexer's alone, so a sequence
    of L tokens costs O(Lk) in core attention: exact."""
    L = 200_000
    low, high = (pricing.decode_attention_work("deepseek-v3", x, sparse=True).flops for x in (L, 2 * L))
    indexer_per_token = 2 * 64 * 128 * models.get("deepseek-v3").n_attention_layers
    assert high - low == pytest.approx(indexer_per_token * L, rel=EXACT)


def test_deepseek_output_input_chip_time_from_published_throughput():
    """DeepSeek, "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview" (open-infra-index,
    2025-03-01): each H800 node delivers ~73.7k input tokens/s in prefill (cache hits included) and
    ~14.8k output tokens/s in decode; of 608B input tokens that day 342B (56.3%) hit the on-disk KV
    cache. An output token takes 73.7 / 14.8 = 4.98 times an input token's GPU time, or
    73.7 x (1 - 342/608) / 14.8 = 2.18 times if hits cost no prefill; R1's list prices (api-docs, 2025-02:
    $0.55 cache miss, $2.19 output) put output at 3.98 times input. Printed to three figures: 0.5%."""
    from chalk import operator
    assert pricing.operator_chip_time_ratio(operator.DEEPSEEK) == pytest.approx(73.7 / 14.8, rel=0.005)
    assert pricing.operator_chip_time_ratio(operator.DEEPSEEK, cache_misses_only=True) == \
        pytest.approx(73.7 * (1 - 342 / 608) / 14.8, rel=0.005)
    assert prices.get("deepseek/deepseek-reasoner@2025-02").output_to_input == pytest.approx(2.19 / 0.55, rel=EXACT)


def test_gemini_storage_price_is_typed_as_published():
    """Google's Gemini API pricing (ai.google.dev/gemini-api/docs/pricing, 2025-06): Gemini 2.5 Pro context
    caching storage $4.50 per 1,000,000 tokens per hour. Exact."""
    assert prices.get("google/gemini-2.5-pro").cache_storage_per_hour == pytest.approx(4.50, rel=EXACT)


@pytest.mark.parametrize("context, speedup", [(8192, 4.0), (16384, 6.4), (32768, 9.1), (65536, 11.6)])
def test_nsa_table4_decoding_memory_access(context, speedup):
    """Yuan et al. 2025 (Native Sparse Attention, arXiv 2502.11089) Table 4: memory access per decode
    step in equivalent tokens, full attention over NSA, "expected speedup" 4x, 6.4x, 9.1x, 11.6x at 8K
    to 64K (NSA reads (L - 32)/16 compressed, 16 x 64 selected and 512 window tokens: 2,048 at 8K,
    5,632 at 64K). Printed to two or three figures, 9.1 for 32,768 / 3,582 = 9.15: 1%."""
    assert context / pricing.nsa_tokens_read(context) == pytest.approx(speedup, rel=0.01)


def test_v32_fp8_cache_is_656_bytes_per_layer():
    """FlashMLA README (github.com/deepseek-ai/FlashMLA, 2025-09-29): in the "FP8 with scale" format
    DeepSeek-V3.2's sparse decode reads, "each token's KV cache is 656 Bytes": 512 FP8 values, 4 FP32
    scales and 64 BF16 RoPE values, per layer. Exact."""
    m = models.get("deepseek-v3")
    assert pricing.v32_fp8_cache_bytes_per_token(m) / m.n_attention_layers == pytest.approx(656, rel=EXACT)
