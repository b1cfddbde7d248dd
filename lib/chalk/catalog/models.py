"""Model architectures (``data/models.toml``) and what follows from their config fields.

Parameter counts, FLOPs and KV-cache bytes are computed from the published shapes with the SymPy
formulas of ``model_formulas`` (re-exported here: ``models.KV_BYTES_LONG``); the reported totals stored beside the shapes are only for checking.
Norm vectors and biases (under 0.1% of any catalog model) are left out.

Layers follow ``layer_pattern``, repeated over the depth: ``G`` full (global) attention, ``L``
sliding-window (local) attention over the last ``sliding_window`` tokens, ``S`` a state-space
(Mamba) layer that keeps no KV cache. Consecutive groups of ``kv_share`` attention layers may
share one KV cache (cross-layer attention, Brandon et al. 2024, arXiv 2405.12981).
"""
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from .. import catalog
from .hardware import BYTES_PER_ELEMENT, bytes_per_weight
from ..errors import ChalkError, lookup, non_negative, positive

def _formulas():
    """``model_formulas``, imported on first use: loading and validating the catalog needs no SymPy."""
    from . import model_formulas
    return model_formulas


def _numeric():
    """``model_numeric``, the same formulas as plain Python: evaluating an entry needs no SymPy."""
    from . import model_numeric
    return model_numeric


def _evaluate(formula, values: dict):
    """One of ``model_numeric``'s formulas at ``values`` (by symbol name; extra names are ignored)."""
    code = formula.__code__
    return formula(**{name: values[name] for name in code.co_varnames[:code.co_argcount]})


