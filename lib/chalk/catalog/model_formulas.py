"""A model's parameters, KV-cache bytes and FLOPs as SymPy expressions of its shape (per layer
unless stated).

``chalk.models`` evaluates them for catalog entries and re-exports every name here
(``models.KV_BYTES_LONG``); it imports this module on first use, so reading the catalog (``python -m
chalk list``, the argument parser) does not load SymPy.
"""
import sympy as sp

from ..notation import (D, L, N_act, N_emb, b_el, d_c, d_conv, d_cq, d_ff, d_head, d_inner, d_model,
                       d_R, d_state, g_kv, n_G, n_heads, n_kv, n_layers, n_loc, n_vocab, r_dt, w)

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

RELATIVE_POSITION_PARAMS = d_model * n_heads * d_head
"""Transformer-XL relative position encodings (Dai et al. 2019, used by Gopher and Chinchilla):
each layer projects the sinusoidal position embeddings to keys with its own W_R."""

KV_PROJECTION_PARAMS = 2 * d_model * d_head * n_kv
"""W_k and W_v of one layer: the part a layer that reuses another layer's KV cache does without."""

n_mat = sp.Symbol(r"n_\text{mat}", positive=True)
FFN_PARAMS = n_mat * d_model * d_ff
"""One feed-forward block (or one expert): n_mat = 3 for gated (SwiGLU), 2 otherwise."""

EMBEDDING_PARAMS = n_vocab * d_model
"""One embedding table; an untied model has two (input and output)."""

SSM_PARAMS = d_inner * (3 * d_model + d_conv + 2 * r_dt + 3 * d_state)
"""One Mamba-1 mixer (Gu and Dao 2023): input projection to 2 d_inner (x and gate), depthwise
convolution, x-projection to the step rank and B, C, step projection back to d_inner, the state
matrix A (d_inner x d_state) and the output projection."""

KV_WIDTH = {
    # Keys and values for every KV head.
    "gqa": 2 * n_kv * d_head,
    # MLA caches one latent of width d_c plus the shared RoPE key of width d_R.
    "mla": d_c + d_R,
}
KV_WIDTH["mha"] = KV_WIDTH["mqa"] = KV_WIDTH["gqa"]
"""Cached elements per token per attention layer that keeps its own cache."""

KV_BYTES_PER_TOKEN = {kind: n_layers * width * b_el for kind, width in KV_WIDTH.items()}
"""b_kv of a model whose every layer has full attention and its own cache."""

KV_BYTES_LONG = {kind: n_G * width * b_el / g_kv for kind, width in KV_WIDTH.items()}
"""b_kv in general: bytes each further token adds once every sliding window is full. Local
(windowed) layers and state-space layers add nothing per token at long context."""

KV_BYTES_WINDOWED = {kind: n_loc * sp.Min(L, w) * width * b_el / g_kv for kind, width in KV_WIDTH.items()}
"""KV-cache bytes the sliding-window layers hold for one sequence of L tokens: min(L, w) each."""

KV_BYTES_CONTEXT = {kind: L * KV_BYTES_LONG[kind] + KV_BYTES_WINDOWED[kind] for kind in KV_WIDTH}
"""KV-cache bytes of one sequence of L tokens: global layers hold L tokens, local ones min(L, w)."""

ATTENTION_FLOPS = {
    # Scores q.k over d_head and the weighted sum of values over d_head, 2 FLOPs per multiply-add.
    "gqa": 2 * n_heads * (d_head + d_head),
    # MLA computed naively: query-key width d_head + d_R, value width d_head.
    "mla": 2 * n_heads * (d_head + d_R + d_head),
}
ATTENTION_FLOPS["mha"] = ATTENTION_FLOPS["mqa"] = ATTENTION_FLOPS["gqa"]
"""FLOPs per attended token per attention layer, for one new query token."""

