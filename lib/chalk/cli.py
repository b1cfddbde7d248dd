"""``python -m chalk``: the catalog and the serving calculator from a terminal.

Exit codes: 0 the question was answered (and, for serve/fit, the model fits); 3 the answer is
"does not fit" (printed with the shortfall, not an error); 2 bad input (one line on stderr).
"""
import argparse
import math
import re
import sys
import warnings
from typing import NamedTuple

from .catalog import hardware, models, prices, reference, systems
from .defaults import HEADROOM, LIMITS
from .errors import ChalkError, ChalkWarning, DoesNotFit, number_text
# calculator, pricing and roofline build on SymPy: the commands that compute import them, so that
# --help, the parser and `list` start without it (tests/test_cli_startup.py).

EXIT_OK, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT = 0, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump)."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _whole(name, low=None, high=None):
    """An argparse type for whole numbers in the library's valid range (``chalk.defaults.LIMITS``)."""
    low, high = LIMITS[name] if low is None else (low, high)
    valid = f"a whole number from {number_text(low)} to {number_text(high)}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {valid}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{name} must be {valid}, got {value:,}")
        return value
    return parse


def _fraction(name, low, high):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{name} must be between {low:g} and {high:g}, got {value:g}")
        return value
    return parse


def _price(text):
    low, high = LIMITS["usd_per_chip_hour"]
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"usd-per-chip-hour must be a number, got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"usd-per-chip-hour must be between {low:g} and {high:,g} "
                                         f"dollars, got {text}")
    return value



def _usd(name, what="a price"):
    """An argparse type for a typed-in price, multiplier or count: a finite number > 0."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {what}, a number > 0, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{name} must be {what}, a number > 0, got {text}")
        return value
    return parse

DTYPES = tuple(hardware.BYTES_PER_ELEMENT)
PHASES = ("decode", "prefill")


def _efficiency(text):
    """An --efficiency value: a number in (0, 1] for both passes, or a preset's name for its phase."""
    if text == "help":
        return text
    try:
        value = float(text)
    except ValueError:
        from . import efficiency  # presets are computed from the catalog: only when one is named
        try:
            return efficiency.get(text)
        except ChalkError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix("efficiency: ")) from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"efficiency must be a number in (0, 1] or a preset, got {text}")
    return value


class _EfficiencyAction(argparse.Action):
    """Collects --efficiency values; ``--efficiency help`` lists the presets and exits 0."""

    def __call__(self, parser, namespace, value, option_string=None):
        if value == "help":
            from . import efficiency
            print(f"Efficiency presets (measured / bound at each run's own operating point):\n{efficiency.listing()}")
            parser.exit(EXIT_OK)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), value])


def _add_hardware(p):
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--system", help="a system from `list systems`, e.g. gb200-nvl72, hgx-h100")
    where.add_argument("--chip", help="a chip from `list chips`, e.g. H100-SXM; with --chips for a count")
    p.add_argument("--chips", type=_whole("chips"), help="how many --chip serve one replica (default 1)")


