"""Markdown tables for the reference pages, generated from the notation module and the data."""
from . import hardware, models, notation


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _source(entry) -> str:
    return f"[source]({entry.source}), {entry.as_of}"


def notation_table() -> str:
    return _table(["symbol", "meaning", "unit"],
                  [[f"${notation.latex(e.symbol)}$", e.meaning, e.unit] for e in notation.TABLE])


def chips_table() -> str:
    dtypes = ("bf16", "fp8", "fp4")
    rows = []
    for chip in hardware.catalog_chips().values():
        flops = [f"{chip.peak_flops[d] / 1e12:,.0f}" if d in chip.peak_flops else "–" for d in dtypes]
        rows.append([chip.name, *flops, f"{chip.hbm_capacity / 1e9:,.0f}",
                     f"{chip.hbm_bandwidth / 1e12:.2f}", f"{chip.intensity('bf16'):.0f}",
                     f"{chip.drain_time * 1e3:.0f}", f"{chip.scale_up_bandwidth / 1e9:,.0f} × {chip.scale_up_domain}",
                     _source(chip)])
    return _table(["chip", "BF16 TFLOP/s", "FP8", "FP4", "HBM GB", "HBM TB/s", "$r$ (BF16 FLOP/B)",
                   "drain ms", "scale-up GB/s × domain", "source, as of"], rows)


def models_table() -> str:
    rows = []
    for m in models.catalog_models().values():
        reported = f"{m.reported_total_params / 1e9:,.1f}" if m.reported_total_params else "–"
        rows.append([m.display, m.attention.upper(), str(m.n_layers), f"{m.d_model:,}",
                     f"{m.total_params / 1e9:,.1f}", reported, f"{m.active_params / 1e9:,.1f}",
                     f"{m.sparsity:.1f}", f"{m.kv_bytes_per_token(2) / 1024:,.0f}", _source(m)])
    return _table(["model", "attention", "layers", "$d_\\text{model}$", "$N_\\text{tot}$ (B, computed)",
                   "reported (B)", "$N_\\text{act}$ (B)", "$s$", "$b_\\text{kv}$ KiB (BF16)",
                   "source, as of"], rows)
