"""Markdown tables for the reference pages and ``python -m chalk list``, generated from the
notation module and the data."""
from collections.abc import Mapping

from .. import catalog
# chalk.notation builds on SymPy: the table that needs it imports it, so that `python -m chalk --help`
# and every set of `list` start without it (chalk.moe's figures come through catalog.domains).
from ..defaults import HEADROOM
from . import domains, hardware, layouts, memory_data, models, prices, systems, tiers


def _unbroken(cell: str) -> str:
    """A figure (a cell that starts with a digit) kept on one line: no break at its spaces or after
    a range's dash. Names, links and stored fields may still wrap."""
    if not cell[:1].isdigit() or "[" in cell or "`" in cell:
        return cell
    return cell.replace(" ", "\u00a0").replace("–", "–\u2060")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(_unbroken, row)) + " |" for row in rows]
    return "\n".join(lines)


def _source(entry) -> str:
    """A loader's dataclass or a data file's entry as it is stored (a mapping)."""
    source, as_of = (entry["source"], entry["as_of"]) if isinstance(entry, Mapping) else (entry.source, entry.as_of)
    return f"[source]({source}), {as_of}"


def notation_table() -> str:
    from .. import notation
    return _table(["symbol", "meaning", "unit"],
                  [[f"${notation.latex(e.symbol)}$", e.meaning, e.unit] for e in notation.TABLE])


def _rental(chip) -> str:
    if not chip.rental_usd_per_hour:
        return "–"
    low, high = chip.rental_usd_per_hour
    return f"{_unbroken(f'{low:.2f}–{high:.2f}')} ([source]({chip.rental_source}), {chip.rental_as_of})"


# The chips, systems and models are printed as a few narrow tables each, grouped by what a reader
# looks up together, rather than one table of a dozen columns: each fits a page's column, and each
# row repeats the name and its source so that a table read alone is complete.
def chips_table() -> str:
    """Compute: peak FLOP/s by number format and the BF16 balance point r = F/W."""
    rows = []
    for chip in hardware.catalog_chips().values():
        flops = [f"{chip.peak_flops[d] / 1e12:,.0f}" if d in chip.peak_flops else "–" for d in ("bf16", "fp8", "fp4")]
        r = f"{chip.intensity('bf16'):.0f}" if "bf16" in chip.peak_flops else "–"
        rows.append([chip.name, chip.status, *flops, r, _source(chip)])
    return _table(["chip", "status", "BF16 TFLOP/s", "FP8 TFLOP/s", "FP4 TFLOP/s", "$r$ BF16 FLOP/B",
                   "source, as of"], rows)


def _reported_hbm(chip) -> str:
    if not chip.hbm_reported:
        return "–"
    return f"{chip.hbm_capacity / 1e9:,.2f} ([source]({chip.hbm_reported_source}), {chip.hbm_reported_as_of})"


def chips_memory_table() -> str:
    """HBM as the vendor prints it and as the device reports it (what every fit uses where it is
    known), the time to read all of it once, and what an hour of the chip rents for."""
    return _table(["chip", "HBM GB nominal", "HBM GB as reported", "HBM TB/s", "drain C/W ms", "rental $/chip-h",
                   "source, as of"],
                  [[chip.name, f"{chip.hbm_nominal / 1e9:,.0f}", _reported_hbm(chip), f"{chip.hbm_bandwidth / 1e12:.2f}",
                    f"{chip.drain_time * 1e3:.0f}", _rental(chip), _source(chip)]
                   for chip in hardware.catalog_chips().values()])


def chips_links_table() -> str:
    """Links per chip and per direction; the bidirectional total vendors print in brackets."""
    return _table(["chip", "scale-up GB/s per direction (both)", "scale-up domain, chips",
                   "scale-out GB/s per direction", "source, as of"],
                  [[chip.name, f"{chip.scale_up_bandwidth / 1e9:,.0f} ({chip.scale_up_bandwidth_bidirectional / 1e9:,.0f})",
                    f"{chip.scale_up_domain:,}", f"{chip.scale_out_bandwidth / 1e9:,.1f}", _source(chip)]
                   for chip in hardware.catalog_chips().values()])


