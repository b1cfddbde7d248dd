"""Every data entry carries a source and a date, and bad data is rejected when loaded."""
import re

import pytest

from chalk import catalog, hardware, models, roofline
from chalk.errors import ChalkError


def test_every_entry_has_https_source_and_date():
    for entry in [*hardware.catalog_chips().values(), *models.catalog_models().values()]:
        assert entry.source.startswith("https://") and len(entry.as_of) == 10


def test_contract_names_exist():
    for chip in ("A100-80GB", "H100-SXM", "H200", "B200", "GB200", "TPU-v5e"):
        assert hardware.get(chip).hbm_capacity > 0
    for model in ("deepseek-v3", "llama-3-70b", "llama-3.1-8b", "mixtral-8x7b"):
        assert models.get(model).total_params >= models.get(model).active_params


@pytest.mark.parametrize("entry, message", [
    ({"vendor": "X", "status": "s", "tflops": {}, "hbm_GB": -1.0}, "'hbm_GB' must be > 0"),
    ({"vendor": "X", "status": "s", "tflops": {}}, "missing 'hbm_GB'"),
    ({"vendor": 3}, "'vendor' must be str"),
])
def test_require_names_the_field(entry, message):
    fields = {"vendor": str, "status": str, "tflops": dict, "hbm_GB": float}
    with pytest.raises(ChalkError, match=message):
        catalog.require("chips.toml [X]", entry, fields)


def test_dense_model_has_sparsity_one_and_moe_more():
    assert models.get("llama-3-70b").sparsity == 1.0
    assert models.get("deepseek-v3").sparsity > 17


def test_quoted_figures_are_the_lecture_and_paper_numbers():
    # Lecture notes section 2 (Dwarkesh Podcast, 2026-04-29): about $2 per GPU-hour, "about 300",
    # a step every ~20 ms, DeepSeek-V3 read as "32 of 256 experts". Clark et al. 2022 (arXiv
    # 2202.01169): 64 experts at 370M parameters per token match a 1.3B dense model.
    from chalk.catalog import quoted
    lecture = quoted.LECTURE
    assert (lecture["usd_per_chip_hour"], lecture["hardware_ratio"], lecture["step_ms"]) == (2, 300, 20)
    assert (lecture["deepseek_active_experts"], lecture["deepseek_experts"]) == (32, 256)
    assert (quoted.CLARK2022["experts"], quoted.CLARK2022["active_params"], quoted.CLARK2022["dense_params"]) \
        == (64, 370e6, 1.3e9)
    for entry in (lecture, quoted.CLARK2022):
        assert entry["source"].startswith("https://") and len(entry["as_of"]) == 10


# --- the audit of chips.toml against each chip's primary source (issue 8, section 7) ----------
# The number formats each chip's cited source prints a rate for (formats chalk knows only).
# A format outside this list is one the source does not publish; adding a chip means reading
# its source and adding its line here.
PUBLISHED_FORMATS = {
    # NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): FP32, TF32,
    # BF16 312, FP16 312, INT8 624 TOPS (dense; the sheet's * figures are with sparsity).
    "A100-80GB": {"fp32", "bf16", "fp16", "int8"},
    # nvidia.com/en-us/data-center/h100 and /h200: FP32, TF32, BF16, FP16, FP8, INT8.
    "H100-SXM": {"fp32", "bf16", "fp16", "fp8", "int8"},
    "H200": {"fp32", "bf16", "fp16", "fp8", "int8"},
    # DeepSeek (arXiv 2505.09343; FlashMLA deep dive): BF16 990 TFLOP/s, FP8 GEMMs; no datasheet.
    "H800": {"bf16", "fp8"},
    # nvidia.com/en-us/data-center/hgx and /gb200-nvl72: FP4, FP8/FP6, INT8, FP16/BF16, TF32, FP32.
    "B200": {"fp4", "fp8", "int8", "fp16", "bf16", "fp32"},
    "GB200": {"fp4", "fp8", "int8", "fp16", "bf16", "fp32"},
    # verda.com/blog/gb300-nvl72-architecture: FP4, FP8, INT8, FP16/BF16, TF32, FP32 per GPU.
    "GB300": {"fp4", "fp8", "int8", "fp16", "bf16", "fp32"},
    # cloud.google.com/tpu/docs/v5e: BF16 197 TFLOP/s, INT8 393 TOPs. No FP8.
    "TPU-v5e": {"bf16", "int8"},
    # docs.cloud.google.com/tpu/docs/v5p-training: BF16 459, FP8 459 TFLOP/s (no INT8 row).
    "TPU-v5p": {"bf16", "fp8"},
    # docs.cloud.google.com/tpu/docs/v6e: BF16 918 TFLOP/s, INT8 1,836 TOPs.
    "TPU-v6e": {"bf16", "int8"},
    # docs.cloud.google.com/tpu/docs/tpu7x: BF16 2,307, FP8 4,614 TFLOP/s.
    "TPU-v7": {"bf16", "fp8"},
    # rocm.docs.amd.com .../gpu-arch/mi300.html: Matrix FP32, FP16, BF16, FP8, INT8.
    "MI300X": {"fp32", "fp16", "bf16", "fp8", "int8"},
    # theregister.com/2025/06/12/amd_mi355x (AMD's table): FP4, FP8, FP16/BF16.
    "MI355X": {"fp4", "fp8", "fp16", "bf16"},
    # Rubin as announced: NVFP4 only.
    "Rubin": {"fp4"},
}