def _add_workload(p):
    p.add_argument("--model", required=True, help="a model from `list models`, e.g. deepseek-v3")
    _add_hardware(p)
    p.add_argument("--batch", required=True, type=_whole("batch"),
                   help="sequences decoded together, one new token each per step")
    p.add_argument("--context", required=True, type=_whole("context"),
                   help="tokens already in each sequence's KV cache")
    p.add_argument("--dtype", default="bf16", choices=DTYPES, type=str.casefold,
                   help="number format of the weights and of the matmuls (default bf16)")
    p.add_argument("--kv-dtype", default="bf16", choices=DTYPES, type=str.casefold,
                   help="number format of the KV cache (default bf16, 2 bytes per element)")
    p.add_argument("--headroom", type=_fraction("headroom", 0, 0.99), default=HEADROOM,
                   help=f"fraction of HBM kept free for activations and the runtime (default {HEADROOM:g})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m chalk",
                     description="Chalk's catalog (chips, systems, models, API prices) and serving calculator.",
                     epilog="Exit codes: 0 answered (fits); 3 answered: does not fit; 2 bad input.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="list the catalog's data with sources: chips, systems, models, API prices, "
                                    "storage tiers, deployments and links, memory and cost, quoted figures")
    p.add_argument("what", nargs="?", default="all", choices=("all", *reference.LISTS),
                   help="which catalog to list (default all)")

    p = sub.add_parser("serve", help="decode and prefill roofline, regime, tokens/s and $ per Mtok")
    _add_workload(p)
    p.add_argument("--prompt", type=_whole("prompt"), default=None,
                   help="prompt tokens per sequence for the prefill pass (default: the --context)")
    p.add_argument("--mfu", type=_fraction("mfu", 1e-6, 1), default=None,
                   help="achieved / peak FLOP/s (default 1.0 = roofline bound)")
    p.add_argument("--memory-efficiency", type=_fraction("memory-efficiency", 1e-6, 1), default=None,
                   help="achieved / peak HBM bandwidth (default 1.0 = roofline bound)")
    p.add_argument("--efficiency", type=_efficiency, action=_EfficiencyAction, metavar="E",
                   help="achieved / bound, as both --mfu and --memory-efficiency: a number in (0, 1] for both "
                        "passes, or a preset measured from a published run for its own pass (decode or prefill; "
                        "may be given once per pass). `--efficiency help` lists the presets")
    p.add_argument("--usd-per-chip-hour", type=_price, default=None,
                   help="rental price per chip; default: the chip's published range, if any")

    p = sub.add_parser("fit", help="weights + KV against HBM; largest batch and longest context")
    _add_workload(p)

    p = sub.add_parser("prices", help="API list prices and their ratios")
    p.add_argument("name", nargs="?", help="one entry, e.g. google/gemini-2.5-pro (default: all)")

    p = sub.add_parser("deduce", help="what a provider's prices imply (decode MFU, multipliers, KV bytes, cache tier)",
                       description="Read a price list backwards: a catalog entry (--price) or prices typed in: "
                                   "--input, --output and the cache flags in USD per million tokens, the step as a "
                                   "context in tokens and two multipliers (ratios, not prices).")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--price", help="a price entry from `prices`, e.g. google/gemini-2.5-pro")
    source.add_argument("--input", type=_usd("input"), help="typed in: input price, USD per million tokens")
    p.add_argument("--output", type=_usd("output"), help="typed in: output price (required with --input)")
    p.add_argument("--cache-read", type=_usd("cache-read"), help="typed in: price of a cache hit")
    p.add_argument("--cache-write-5m", type=_usd("cache-write-5m"), help="typed in: price of a cache write held 5 minutes")
    p.add_argument("--cache-write-1h", type=_usd("cache-write-1h"), help="typed in: price of a cache write held 1 hour")
    p.add_argument("--step-context", type=_whole("step-context", 1, 10**9),
                   help="typed in: the long-context step, in tokens of prompt (with --step-input and --step-output)")
    p.add_argument("--step-input", type=_usd("step-input", "a multiplier"), help="typed in: a multiplier, input price above the step over the price below it")
    p.add_argument("--step-output", type=_usd("step-output", "a multiplier"), help="typed in: a multiplier, output price above the step over the price below it")
    p.add_argument("--active-params", type=_usd("active-params", "a parameter count"),
                   help="active parameters to read the step with in the lecture's form, N_act b_w / (r L*), e.g. 100e9")
    p.add_argument("--model", help="model whose own config reads the step, and whose stored KV bytes to compare (default: none)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--system", help="hardware whose r = F/W and HBM to assume (default H100-SXM)")
    where.add_argument("--chip", help="same, as a chip name")
    p.add_argument("--dtype", default="bf16", choices=DTYPES, type=str.casefold,
                   help="weights' format: b_w and the matmul rate (default bf16)")

    p = sub.add_parser("measure", help="this machine's roofline: F, W and r measured, a decode step timed against it",
                       description="Measure this machine's float32 matmul FLOP/s and memory bandwidth with NumPy, "
                                   "time a dense and an MoE decode step over a sweep of batches, and set them "
                                   "against the roofline predicted from the measured ceilings (Chapter 1's lab).")
    p.add_argument("--threads", type=_whole("threads", 1, 1024), default=1,
                   help="BLAS threads (default 1: one core's ceilings, the least disturbed by other work)")
    p.add_argument("--repeats", type=_whole("repeats", 1, 100), default=5,
                   help="timed rounds over each sweep, after a warm-up round; medians are reported (default 5)")
    return parser


