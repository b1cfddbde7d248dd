"""What real operators publish about their serving fleets (``data/operators.toml``).

Each entry holds only published figures with its source; ``chalk.operator`` sets the roofline of
the same hardware and layout beside them. The catalog names an entry refers to (model, chip,
system, price entry, number formats) are resolved here, so a typo fails when the file is loaded.
"""
from dataclasses import dataclass
from functools import cache

from .. import catalog
from ..errors import ChalkError, lookup
from . import hardware, models, prices, systems

_TEXT = {"operator": str, "served": str, "model": str, "chip": str, "system": str, "dtype": str,
         "attention_dtype": str, "dispatch_dtype": str, "combine_dtype": str, "priced_at": str}
_COUNTS = {"decode_nodes": int, "decode_expert_parallel": int, "decode_attention_data_parallel": int,
           "decode_redundant_experts": int, "decode_routed_experts_per_gpu": int,
           "decode_shared_experts_per_gpu": int, "decode_micro_batches": int, "prefill_nodes": int,
           "prefill_expert_parallel": int, "prefill_routed_experts_per_gpu": int, "peak_nodes": int,
           "kv_tokens_per_output_token": int}
_FIGURES = {"mean_nodes": float, "usd_per_gpu_hour": float, "cost_usd_per_day": float,
            "input_tokens": float, "input_tokens_cache_hit": float, "cache_hit_percent": float,
            "output_tokens": float, "prefill_tokens_per_second_per_node": float,
            "decode_tokens_per_second_per_node": float, "revenue_usd_per_day": float,
            "cost_profit_margin_percent": float}


@dataclass(frozen=True)
class Operator:
    """One operator's published serving statistics, as typed in ``operators.toml``."""
    name: str
    operator: str
    served: str
    model: models.Model
    chip: hardware.Chip
    system: systems.System
    dtype: str
    attention_dtype: str
    dispatch_dtype: str
    combine_dtype: str
    decode_nodes: int
    decode_expert_parallel: int
    decode_attention_data_parallel: int
    decode_redundant_experts: int
    decode_routed_experts_per_gpu: int
    decode_shared_experts_per_gpu: int
    decode_micro_batches: int
    prefill_nodes: int
    prefill_expert_parallel: int
    prefill_routed_experts_per_gpu: int
    peak_nodes: int
    mean_nodes: float
    usd_per_gpu_hour: float
    cost_usd_per_day: float
    input_tokens: float
    input_tokens_cache_hit: float
    cache_hit_percent: float
    output_tokens: float
    user_tokens_per_second: tuple[float, float]
    """(low, high): the published range of one user's output speed"""
    kv_tokens_per_output_token: int
    prefill_tokens_per_second_per_node: float
    decode_tokens_per_second_per_node: float
    revenue_usd_per_day: float
    cost_profit_margin_percent: float
    priced_at: prices.Price
    source: str
    as_of: str
    note: str = ""

    @property
    def gpus_per_node(self) -> int:
        return self.system.count


def _build(name: str, e: dict) -> Operator:
    where = f"operators.toml [{name}]"
    catalog.require(where, e, _TEXT | _COUNTS | _FIGURES)
    speeds = e.get("user_tokens_per_second")
    if (not isinstance(speeds, list) or len(speeds) != 2
            or not all(isinstance(v, (int, float)) and v > 0 for v in speeds) or speeds[0] > speeds[1]):
        raise ChalkError(f"{where}: user_tokens_per_second must be [low, high] with 0 < low <= high")
    system = systems.get(e["system"])
    chip = hardware.get(e["chip"])
    if system.chip is not chip:
        raise ChalkError(f"{where}: system {system.name} is built from {system.chip.name}, not {chip.name}")
    for key in ("dtype", "attention_dtype", "dispatch_dtype", "combine_dtype"):
        hardware.dtype_name(e[key])
    for key in ("dtype", "attention_dtype"):
        chip.flops(e[key])
    fields = {k: e[k] for k in (*_COUNTS, *_TEXT)} | {k: float(e[k]) for k in _FIGURES}
    fields |= {"model": models.get(e["model"]), "chip": chip, "system": system,
               "priced_at": prices.get(e["priced_at"]), "user_tokens_per_second": tuple(map(float, speeds)),
               "source": e["source"], "as_of": e["as_of"], "note": e.get("note", "")}
    return Operator(name=name, **fields)


@cache
def catalog_operators() -> dict[str, Operator]:
    return {name: _build(name, e) for name, e in catalog.load("operators.toml").items()}


def get(name: str) -> Operator:
    """The operator entry ``name``; an unknown name lists the known ones."""
    return lookup("operator entry", name, catalog_operators(), param="operator",
                  plural="operator entries")


def names() -> list[str]:
    return list(catalog_operators())