def __getattr__(name: str):
    """The formulas under their old names (``models.FFN_PARAMS``, PEP 562), imported when first read."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_formulas(), name)


PHASES = ("decode", "prefill")
"""The phases ``ATTENTION_PHASE_FLOPS`` has a kernel form for."""

LAYER_KINDS = {"G": "global attention", "L": "sliding-window attention", "S": "state-space (no KV)"}

_SHAPE = {"attention": str, "n_layers": int, "d_model": int, "n_heads": int, "d_head": int,
          "ffn_gated": bool, "vocab": int, "tied_embeddings": bool, "display": str}
_MOE = {"n_routed_experts": int, "experts_per_token": int, "d_ff_expert": int}
_MLA = {"q_lora_rank": int, "kv_lora_rank": int, "rope_head_dim": int}
_SSM = {"d_state": int, "d_conv": int, "expand": int, "dt_rank": int}


@dataclass(frozen=True)
class Model:
    name: str
    display: str
    attention: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_ff: int
    ffn_gated: bool
    vocab: int
    tied_embeddings: bool
    source: str
    as_of: str
    moe: dict | None = None
    mla: dict | None = None
    reported_total_params: float | None = None
    reported_active_params: float | None = None
    training_tokens: float | None = None
    note: str = ""
    layer_pattern: str = "G"
    sliding_window: int | None = None
    kv_share: int = 1
    ssm: dict | None = None
    relative_positions: bool = False
    """Transformer-XL relative position projections in every attention layer."""
    max_context: int | None = None
    """The longest context the publisher supports, in tokens."""
    max_context_source: str = ""
    checkpoint: dict | None = None
    checkpoint_of: str | None = None
    """The catalog model whose published checkpoint this entry is (same shape, its own formats):
    tables of architectures list the base only."""
    """A published checkpoint's number format per tensor group (``CHECKPOINT_GROUPS``), when its
    tensors are not all in one format; ``None`` when every weight is served in the one ``dtype``."""

    # --- layer make-up ----------------------------------------------------------------------
    def layer_kinds(self) -> list[str]:
        """The kind of each layer, ``layer_pattern`` repeated over the depth."""
        pattern = self.layer_pattern
        return [pattern[i % len(pattern)] for i in range(self.n_layers)]

    def _count(self, kind: str) -> int:
        return self.layer_kinds().count(kind)

    @property
    def n_attention_layers(self) -> int:
        return self._count("G") + self._count("L")

    @property
    def attention_kind(self) -> str:
        """A short description for tables: MHA/GQA/MQA/MLA plus window and hybrid make-up."""
        parts = [self.attention.upper()]
        if self._count("L"):
            parts.append(f"{self._count('L')} local (w={self.sliding_window:,}) + {self._count('G')} global")
        if self._count("S"):
            parts.append(f"{self._count('S')} SSM + {self.n_attention_layers} attention layers")
        if self.kv_share > 1:
            parts.append(f"KV shared by {self.kv_share} layers")
        return ", ".join(parts)

    def _is_moe_layer(self, i: int) -> bool:
        moe = self.moe
        return (i >= moe.get("n_dense_layers", 0)
                and i % moe.get("layer_period", 1) == moe.get("layer_offset", 0))

    @property
    def n_moe_layers(self) -> int:
        return sum(self._is_moe_layer(i) for i in range(self.n_layers)) if self.moe else 0

    # --- parameters -------------------------------------------------------------------------
    def _ffn(self, width: int) -> float:
        return float(_numeric().FFN_PARAMS(n_mat=3 if self.ffn_gated else 2, d_model=self.d_model, d_ff=width))

    def _values(self) -> dict:
        """The shape, by the names the formulas' symbols have in ``model_formulas``."""
        v = {"d_model": self.d_model, "d_head": self.d_head, "n_heads": self.n_heads,
             "n_kv": self.n_kv_heads, "n_layers": self.n_layers, "n_G": self._count("G"),
             "n_loc": self._count("L"), "w": self.sliding_window or 1, "g_kv": self.kv_share}
        if self.mla:
            v |= {"d_c": self.mla["kv_lora_rank"], "d_cq": self.mla["q_lora_rank"],
                  "d_R": self.mla["rope_head_dim"]}
        return v

    @cached_property
    def attention_params_per_layer(self) -> float:
        """One attention layer with its own KV projections."""
        return float(_evaluate(_numeric().ATTENTION_PARAMS[self.attention], self._values()))

    @cached_property
    def _attention_params(self) -> float:
        n = _numeric()
        shared = self.n_attention_layers - self.n_attention_layers // self.kv_share
        positions = float(_evaluate(n.RELATIVE_POSITION_PARAMS, self._values())) if self.relative_positions else 0.0
        return (self.n_attention_layers * (self.attention_params_per_layer + positions)
                - shared * float(_evaluate(n.KV_PROJECTION_PARAMS, self._values())))

    @cached_property
    def _ssm_params(self) -> float:
        if not self.ssm:
            return 0.0
        s = self.ssm
        per_layer = _numeric().SSM_PARAMS(d_inner=s["expand"] * self.d_model, d_model=self.d_model,
                                          d_conv=s["d_conv"], r_dt=s["dt_rank"], d_state=s["d_state"])
        return self._count("S") * float(per_layer)

    @cached_property
    def embedding_params(self) -> float:
        tables = 1 if self.tied_embeddings else 2
        return tables * float(_numeric().EMBEDDING_PARAMS(n_vocab=self.vocab, d_model=self.d_model))

    def _ffn_params(self, active: bool) -> float:
        if not self.moe:
            return self.n_layers * self._ffn(self.d_ff)
        moe = self.moe
        experts = (moe["experts_per_token"] if active else moe["n_routed_experts"]) + moe.get("n_shared_experts", 0)
        router = self.d_model * moe["n_routed_experts"]
        per_moe_layer = experts * self._ffn(moe["d_ff_expert"]) + router
        dense_layers = self.n_layers - self.n_moe_layers
        dense = dense_layers * self._ffn(self.d_ff) if dense_layers else 0.0
        return dense + self.n_moe_layers * per_moe_layer

    def _params(self, active: bool) -> float:
        return self.embedding_params + self._attention_params + self._ssm_params + self._ffn_params(active)

    @cached_property
    def total_params(self) -> float:
        """All weights: embeddings, attention, state-space layers, every expert."""
        return self._params(active=False)

    @cached_property
    def active_params(self) -> float:
        """Weights used for one token: the routed experts it picks plus everything shared."""
        return self._params(active=True)

    @property
    def sparsity(self) -> float:
        """s = N_tot / N_act."""
        return self.total_params / self.active_params

    @cached_property
    def routed_expert_params(self) -> float:
        """Every routed expert of every MoE layer (0 for a dense model): the weights a small batch
        may leave unread. The router and the shared experts are read at every step."""
        if not self.moe:
            return 0.0
        return self.n_moe_layers * self.moe["n_routed_experts"] * self._ffn(self.moe["d_ff_expert"])

    def weight_bytes(self, dtype: str | None = None) -> float:
        """Bytes of the weights as served: the checkpoint's own mixture of formats where the catalog
        holds one (``dtype`` then names only the matmul rate, not the storage), else every weight in
        ``dtype`` (default bf16). Per-row or per-tensor scale factors (under 0.1%) are left out."""
        if self.checkpoint is None:
            return self.total_params * bytes_per_weight(dtype or "bf16")
        c = self.checkpoint
        size = {group: bytes_per_weight(c.get(group, c["default"])) for group in CHECKPOINT_GROUPS}
        groups = {"embeddings": self.embedding_params, "attention": self._attention_params + self._ssm_params,
                  "ffn": self._ffn_params(active=False)}
        total = sum(params * size[group] for group, params in groups.items())
        kept = len(c.get("ffn_kept_layers", ()))  # whole FFNs left in the default format
        return total + kept * self._ffn(self.d_ff) * (bytes_per_weight(c["default"]) - size["ffn"])

    # --- KV cache ---------------------------------------------------------------------------
    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """b_kv: KV-cache bytes each further token of context adds, all layers, at long context.

        Only full-attention layers count (divided by ``kv_share``): sliding-window layers stop
        growing at their window and state-space layers keep no KV. For a model of only global
        layers this is the whole per-token cost at any context (MLA: latent + RoPE key).
        ``kv_bytes(context)`` gives the exact total for one sequence.
        """
        positive("bytes_per_element", bytes_per_element)
        return float(self._kv_long(bytes_per_element))

    def kv_bytes(self, context, bytes_per_element: float = 2):
        """KV-cache bytes of one sequence of ``context`` tokens (NumPy arrays broadcast)."""
        non_negative("context", context)
        positive("bytes_per_element", bytes_per_element)
        total = self._kv_context(np.asarray(context, dtype=float), bytes_per_element)
        return float(total) if np.ndim(total) == 0 else total

    def kv_bytes_windowed(self, context, bytes_per_element: float = 2):
        """The part of ``kv_bytes`` that the sliding-window layers hold (exactly 0 without windows)."""
        non_negative("context", context)
        positive("bytes_per_element", bytes_per_element)
        total = self._kv_windowed(np.asarray(context, dtype=float), bytes_per_element)
        return float(total) if np.ndim(total) == 0 else total * np.ones_like(np.asarray(context, dtype=float))

    def _kv_long(self, b_el):
        return _evaluate(_numeric().KV_BYTES_LONG[self.attention], self._values() | {"b_el": b_el})

    def _kv_context(self, context, b_el):
        return _evaluate(_numeric().KV_BYTES_CONTEXT[self.attention], self._values() | {"L": context, "b_el": b_el})

    def _kv_windowed(self, context, b_el):
        return _evaluate(_numeric().KV_BYTES_WINDOWED[self.attention], self._values() | {"L": context, "b_el": b_el})

    # --- FLOPs ------------------------------------------------------------------------------
    @property
    def input_embedding_params(self) -> float:
        """Parameters read by lookup, not matmul: the input table when it is not the output layer."""
        return 0.0 if self.tied_embeddings else self.embedding_params / 2

    def forward_flops_per_token(self, context):
        """Forward FLOPs for one new token that attends to ``context`` earlier tokens."""
        non_negative("context", context)
        flops = self._flops(np.asarray(context, dtype=float))
        return float(flops) if np.ndim(flops) == 0 else flops

    def _flops(self, context):
        return _evaluate(_numeric().FORWARD_FLOPS_PER_TOKEN[self.attention], self._values() | {
            "N_act": self.active_params, "N_emb": self.input_embedding_params, "L": context})

    def attention_flops_per_cached_token(self, phase: str = "decode") -> float:
        """f_att: attention FLOPs each further cached token adds to one new token, all layers, once
        every sliding window is full, as ``phase``'s kernels run it (``ATTENTION_PHASE_FLOPS``)."""
        return float(_evaluate(_numeric().ATTENTION_LONG[_phase(phase)][self.attention], self._values()))

    def attention_flops_windowed(self, context, phase: str = "decode"):
        """Attention FLOPs of one new token in the sliding-window layers at ``context``."""
        non_negative("context", context)
        context = np.asarray(context, dtype=float)
        total = _evaluate(_numeric().ATTENTION_WINDOWED[_phase(phase)][self.attention], self._values() | {"L": context})
        return float(total) if np.ndim(total) == 0 else total * np.ones_like(context)

    def training_flops(self, tokens: float | None = None) -> float:
        """6 N_act D, with D the reported training tokens unless ``tokens`` is given."""
        tokens = self.training_tokens if tokens is None else tokens
        if tokens is None:
            raise ChalkError(f"tokens: {self.display} has no reported training tokens; pass tokens=")
        positive("tokens", tokens)
        return float(_numeric().TRAINING_FLOPS(N_act=self.active_params, D=tokens))