# --- output helpers ---------------------------------------------------------------------------
def _rows(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms"


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB"


def _target(args):
    return args.system or args.chip


def _common(args):
    return dict(dtype=args.dtype, chips=args.chips,
                kv_bytes_per_element=hardware.bytes_per_weight(args.kv_dtype), headroom=args.headroom)


def _check_names(args) -> None:
    """Fail on an unknown model, hardware or unsupported dtype before printing anything."""
    from . import calculator
    models.get(args.model)
    calculator.resolve(_target(args), args.chips).chip.flops(args.dtype)


def _tokens(count: int) -> str:
    return f"{count:,} token{'' if count == 1 else 's'}"


def _terminal(markdown: str) -> str:
    """A table's TeX for a terminal: $N_\\text{tot}$ -> N_tot, $\\times$ -> x."""
    def plain(match):
        tex = re.sub(r"\\text\{([^}]*)\}", r"\1", match.group(1))
        return tex.replace("\\times", "x").replace("^\\star", "*").replace("\\", "")
    return re.sub(r"\$([^$]+)\$", plain, markdown)


def _fit_report(args) -> tuple[str, bool]:
    from . import calculator
    f = calculator.fit(args.model, _target(args), args.batch, args.context, **_common(args))
    hw = calculator.resolve(_target(args), args.chips)
    nominal = f", {hw.chip.hbm_nominal / 1e9:,.0f} GB nominal" if hw.chip.hbm_reported else ""
    rows = [("hardware", f"{hw.label} (HBM {hw.chip.hbm_words()}{nominal}, per chip)"),
            ("weights", _gb(f.weights)),
            (f"KV cache (batch {args.batch:,} x {_tokens(args.context)})", _gb(f.kv)),
            ("needed", _gb(f.needed)),
            (f"usable ({hw.count} x {hw.chip.hbm_words(1 - f.headroom)})", _gb(f.available))]
    if f.fits:
        rows.append(("verdict", f"fits, {_gb(f.available - f.needed)} to spare"))
    else:
        rows.append(("verdict", f"does not fit: short by {_gb(f.shortfall)}"))
    return _rows(rows), f.fits


class _Knobs(NamedTuple):
    """A pass's efficiency knobs and where they came from."""
    mfu: float
    memory_efficiency: float
    preset: "object | None" = None  # chalk.efficiency.Preset, imported only when one is named
    typed: bool = False

    @property
    def at_bound(self) -> bool:
        return self.mfu == self.memory_efficiency == 1

    def words(self) -> str:
        if self.preset is not None:
            return f"efficiency {self.mfu:.3g}, preset {self.preset.name}"
        if self.typed:
            return f"efficiency {self.mfu:g}"
        return f"mfu {self.mfu:g}, memory efficiency {self.memory_efficiency:g}"

    def rows(self) -> list[tuple[str, str]]:
        if self.preset is not None:
            p = self.preset
            return [("efficiency", f"{p.value:.3g} (preset {p.name}: measured / bound of a published {p.phase}, "
                                   f"{p.point}), as mfu and memory efficiency"),
                    ("  source", p.cited)]
        if self.typed:
            return [("efficiency", f"{self.mfu:g} (typed in), as mfu and memory efficiency")]
        return []


def _knobs(args) -> dict[str, _Knobs]:
    """Each pass's knobs: --mfu and --memory-efficiency, or --efficiency (a number, presets per pass)."""
    from . import calculator
    given = args.efficiency or []
    if given and (args.mfu is not None or args.memory_efficiency is not None):
        raise ChalkError("efficiency: --efficiency sets both --mfu and --memory-efficiency; give it or them, not both")
    numbers = [v for v in given if isinstance(v, float)]
    if len(numbers) > 1:
        raise ChalkError("efficiency: one number serves both passes; give at most one, and presets for either pass")
    mfu = calculator.MFU if args.mfu is None else args.mfu
    memory = calculator.MEMORY_EFFICIENCY if args.memory_efficiency is None else args.memory_efficiency
    knobs = {phase: _Knobs(numbers[0], numbers[0], typed=True) if numbers else _Knobs(mfu, memory)
             for phase in PHASES}
    presets = [v for v in given if not isinstance(v, float)]
    for preset in presets:
        if knobs[preset.phase].preset is not None:
            raise ChalkError(f"efficiency: {knobs[preset.phase].preset.name} and {preset.name} are both {preset.phase} "
                             "presets; give one per pass")
        knobs[preset.phase] = _Knobs(preset.value, preset.value, preset)
    return knobs


def _measured_rows(args, model, point, n, knobs: _Knobs) -> list[tuple[str, str]]:
    """Published throughput of real engines for this model on chips of this class, beside the bound."""
    from . import calculator
    hw = calculator.resolve(_target(args), args.chips)
    phase = "decode" if n == 1 else "prefill"
    bound = point.tokens_per_second / hw.count
    what = "this bound" if knobs.at_bound else "this estimate"
    rows = []
    for m in systems.measurements_for(model.name, hw.chip):
        measured = m.per_chip(phase)
        rows += [(f"published ({m.name})", f"{measured:,.0f} {'output' if n == 1 else 'input'} tokens/s per "
                                           f"{m.system.chip.name}, {measured / bound:.0%} of {what} "
                                           f"({bound:,.0f} per chip)"),
                 ("  source", f"{m.display}; {m.source} ({m.as_of}); its batch and context are its own")]
    return rows


def _allreduce_rows(args, model, point, n) -> list[tuple[str, str]]:
    """The tensor-parallel all-reduce line of a pass, with what it counts and what overlaps."""
    from . import calculator, roofline
    hw = calculator.resolve(_target(args), args.chips)
    if hw.count == 1:
        return []
    if model.moe:
        return [("all-to-all (expert parallel)", "not counted here: an MoE layout's is chalk.moe's (Chapter 2)")]
    message = point.batch * n * model.d_model * roofline.ACTIVATION_BYTES
    chip = hw.chip
    fixed = f" + {chip.allreduce_fixed * 1e6:g} us each" if chip.allreduce_fixed else " (no measured fixed cost in the catalog)"
    rows = [("all-reduce time (tensor parallel)", _ms(point.t_comm)),
            ("  what it counts", f"2 x {model.n_layers} all-reduces of {message / 1e6:,.1f} MB, ring over "
                                 f"{hw.count} chips at {chip.scale_up_bandwidth / 1e9:,.0f} GB/s per direction{fixed}"),
            ("  what overlaps", "nothing: each layer waits for its sum, so it adds to max(compute, memory)")]
    if chip.in_switch_reduction and hw.count <= chip.scale_up_domain:
        t = roofline.replica(chip, model, args.dtype, hw.count).allreduce_time(point.batch, n, "in-switch")
        rows.append(("  in-switch reduction", f"{_ms(t)} where the engine uses the switch's reduction (NVLink SHARP)"))
    return rows


def _serve(args) -> int:
    from . import calculator
    _check_names(args)
    knobs = _knobs(args)
    if args.prompt is not None and args.prompt > args.context:
        raise ChalkError(f"prompt: --prompt {args.prompt:,} is longer than --context {args.context:,}; the context "
                         "holds the prompt, so it must be at least as long")
    model = models.get(args.model)
    text, fits = _fit_report(args)
    print(f"{model.display} on {calculator.resolve(_target(args), args.chips).label}, {args.dtype} weights, "
          f"{args.kv_dtype} KV cache\n\nMemory\n{text}")
    if not fits:
        print("\nNo step time: the model does not fit. Use more chips, a smaller batch or context, or fewer bytes per weight.")
        return EXIT_DOES_NOT_FIT
    passes = {phase: dict(_common(args), mfu=k.mfu, memory_efficiency=k.memory_efficiency) for phase, k in knobs.items()}
    dec = calculator.decode(model, _target(args), args.batch, args.context, **passes["decode"])
    prompt = args.prompt or max(args.context, 1)
    pre = calculator.prefill(model, _target(args), args.batch, prompt, **passes["prefill"])
    for title, point, n, k in (("Decode step (1 new token per sequence)", dec, 1, knobs["decode"]),
                               (f"Prefill pass ({_tokens(prompt)} per sequence)", pre, prompt, knobs["prefill"])):
        formula, filled = calculator.substituted(point, model, _target(args), args.dtype, args.chips,
                                                 hardware.bytes_per_weight(args.kv_dtype), k.mfu, k.memory_efficiency)
        comm = (" + t_allreduce", f" + {point.t_comm:.4g}") if point.t_comm else ("", "")
        print(f"\n{title}\n  t >= {formula}{comm[0]}\n    = {filled}{comm[1]}")
        print(_rows([*k.rows(), ("compute time", _ms(point.t_compute)), ("weight-read time", _ms(point.t_weights)),
                     ("KV-read time", _ms(point.t_kv)), *_allreduce_rows(args, model, point, n),
                     ("step time (lower bound)" if k.at_bound else "step time (bound / efficiency)", _ms(point.t_step)),
                     ("regime", point.regime), ("tokens/s (replica)", f"{point.tokens_per_second:,.0f}"),
                     ("MFU at this bound" if k.at_bound else "MFU", f"{point.mfu:.1%}"),
                     *_measured_rows(args, model, point, n, k)]))
    rates = calculator.rental_prices(_target(args), args.chips, args.usd_per_chip_hour)
    same = knobs["decode"] == knobs["prefill"]
    print(f"\nMoney ({knobs['decode'].words()})" if same else
          f"\nMoney (decode: {knobs['decode'].words()}; prefill: {knobs['prefill'].words()})")
    if not rates:
        print("  no published rental price for this chip: pass --usd-per-chip-hour")
    for rate in rates:
        out = calculator.decode(model, _target(args), args.batch, args.context, usd_per_chip_hour=rate,
                                **passes["decode"])
        inp = calculator.prefill(model, _target(args), args.batch, prompt, usd_per_chip_hour=rate, **passes["prefill"])
        print(f"  at ${rate:g}/chip-hour: output ${out.usd_per_million_tokens:,.4g} per Mtok, "
              f"input ${inp.usd_per_million_tokens:,.4g} per Mtok")
    return EXIT_OK


def _fit(args) -> int:
    from . import calculator
    _check_names(args)
    model = models.get(args.model)
    text, fits = _fit_report(args)
    common = _common(args)
    try:
        batch = calculator.max_batch(model, _target(args), args.context, **common)
        context = calculator.max_context(model, _target(args), args.batch, **common)
        longest = "unbounded" if math.isinf(context) else _tokens(int(context))
        if model.max_context and context > model.max_context:
            longest += f" (past the model's published maximum of {_tokens(model.max_context)})"
        extra = [("largest batch at this context", f"{batch:,.0f}"), ("longest context at this batch", longest)]
    except ChalkError:  # the weights alone do not fit: no batch or context helps
        extra = [("largest batch at this context", "none: the weights alone do not fit")]
    print(f"{model.display}\n{text}\n{_rows(extra)}")
    return EXIT_OK if fits else EXIT_DOES_NOT_FIT


def _prices(args) -> int:
    entries = [prices.get(args.name)] if args.name else prices.catalog_prices().values()
    for e in entries:
        rows = [("input / output", f"${e.input:g} / ${e.output:g} per Mtok (output {e.output_to_input:.2g}x input)")]
        for key in ("cache_read", "cache_write_5m", "cache_write_1h"):
            if getattr(e, key) is not None:
                rows.append((key.replace("_", " "), f"${getattr(e, key):g} ({e.ratio(key):.3g}x input)"))
        if e.long_context:
            mi, mo = e.long_context_multipliers
            rows.append((f"above {e.long_context['above_tokens']:,} tokens",
                         f"${e.long_context['input']:g} / ${e.long_context['output']:g} ({mi:.3g}x / {mo:.3g}x)"))
        for tier in ("fast", "priority"):
            if getattr(e, tier):
                t = getattr(e, tier)
                rows.append((tier, f"${t['input']:g} / ${t['output']:g} ({t['output'] / e.output:.3g}x)"))
        rows.append(("source", f"{e.source} (as of {e.as_of})"))
        print(f"{e.name}: {e.provider} {e.model}\n{_rows(rows)}\n")
    return EXIT_OK


_TYPED = ("output", "cache_read", "cache_write_5m", "cache_write_1h", "step_context", "step_input", "step_output")


def _deduce_price(args) -> prices.Price:
    """The catalog entry --price, or the prices typed in (checked before any output)."""
    from . import pricing
    if args.price is not None:
        given = [k for k in _TYPED if getattr(args, k) is not None]
        if given:
            flag = given[0].replace("_", "-")
            raise ChalkError(f"{flag}: typed-in prices go with --input, not --price")
        return prices.get(args.price)
    if args.output is None:
        raise ChalkError("output: --input needs --output, both in USD per million tokens")
    return pricing.typed_price(args.input, args.output, cache_read=args.cache_read,
                               cache_write_5m=args.cache_write_5m, cache_write_1h=args.cache_write_1h,
                               step_context=args.step_context, step_input=args.step_input,
                               step_output=args.step_output)


def _deduce(args) -> int:
    from . import calculator, pricing
    target = args.system or args.chip or "H100-SXM"
    calculator.resolve(target).chip.flops(args.dtype)  # every name and number checked before any output
    if args.model is not None:
        models.get(args.model)
    price = _deduce_price(args)
    pricing.check_active_params(args.active_params)
    name = "the typed-in prices" if args.price is None else f"{price.provider} {price.model}'s prices (as of {price.as_of})"
    print(f"What {name} imply, on {calculator.resolve(target).label}:")
    rows = [("input / output", f"${price.input:g} / ${price.output:g} per Mtok (output {price.output_to_input:.3g}x input)")]
    rows += [(key.replace("_", " "), f"{value:.3g}x input") for key, value in pricing.cache_multipliers(price).items()]
    if price.long_context:
        to_in, to_out = price.long_context_multipliers
        rows.append((f"above {price.long_context['above_tokens']:,} tokens", f"input x{to_in:.3g}, output x{to_out:.3g}"))
    print(_rows(rows))
    for d in pricing.deduce(price, args.model, target, args.dtype, args.active_params):
        inputs = ", ".join(f"{k} = {v:,.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in d.inputs.items())
        line = f"  {d.quantity}: {calculator.plain(d.formula)} with {inputs}  ->  {d.value:,.4g}"
        if d.quantity == "storage tier":
            line = f"  cache held {d.inputs['T_hold']:g} s -> {d.inputs['tier']} (drain time C/W = {d.value:,.4g} s)"
        if d.actual is not None:
            line += f"  (actual {d.actual_label}: {d.actual:,.0f})"
        print(line)
    if price.long_context and args.model is None and args.active_params is None:
        print(f"  the step at {price.long_context['above_tokens']:,} tokens read as L*: add --active-params "
              "(the lecture's form) or --model to turn it into KV bytes per token")
    batches = pricing.fast_tier_batches(price)
    if batches:
        print(f"  fast tier: normal batch at {batches[0]:g} x B*, fast batch at {batches[1]:.3g} x B* (roofline.fast_mode)")
    return EXIT_OK


def _list(args) -> int:
    for name, tables in reference.LISTS.items():
        if args.what in ("all", name):
            for heading, table in tables.items():
                print(f"## {heading}\n\n{_terminal(table())}\n")
    return EXIT_OK


def _measure(args) -> int:
    from . import measure  # by name, as the chapter modules are: `import chalk` stays quick
    print(measure.table(measure.lab(args.threads, args.repeats)))
    return EXIT_OK


COMMANDS = {"list": _list, "serve": _serve, "fit": _fit, "prices": _prices, "deduce": _deduce,
            "measure": _measure}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    shown = set()

    def warn(message, category, *_):
        if str(message) not in shown:  # the same context is checked by decode and prefill
            shown.add(str(message))
            print(f"python -m chalk {args.command}: warning: {message}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", ChalkWarning)
            warnings.showwarning = warn
            return COMMANDS[args.command](args)
    except DoesNotFit as e:  # an answer, not bad input: README's exit 3, whichever command met it
        print(f"python -m chalk {args.command}: {e}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    except ChalkError as e:
        print(f"python -m chalk {args.command}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader (`| head`) stopped reading: not an error of ours
        sys.stdout = None
        return EXIT_OK
