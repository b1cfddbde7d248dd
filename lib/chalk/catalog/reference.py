"""Markdown tables for the reference pages, generated from the notation module and the data."""
from .. import notation
from . import hardware, models, prices, systems, tiers


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _source(entry) -> str:
    return f"[source]({entry.source}), {entry.as_of}"


def notation_table() -> str:
    return _table(["symbol", "meaning", "unit"],
                  [[f"${notation.latex(e.symbol)}$", e.meaning, e.unit] for e in notation.TABLE])


def _rental(chip) -> str:
    if not chip.rental_usd_per_hour:
        return "–"
    low, high = chip.rental_usd_per_hour
    return f"{low:.2f}–{high:.2f} ([source]({chip.rental_source}), {chip.rental_as_of})"


def chips_table() -> str:
    dtypes = ("bf16", "fp8", "fp4")
    rows = []
    for chip in hardware.catalog_chips().values():
        flops = [f"{chip.peak_flops[d] / 1e12:,.0f}" if d in chip.peak_flops else "–" for d in dtypes]
        r = f"{chip.intensity('bf16'):.0f}" if "bf16" in chip.peak_flops else "–"
        rows.append([chip.name, chip.status, *flops, f"{chip.hbm_capacity / 1e9:,.0f}",
                     f"{chip.hbm_bandwidth / 1e12:.2f}", r,
                     f"{chip.drain_time * 1e3:.0f}", f"{chip.scale_up_bandwidth / 1e9:,.0f} ({chip.scale_up_bandwidth_bidirectional / 1e9:,.0f}) × {chip.scale_up_domain:,}",
                     f"{chip.scale_out_bandwidth / 1e9:,.1f}", _rental(chip), _source(chip)])
    return _table(["chip", "status", "BF16 TFLOP/s", "FP8", "FP4", "HBM GB", "HBM TB/s", "$r$ (BF16 FLOP/B)",
                   "drain ms", "scale-up GB/s per direction (both) × domain", "scale-out GB/s per direction", "rental $/chip-h",
                   "source, as of"], rows)


def systems_table() -> str:
    rows = []
    for s in systems.catalog_systems().values():
        best = next(d for d in ("bf16", "fp8", "fp4") if d in s.chip.peak_flops)
        rows.append([s.name, s.display, s.status, f"{s.count:,} × {s.chip.name}",
                     f"{s.flops(best) / 1e15:,.1f} ({best.upper()})", f"{s.hbm_capacity / 1e12:,.2f}",
                     f"{s.hbm_bandwidth / 1e12:,.1f}", f"{s.scale_up_bandwidth / 1e12:,.1f} ({s.scale_up_bandwidth_bidirectional / 1e12:,.1f})",
                     f"{s.scale_out_bandwidth / 1e12:,.2f}", f"{s.scale_up_to_out:.0f}×",
                     f"{s.drain_time * 1e3:.0f}", _source(s)])
    return _table(["system", "make-up", "status", "chips", "PFLOP/s dense", "HBM TB", "HBM TB/s",
                   "scale-up TB/s per direction (both), sum", "scale-out TB/s per direction, sum", "scale-up ÷ scale-out", "drain ms",
                   "source, as of"], rows)


def models_table() -> str:
    rows = []
    for m in models.catalog_models().values():
        reported = f"{m.reported_total_params / 1e9:,.1f}" if m.reported_total_params else "–"
        tokens = f"{m.training_tokens / 1e12:,.2f}" if m.training_tokens else "–"
        rows.append([m.display, f"`{m.name}`", m.attention_kind, str(m.n_layers), f"{m.d_model:,}",
                     f"{m.total_params / 1e9:,.1f}", reported, f"{m.active_params / 1e9:,.1f}",
                     f"{m.sparsity:.1f}", f"{m.kv_bytes_per_token(2) / 1024:,.0f}",
                     f"{m.kv_bytes(32768, 2) / 2**30:,.2f}", _max_context(m), tokens, _source(m)])
    return _table(["model", "name", "attention", "layers", "$d_\\text{model}$", "$N_\\text{tot}$ (B, computed)",
                   "reported (B)", "$N_\\text{act}$ (B)", "$s$", "$b_\\text{kv}$ KiB (BF16)",
                   "KV GiB at 32K (BF16)", "max context (tokens)", "training tokens (T)", "source, as of"], rows)


def _max_context(m) -> str:
    if not m.max_context:
        return "–"
    cited = f" ([source]({m.max_context_source}))" if m.max_context_source != m.source else ""
    return f"{m.max_context:,}{cited}"


def _dollars(value) -> str:
    return f"{value:g}" if value is not None else "–"


def prices_table() -> str:
    rows = []
    for p in prices.catalog_prices().values():
        lc = p.long_context
        long_context = (f"> {lc['above_tokens'] // 1000:,}K: {lc['input']:g} / {lc['output']:g}" if lc else "–")
        fast = p.fast or p.priority
        fast_text = (f"{'fast' if p.fast else 'priority'}: {fast['input']:g} / {fast['output']:g}"
                     + (f", {p.fast['speedup']:g}× speed" if p.fast and 'speedup' in p.fast else "")) if fast else "–"
        rows.append([p.provider, p.model, f"`{p.name}`", _dollars(p.input), _dollars(p.output), f"{p.output_to_input:.2g}×",
                     _dollars(p.cache_read), _dollars(p.cache_write_5m), _dollars(p.cache_write_1h),
                     long_context, fast_text, _source(p)])
    return _table(["provider", "model", "name", "input $/Mtok", "output", "out ÷ in", "cache read",
                   "cache write 5 min", "cache write 1 h", "long context in / out", "fast tier in / out",
                   "source, as of"], rows)


def tiers_table() -> str:
    rows = [[t.display, f"`{t.name}`", f"`{t.system}`" if t.system else "–", f"{t.capacity / 1e12:g}",
             f"{t.bandwidth / 1e9:g}", f"{float(f'{t.drain_time:.3g}'):,g}", f"{t.usd_per_byte_second * 1e9 * 3600:.2g}",
             _source(t), f"[source]({t.price_source}), {t.price_as_of}"]
            for t in tiers.catalog_tiers().values()]
    return _table(["tier", "name", "host of", "capacity TB", "read GB/s", "drain C/W s",
                   f"$ per GB-hour ({tiers.LIFETIME_YEARS:g}-year amortisation)", "source, as of",
                   "price source, as of"], rows)
