"""Model architectures (``data/models.toml``) and what follows from their config fields.

Parameter counts and KV-cache bytes are computed from the published shapes with the SymPy
formulas below; the reported totals stored beside the shapes are only for checking.
Norm and bias vectors (under 0.01% of any catalog model) are left out.
"""
from dataclasses import dataclass
from functools import cache, cached_property

import sympy as sp

from . import catalog
from .errors import ChalkError, lookup, positive
from .notation import (d_c, d_cq, d_ff, d_head, d_model, d_R, b_el, n_heads, n_kv, n_layers,
                       n_vocab)

# --- formulas (per layer unless stated) -------------------------------------------------------
ATTENTION_PARAMS = {
    # W_q and W_o span all query heads, W_k and W_v only the KV heads.
    "gqa": 2 * d_model * d_head * (n_heads + n_kv),
    # DeepSeek-V2/V3 multi-head latent attention: down-projections to the latents d_c' (query)
    # and d_c + d_R (key/value, cached), up-projections per head, then the output projection.
    "mla": (d_model * d_cq + d_cq * n_heads * (d_head + d_R) + d_model * (d_c + d_R)
            + d_c * n_heads * 2 * d_head + n_heads * d_head * d_model),
}
ATTENTION_PARAMS["mha"] = ATTENTION_PARAMS["mqa"] = ATTENTION_PARAMS["gqa"]

n_mat = sp.Symbol(r"n_\text{mat}", positive=True)
FFN_PARAMS = n_mat * d_model * d_ff
"""One feed-forward block (or one expert): n_mat = 3 for gated (SwiGLU), 2 otherwise."""

EMBEDDING_PARAMS = n_vocab * d_model
"""One embedding table; an untied model has two (input and output)."""

KV_BYTES_PER_TOKEN = {
    # Keys and values for every KV head of every layer.
    "gqa": 2 * n_layers * n_kv * d_head * b_el,
    # MLA caches one latent of width d_c plus the shared RoPE key of width d_R per layer.
    "mla": n_layers * (d_c + d_R) * b_el,
}
KV_BYTES_PER_TOKEN["mha"] = KV_BYTES_PER_TOKEN["mqa"] = KV_BYTES_PER_TOKEN["gqa"]

_SHAPE = {"attention": str, "n_layers": int, "d_model": int, "n_heads": int, "d_head": int,
          "ffn_gated": bool, "vocab": int, "tied_embeddings": bool, "display": str}
_MOE = {"n_routed_experts": int, "experts_per_token": int, "d_ff_expert": int}
_MLA = {"q_lora_rank": int, "kv_lora_rank": int, "rope_head_dim": int}


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

    def _ffn(self, width: int) -> float:
        return float(FFN_PARAMS.subs({n_mat: 3 if self.ffn_gated else 2, d_model: self.d_model, d_ff: width}))

    def _values(self) -> dict:
        v = {d_model: self.d_model, d_head: self.d_head, n_heads: self.n_heads,
             n_kv: self.n_kv_heads, n_layers: self.n_layers}
        if self.mla:
            v |= {d_c: self.mla["kv_lora_rank"], d_cq: self.mla["q_lora_rank"],
                  d_R: self.mla["rope_head_dim"]}
        return v

    @cached_property
    def attention_params_per_layer(self) -> float:
        return float(ATTENTION_PARAMS[self.attention].subs(self._values()))

    @cached_property
    def embedding_params(self) -> float:
        tables = 1 if self.tied_embeddings else 2
        return tables * float(EMBEDDING_PARAMS.subs({n_vocab: self.vocab, d_model: self.d_model}))

    def _ffn_params(self, active: bool) -> float:
        if not self.moe:
            return self.n_layers * self._ffn(self.d_ff)
        moe = self.moe
        dense_layers = moe.get("n_dense_layers", 0)
        experts = (moe["experts_per_token"] if active else moe["n_routed_experts"]) + moe.get("n_shared_experts", 0)
        router = self.d_model * moe["n_routed_experts"]
        per_moe_layer = experts * self._ffn(moe["d_ff_expert"]) + router
        dense = dense_layers * self._ffn(self.d_ff) if dense_layers else 0.0
        return dense + (self.n_layers - dense_layers) * per_moe_layer

    @cached_property
    def total_params(self) -> float:
        """All weights: embeddings, attention, every expert."""
        return self.embedding_params + self.n_layers * self.attention_params_per_layer + self._ffn_params(False)

    @cached_property
    def active_params(self) -> float:
        """Weights used for one token: the routed experts it picks plus everything shared."""
        return self.embedding_params + self.n_layers * self.attention_params_per_layer + self._ffn_params(True)

    @property
    def sparsity(self) -> float:
        """s = N_tot / N_act."""
        return self.total_params / self.active_params

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """KV-cache bytes that one token of context occupies, all layers (MLA: latent + RoPE key)."""
        positive("bytes_per_element", bytes_per_element)
        return float(self._kv_numeric(bytes_per_element))

    @cached_property
    def _kv_numeric(self):
        return sp.lambdify(b_el, KV_BYTES_PER_TOKEN[self.attention].subs(self._values()))


_ATTENTION_KINDS = tuple(ATTENTION_PARAMS)


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
    if "moe" in e:
        catalog.require(where + " moe", e["moe"], _MOE)
        if e["moe"]["experts_per_token"] > e["moe"]["n_routed_experts"]:
            raise ChalkError(f"{where}: experts_per_token exceeds n_routed_experts")
    if "moe" not in e or e["moe"].get("n_dense_layers", 0):
        catalog.require(where, e, {"d_ff": int})
    return Model(
        name=name, display=e["display"], attention=kind, n_layers=e["n_layers"],
        d_model=e["d_model"], n_heads=e["n_heads"], n_kv_heads=kv_heads or e["n_heads"],
        d_head=e["d_head"], d_ff=e.get("d_ff", 0), ffn_gated=e["ffn_gated"], vocab=e["vocab"],
        tied_embeddings=e["tied_embeddings"], source=e["source"], as_of=e["as_of"],
        moe=e.get("moe"), mla=e.get("mla"),
        reported_total_params=e.get("reported_total_params"),
        reported_active_params=e.get("reported_active_params"),
        training_tokens=e.get("training_tokens"), note=e.get("note", ""),
    )


@cache
def catalog_models() -> dict[str, Model]:
    return {name: _build(name, e) for name, e in catalog.load("models.toml").items()}


def get(name: str) -> Model:
    """The model called ``name``; an unknown name raises an error listing the known models."""
    return lookup("model", name, catalog_models(), param="model")


def names() -> list[str]:
    return list(catalog_models())