def test_every_chip_was_audited():
    missing = set(hardware.names()) - set(PUBLISHED_FORMATS)
    assert not missing, f"add the formats each new chip's source publishes to PUBLISHED_FORMATS: {missing}"


@pytest.mark.parametrize("name", sorted(PUBLISHED_FORMATS))
def test_no_chip_carries_a_format_its_source_does_not_publish(name):
    extra = set(hardware.get(name).dtypes) - PUBLISHED_FORMATS[name]
    assert not extra, f"{name} has rates its source does not print: {extra}"


# (chip, quantity, chalk's value, published value, factor between them, citation). NVIDIA prints
# tensor rates "with sparsity" (2:4 structured), twice the dense rates chips.toml holds; the
# factor 2 below is that. HGX and NVL72 pages print totals for 8 and 72 GPUs.
def _tf(chip, dtype):
    return hardware.get(chip).flops(dtype) / 1e12


PINNED = [
    ("H100 BF16 sparse", lambda: 2 * _tf("H100-SXM", "bf16"), 1979, "nvidia.com/en-us/data-center/h100: BF16 1,979 TFLOPS*"),
    ("H100 FP8 sparse", lambda: 2 * _tf("H100-SXM", "fp8"), 3958, "same page: FP8 3,958 TFLOPS* (*with sparsity)"),
    ("H200 FP8 sparse", lambda: 2 * _tf("H200", "fp8"), 3958, "nvidia.com/en-us/data-center/h200: FP8 3,958 TFLOPS*"),
    ("HGX B200 FP4 sparse", lambda: 2 * 8 * _tf("B200", "fp4") / 1e3, 144, "nvidia.com HGX B200: FP4 144 PFLOPS (with sparsity)"),
    ("HGX B200 FP8 sparse", lambda: 2 * 8 * _tf("B200", "fp8") / 1e3, 72, "nvidia.com HGX B200: FP8/FP6 72 PFLOPS"),
    ("HGX B200 BF16 sparse", lambda: 2 * 8 * _tf("B200", "bf16") / 1e3, 36, "nvidia.com HGX B200: FP16/BF16 36 PFLOPS"),
    ("NVL72 FP4 sparse", lambda: 2 * 72 * _tf("GB200", "fp4") / 1e3, 1440, "nvidia.com GB200 NVL72: FP4 1,440 PFLOPS"),
    ("NVL72 FP8 sparse", lambda: 2 * 72 * _tf("GB200", "fp8") / 1e3, 720, "nvidia.com GB200 NVL72: FP8/FP6 720 PFLOPS"),
    ("H800 BF16", lambda: _tf("H800", "bf16"), 990, "github.com/deepseek-ai/FlashMLA docs/20250422-new-kernel-deep-dive.md: H800 SXM5 peak 990 TFlops"),
    ("H800 HBM", lambda: hardware.get("H800").hbm_bandwidth / 1e12, 3.35, "same document: peak memory bandwidth 3.35 TB/s"),
    ("H800 NVLink bidirectional", lambda: hardware.get("H800").scale_up_bandwidth_bidirectional / 1e9, 400,
     "arXiv 2505.09343 (DeepSeek, ISCA 2025), Sec. 4: H800 NVLink 400 GB/s (H100: 900)"),
    ("H800 NIC", lambda: hardware.get("H800").scale_out_bandwidth * 8 / 1e9, 400,
     "arXiv 2505.09343, Fig. 2: one 400 Gb/s InfiniBand CX7 per GPU"),
    ("TPU v5e BF16", lambda: _tf("TPU-v5e", "bf16"), 197, "cloud.google.com/tpu/docs/v5e: 197 TFLOPs"),
    ("TPU v5e INT8", lambda: _tf("TPU-v5e", "int8"), 393, "cloud.google.com/tpu/docs/v5e: Int8 393 TOPs"),
    ("TPU v5p BF16", lambda: _tf("TPU-v5p", "bf16"), 459, "docs.cloud.google.com/tpu/docs/v5p-training: BF16 459"),
    ("TPU v5p FP8", lambda: _tf("TPU-v5p", "fp8"), 459, "same page (and the TPU7x page's table): FP8 459, no faster than BF16"),
    ("TPU v5p HBM", lambda: hardware.get("TPU-v5p").hbm_capacity / 2**30, 95, "same page: 95 GiB per chip"),
    ("TPU v6e INT8", lambda: _tf("TPU-v6e", "int8"), 1836, "docs.cloud.google.com/tpu/docs/v6e: 1836 TOPs"),
    ("TPU v6e DCN per chip", lambda: hardware.get("TPU-v6e").scale_out_bandwidth * 8 / 1e9, 4 * 200 / 8,
     "same page: 4 x 200 Gbps NICs per host of 8 chips"),
    ("TPU7x FP8", lambda: _tf("TPU-v7", "fp8"), 4614, "docs.cloud.google.com/tpu/docs/tpu7x: FP8 4614 TFLOPs"),
    ("TPU7x HBM bandwidth", lambda: hardware.get("TPU-v7").hbm_bandwidth / 1e9, 7380, "same page: 7380 GB/s"),
    ("TPU7x HBM capacity", lambda: hardware.get("TPU-v7").hbm_capacity / 2**30, 192, "same page: 192 GiB"),
    ("TPU7x DCN per chip", lambda: hardware.get("TPU-v7").scale_out_bandwidth * 8 / 1e9, 100, "same page: DCN 100 Gb/s per chip"),
    ("MI300X BF16", lambda: _tf("MI300X", "bf16"), 1307.4, "rocm.docs.amd.com .../gpu-arch/mi300.html: Matrix BF16 1307.4"),
    ("MI300X FP8", lambda: _tf("MI300X", "fp8"), 2614.9, "same page: Matrix FP8 2614.9"),
    ("MI300X HBM", lambda: hardware.get("MI300X").hbm_bandwidth / 1e12, 5.3, "same page: 5.3 TB per second"),
]