_ATTENTION_KINDS = ("gqa", "mla", "mha", "mqa")
"""The attention kinds ``ATTENTION_PARAMS`` and the other per-kind formulas are written for."""
CHECKPOINT_GROUPS = ("embeddings", "attention", "ffn")
"""Tensor groups a mixed-precision checkpoint may store in different formats."""


def _check_checkpoint(where: str, e: dict) -> None:
    c = e.get("checkpoint")
    if c is None:
        return
    if not isinstance(c, dict) or "default" not in c:
        raise ChalkError(f"{where}: checkpoint must be a table with a 'default' format")
    for key, value in c.items():
        if key == "ffn_kept_layers":
            if e.get("moe") or not all(isinstance(i, int) and 0 <= i < e["n_layers"] for i in value):
                raise ChalkError(f"{where}: checkpoint.ffn_kept_layers must be layer indices of a dense model")
        elif key not in ("default", *CHECKPOINT_GROUPS) or value not in BYTES_PER_ELEMENT:
            raise ChalkError(f"{where}: checkpoint.{key} must be a format ({', '.join(BYTES_PER_ELEMENT)}) "
                             f"for one of default, {', '.join(CHECKPOINT_GROUPS)}; got {value!r}")


def _phase(phase: str) -> str:
    if phase not in PHASES:
        raise ChalkError(f"phase must be one of {', '.join(map(repr, PHASES))}, got {phase!r}")
    return phase