def systems_table() -> str:
    """What each system is made of."""
    return _table(["system", "make-up", "status", "chips", "source, as of"],
                  [[s.name, s.display, s.status, f"{s.count:,} × {s.chip.name}", _source(s)]
                   for s in systems.catalog_systems().values()])


def systems_compute_table() -> str:
    """A system's sums: FLOP/s in its fastest format, HBM and the time to read it once."""
    rows = []
    for s in systems.catalog_systems().values():
        best = next(d for d in ("bf16", "fp8", "fp4") if d in s.chip.peak_flops)
        rows.append([s.name, f"{s.flops(best) / 1e15:,.1f} ({best.upper()})", f"{s.hbm_capacity / 1e12:,.2f}",
                     f"{s.hbm_bandwidth / 1e12:,.1f}", f"{s.drain_time * 1e3:.0f}", _source(s)])
    return _table(["system", "PFLOP/s dense", "HBM TB", "HBM TB/s", "drain C/W ms", "source, as of"], rows)


def systems_links_table() -> str:
    """A system's link bandwidth, summed over its chips, and the ratio the chapters use."""
    return _table(["system", "scale-up TB/s per direction (both)", "scale-out TB/s per direction",
                   "scale-up ÷ scale-out", "source, as of"],
                  [[s.name, f"{s.scale_up_bandwidth / 1e12:,.1f} ({s.scale_up_bandwidth_bidirectional / 1e12:,.1f})",
                    f"{s.scale_out_bandwidth / 1e12:,.2f}", f"{s.scale_up_to_out:.0f}×", _source(s)]
                   for s in systems.catalog_systems().values()])


def models_table() -> str:
    """Each model's name in the calculator and its shape."""
    return _table(["model", "name", "attention", "layers", "width $d_\\text{model}$", "source, as of"],
                  [[m.display, f"`{m.name}`", m.attention_kind, str(m.n_layers), f"{m.d_model:,}", _source(m)]
                   for m in models.catalog_models().values()])


def models_params_table() -> str:
    """Parameter counts (computed from the shape, beside the one the authors report) and training tokens."""
    rows = []
    for m in models.catalog_models().values():
        reported = f"{m.reported_total_params / 1e9:,.1f}" if m.reported_total_params else "–"
        tokens = f"{m.training_tokens / 1e12:,.2f}" if m.training_tokens else "–"
        rows.append([m.display, f"{m.total_params / 1e9:,.1f}", reported, f"{m.active_params / 1e9:,.1f}",
                     f"{m.sparsity:.1f}", tokens, _source(m)])
    return _table(["model", "$N_\\text{tot}$ B params, computed", "reported B params", "$N_\\text{act}$ B params",
                   "sparsity $s$", "training T tokens", "source, as of"], rows)


def models_kv_table() -> str:
    """The KV cache per token and at 32K tokens, in BF16, and the longest context the model takes."""
    return _table(["model", "$b_\\text{kv}$ KiB per token (BF16)", "KV GiB at 32K tokens (BF16)",
                   "max context, tokens", "source, as of"],
                  [[m.display, f"{m.kv_bytes_per_token(2) / 1024:,.0f}", f"{m.kv_bytes(32768, 2) / 2**30:,.2f}",
                    _max_context(m), _source(m)] for m in models.catalog_models().values()])


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


# The tiers' descriptions are long ("Host DDR5 of an 8-GPU MI300X server (1.5 TiB, 2 EPYC 9374F)"):
# printed once, beside the tier's name in the calculator, and the tables of figures are keyed by
# that name, as the chips' tables are by the chip's.
def tiers_about_table() -> str:
    """What each storage tier is, and the system whose host memory it is."""
    return _table(["tier", "what it is", "host memory of", "source, as of"],
                  [[f"`{t.name}`", t.display, f"`{t.system}`" if t.system else "–", _source(t)]
                   for t in tiers.catalog_tiers().values()])