@pytest.mark.parametrize("name, computed, published, citation", PINNED, ids=[p[0] for p in PINNED])
def test_chip_figure_matches_its_primary_source(name, computed, published, citation):
    # 0.1%: the sources round to 3-5 significant figures (989.4 x 2 = 1,978.8 prints as 1,979).
    assert computed() == pytest.approx(published, rel=1e-3), citation


# HBM as the device reports it, typed from the cited captures (chips.toml's hbm_reported_*): nvidia-smi's
# totals in MiB, rocm-smi's in bytes. Every fit uses these; a chip without one keeps its nominal figure.
REPORTED = {"A100-80GB": 81_920 * 2**20, "H100-SXM": 81_559 * 2**20, "H200": 143_771 * 2**20,
            "B200": 183_359 * 2**20, "MI300X": 206_141_652_992}


def test_fits_use_hbm_as_the_chip_reports_it():
    for name, chip in hardware.catalog_chips().items():
        if name in REPORTED:
            assert chip.hbm_reported and chip.hbm_capacity == REPORTED[name], name
            assert chip.hbm_nominal < chip.hbm_capacity < 1.08 * chip.hbm_nominal, name  # GiB-sized stacks
            assert chip.hbm_reported_source.startswith("https://") and chip.hbm_reported_as_of, name
        else:
            assert not chip.hbm_reported and chip.hbm_capacity == chip.hbm_nominal, name
            assert "nominal" in chip.note and "is kept" in chip.note, name  # the note says why
    assert hardware.get("H100-SXM").hbm_nominal == 80e9
    assert hardware.get("H100-SXM").hbm_words(0.9) == "90% of 85.5 GB as reported"
    assert hardware.get("GB200").hbm_words() == "186.0 GB nominal"
    assert roofline.replica("H100-SXM", "llama-3-70b", "bf16", 8).usable_hbm(0.1) == pytest.approx(
        0.9 * 8 * 81_559 * 2**20, rel=1e-12)


