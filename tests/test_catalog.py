"""Every data entry carries a source and a date, and bad data is rejected when loaded."""
import pytest

from chalk import catalog, hardware, models
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