def tiers_table() -> str:
    """Each storage tier's size and speed."""
    rows = [[f"`{t.name}`", f"{t.capacity / 1e12:,g}", f"{t.bandwidth / 1e9:,g}",
             f"{float(f'{t.drain_time:.3g}'):,g}", _source(t)]
            for t in tiers.catalog_tiers().values()]
    return _table(["tier", "capacity TB", "read GB/s", "drain C/W s", "source, as of"], rows)


def tiers_price_table() -> str:
    """What holding a terabyte in each tier costs an hour, its purchase price amortised (per TB, so
    that the cheapest tier's figure reads 0.00047 rather than 4.7e-07)."""
    return _table(["tier", f"$ per TB-hour ({tiers.LIFETIME_YEARS:g}-year amortisation)", "price source, as of"],
                  [[f"`{t.name}`", f"{t.usd_per_byte_second * 1e12 * 3600:.2g}",
                    f"[source]({t.price_source}), {t.price_as_of}"]
                   for t in tiers.catalog_tiers().values()])


# --- figures as their data file stores them -----------------------------------------------------
def _number(value) -> str:
    """A stored figure as printed in its source: whole numbers with separators, others to 6 digits."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " to ".join(_number(v) for v in value)
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.6g}"
    return f"{value:,.0f}"


def _fields(entry, skip=()) -> str:
    return "; ".join(f"`{key}` {_number(value)}" for key, value in entry.items()
                     if key not in ("source", "as_of", "note", *skip))


def _as_stored(filename: str) -> str:
    return _table(["entry", "figures", "source, as of"],
                  [[f"`{name}`", _fields(e), _source(e)] for name, e in catalog.load(filename).items()])


def quoted_table() -> str:
    """Every entry of ``data/quoted.toml`` as stored: the lecture's round numbers and papers' figures."""
    return _as_stored("quoted.toml")


def operators_table() -> str:
    """What operators publish about their own fleets (``data/operators.toml``), as stored."""
    return _as_stored("operators.toml")


def scaling_fits_table() -> str:
    """Chapter 5's loss fits and the lecture's lifetime guesses (``data/overtraining.toml``), as stored."""
    return _as_stored("overtraining.toml")


# --- Chapters 2 and 3: deployments, layouts, scale-up domains, measured links ------------------
# The deployments' tables, like the chips', come in narrow groups, each row with its name and source.
def expert_gpus_table() -> str:
    """How many GPUs and nodes each DeepSeek-V3 deployment spreads its experts over."""
    quoted = catalog.load("quoted.toml")
    return _table(["deployment", "expert-parallel GPUs", "nodes", "redundant experts", "source, as of"],
                  [[f"`{d.name}`", f"{d.chips:,}", f"{d.nodes:,}", f"{d.redundant:,}",
                    _source(quoted[f"deployment-{d.name}"])] for d in domains.deployments()])


def expert_placement_table() -> str:
    """Routed experts per GPU as the source prints them and as computed from the deployment."""
    quoted = catalog.load("quoted.toml")
    rows = [[f"`{d.name}`", f"{d.printed_experts_per_chip}", f"{d.experts_per_chip}",
             _source(quoted[f"deployment-{d.name}"])] for d in domains.deployments()]
    return _table(["deployment", "routed experts per GPU, printed", "computed", "source, as of"], rows)


def _degree(entry, key) -> str:
    return f"{entry[key]:,}" if key in entry else "–"


def serving_layouts_table() -> str:
    """Which model each serving layout runs, on how many GPUs."""
    return _table(["layout", "name", "model", "GPUs", "source, as of"],
                  [[d["display"], f"`{name}`", f"`{d['model']}`", f"{d['gpus']:,}", _source(d)]
                   for name, d in memory_data.DEPLOYMENTS.items()])


def serving_degrees_table() -> str:
    """The nodes each serving layout spans and how it splits its attention and its layers."""
    return _table(["layout", "nodes", "attention TP", "attention DP", "pipeline", "source, as of"],
                  [[d["display"], *(_degree(d, k) for k in ("nodes", "attention_tensor", "attention_data", "pipeline")),
                    _source(d)] for d in memory_data.DEPLOYMENTS.values()])


def serving_experts_table() -> str:
    """How each serving layout splits its experts."""
    return _table(["layout", "expert parallel", "redundant experts", "source, as of"],
                  [[d["display"], *(_degree(d, k) for k in ("expert", "redundant_experts")), _source(d)]
                   for d in memory_data.DEPLOYMENTS.values()])


_DEGREES = ("tensor", "context", "pipeline", "expert", "data")


def training_layouts_table() -> str:
    """Which model each training layout trains, on how many chips, in how many data-parallel replicas."""
    return _table(["layout", "model", "chips", "data", "source, as of"],
                  [[f"`{name}`", f"`{e['model']}`", f"{e['chips']:,}", _degree(e, "data"), _source(e)]
                   for name, e in layouts.LAYOUTS.items()])


def training_degrees_table() -> str:
    """How each training layout splits one replica: the degree of each other kind of parallelism."""
    return _table(["layout", *_DEGREES[:-1], "source, as of"],
                  [[f"`{name}`", *(_degree(e, k) for k in _DEGREES[:-1]), _source(e)]
                   for name, e in layouts.LAYOUTS.items()])


def training_figures_table() -> str:
    """What else each training layout's source prints, as stored."""
    return _table(["layout", "other printed figures", "source, as of"],
                  [[f"`{name}`", _fields(e, ("model", "chips", *_DEGREES)) or "–", _source(e)]
                   for name, e in layouts.LAYOUTS.items()])