ATTENTION_DECODE_FLOPS = dict(ATTENTION_FLOPS)
# MLA in decode runs with the up-projections absorbed into the query and the output (DeepSeek-V2
# §2.1.2, FlashMLA): every head scores against the cached latent and RoPE key (d_c + d_R) and sums
# the latents (d_c), so the work per cached token grows with n_heads d_c, not with the cache's size.
ATTENTION_DECODE_FLOPS["mla"] = 2 * n_heads * (2 * d_c + d_R)
"""FLOPs per cached token per attention layer for one new token in decode, as serving kernels run it.
Windowed layers attend to min(L, w) tokens; layers that share another layer's KV cache still
attend to it, so sharing saves bytes, not FLOPs."""

ATTENTION_PHASE_FLOPS = {"decode": ATTENTION_DECODE_FLOPS, "prefill": ATTENTION_FLOPS}
"""FLOPs per (query token, cached token) pair per attention layer, as each phase's kernels run it.
Prefill runs MLA in its multi-head form (vLLM's MLA backend and DeepSeek's own kernels decompress the
latents into per-head keys and values once per token, then attend as MHA: d_head + d_R for the
scores, d_head for the values); decode runs the absorbed form. The two agree for MHA/GQA/MQA."""

ATTENTION_LONG = {phase: {kind: n_G * per_layer for kind, per_layer in flops.items()}
                  for phase, flops in ATTENTION_PHASE_FLOPS.items()}
"""f_att at long context: FLOPs each further cached token adds to one new token, all layers."""
ATTENTION_WINDOWED = {phase: {kind: n_loc * sp.Min(L, w) * per_layer for kind, per_layer in flops.items()}
                      for phase, flops in ATTENTION_PHASE_FLOPS.items()}
"""Attention FLOPs of one new token in the sliding-window layers, at context L."""
ATTENTION_DECODE_LONG = ATTENTION_LONG["decode"]
ATTENTION_DECODE_WINDOWED = ATTENTION_WINDOWED["decode"]

FORWARD_FLOPS_PER_TOKEN = {
    kind: 2 * (N_act - N_emb) + per_token * (n_G * L + n_loc * sp.Min(L, w))
    for kind, per_token in ATTENTION_FLOPS.items()}
"""Forward FLOPs for one new token with L tokens before it: 2 per active weight in a matmul (the
input embedding is a lookup) plus attention over the cached tokens. Averaged over the positions of
a causal sequence of length L the attention term halves, which is Kaplan et al. (2020)'s
C_forward = 2N + 2 n_layer n_ctx d_attn."""

TRAINING_FLOPS = 6 * N_act * D
"""Training compute: forward (2) plus backward (4) FLOPs per active weight per token."""


# --- the numeric forms -------------------------------------------------------------------------
NUMERIC = {"ATTENTION_PARAMS": ATTENTION_PARAMS, "RELATIVE_POSITION_PARAMS": RELATIVE_POSITION_PARAMS,
           "KV_PROJECTION_PARAMS": KV_PROJECTION_PARAMS, "FFN_PARAMS": FFN_PARAMS,
           "EMBEDDING_PARAMS": EMBEDDING_PARAMS, "SSM_PARAMS": SSM_PARAMS, "KV_BYTES_LONG": KV_BYTES_LONG,
           "KV_BYTES_WINDOWED": KV_BYTES_WINDOWED, "KV_BYTES_CONTEXT": KV_BYTES_CONTEXT,
           "ATTENTION_LONG": ATTENTION_LONG, "ATTENTION_WINDOWED": ATTENTION_WINDOWED,
           "FORWARD_FLOPS_PER_TOKEN": FORWARD_FLOPS_PER_TOKEN, "TRAINING_FLOPS": TRAINING_FLOPS}
"""The formulas ``chalk.models`` evaluates for a catalog entry, written out as Python functions in
``model_numeric.py`` (``numeric_source``) so that evaluating them needs no SymPy."""