@pytest.mark.parametrize("entry, message", [
    ({"hbm_GB": 80.0, "hbm_reported_MiB": 81559.0}, "hbm_reported_source"),
    ({"hbm_GB": 80.0, "hbm_reported_MiB": 81559.0, "hbm_reported_bytes": 8.5e10,
      "hbm_reported_source": "https://x.org", "hbm_reported_as_of": "2025-01-01"}, "exactly one"),
    ({"hbm_GB": 80.0, "hbm_reported_MiB": 8155.9, "hbm_reported_source": "https://x.org",
      "hbm_reported_as_of": "2025-01-01"}, "within"),
])
def test_a_reported_capacity_needs_its_source_one_unit_and_a_plausible_size(entry, message):
    with pytest.raises(ChalkError, match=message):
        hardware._hbm("chips.toml [test]", entry)


# Published maximum contexts: Llama 3 model card (8K), Llama 3.1 paper §3.4 (128K = 131,072),
# Llama 2 paper (4,096), GPT-3 paper (n_ctx 2,048), Mixtral paper (32K = 32,768).
PUBLISHED_MAX_CONTEXT = {"llama-3-8b": 8192, "llama-3.1-405b": 131072, "llama-2-13b": 4096,
                         "gpt-3-175b": 2048, "mixtral-8x7b": 32768}


def test_every_model_states_its_maximum_context_with_a_source():
    for name, m in models.catalog_models().items():
        assert m.max_context and m.max_context > 0, name
        assert m.max_context_source.startswith("https://"), name
    for name, tokens in PUBLISHED_MAX_CONTEXT.items():
        assert models.get(name).max_context == tokens, name


# --- the reference pages and `python -m chalk list` ----------------------------------------------
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def reference_tables() -> dict[str, str]:
    from chalk.catalog import reference
    return {heading: table() for tables in reference.LISTS.values() for heading, table in tables.items()}


def test_every_reference_row_links_its_source_and_date():
    for heading, table in reference_tables().items():
        rows = table.splitlines()[2:]
        assert rows, f"{heading}: no rows"
        for row in rows:
            assert "[source](https://" in row and DATE.search(row), f"{heading}: {row[:100]}"


@pytest.mark.parametrize("filename", [
    "chips.toml", "systems.toml", "models.toml", "prices.toml", "tiers.toml", "quoted.toml", "memory.toml",
    "layouts.toml", "operators.toml", "overtraining.toml",
])
def test_every_data_entry_shows_with_its_source_and_date(filename):
    rows = [row for table in reference_tables().values() for row in table.splitlines()[2:]]
    for name, entry in catalog.load(filename).items():
        named = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
        assert any(named.search(row) and f"[source]({entry['source']}), {entry['as_of']}" in row for row in rows), \
            f"{filename} [{name}]: no reference row names it with its source and date"


def test_reference_tables_compute_what_their_sources_print():
    from chalk.catalog import reference
    rows = {row.split("|")[1].strip(" `"): row for row in reference.expert_placement_table().splitlines()[2:]}
    # DeepSeek-V3 report §3.4 (arXiv 2412.19437): prefill EP32 with 32 redundant experts, "each GPU
    # hosts its own 8 experts and one redundant expert": (256 + 32) / 32 = 9; decode EP320 with 64
    # GPUs for redundant and shared experts: one expert per GPU. Online decode (DeepSeek's
    # inference-system overview, 2025-03-01): EP144 with 32 redundant, (256 + 32) / 144 = 2.
    for name, printed in (("paper-prefill", 9), ("paper-decode", 1), ("online-decode", 2)):
        assert f"| {printed} | {printed} |" in rows[name], rows[name]
    # ZeRO §3.1 (arXiv 1910.02054): 2 + 2 + 12 = 16 bytes per parameter for mixed-precision Adam.
    assert "| 2 | 2 | 12 | 16 |" in reference.recipes_table()
    # Epoch AI: HBM $12B of $22B in 2024 (55%) and $32B of $52B in 2025 (62%).
    spending = reference.spending_table()
    assert "| 12 | 22 | 55%" in spending and "| 32 | 52 | 62%" in spending
    # GTC 2025: Rubin Ultra NVL576 is 144 packages of 4 dies with 1 TB of HBM each: 576 dies, 144 TB.
    assert "| 144 | 4 | 576 | 144 |" in reference.domains_table()