def domains_table() -> str:
    """NVIDIA's scale-up domains by generation (``chalk.moe.domain_growth``)."""
    by_display = {s.display: s for s in systems.catalog_systems().values()}
    rows = [[d.name, f"{d.packages:,}", f"{d.dies_per_package}", f"{d.dies:,}", f"{d.hbm / 1e12:,.3g}",
             _source(by_display.get(d.name, domains.ROADMAP))] for d in domains.domain_growth()]
    return _table(["domain", "GPU packages", "dies per package", "dies", "HBM TB", "source, as of"], rows)


def domains_models_table() -> str:
    """Whether each scale-up domain ships, and the largest model its HBM holds in FP8."""
    by_display = {s.display: s for s in systems.catalog_systems().values()}
    return _table(["domain", "status", f"largest FP8 model, T parameters ({HEADROOM:.0%} kept free)", "source, as of"],
                  [[d.name, d.status, f"{d.max_total_params('fp8') / 1e12:,.3g}",
                    _source(by_display.get(d.name, domains.ROADMAP))] for d in domains.domain_growth()])


def deepep_table() -> str:
    """DeepEP's published low-latency timings, one row per expert-parallel degree: the current table
    (NVLink inside a node since 2025-06) and the first, pure-RDMA one."""
    return _deepep("dispatch")


def deepep_combine_table() -> str:
    """The same tables' combine timings."""
    return _deepep("combine")


def _deepep(step: str) -> str:
    rows = []
    for name in ("deepep-low-latency", "deepep-low-latency-rdma"):
        ep = memory_data.latency(name)
        rows += [[f"`{name}`", f"{degree}", _number(ep[f"{step}_us"][i]), _number(ep[f"{step}_GBps"][i]), _source(ep)]
                 for i, degree in enumerate(ep["ep"])]
    return _table(["name", "expert-parallel GPUs", f"{step} µs", f"{step} GB/s", "source, as of"], rows)


# --- Chapter 4: memory's cost, training recipes, latencies ---------------------------------------
def _flag(estimate: bool) -> str:
    return " (estimate)" if estimate else ""


def recipes_table() -> str:
    return _table(["recipe", "name", "weights B", "gradients B", "optimizer B", "bytes per parameter", "source, as of"],
                  [[r.display + _flag(r.estimate), f"`{r.name}`", f"{r.weights:g}", f"{r.gradients:g}",
                    f"{r.optimizer:g}", f"{r.bytes_per_param:g}", _source(r)]
                   for r in memory_data.RECIPES.values()])