def python_source(numeric: dict, names: dict, doc: list[str], helpers: dict | None = None) -> str:
    """The text of a module of plain Python functions, one for each SymPy expression of ``numeric``
    (nested in dicts as there), whose arguments are its symbols' names (``names``: symbol -> name),
    by keyword; an entry ``(symbols, expression)`` takes those symbols in that order instead, as a
    lambdified function does. ``Min`` and ``Max`` are NumPy's ``minimum`` and ``maximum``,
    ``ceiling`` its ``ceil``, and ``exp``, ``log`` and ``sqrt`` its own, so an argument may be an
    array; ``helpers`` maps a SymPy function's name to the import line of the Python function that
    evaluates it (``binomial`` over arrays).
    ``doc`` is the module docstring's lines. Written once by each module whose formulas it prints."""
    import re

    from sympy.printing.pycode import PythonCodePrinter

    helpers = helpers or {}

    class Printer(PythonCodePrinter):
        def _print_Symbol(self, expr):
            return names[expr]

        _print_Dummy = _print_Symbol

        def _print_Min(self, expr):
            return f"minimum({', '.join(self._print(a) for a in expr.args)})"

        def _print_Max(self, expr):
            return f"maximum({', '.join(self._print(a) for a in expr.args)})"

        def _print_ceiling(self, expr):
            return f"ceil({self._print(expr.args[0])})"

        def _print_Function(self, expr):
            if type(expr).__name__ in helpers:
                return f"{type(expr).__name__}({', '.join(self._print(a) for a in expr.args)})"
            return super()._print_Function(expr)

        _print_binomial = _print_Function

    printer = Printer({"fully_qualified_modules": False})

    def function(value) -> str:
        symbols, expr = value if isinstance(value, tuple) else (sorted(value.free_symbols, key=names.get), value)
        return f"lambda {', '.join(names[s] for s in symbols)}: {printer.doprint(expr)}"

    def entry(value, indent: str) -> str:
        if isinstance(value, dict):
            inner = "".join(f"{indent}    {key!r}: {entry(v, indent + '    ')},\n" for key, v in value.items())
            return "{\n" + inner + indent + "}"
        return function(value)

    body = [f"{name} = {entry(value, '')}" for name, value in numeric.items()]
    used = [f for f in ("ceil", "exp", "log", "maximum", "minimum", "sqrt") if any(re.search(rf"\b{f}\(", line) for line in body)]
    imports = [f"from numpy import {', '.join(used)}"] if used else []
    imports += [line for name, line in sorted(helpers.items()) if any(f"{name}(" in b for b in body)]
    lines = ['"""' + doc[0], *doc[1:], '"""', "\n".join(imports), "", *body]
    return "\n".join(lines) + "\n"


def symbol_names(namespace: dict) -> dict:
    """Each SymPy symbol of a module's ``globals()`` by its name there (``N_act``): a generated
    file's functions take the names the module gives its symbols."""
    return {value: name for name, value in namespace.items() if isinstance(value, sp.Symbol)}


def generated_source(module: str, forms: dict, names: dict, about: str, helpers: dict | None = None) -> str:
    """The text of a generated numeric file of ``module`` (its dotted name): ``python_source`` of
    ``forms``, under a docstring that says ``about`` and how the file is written."""
    import textwrap

    doc = textwrap.wrap(f"{about} Written by ``python -m {module}``; do not edit: a test keeps it equal to "
                        "the formulas.", 100, initial_indent='"""', break_on_hyphens=False, break_long_words=False)
    return python_source(forms, names, [doc[0].removeprefix('"""'), *doc[1:]], helpers)


def write_numeric(source: str, beside: str, name: str) -> None:
    """Write a generated file's ``source`` to ``name`` (a path relative to the folder of the file
    ``beside``: the module's ``__main__`` passes its ``__file__``)."""
    from pathlib import Path

    target = Path(beside).parent / name
    target.write_text(source, encoding="utf-8")
    print(f"wrote {target}")


def numeric_source() -> str:
    """The text of ``model_numeric.py``: every formula of ``NUMERIC`` as a function whose arguments
    are its symbols' names in this module (``d_model``, ``n_kv``). Keeping the file equal to this
    text is a test."""
    return generated_source("chalk.catalog.model_formulas", NUMERIC, symbol_names(globals()),
                            "The formulas of ``model_formulas`` as plain Python, so that a catalog entry's "
                            "parameters, KV-cache bytes and FLOPs are evaluated without SymPy.")


if __name__ == "__main__":
    write_numeric(numeric_source(), __file__, "model_numeric.py")