def _check_layers(where: str, e: dict) -> None:
    pattern = e.get("layer_pattern", "G")
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(LAYER_KINDS):
        raise ChalkError(f"{where}: layer_pattern must be a string of {', '.join(LAYER_KINDS)} "
                         f"({'; '.join(f'{k} = {v}' for k, v in LAYER_KINDS.items())}), got {pattern!r}")
    if not set(pattern) & {"G", "L"}:
        raise ChalkError(f"{where}: layer_pattern needs at least one attention layer (G or L)")
    if "L" in pattern:
        catalog.require(where, e, {"sliding_window": int})
    if "S" in pattern:
        catalog.require(where + " ssm", e.get("ssm", {}), _SSM)
    if "relative_positions" in e:
        catalog.require(where, e, {"relative_positions": bool})
    share = e.get("kv_share", 1)
    if share != 1:
        catalog.require(where, e, {"kv_share": int})
        if e["attention"] == "mla":
            raise ChalkError(f"{where}: kv_share is defined for mha/gqa/mqa, not mla")
        n_attn = sum(pattern[i % len(pattern)] in "GL" for i in range(e["n_layers"]))
        if n_attn % share:
            raise ChalkError(f"{where}: kv_share {share} must divide the {n_attn} attention layers")


def _build(name: str, e: dict) -> Model:
    where = f"models.toml [{name}]"
    catalog.require(where, e, _SHAPE)
    kind = e["attention"]
    if kind not in _ATTENTION_KINDS:
        raise ChalkError(f"{where}: attention must be one of {', '.join(_ATTENTION_KINDS)}, got {kind!r}")
    kv_heads = {"mha": e["n_heads"], "mqa": 1}.get(kind, e.get("n_kv_heads"))
    if kind == "gqa":
        catalog.require(where, e, {"n_kv_heads": int})
    if kind == "mla":
        catalog.require(where + " mla", e.get("mla", {}), _MLA)
    _check_layers(where, e)
    _check_checkpoint(where, e)
    if "max_context" in e:
        catalog.require(where, e, {"max_context": int})
    if "max_context_source" in e:
        catalog.check_source(where, e["max_context_source"], e["as_of"], "max_context_")
    moe = e.get("moe")
    if moe is not None:
        catalog.require(where + " moe", moe, _MOE)
        if moe["experts_per_token"] > moe["n_routed_experts"]:
            raise ChalkError(f"{where}: experts_per_token exceeds n_routed_experts")
    if moe is None or moe.get("n_dense_layers", 0) or moe.get("layer_period", 1) > 1:
        catalog.require(where, e, {"d_ff": int})
    return Model(
        name=name, display=e["display"], attention=kind, n_layers=e["n_layers"],
        d_model=e["d_model"], n_heads=e["n_heads"], n_kv_heads=kv_heads or e["n_heads"],
        d_head=e["d_head"], d_ff=e.get("d_ff", 0), ffn_gated=e["ffn_gated"], vocab=e["vocab"],
        tied_embeddings=e["tied_embeddings"], source=e["source"], as_of=e["as_of"],
        moe=moe, mla=e.get("mla"),
        reported_total_params=e.get("reported_total_params"),
        reported_active_params=e.get("reported_active_params"),
        training_tokens=e.get("training_tokens"), note=e.get("note", ""),
        layer_pattern=e.get("layer_pattern", "G"), sliding_window=e.get("sliding_window"),
        kv_share=e.get("kv_share", 1), ssm=e.get("ssm"),
        relative_positions=e.get("relative_positions", False),
        max_context=e.get("max_context"), max_context_source=e.get("max_context_source", e["source"]),
        checkpoint=e.get("checkpoint"), checkpoint_of=e.get("base"),
    )