def cost_shares_table() -> str:
    shares = list(memory_data.COST_SHARES.values())
    rows = [[s.period, f"`{s.name}`{_flag(s.estimate)}", *(f"{v:.0%}" for v in s.shares.values()),
             f"{s.hbm_range[0]:.0%}–{s.hbm_range[1]:.0%}" if s.hbm_range else "–", _source(s)] for s in shares]
    return _table(["quarter", "name", *(c.upper() if c == "hbm" else c for c in shares[0].shares), "HBM interval",
                   "source, as of"], rows)


def spending_table() -> str:
    s = memory_data.SPENDING
    years = sorted(key.removeprefix("hbm_") for key in s if key.startswith("hbm_"))
    return _table(["year", "name", "HBM $ billions", "all components $ billions", "HBM share", "source, as of"],
                  [[year, "`epoch-component-spend`", f"{s[f'hbm_{year}']:g}", f"{s[f'total_{year}']:g}",
                    f"{s[f'hbm_{year}'] / s[f'total_{year}']:.0%}{_flag(s['estimate'])}", _source(s)] for year in years])


def nccl_table() -> str:
    """NCCL's network-step latencies by protocol: a base cost and a cost per step."""
    name = "nccl-net-step"
    n = memory_data.latency(name)
    protocols = [key.removeprefix("hop_us_") for key in n if key.startswith("hop_us_")]
    return _table(["protocol", "name", "base µs", "per network step µs", "source, as of"],
                  [[p.upper() if p.startswith("ll") else p.capitalize(), f"`{name}`", _number(n[f"base_us_{p}"]), _number(n[f"hop_us_{p}"]), _source(n)] for p in protocols])


def lecture_memory_table() -> str:
    """The lecture's round numbers of Chapter 4's segment."""
    return _table(["entry", "figures", "source, as of"],
                  [["`lecture`", _fields(memory_data.LECTURE, ("kind", "display", "estimate")),
                    _source(memory_data.LECTURE)]])


LISTS = {
    "chips": {"chips: compute": chips_table, "chips: memory and rental": chips_memory_table,
              "chips: links": chips_links_table},
    "systems": {"systems": systems_table, "systems: compute and memory": systems_compute_table,
                "systems: links": systems_links_table},
    "models": {"models": models_table, "models: parameters and training tokens": models_params_table,
               "models: KV cache and context": models_kv_table},
    "prices": {"prices": prices_table},
    "tiers": {"tiers": tiers_about_table, "tiers: size and speed": tiers_table,
              "tiers: price": tiers_price_table},
    "deployments": {"DeepSeek-V3's expert placement: GPUs": expert_gpus_table,
                    "DeepSeek-V3's expert placement: experts per GPU": expert_placement_table,
                    "serving layouts": serving_layouts_table, "serving layouts: parallelism": serving_degrees_table,
                    "serving layouts: experts": serving_experts_table,
                    "training layouts": training_layouts_table, "training layouts: parallelism": training_degrees_table,
                    "training layouts: other printed figures": training_figures_table,
                    "NVIDIA scale-up domains": domains_table, "NVIDIA scale-up domains: models": domains_models_table,
                    "DeepEP all-to-all timings: dispatch": deepep_table,
                    "DeepEP all-to-all timings: combine": deepep_combine_table},
    "memory": {"training recipes": recipes_table, "memory's share of accelerator cost": cost_shares_table,
               "component spending": spending_table, "NCCL network-step latency": nccl_table,
               "the lecture's figures": lecture_memory_table},
    "quoted": {"quoted figures": quoted_table},
    "operators": {"operators' published serving figures": operators_table},
    "fits": {"scaling-law fits and lifetime guesses": scaling_fits_table},
}
"""What ``python -m chalk list`` offers: each choice's tables by heading, in the order printed."""
