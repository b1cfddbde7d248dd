"""Chapter 2 (MoE across racks): the numbers its flashcards quote and the figures they show.

Every number is computed from ``chalk.moe`` and the catalog, as the chapter's are; none is an
answer of the problem set, whose scenarios differ. The figures are the chapter's domain picture
and load-balance plot, redrawn at card size.
"""
from collections.abc import Callable

from ... import moe
from ...catalog import hardware, layouts, models, systems
from ...catalog.quoted import LECTURE as BOARD

_DS = "deepseek-v3"
_NVL72 = "gb200-nvl72"
_TOKENS_PER_CHIP = 64
"""The decode step the cards' all-to-all numbers describe: 64 tokens on each expert chip."""


def _expert_chips() -> int:
    return int(moe.LECTURE["expert_chips"])


def _two_racks(dedup=False) -> float:
    """The all-to-all over two NVL72s over one, each rack keeping its tokens (DeepSeek-V3, FP8):
    every expert choice sent on its own, or (``dedup``) a token once per GPU and once per rack."""
    chips = _expert_chips()
    one = moe.layer_times(_DS, _NVL72, _TOKENS_PER_CHIP * chips, "fp8", chips=chips, dedup=dedup).communication
    two = moe.layer_times(_DS, _NVL72, 2 * _TOKENS_PER_CHIP * chips, "fp8", domains=2, chips=chips,
                          dedup=dedup).communication
    return two / one


def _second_rack(part: str) -> float:
    """DeepSeek-V3 on 64 GPUs of one NVL72 and of each of two, FP8, nominal rates: one layer's all-to-all
    over two racks (``"a2a"``, seconds), the weight reads it could hide behind there (``"reads"``), or the
    milliseconds a second rack adds to a decode step of two micro-batches (``"tax"``)."""
    chips = _expert_chips()
    if part == "tax":
        one, two = (moe.decode_moe_time(_DS, _NVL72, _TOKENS_PER_CHIP, "fp8", domains=d, chips=chips) for d in (1, 2))
        return 1e3 * (two - one)
    t = moe.layer_times(_DS, _NVL72, 2 * _TOKENS_PER_CHIP * chips, "fp8", domains=2, chips=chips)
    return t.communication if part == "a2a" else t.weights


def _two_boxes(system: str) -> float:
    """DeepSeek-V3's decode all-to-all (every choice sent on its own) over two 8-GPU boxes of ``system``
    over one, each box keeping its tokens per GPU."""
    chips = systems.get(system).count
    one, two = (moe.layer_times(_DS, system, d * _TOKENS_PER_CHIP * chips, "fp8", domains=d).communication
                for d in (1, 2))
    return two / one


def _h800_rho_measured() -> float:
    """NVLink over InfiniBand as the DeepSeek-V3 report measured them on H800s."""
    v3 = layouts.get(_DS)
    return v3["nvlink_GBps"] / v3["ib_GBps"]


def _rhos() -> list[float]:
    """The ratio at every catalog system whose edge is a domain boundary (a v5p cube is not)."""
    return list(moe.boundary_ratios().values())


def _torus_text(system) -> str:
    dims, side = moe.torus_shape(system)
    return " × ".join([f"{side}"] * dims)


def _placement(system):
    chips = _expert_chips() if systems.get(system).count > _expert_chips() else None
    return moe.placement(_DS, system, 0, 0, "fp8", chips=chips)


def _even_split_bytes() -> float:
    """DeepSeek-V3's FP8 weights divided evenly over an NVL72, as if nothing were copied."""
    return models.get(_DS).total_params * hardware.bytes_per_weight("fp8") / systems.get(_NVL72).count


def _growth(prefix: str) -> moe.Domain:
    return next(d for d in moe.domain_growth() if d.name.startswith(prefix))


def _online_decode() -> moe.Deployment:
    return next(d for d in moe.deployments() if d.name == "online-decode")


def _domain_figure():
    # Imported here so that a deck without figures loads even while the figures module is edited.
    from ...figures import moe_racks
    fig = moe_racks.domain_figure(_DS, _NVL72, ("even",), width=2.6)
    fig.set_size_inches(3.0, 3.4)
    return fig


def _imbalance_figure():
    from ...figures import moe_racks
    fig = moe_racks.imbalance_figure(_DS, chips=(8, 64), tokens=(128, 1024, 8192), trials=4)
    fig.set_size_inches(5.6, 3.4)
    fig.tight_layout()
    return fig