def from_config(name: str, config: dict) -> Model:
    """A Model from a dict shaped like one ``models.toml`` entry, checked the same way.

    For exercises and tests: a hypothetical architecture needs no catalog entry. ``source`` and
    ``as_of`` may be left out here.
    """
    return _build(name, {"source": "https://example.invalid/", "as_of": "1970-01-01"} | config)


@cache
def catalog_models() -> dict[str, Model]:
    table = catalog.load("models.toml")
    return {name: _build(name, _with_base(name, e, table)) for name, e in table.items()}


_OWN = ("display", "source", "as_of", "note", "checkpoint")
"""What a checkpoint entry (``base = ...``) says for itself; the shape comes from its base."""


def _with_base(name: str, e: dict, table: dict) -> dict:
    """An entry that names a ``base`` model (a published checkpoint of it) takes the base's shape."""
    if "base" not in e:
        return e
    base = table.get(e["base"])
    if base is None or "base" in base:
        raise ChalkError(f"models.toml [{name}]: base must name a model entry without a base, got {e['base']!r}")
    return {k: v for k, v in base.items() if k not in _OWN} | e


def get(name: str) -> Model:
    """The model called ``name``; an unknown name raises an error listing the known models."""
    return lookup("model", name, catalog_models(), param="model")


def names() -> list[str]:
    return list(catalog_models())
