"""Chapter 3 (pipelining): the numbers its flashcards quote and the figures they show.

Every number is computed from ``chalk.pipeline`` and the catalog, as the chapter's are; none is an
answer of the problem set, whose scenarios differ. The figures are the chapter's own Gantt chart
and bubble plot, redrawn at card size.
"""
from collections.abc import Callable

from ... import pipeline
from ...catalog import hardware, layouts, models, systems

_DS = "deepseek-v3"
_NVL72 = "gb200-nvl72"
_CARD_GANTT = dict(stages=4, microbatches=6)
"""The card's Gantt chart: small enough to read every box at card size."""


def _nvl72():
    # The chapter's table and correction box: the same rows (experts over the rack's chips).
    return next(rb for rb in pipeline.rack_test(_DS) if rb.system == _NVL72)


def _nvl72_fp8():
    return next(rb for rb in pipeline.rack_test(_DS, **pipeline.DEEPEP_FORMATS) if rb.system == _NVL72)


def _dff_ratio() -> float:
    return models.get("llama-3.1-405b").d_ff / models.get(_DS).moe["d_ff_expert"]


def _ds_layout():
    return layouts.get(_DS)


def _gantt():
    # Imported here so that a deck without figures loads even while the figures module is edited.
    from ...figures import pipelining
    runs = [pipelining.run(_CARD_GANTT["stages"], _CARD_GANTT["microbatches"], s) for s in ("gpipe", "1f1b")]
    fig = pipelining.gantt_figure(runs, ["GPipe", "1F1B"], width=5.6)
    fig.set_size_inches(5.6, 3.8)  # the two charts' natural height is taller than a card allows
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def _bubbles():
    from ...figures import pipelining
    fig = pipelining.bubble_figure(stages=(4, 16))
    fig.set_size_inches(5.8, 3.6)
    fig.tight_layout()
    return fig


VALUES: dict[str, Callable[[], str]] = {
    "pp_lecture_rho": lambda: f"{pipeline.LECTURE_RHO:.0f}",
    "pp_nvl72_rho": lambda: f"{_nvl72().bandwidth_ratio:.0f}",
    "pp_nvl72_one_layer": lambda: f"{_nvl72().ratio_one_layer:.2f}",
    "pp_nvl72_min_layers": lambda: f"{_nvl72().min_layers}",
    "pp_nvl72_fp8": lambda: f"{_nvl72_fp8().ratio_one_layer:.2f}",
    "pp_margin_fp8": lambda: f"{pipeline.crossing_margin(_DS, _NVL72, 1, 'fp8', pipeline.DEFAULT_MFU):.1f}",
    "pp_ds_dff": lambda: f"{models.get(_DS).moe['d_ff_expert']:,}",
    "pp_dff_ratio": lambda: f"{_dff_ratio():.0f}",
    "pp_llama_tp": lambda: f"{layouts.get('llama-3.1-405b-8k-8192')['tensor']:.0f}",
    "pp_ds_rho": lambda: f"{_ds_layout()['nvlink_GBps'] / _ds_layout()['ib_GBps']:.1f}",
    "pp_ds_nodes": lambda: f"{_ds_layout()['max_nodes_per_token']:.0f}",
    "pp_ds_pp": lambda: f"{_ds_layout()['pipeline']:.0f}",
    "pp_llama_pp": lambda: f"{layouts.get('llama-3.1-405b-8k-16384')['pipeline']:.0f}",
    "pp_one_batch_idle": lambda: f"{pipeline.simulate(4, 1, 'inference').idle_fraction:.0%}",
    "pp_rack_tb": lambda: f"{systems.get(_NVL72).count * systems.get(_NVL72).chip.hbm_capacity / 1e12:.1f}",
    "pp_ds_fp8_gb": lambda: f"{models.get(_DS).total_params * hardware.bytes_per_weight('fp8') / 1e9:,.0f}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""

FIGURES: dict[str, Callable] = {
    "pp_gantt": _gantt,
    "pp_bubbles": _bubbles,
}
"""Figures a card may name: GPipe against 1F1B, and the bubble against micro-batches."""
