"""Chapter 4 (memory capacity): the numbers its flashcards quote and the figures they show.

P* is quoted at the batch a stage would run (``memory.crossover_at_balance``: the balance batch
where it fits), as the chapter computes it, not at an arbitrary micro-batch.

Every number is computed from ``chalk.memory`` and the catalog, for the chapter's own scenarios
(Llama 3.1 405B in BF16 on HGX H100 stages; DeepSeek-V3 in FP8 on GB200 NVL72 racks); none is an
answer of the problem set, whose scenarios differ. The figures are the chapter's, redrawn at card size.
"""
from collections.abc import Callable

from ... import memory, moe
from ...catalog import memory_data, systems
from ...roofline import HEADROOM

_LLAMA = dict(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", batch=16, context=32768)
_DS = dict(model="deepseek-v3", dtype="fp8", batch=1024, context=4096)
_GB = 1e9


def _llama_parts(stages: int):
    l = _LLAMA
    return memory.per_chip_parts(l["model"], l["batch"], l["context"], l["dtype"], systems.get(l["system"]).count, stages)


def _floor_ms(system: str) -> float:
    return 1e3 * memory.weight_floor(_DS["model"], system, _DS["dtype"])


def _wall(key: str) -> str:
    from ...figures import memory_capacity
    row = [r for r in memory_capacity.wall_rows() if r["compute"] is not None][-1]
    return f"{row[key]:.1f}"


def _wall_chip() -> str:
    from ...figures import memory_capacity
    return [r for r in memory_capacity.wall_rows() if r["compute"] is not None][-1]["chip"]


def _share(name: str) -> str:
    return f"{memory_data.COST_SHARES[name].shares['hbm']:.0%}"


def _copy_factor() -> str:
    d = _DS
    placed = moe.placement(d["model"], "gb200-nvl72", d["batch"], d["context"], d["dtype"])
    even = memory.per_chip_parts(d["model"], d["batch"], d["context"], d["dtype"], systems.get("gb200-nvl72").count, 1)[0]
    return f"{placed.weight_bytes / even:.1f}"


def _stages_card():
    # Imported here so that a deck without figures loads even while the figures module is edited.
    from ...figures import memory_capacity
    l = _LLAMA
    fig = memory_capacity.stages_figure(l["model"], l["system"], l["dtype"], l["batch"], l["context"], width=5.6,
                                        height=3.4)
    return fig


def _floor_card():
    from ...figures import memory_capacity
    return memory_capacity.floor_figure(_DS["model"], _DS["dtype"], width=5.8, height=3.6)


VALUES: dict[str, Callable[[], str]] = {
    "mc_llama_k": lambda: f"{_llama_parts(1)[1] / _GB:.0f}",
    "mc_llama_batch": lambda: f"{_LLAMA['batch']}",
    "mc_llama_ctx": lambda: f"{_LLAMA['context']:,}",
    "mc_h100_usable": lambda: f"{systems.get('hgx-h100').chip.hbm_capacity * (1 - HEADROOM) / _GB:.0f}",
    "mc_floor_h100": lambda: f"{_floor_ms('hgx-h100'):.0f}",
    "mc_floor_nvl72": lambda: f"{_floor_ms('gb200-nvl72'):.2f}",
    "mc_wall_chip": _wall_chip,
    "mc_wall_capacity": lambda: _wall("capacity"),
    "mc_wall_bandwidth": lambda: _wall("bandwidth"),
    "mc_wall_compute": lambda: _wall("compute"),
    "mc_share_late": lambda: _share("epoch-hbm-share-2025q4"),
    "mc_lecture_capex": lambda: f"{memory_data.LECTURE['memory_capex_share']:.0%}",
    "mc_lecture_added_ms": lambda: f"{memory_data.LECTURE['added_ms']:.0f}",
    "mc_lecture_stages": lambda: f"{memory_data.LECTURE['stages']:.0f}",
    "mc_nccl_low": lambda: f"{memory_data.LATENCIES['nccl-net-step']['base_us_ll'] + memory_data.LATENCIES['nccl-net-step']['hop_us_ll']:.0f}",
    "mc_nccl_high": lambda: f"{memory_data.LATENCIES['nccl-net-step']['base_us_simple'] + memory_data.LATENCIES['nccl-net-step']['hop_us_simple']:.0f}",
    "mc_rdma_low": lambda: f"{min(memory_data.latency('deepep-low-latency-rdma')['dispatch_us']):.0f}",
    "mc_rdma_high": lambda: f"{max(memory_data.latency('deepep-low-latency-rdma')['dispatch_us']):.0f}",
    "mc_adam_bytes": lambda: f"{memory_data.recipe('zero-mixed-adam').bytes_per_param:g}",
    "mc_train_70b_h100": lambda: f"{memory.fewest_chips_to_train('llama-3-70b', 'H100-SXM')}",
    "mc_train_70b_tb": lambda: f"{memory.training_state_bytes('llama-3-70b') / 1e12:.2f}",
    "mc_copy_factor": _copy_factor,
    "mc_decode_gpus": lambda: f"{memory_data.deployment('deepseek-v3-decode')['gpus']:.0f}",
    "mc_l405_p_star": lambda: f"{memory.crossover_at_balance(_LLAMA['model'], _LLAMA['system'], 4096, _LLAMA['dtype']).stages:.1f}",
    "mc_adam_w": lambda: f"{memory_data.recipe('zero-mixed-adam').weights:g}",
    "mc_adam_g": lambda: f"{memory_data.recipe('zero-mixed-adam').gradients:g}",
    "mc_adam_o": lambda: f"{memory_data.recipe('zero-mixed-adam').optimizer:g}",
    "mc_period_late": lambda: memory_data.COST_SHARES["epoch-hbm-share-2025q4"].period,
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""

FIGURES: dict[str, Callable] = {
    "mc_board": _stages_card,
    "mc_floor": _floor_card,
}
"""Figures a card may name: memory per GPU against pipeline stages, and the weight-read floor
against the scale-up domain."""