VALUES: dict[str, Callable[[], str]] = {
    "moe_ds_tot": lambda: f"{models.get(_DS).total_params / 1e9:,.0f}",
    "moe_ds_act": lambda: f"{models.get(_DS).active_params / 1e9:,.1f}",
    "moe_ds_act_published": lambda: f"{models.get(_DS).reported_active_params / 1e9:,.0f}",
    "moe_lecture_chips": lambda: f"{_expert_chips()}",
    "moe_nvl72_count": lambda: f"{systems.get(_NVL72).count}",
    "moe_g72": lambda: f"{moe.experts_per_chip(_DS, systems.get(_NVL72).count)}",
    "moe_two_racks": lambda: f"{_two_racks():.0f}",
    "moe_two_racks_dedup": lambda: f"{_two_racks(dedup=True):.1f}",
    "moe_h800_rho_measured": lambda: f"{_h800_rho_measured():.1f}",
    "moe_h800_rho": lambda: f"{systems.get('hgx-h800').scale_up_to_out:.0f}",
    "moe_crossover": lambda: f"{moe.crossover_ratio(_DS, 2 * _expert_chips(), _expert_chips()):.1f}",
    "moe_h800_two_boxes": lambda: f"{_two_boxes('hgx-h800'):.1f}",
    "moe_h100_two_boxes": lambda: f"{_two_boxes('hgx-h100'):.0f}",  # 5.1 reads as problem set 2's expert_gb_decode
    "moe_decode_tax": lambda: f"{_second_rack('tax'):.0f}",
    "moe_two_racks_us": lambda: f"{1e6 * _second_rack('a2a'):.0f}",
    "moe_two_racks_reads_us": lambda: f"{1e6 * _second_rack('reads'):.0f}",
    "moe_compute_bound_chip": lambda: f"{moe.compute_bound_step(_DS, _NVL72, 'fp8', chips=_expert_chips()) / _expert_chips():.0f}",
    "moe_rho_low": lambda: f"{min(_rhos()):.0f}",
    "moe_rho_high": lambda: f"{max(_rhos()):.0f}",
    "moe_lecture_rho": lambda: f"{BOARD['scale_up_to_out']:.0f}",
    "moe_h100_both": lambda: f"{hardware.get('H100-SXM').scale_up_bandwidth_bidirectional / 1e9:,.0f}",
    "moe_h100_one": lambda: f"{hardware.get('H100-SXM').scale_up_bandwidth / 1e9:,.0f}",
    "moe_h100_nic": lambda: f"{8 * hardware.get('H100-SXM').scale_out_bandwidth / 1e9:,.0f}",
    "moe_h100_rho": lambda: f"{systems.get('hgx-h100').scale_up_to_out:.0f}",
    "moe_rep_gb": lambda: f"{_placement(_NVL72).replicated_bytes / 1e9:.0f}",
    "moe_even_gb": lambda: f"{_even_split_bytes() / 1e9:.0f}",
    "moe_hgx_weights_gb": lambda: f"{_placement('hgx-h100').weight_bytes / 1e9:.0f}",
    "moe_decode_chips": lambda: f"{_online_decode().chips}",
    "moe_decode_g": lambda: f"{_online_decode().experts_per_chip}",
    "moe_box_tb": lambda: f"{_growth('HGX H100').hbm / 1e12:.2f}",
    "moe_nvl72_tb": lambda: f"{_growth('GB200').hbm / 1e12:.1f}",
    "moe_ultra_tb": lambda: f"{_growth('Rubin Ultra').hbm / 1e12:.0f}",
    "moe_ultra_packages": lambda: f"{_growth('Rubin Ultra').packages}",
    "moe_ultra_per": lambda: f"{_growth('Rubin Ultra').dies_per_package}",
    "moe_lecture_rubin": lambda: f"{moe.LECTURE['rubin_domain']:.0f}",
    "moe_reach_50": lambda: f"{moe.COPPER_REACH[50]:.0f}",
    "moe_reach_100": lambda: f"{moe.COPPER_REACH[100]:.0f}",
    "moe_v5p_share": lambda: f"{moe.torus_share('tpu-v5p-cube'):.2f}",
    "moe_v5p_shape": lambda: _torus_text("tpu-v5p-cube"),
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""

FIGURES: dict[str, Callable] = {
    "moe_domain": _domain_figure,
    "moe_imbalance": _imbalance_figure,
}
"""Figures a card may name: the lecture's 64-of-72 placement, and the busiest chip against tokens."""
