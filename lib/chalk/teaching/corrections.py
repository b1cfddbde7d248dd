"""Where the course corrects or sharpens the lecture: one registry for the chapters' boxes and the
corrections page, so the two cannot disagree.

An entry holds the lecture's claim and a function that writes the corrected statement with its
numbers computed from ``chalk`` at the time it is shown. An entry whose chapter has not been
written yet, and whose numbers need that chapter's formulas, has no statement: it is listed as
"chapter to come" rather than given a number nobody computed.

    from IPython.display import HTML
    from chalk.teaching import corrections
    HTML(corrections.box("deepseek-sparsity"))     # in a chapter notebook
    HTML(corrections.page_html())                   # book/corrections.md

Text is Markdown with ``$...$`` math; it becomes HTML with MathJax's ``\\(...\\)`` delimiters, which
both the website and JupyterLab typeset.
"""
import html
import math
from collections.abc import Callable
from dataclasses import dataclass

from .. import pipeline, reversible, roofline
from ..pricing import CACHE_HOLDS
from ..catalog import hardware, models, prices, systems, tiers
from ..catalog.quoted import LECTURE
from ..errors import ChalkError, lookup
from .chapters import ROOT, Chapter
from .flashcards import card_html

SECTION = "where-the-lecture-is-loose"
"""The anchor of every chapter's "Where the lecture is loose" heading, which entries link to."""
PAGE = "../book/corrections.html"
"""The corrections page, from a chapter page."""
_REFERENCES = "../book/references.html"
"""The bibliography, from any page one folder deep."""


@dataclass(frozen=True)
class Correction:
    id: str
    chapter: str
    """``NN_topic``, the chapter that discusses it (see ``chalk.teaching.chapters``)."""
    title: str
    claim: str
    """What the lecture says (Markdown)."""
    statement: Callable[[], str] | None = None
    """The corrected statement (Markdown), numbers computed when called; None: chapter to come."""
    to_come: str = ""
    """For an entry without a statement: what its chapter will work out."""

    @property
    def pending(self) -> bool:
        return self.statement is None

    def corrected(self) -> str:
        """The corrected statement as Markdown, or what the chapter to come will settle."""
        return self.statement() if self.statement else f"*Chapter to come.* {self.to_come}"


# --- numbers the statements quote ------------------------------------------------------------
def sig(x: float, digits: int = 2) -> str:
    """``x`` rounded to ``digits`` significant digits, thousands grouped: how Chapter 1 prints a
    bound's figures (two digits; three for L*), shared by its notebook, its cards and this page."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    rounded = float(f"{x:.{digits}g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 10 ** (digits - 1) else f"{rounded:.{digits}g}"


def _bf16_ratios() -> dict[str, float]:
    """F/W in BF16 of every catalog chip that has a BF16 rate."""
    return {n: c.intensity("bf16") for n, c in hardware.catalog_chips().items() if "bf16" in c.dtypes}


def _extremes(values: dict[str, float]) -> tuple[tuple[str, float], tuple[str, float]]:
    """(name, value) of the smallest and the largest entry."""
    return min(values.items(), key=lambda kv: kv[1]), max(values.items(), key=lambda kv: kv[1])


def _dropped_constants() -> str:
    return (f"Its ≈{LECTURE['hardware_ratio']:.0f} is $F\\,b_w/(2W)$, not the FLOP-per-byte ratio $r = F/W$: "
            "the compute time is $2BN_\\text{act}/F$ (a multiply and an add per weight) and the weight "
            "read $N_\\text{tot}b_w/W$. With the constants written out, $B^\\star = r\\,b_w\\,s/2$; in BF16 "
            "($b_w = 2$) they cancel and $B^\\star = rs$. Mixing conventions, an FP8 FLOP rate with one "
            "byte per weight but no factor 2, is off by a factor of 2.")


def _deepseek_sparsity() -> str:
    v3 = models.get("deepseek-v3")
    moe = v3.moe
    by_experts = moe["n_routed_experts"] / moe["experts_per_token"]
    lecture_s = LECTURE["deepseek_experts"] / LECTURE["deepseek_active_experts"]
    return (f"DeepSeek-V3 routes each token to {moe['experts_per_token']} of {moe['n_routed_experts']} routed "
            f"experts plus {moe['n_shared_experts']} shared one ([DeepSeek-AI, 2024]({_REFERENCES})). By parameters, which is what $s$ measures, "
            f"$s = N_\\text{{tot}}/N_\\text{{act}}$ = {v3.sparsity:.1f}; by expert counts it would be "
            f"{by_experts:.0f}. Neither is the lecture's {lecture_s:.0f}, which puts $B^\\star$ at "
            f"{LECTURE['hardware_ratio'] * lecture_s:,.0f}. Attention, embeddings, the dense layers and the "
            "shared expert serve every token, which is why the parameter ratio is below the expert ratio.")


def _ratio_not_stable() -> str:
    r = _bf16_ratios()
    (low_name, low), (high_name, high) = _extremes(r)
    per_format = []
    for dtype in ("bf16", "fp8", "fp4"):
        values = {n: c.intensity(dtype) for n, c in hardware.catalog_chips().items() if dtype in c.dtypes}
        (lo_n, lo), (hi_n, hi) = _extremes(values)
        per_format.append(f"{dtype.upper()} {lo:.0f} ({lo_n}) to {hi:.0f} ({hi_n})")
    return (f"BF16 FLOP per byte is {r['A100-80GB']:.0f} on an A100 and {r['H100-SXM']:.0f} on an H100; "
            f"across the catalog it runs from {low:.0f} ({low_name}) to {high:.0f} ({high_name}), a factor "
            f"of {high / low:.1f}. \"Stable\" holds only within that factor: compute $B^\\star$ from the chip "
            f"in front of you. Where $r$ is heading depends on the number format the model is served in: "
            f"{'; '.join(per_format)}. Each halving of the bits doubles the FLOP rate while HBM grows more "
            "slowly, so the low-precision $r$ keeps rising.")


def _drain_not_floor() -> str:
    from .. import moe
    drains = {n: c.drain_time for n, c in hardware.catalog_chips().items()}
    (low_name, low), (high_name, high) = _extremes(drains)
    chips = hardware.get("GB200").scale_up_domain
    v3 = models.get("deepseek-v3")
    rep = roofline.replica("GB200", v3, "fp8", chips)
    every, one = (float(roofline.numeric[t](1, 0, *rep.params(0))) for t in ("t_weights_all", "t_weights"))
    calls = moe.layer_times(v3, "gb200-nvl72", 1, "fp8", links="measured").fixed * v3.n_moe_layers
    return (f"The drain time $C/W$ runs from {1e3 * low:.0f} ms ({low_name}) to {1e3 * high:.0f} ms "
            f"({high_name}) across the catalog; it is the length of a step that reads a full HBM. The floor "
            f"is the weight read alone: $N_\\text{{tot}}b_w/W$ = {1e3 * every:.2f} ms for DeepSeek-V3 in FP8 "
            f"on {chips} GB200s once a batch touches every expert, and {1e3 * one:.3f} ms for a lone token that "
            f"reads only its own experts (weights spread perfectly over the chips), against the lecture's "
            f"{LECTURE['step_ms']:.0f} ms. Spread over chips, an MoE also waits for each layer's all-to-all: "
            f"at the fixed cost per call DeepSeek's kernels were measured at, the dispatch and combine of "
            f"{v3.n_moe_layers} MoE layers take {1e3 * calls:.1f} ms per step whatever their tokens, "
            f"{calls / one:.0f} times the lone token's read (timed over InfiniBand, an upper estimate on NVLink): "
            "for a mixture of experts spread over many chips, latency sets the floor, not bandwidth.")


def _gemini_step() -> str:
    price = prices.get("google/gemini-3.1-pro-preview")
    to_input, to_output = price.long_context_multipliers
    return (f"Above {price.long_context['above_tokens']:,} tokens of prompt, {price.model}'s input price "
            f"is multiplied by {to_input:g} and its output price by {to_output:g} (list prices of "
            f"{price.as_of}): \"+50%\" is the output step only. The KV bytes per token the lecture deduces "
            "from it depend on reading the step as the balance context, which assumes the KV reads overlap the "
            "weight matmuls (in series, cost per token rises from the first token, with no kink), and on the "
            f"≈{LECTURE['hardware_ratio']:.0f} convention.")


def _output_input() -> str:
    ratios = {p.name: p.output_to_input for p in prices.catalog_prices().values()}
    (low_name, low), (high_name, high) = _extremes(ratios)
    return (f"Across the catalog's list prices, output costs from {low:.1f}× (`{low_name}`) to "
            f"{high:.1f}× (`{high_name}`) the input price, so the implied decode MFU, $p_\\text{{in}}/"
            f"p_\\text{{out}}$, is not one number either.")


def _flash_disk() -> str:
    from .. import pricing
    drives = [t for t in tiers.catalog_tiers().values() if t.system is None]
    listed = "; ".join(f"{t.display}: {t.drain_time / 3600:.1f} h" for t in drives)
    host = "hgx-h100"
    picks = "; ".join(f"held {s / 60:g} minutes, {pricing.cheapest_tier(s, host, wait=True).display}"
                      for s in CACHE_HOLDS.values())
    return (f"Drain times $C/W$ of today's high-capacity flash and disks, from the catalog: {listed}; the "
            "lecture has about a minute for flash and an hour for a disk. Matching drain time to hold time "
            "is also only a rule of thumb: holding a cache for $T$ and reading it back once costs the tier's "
            "rent $p_\\text{hold}(T + C/W)$ plus the GPUs that wait for the reload, and the cheapest tier for "
            f"an 8-GPU H100 server with its host memory, at {LECTURE['usd_per_chip_hour']:g} dollars per "
            f"GPU-hour and drives bought outright, is: {picks}. Charged for their wait, a reload from one disk "
            "costs more than recomputing the prefill; only a cache striped over many disks brings the "
            "lecture's disk tier back, for holds of hours.")


def _sparse_attention() -> str:
    from .. import pricing
    q = pricing.sparse_attention_config()
    model, long = models.get("deepseek-v3"), 131072
    dense, sparse = (pricing.decode_attention_work(model, long, s, v32_fp8=True) for s in (False, "dsa"))
    exponents = {L: pricing.growth_exponent(model, L, "dsa", v32_fp8=True) for L in (8192, long)}
    layer = pricing.v32_fp8_cache_bytes_per_token(model) / model.n_attention_layers
    nsa = {L: pricing.growth_exponent(model, L, "nsa") for L in (8192, long)}
    return (f"DeepSeek's sparse attention (DeepSeek-V3.2) scores every cached token with a small FP8 "
            f"indexer ({q['index_heads']:.0f} heads of {q['index_head_dim']:.0f}) and runs MLA on the top "
            f"{q['index_top_k']:,.0f} tokens only. On the FP8 cache V3.2 stores ({layer:.0f} bytes per token "
            f"per layer, scales included, for both), a new token at {long:,} tokens of context reads "
            f"{dense.kv_bytes / sparse.kv_bytes:.1f}× fewer bytes than full MLA, but the indexer still touches "
            f"every cached token: doubling the context multiplies the reads by $2^{{{exponents[8192]:.2f}}}$ from "
            f"{8192:,} tokens and by $2^{{{exponents[long]:.2f}}}$ from {long:,}. The term is a constant plus a "
            "linear one with a smaller slope, tending to $L$, not $\\sqrt{L}$ (exponent 0.5), which it resembles "
            "only in passing. Native Sparse Attention's block selection behaves the same way: compressed blocks "
            f"at a fixed stride grow as $L$ (exponents {nsa[8192]:.2f} and {nsa[long]:.2f}); only block sizes "
            "that grew as $\\sqrt{L}$ would make the reads $\\sqrt{L}$.")


def _quadratic_attention() -> str:
    from .. import pricing
    cases = [("llama-3-70b", "H100-SXM"), ("deepseek-v3", "H800"), ("jamba-v0.1", "H100-SXM")]
    listed = "; ".join(f"{models.get(m).display} ({models.get(m).attention_kind}) "
                       f"{pricing.attention_crossover_context(m, chip, 'fp8') / 1e3:.3g} k"
                       for m, chip in cases)
    mla_prefill = pricing.attention_crossover_context("deepseek-v3", "H800", "fp8", form="prefill")
    return ("Per new token, attention does $f_\\text{att}$ FLOPs per cached token against $2N_\\text{act}$ "
            "for the weights, so the two take equal time at $L = 2N_\\text{act}F_\\text{att}/"
            "(f_\\text{att}F)$: with FP8 matmuls and BF16 attention, " + listed + " tokens in decode, MLA "
            "counted in the absorbed form its decode kernels run (the un-absorbed form its prefill runs "
            f"crosses at {mla_prefill / 1e3:.3g} k). That is far short of millions for a model whose every "
            "layer attends globally; only few global layers push it out. For GQA, equal FLOPs do not make "
            "attention matter in decode, which past $L^\\star$ waits on the KV reads: the quadratic term is "
            "a prefill matter. Prices have no quadratic term, but not because cost needs none: past "
            "$L^\\star$ cost per output token rises in proportion to $L$ (from the first token if attention runs "
            "after the matmuls rather than overlapping them), while a per-token price flat within "
            "a tier charges every token the same, a linear total for a quadratic cost. Prices average cost "
            "over the mix of contexts served and add one coarse step; leaving the quadratic term out is a "
            "pricing choice, not a fact about cost.")


def _parameters_for_tokens() -> str:
    return ("It means tokens: the segment's pre-training and served token counts run to hundreds of trillions, "
            "while its model has 100 B active parameters.")


def _transcript_slips() -> str:
    ratios = [p.output_to_input for p in prices.catalog_prices().values()]
    gemini = prices.get("google/gemini-3.1-pro-preview")
    return ("The first \"50%\" for output prices is corrected in "
            f"the lecture itself to several times input; the catalog's list prices put output at {min(ratios):.1f}× "
            f"to {max(ratios):.1f}× input (\"50% more\" is the long-context output step). The price list whose step "
            f"the lecture reads is {gemini.model}'s (as of {gemini.as_of}), which some auto-caption summaries "
            "call \"Gemini 1.5\".")


def _scale_up_out() -> str:
    from .. import moe
    from ..catalog import layouts
    (low_name, low), (high_name, high) = _extremes(moe.boundary_ratios())
    slices = [s for s in systems.catalog_systems().values() if moe.is_slice(s)]
    nvl72 = systems.get("gb200-nvl72")
    v3 = layouts.get("deepseek-v3")
    left_out = "; ".join(f"`{s.name}`, {s.scale_up_to_out:.0f}×, is left out: it is a slice of a scale-up "
                         f"domain of {s.chip.scale_up_domain:,} chips" for s in slices)
    return (f"Scale-up over scale-out bandwidth per chip, both counted per direction, from the catalog: "
            f"{nvl72.scale_up_to_out:.0f}× on a {nvl72.display}, and from {low:.0f}× (`{low_name}`) to "
            f"{high:.0f}× (`{high_name}`) across the catalog's systems that are whole scale-up domains"
            + (f" ({left_out}, and traffic leaving it stays on the scale-up links, for a TPU v5p cube ICI "
               "through optical circuit switches, rather than the data-centre network)" if slices else "")
            + f"; DeepSeek measured {v3['nvlink_GBps'] / v3['ib_GBps']:.1f}× on its H800s "
            f"({v3['nvlink_GBps']:.0f} GB/s of NVLink against {v3['ib_GBps']:.0f} of InfiniBand). Vendors print "
            "NVLink both ways and network cards one way, which is how a ratio comes out twice too large.")


def _rack_taxes_experts() -> str:
    from .. import moe
    nvl72 = systems.get("gb200-nvl72")
    chips = int(moe.LECTURE["expert_chips"])
    tokens_per_chip = 64   # one decode micro-batch, as in the chapter
    model = models.get("deepseek-v3")

    def slowdown(dedup):
        tokens = tokens_per_chip * chips
        one = moe.layer_times(model, nvl72, tokens, "fp8", chips=chips, dedup=dedup).communication
        two = moe.layer_times(model, nvl72, 2 * tokens, "fp8", domains=2, chips=chips, dedup=dedup)
        return two.communication / one

    step = [moe.decode_moe_time(model, nvl72, tokens_per_chip, "fp8", domains=d, chips=chips) for d in (1, 2)]
    star = moe.crossover_ratio(model, 2 * chips, chips)
    h800 = systems.get("hgx-h800")
    boxes = max(d.nodes for d in moe.deployments())
    return (f"A second domain taxes an expert layer by about $\\rho$ times the share of its bytes that cross, "
            f"and where nothing hides the tax it acts as the bound. With {chips} GPUs of each of two "
            f"{nvl72.display.split(' (')[0]} racks holding DeepSeek-V3's experts and each rack keeping "
            f"{tokens_per_chip} tokens per GPU, the all-to-all takes {slowdown(False):.1f} times as long as inside "
            f"one when every expert choice is sent on its own (DeepEP's low-latency kernels, used in decode), "
            f"{slowdown(True):.1f} times when a token crosses once per rack and is fanned out there (its normal "
            f"kernels, for prefill and training). In decode the GPUs' weight reads are too short to hide it: with two micro-batches of "
            f"{tokens_per_chip} tokens per GPU the {model.n_moe_layers} MoE layers take {1e3 * step[1]:.1f} ms per "
            f"step on two racks against {1e3 * step[0]:.1f} ms on one, {1e3 * (step[1] - step[0]):.1f} ms more. "
            f"Prefill and training kernels pay little until $\\rho$ exceeds "
            f"$\\rho^\\star$ = {star:.1f}, the GPUs a token reaches per rack it crosses to. DeepSeek spreads its "
            f"experts over up to {boxes} {h800.count}-GPU H800 boxes because its model does not fit one and each GPU "
            f"then reads one or two experts, not because export rules cut the H800's NVLink to "
            f"{h800.chip.scale_up_bandwidth_bidirectional / 1e9:.0f} GB/s both ways ($\\rho$ = "
            f"{h800.scale_up_to_out:.0f}): that makes the box it leaves slower, while the network card that "
            f"carries the crossing is an H100's.")


def _nvl_counts_dies() -> str:
    from .. import moe
    growth = moe.domain_growth()
    blackwell = next(d for d in growth if d.name.startswith("GB200"))
    ultra = next(d for d in growth if d.name.startswith("Rubin Ultra"))
    return (f"The {ultra.dies} of Rubin Ultra NVL576 counts GPU dies: {ultra.packages} packages of "
            f"{ultra.dies_per_package}, as announced. Counted the same way a GB200 NVL72 has {blackwell.dies} "
            f"dies, so the domain grows {ultra.dies / blackwell.dies:.0f}× in dies and "
            f"{ultra.packages / blackwell.packages:.0f}× in packages, the unit Hopper and Blackwell count as a "
            f"GPU. Its HBM grows more, from {blackwell.hbm / 1e12:.1f} TB to {ultra.hbm / 1e12:.0f} TB "
            f"({ultra.hbm / blackwell.hbm:.1f}×), room for {ultra.max_total_params('fp8') / 1e12:.0f} T "
            f"parameters in FP8 with {roofline.HEADROOM:.0%} of it kept free.")


def _attention_in_decode() -> str:
    v3 = models.get("deepseek-v3")
    f, kv = v3.attention_flops_per_cached_token(), v3.kv_bytes_per_token(2)
    rep = roofline.replica("H100-SXM", v3, "bf16")
    n_act, _, _, b_kv_v, flops, bw, *_ = rep.params()
    without = 2 * n_act / (flops / bw * b_kv_v)
    llama = models.get("llama-3-70b")
    gb200 = roofline.balance_context_sensitivity("GB200", v3, "fp8")
    return (f"Each new token also attends to its $L$ cached tokens. For DeepSeek-V3's latent attention, run "
            f"with absorbed projections as its kernels do, that is {f / 1e6:.0f} MFLOP per cached token against "
            f"{kv / 1e3:.0f} kB read, {f / kv:.0f} FLOP per byte (Llama 3 70B's grouped-query attention: "
            f"{llama.attention_flops_per_cached_token() / llama.kv_bytes_per_token(2):.0f}). With these FLOPs "
            f"$L^\\star = 2N_\\text{{act}}/(r\\,b_\\text{{kv}} - f_\\text{{att}})$: about {sig(rep.balance_context(), 3)} "
            f"tokens on an H100 in BF16, not {sig(without, 3)}, and on an H200 "
            f"({hardware.get('H200').intensity('bf16'):.0f} FLOP/B) there is no $L^\\star$ at all. MLA trades "
            "bytes for FLOPs: its long-context decode is limited by compute as much as by reading the cache. "
            "The figure is fragile: $r\\,b_\\text{kv} - f_\\text{att}$ subtracts two close numbers, so the "
            "attention kernels' number format moves $L^\\star$ most: on a GB200 serving FP8 weights it is "
            f"{sig(gb200[('bf16', 'bf16')], 3)} tokens with BF16 attention, {sig(gb200[('fp8', 'bf16')], 3)} with FP8 "
            f"attention and {sig(gb200[('fp8', 'fp8')], 3)} with an FP8 cache as well; over an FP8 cache attended "
            "in BF16, as DeepSeek's own FP8-cache kernel does, there is none.")


def _weights_every_batch() -> str:
    from .. import moe
    v3 = models.get("deepseek-v3")
    n = v3.moe["n_routed_experts"]
    shares = ", ".join(f"{100 * moe.expected_experts_touched(v3, b) / n:.0f}% at $B$ = {b}" for b in (1, 32, 100))
    r = hardware.get("H100-SXM").intensity("bf16")
    # A lone token on a rack also waits for each MoE layer's dispatch and combine calls.
    rack = roofline.replica("GB200", v3, "fp8", hardware.get("GB200").scale_up_domain).params(0)
    calls = v3.n_moe_layers * moe.layer_times(v3, "gb200-nvl72", 1, "fp8", links="measured").fixed
    dearer = (float(roofline.numeric["t_weights"](1, 0, *rack)) + calls) / float(roofline.numeric["t_compute"](1, 0, *rack))
    return (f"Only a large batch reads every expert. With uniform routing a step touches "
            f"$n_\\text{{exp}}(1-(1-k/n_\\text{{exp}})^B)$ of each layer's routed experts: for DeepSeek-V3 {shares}. "
            f"So a lone token costs $r\\,b_w/2$ times its compute-bound cost ({r:.0f} on an H100 in BF16), the same "
            f"for dense and sparse models, not $B^\\star = r\\,b_w\\,s/2$ "
            f"({roofline.balance_batch('H100-SXM', v3, 'bf16'):,.0f}) times. That counts weight reads only: on a "
            f"GB200 NVL72 a lone token also waits for its {v3.n_moe_layers} MoE layers' all-to-all calls, which raise the "
            f"multiple to about {sig(dearer)} (at the fixed cost per call measured over InfiniBand, an upper "
            "estimate on NVLink): for an MoE on a rack, latency makes an unbatched token dear.")


def _slow_mode() -> str:
    slow = {p.display if hasattr(p, "display") else f"{p.provider} {p.model}": p.slow_discounts
            for p in map(prices.get, prices.names()) if p.slow_discounts}
    listed = "; ".join(f"{name}: " + ", ".join(f"{kind} at {100 * (1 - x):.0f}% off" for kind, x in d.items())
                       for name, d in slow.items())
    return (f"Slower service is sold cheaper: {listed}. A per-step roofline cannot see why. It prices one step at "
            "full utilisation; a provider's cost is set by how busy its chips are over a day. Work that may wait "
            "hours fills the troughs of demand and lets the scheduler run every replica at its best batch, so it "
            "is cheaper to serve even though no single step is.")


def _gemini_scale() -> str:
    from .. import operator
    replica = LECTURE["replica_tokens_per_second"]
    gemini = replica * LECTURE["gemini_over_replica"]
    out, total = operator.fleet_output_tokens_per_second(), operator.fleet_tokens_per_second()
    input_per_output = (total - out) / out
    return (f"The replica's {replica:,.0f} tokens/s are output tokens; Google's published totals count "
            f"tokens processed, prompts included. DeepSeek's day shows the mix: {input_per_output:.1f} input "
            f"tokens per output token ({total / 1e6:.1f} M tokens/s in all, {out / 1e6:.1f} M of them output). "
            f"Compared like with like, one replica is about 1/{gemini / replica / (1 + input_per_output):,.0f} "
            "of Gemini's output, not 1/1,000: the argument (only huge services batch well) survives, the "
            "factor does not.")


def _speculative() -> str:
    return ("The fast-mode inversion of Chapter 1 assumes batch size is the only lever: a consistent "
            "story, not an identification. Speculative decoding, dedicated hardware or priority queues "
            "could explain fast mode too.")


def _one_layer_stages() -> str:
    k = models.get("deepseek-v3").moe["experts_per_token"]
    lecture = pipeline.rack_boundary_ratio(1, k, pipeline.LECTURE_RHO)
    # The chapter's table: switched systems, experts over all their chips, one format and DeepEP's.
    same = {rb.system: rb for rb in pipeline.rack_test("deepseek-v3")}
    mixed = {rb.system: rb for rb in pipeline.rack_test("deepseek-v3", **pipeline.DEEPEP_FORMATS)}
    failing = [name for name, rb in same.items() if rb.min_layers > 1]
    failing_mixed = [name for name, rb in mixed.items() if rb.min_layers > 1]
    nvl72, nvl72_mixed = same["gb200-nvl72"], mixed["gb200-nvl72"]
    margin = pipeline.crossing_margin("deepseek-v3", "gb200-nvl72", 1, "fp8", pipeline.DEFAULT_MFU)
    return (f"With the board's $\\rho$ = {pipeline.LECTURE_RHO:.0f} and $k$ = {k}, one layer per stage "
            f"gives {lecture:.0f}, but $\\rho$ is the system's own per-direction ratio: on a GB200 NVL72 "
            f"($\\rho$ = {nvl72.bandwidth_ratio:.0f}, experts over its {nvl72.expert_parallel} GPUs) one "
            f"DeepSeek-V3 layer gives {nvl72.ratio_one_layer:.2f}, {nvl72_mixed.ratio_one_layer:.2f} with DeepEP's "
            f"FP8 dispatch, and a stage needs {nvl72.min_layers} MoE layers to pass. Of the catalog's {len(same)} switched "
            f"scale-up systems, {len(failing)} need more than one layer per stage "
            f"({', '.join(f'`{n}`' for n in failing)}), {len(failing_mixed)} with FP8 dispatch. A faster "
            "scale-up fabric makes the test harder, not easier. The lecture's conclusion stands on other "
            "grounds: the test asks the crossing to hide behind the all-to-all, and in training it also hides "
            f"behind the stage's compute, {margin:.1f} times as long for one such layer at 40% of FP8 peak.")


def _decode_bubble() -> str:
    stages, hop = 4, 0.5
    prefill = pipeline.simulate(stages, 2 * stages, "inference").steady_state_idle_fraction
    half = pipeline.decode_idle_fraction(stages, stages // 2)
    hopped = pipeline.decode_idle_fraction(stages, stages, hop)
    return (f"True of a stream of independent requests such as prefills ({prefill:.0%} idle once every stage is "
            f"busy), not of decode: a sequence's next token enters the first stage only after its last one has left "
            f"the last stage and been sampled. With {stages // 2} micro-batches in flight on {stages} stages decode "
            f"idles {half:.0%}; with {stages} it idles none while hops are free but {hopped:.0%} at hops of "
            f"{hop:g} $t_F$. Keeping every stage busy takes "
            f"$P(1 + t_\\text{{hop}}/t_F)$ micro-batches in flight, "
            f"{pipeline.decode_microbatches_needed(stages, hop)} here.")


def _batch_not_neutral() -> str:
    stages = 4
    alone = pipeline.simulate(stages, 1, "inference").idle_fraction
    hop = 0.5
    return (f"Neutral for the batch each rack runs, yes: each stage still needs one rack's balance batch. "
            f"What grows is the number of concurrent users one model instance needs: one batch alone in "
            f"{stages} stages leaves {alone:.0%} of every stage idle, so {stages} such batches must be in flight, "
            f"and in decode, where each token loops back to the first stage, "
            f"{pipeline.decode_microbatches_needed(stages, hop)} at hops of {hop:g} $t_F$. Each brings its own "
            "KV cache (Chapter 4).")


_REV_MODEL, _REV_TOKENS = "llama-3-70b", 8 * 8192
"""The model and micro-batch of Chapter 7's memory example."""


def _stores_almost_none() -> str:
    from .. import memory
    m = models.get(_REV_MODEL)
    rev, block = (reversible.activation_memory(_REV_MODEL, _REV_TOKENS, p) / 1e9 for p in ("reversible", "block"))
    peak = {lb: {p: reversible.activation_memory(_REV_MODEL, _REV_TOKENS, p, peak=True, logit_bytes=lb) / 1e9
                 for p in ("reversible", "block")} for lb in (4, 0)}
    state = memory.training_state_bytes(_REV_MODEL) / 1e9
    return (f"Between layers, yes: {m.display} on {_REV_TOKENS:,} tokens keeps {rev:.1f} GB instead of "
            f"{block:.0f} GB of layer inputs, {block / rev:.0f} times less. At the peak the layer being "
            "differentiated is rebuilt in full and the gradient buffers and the head stay under both policies: "
            f"{peak[4]['reversible']:.0f} GB against {peak[4]['block']:.0f} GB, "
            f"{peak[4]['block'] / peak[4]['reversible']:.1f} times less, while the FP32 logits are materialised; "
            f"{peak[0]['block'] / peak[0]['reversible']:.1f} times with a fused loss that never holds them. "
            f"Per replica both are small beside the {state / 1e3:.2f} TB of weights, gradients and Adam state; "
            "per GPU, once ZeRO shards that state over the data-parallel replicas, they need not be. The "
            "recomputation costs a third more FLOPs ($8ND$) if the inversion's work is reused, two thirds "
            "($10ND$) if not.")


def _random_net_cipher() -> str:
    from ..figures import revnets
    gentle, chaotic = "residual, 12 layers", "plain tanh, 24 layers"
    return (f"It mixes like one at large gains, not at the gain training needs, and mixing is not security. "
            f"Over ten seeds, 12 untrained "
            f"residual layers at gain 1 move the output {revnets.sweep_range(gentle, 1.0)} times a small "
            f"input change: proportional. At gain 4 they amplify it {revnets.sweep_range(gentle, 4.0)} times, "
            f"and a plain tanh network at gain 4 {revnets.sweep_range(chaotic, 4.0)} times over 24 layers: "
            "the chaotic regime, a real-valued avalanche. What keeps a trainable network out of it is the "
            "well-conditioned initialisation that gradient descent needs, not the absence of randomness; "
            "mixing alone would not make a secure cipher.")


# Chapter 4's statement imports chalk.memory when called, for the same reason.


def _hop_latency() -> str:
    from .. import memory
    from ..catalog import memory_data
    from ..figures import memory_capacity as mc
    rdma = memory_data.latency("deepep-low-latency-rdma")
    fixed = mc.nccl_fixed()
    lecture = memory_data.LECTURE
    stages = int(lecture["stages"])
    batch = mc.hop_example_batch()
    mdl, rack = models.get(mc.HOP_EXAMPLE["model"]), systems.get(mc.HOP_EXAMPLE["system"])
    payload = batch * mdl.d_model * 2
    spread = memory.hop_time(mdl, rack, batch, 0.0)
    one_link = payload / rack.chip.scale_out_bandwidth
    low, high = (stages * memory.hop_time(mdl, rack, batch, f) for f in fixed)
    squeezed = stages * (fixed[1] + one_link)
    return (f"Published figures put a hop at tens to hundreds of microseconds for transfers the GPU starts itself: "
            f"NCCL's cost model (a model, not a measurement) charges {1e6 * fixed[0]:.0f} to {1e6 * fixed[1]:.0f} µs "
            f"per network step before any payload ([NVIDIA, 2024]({_REFERENCES})), and DeepEP's first, pure-RDMA "
            f"kernels took {min(rdma['dispatch_us']):.0f} to {max(rdma['dispatch_us']):.0f} µs for a whole expert "
            f"dispatch of {rdma['tokens']:.0f} tokens per GPU over InfiniBand, payload included "
            f"([DeepSeek-AI, 2025]({_REFERENCES}); its later tables also use NVLink inside a node). A stage boundary "
            "carries $B\\,d_\\text{model}\\,b_\\text{act}$ bytes: "
            f"for {mdl.display} at its balance batch of {batch:,} sequences at {mc.HOP_EXAMPLE['context']:,} tokens, "
            f"{payload / 1e6:.0f} MB, which the {rack.count} network links of a {rack.display.split(' (')[0]} "
            f"rack send in {1e6 * spread:.0f} µs. Over {stages} stages the hops then add {1e3 * low:.2f} to "
            f"{1e3 * high:.2f} ms per token, not the lecture's {lecture['added_ms']:.0f} ms. Milliseconds need what "
            "none of these figures measures, a host that schedules each send, or a micro-batch squeezed through a "
            f"single {rack.chip.scale_out_bandwidth / 1e9:.0f} GB/s link ({1e3 * squeezed:.1f} ms over {stages} hops).")


def _kv_after_two_stages() -> str:
    from .. import memory, moe
    (dense_name, dense_sys, dense_dtype), (sparse_name, sparse_sys, sparse_dtype) = cases = (
        ("llama-3.1-405b", "hgx-h100", "bf16"), ("deepseek-v3", "gb200-nvl72", "fp8"))
    short, long_ = 4096, 32768
    (dense, dense_long), (sparse, sparse_long) = [[memory.crossover_at_balance(name, system, context, dtype)
                                                   for context in (short, long_)] for name, system, dtype in cases]
    dense_bstar = roofline.balance_batch(systems.get(dense_sys).chip, dense_name, dense_dtype, short)
    ceiling = memory.max_batch(dense_name, dense_sys, short, dense_dtype, 10**9)
    placed = moe.placement(sparse_name, sparse_sys, sparse.batch, short, sparse_dtype)
    return ("About right for a large dense model; for a sparse one the cache dominates sooner than the lecture "
            "says. The cache outweighs the weights past "
            "$P^\\star = N_\\text{tot} b_w/(B L b_\\text{kv})$ stages, at the batch a stage would run: Chapter 1's "
            "balance batch $B^\\star(L)$ where it fits, else the largest that fits, whose cache overtakes the "
            "weights once they fill half of each chip, $P^\\star = 2 N_\\text{tot} b_w/(CE)$. "
            f"{models.get(dense_name).display} in {dense_dtype.upper()} on {systems.get(dense_sys).display.split(' (')[0]} "
            f"stages: its balance batch at {short:,} tokens, {dense_bstar:,.0f} sequences, fits at no depth (at most "
            f"{ceiling:.0f}), so capacity sets $P^\\star$ = {dense.stages:.1f}, near the lecture's 2. "
            f"{models.get(sparse_name).display} in {sparse_dtype.upper()} on {systems.get(sparse_sys).display.split(' (')[0]} "
            f"racks: $P^\\star$ = {sparse.stages:.2f} at its balance batch of {sparse.batch:,.0f} sequences, so the cache "
            f"is the larger part without pipelining, even with attention copied on every GPU ({placed.weight_bytes / 1e9:.1f} "
            f"GB of weights, {placed.kv_bytes / 1e9:.1f} GB of cache). At {long_:,} tokens both are past $L^\\star$, "
            f"capacity sets the batch and $P^\\star$ is {dense_long.stages:.1f} and {sparse_long.stages:.2f}, whatever "
            "the context.")


def _memory_capex() -> str:
    from ..catalog import memory_data
    early, late = (memory_data.COST_SHARES[n] for n in ("epoch-hbm-share-2024q1", "epoch-hbm-share-2025q4"))
    low, high = late.hbm_range
    return (f"A reported figure, not a published one. What is published is Epoch AI's estimate that HBM was "
            f"{early.shares['hbm']:.0%} of the component spending on AI accelerators in {early.period} and "
            f"{late.shares['hbm']:.0%} in {late.period} (90% interval {low:.0%} to {high:.0%}; "
            f"[Somala, 2026]({_REFERENCES})). That is a share of the chips' bill of materials: not of their price, "
            "which carries the designer's margin, nor of a data centre's capital, which also buys buildings, power "
            "and networks.")


# Chapter 5's statements import chalk.scaling when called: it solves its SymPy model at import
# (seconds), which every other user of this registry need not pay.
def _equal_cost() -> str:
    from .. import scaling
    fit = scaling.get_fit("hoffmann")
    place = scaling.heuristic_place(fit.beta, fit.alpha)
    return ("For $f = a x^p + b x^{-q}$ the minimum has $p\\,a x^p = q\\,b x^{-q}$: the rising term is "
            "$q/p$ times the falling one, equal only when $p = q$. On the Chinchilla iso-FLOP line the data "
            f"term is $\\alpha/\\beta$ = {fit.alpha / fit.beta:.2f} times the parameter term (Hoffmann et al.'s "
            f"fit). The guess costs little because the minimum is flat: {100 * (scaling.heuristic_penalty(1, 3) - 1):.0f} % "
            "above the minimum when $q = 3p$, nothing when $p = q$. Its place is looser: on that line the "
            f"equal-terms model is {100 * (1 - place):.0f} % smaller than the optimum, on {place ** -2:.2f} times its "
            "tokens per parameter.")


def _rl_coefficients() -> str:
    from .. import scaling
    from ..catalog.overtraining import LECTURE as OT
    from ..notation import eta_RL, kappa
    split_rl, split_inf = scaling.token_split()
    slip = float(scaling.split_rl.subs({kappa: OT["rl_flops_per_param_token"], eta_RL: OT["rl_inefficiency"]}))
    return ("An efficiency $\\eta$ divides a cost: $6 D_\\text{pre} = \\kappa D_\\text{RL}/\\eta_\\text{RL} = "
            "2 D_\\text{inf}/\\eta_\\text{inf}$. With the lecture's $\\kappa$ = "
            f"{OT['rl_flops_per_param_token']:g} and $1/\\eta$ = {OT['rl_inefficiency']:g}, "
            f"$D_\\text{{pre}}$ = {split_rl:g} $D_\\text{{RL}}$ = {split_inf:g} $D_\\text{{inf}}$; multiplying by "
            f"the efficiency instead gives $D_\\text{{pre}}/D_\\text{{RL}}$ = {slip:.2g}.")


def _overtraining_guess() -> str:
    from .. import scaling
    from ..catalog import operators
    from ..catalog.overtraining import LECTURE as OT
    from ..figures import overtraining
    from ..operator import DEEPSEEK
    n = OT["active_params"]
    ratio = scaling.overtraining_ratio(n, overtraining.LECTURE_INFERENCE)
    five = scaling.overtraining_ratio(n, scaling.served_tokens(OT["tokens_per_second_all_models"] / 5, OT["days_live"]))
    rumour = scaling.overtraining_ratio(n, OT["rumoured_pretraining_tokens"])
    op = operators.get(DEEPSEEK)
    mix = scaling.served_mix(op.input_tokens, op.input_tokens_cache_hit, op.output_tokens, OT["inference_inefficiency"])
    mixed = overtraining.lecture_tokens(inference_inefficiency=mix.inefficiency)["ratio"]
    life = {fit: overtraining.lecture_lifetime(fit) for fit in ("hoffmann", "epoch")}
    excess = 100 * (life["hoffmann"]["life_ref"].total / life["hoffmann"]["life"].total - 1)
    replication = scaling.overtraining_ratio(life["epoch"]["N"], life["epoch"]["D_pre"])
    return (f"With its guesses the arithmetic gives {ratio:.0f}×; five models per family instead of ten give "
            f"{five:.0f}×, the rumoured {OT['rumoured_pretraining_tokens'] / 1e12:.0f} T tokens {rumour:.0f}×. "
            f"Charging decode's 1/η to every served token overstates it: with DeepSeek's published mix of prompts, "
            f"cache hits and outputs the thirds give {mixed:.0f}×. The 20:1 rule is a dense-model fit applied to an "
            "MoE's active parameters; an MoE behaves like a larger dense model, so that overstates the factor too. "
            "At the lecture's model's own loss the thirds are nearly exact under Hoffmann et al.'s fit (the model "
            f"costs {excess:.1f} % more than the lifetime optimum) and the replication's optimum is "
            f"{replication:.0f}×, both extrapolated far past the fits' data and biased toward over-training. "
            "That the model is far past 20:1 is robust; the factor moves several-fold with the inputs.")


REGISTRY: tuple[Correction, ...] = (
    Correction("dropped-constants", "01_batching", "Dropped constants",
               "$t_\\text{compute} = BN_\\text{act}/F$ and $t_\\text{weights} = N_\\text{tot}/W$, with "
               f"$r \\approx {LECTURE['hardware_ratio']:.0f}$ FLOP per byte.", _dropped_constants),
    Correction("deepseek-sparsity", "01_batching", "DeepSeek-V3's sparsity, counted by parameters",
               f"DeepSeek-V3 activates {LECTURE['deepseek_active_experts']:.0f} of its "
               f"{LECTURE['deepseek_experts']:.0f} experts, so "
               f"$s = {LECTURE['deepseek_experts'] / LECTURE['deepseek_active_experts']:.0f}$.",
               _deepseek_sparsity),
    Correction("ratio-not-stable", "01_batching", "$r$ is not stable across generations",
               f"$r \\approx {LECTURE['hardware_ratio']:.0f}$ on most GPUs and stable across generations.",
               _ratio_not_stable),
    Correction("drain-not-floor", "01_batching", "The step time of the lecture is a drain time, not the latency floor",
               f"A decode step takes about {LECTURE['step_ms']:.0f} ms, on every generation.", _drain_not_floor),
    Correction("sparse-attention", "06_long_context_pricing", "Sparse attention as $\\sqrt{L}$",
               "DeepSeek's sparse attention makes the KV term grow as about $\\sqrt{L}$.", _sparse_attention),
    Correction("equal-cost", "05_overtraining", "The equal-cost heuristic",
               "A sum of a falling and a rising cost is smallest where the two costs are equal.", _equal_cost),
    Correction("rl-coefficients", "05_overtraining", "The RL cost coefficients",
               "The board arithmetic that weighs pre-training, RL and inference tokens, first multiplying "
               "by the RL efficiency of about 0.3.", _rl_coefficients),
    Correction("overtraining-guess", "05_overtraining", "\"About 100× over-trained\"",
               "Frontier models are about a hundred times past Chinchilla-optimal.", _overtraining_guess),
    Correction("parameters-for-tokens", "05_overtraining", "\"A hundred trillion parameters\"",
               "\"A hundred trillion parameters\" (a slip in segment 5).", _parameters_for_tokens),
    Correction("gemini-step", "06_long_context_pricing", "Gemini's long-context step",
               "Gemini costs 50% more above its long-context step.", _gemini_step),
    Correction("output-input-ratio", "06_long_context_pricing", "Output against input prices",
               "Output tokens cost about five times input tokens.", _output_input),
    Correction("flash-disk-drain", "06_long_context_pricing", "Drain times of flash and disk",
               "Flash drains in about a minute and a disk in about an hour.", _flash_disk),
    Correction("quadratic-attention", "06_long_context_pricing", "Quadratic attention \"negligible until millions\"",
               "The quadratic attention term does not matter until contexts of millions of tokens.",
               _quadratic_attention),
    Correction("speculative-decoding", "01_batching", "Speculative decoding is announced, never analysed",
               "Speculative decoding and multi-token prediction are the second lever behind fast mode.",
               _speculative),
    Correction("attention-in-decode", "01_batching", "Attention FLOPs in decode",
               "A decode step's compute is $2BN_\\text{act}/F$; past a few thousand tokens of context decode is "
               "limited by reading the KV cache.", _attention_in_decode),
    Correction("weights-every-batch", "01_batching", "Every weight, whatever the batch",
               "Every weight is read once per step whatever the batch, so without batching a token costs "
               "about $B^\\star$ times more.", _weights_every_batch),
    Correction("slow-mode", "01_batching", "\"Slow mode cannot be much cheaper\"",
               "Past the balance batch the cost per token is flat, so a slow mode cannot be much cheaper.",
               _slow_mode),
    Correction("gemini-scale", "01_batching", "One replica is \"1/1000 of Gemini\"",
               "A replica serves about 2,000 x 64 = 128,000 tokens/s, about a thousandth of what Gemini "
               "serves.", _gemini_scale),
    Correction("hop-latency", "04_memory_capacity", "Latency of a rack-to-rack hop",
               "A hop between racks costs a few milliseconds, \"maybe an order of magnitude off\".",
               _hop_latency),
    Correction("kv-after-two-stages", "04_memory_capacity", "When the cache overtakes the weights",
               "After a little pipelining, even $P = 2$, the KV cache dominates the memory of every GPU.",
               _kv_after_two_stages),
    Correction("memory-capex-share", "04_memory_capacity", "\"Half of capex on memory\"",
               "Hyperscalers spend about 50% of their capital expenditure on memory.", _memory_capex),
    Correction("scale-up-out", "02_moe_racks", "Scale-up against scale-out bandwidth",
               "Scale-out is about eight times slower than scale-up.", _scale_up_out),
    Correction("rack-taxes-experts", "02_moe_racks", "One rack bounds an expert layer only where nothing hides the tax",
               "Across two racks about half the tokens cross the slow network, which becomes the bottleneck: "
               "one rack bounds the size of an expert layer.", _rack_taxes_experts),
    Correction("nvl-counts-dies", "02_moe_racks", "Rubin's \"500-something\" GPUs",
               "Scale-up domains grow from Hopper's 8 GPUs to Blackwell's 72 to Rubin's \"500-something\", "
               "partly by counting differently and partly a genuine 4×.", _nvl_counts_dies),
    Correction("one-layer-stages", "03_pipelining", "One MoE layer per stage fails the test on fast fabrics",
               f"With $k \\approx 8$, $2kL_\\text{{stage}}/{pipeline.LECTURE_RHO:.0f} \\ge 1$ holds at one layer "
               "per stage, so racks could be pipelined a layer at a time.", _one_layer_stages),
    Correction("decode-bubble", "03_pipelining", "Decode pipelines have a bubble",
               "Inference has no bubble: batch 1 starts right behind batch 0, and so on.", _decode_bubble),
    Correction("pipeline-batch-neutral", "03_pipelining", "Neutral for each rack's batch, not for the users an instance needs",
               "In inference, pipelining is neutral for latency and for batch size; it only cuts memory per rack.",
               _batch_not_neutral),
    Correction("transcript-slips", "06_long_context_pricing", "Small slips in the transcript",
               "Output costing \"50%\" more than input; \"Gemini 1.5\".", _transcript_slips),
    Correction("random-net-cipher", "07_ciphers_revnets", "A random network as a cipher",
               "A randomly initialised network might already be a passable cipher.", _random_net_cipher),
    Correction("revnet-stores-none", "07_ciphers_revnets", "\"A RevNet stores almost no activations\"",
               "A RevNet recomputes the activations during the backward pass, so it stores almost none.",
               _stores_almost_none),
)
"""Every correction, in the order of the lecture notes' list (§10)."""

_BY_ID = {c.id: c for c in REGISTRY}
if len(_BY_ID) != len(REGISTRY):
    raise ChalkError("corrections: two entries share an id")


def get(correction_id: str) -> Correction:
    return lookup("correction", correction_id, _BY_ID, param="correction_id")


def for_chapter(chapter: str) -> list[Correction]:
    """The entries of ``chapter``, in registry order."""
    return [c for c in REGISTRY if c.chapter == chapter]


# --- HTML -------------------------------------------------------------------------------------
def _inline(markdown: str) -> str:
    """One line of Markdown as inline HTML (no enclosing paragraph)."""
    return card_html(markdown).removeprefix("<p>").removesuffix("</p>")


def box(correction_id: str) -> str:
    """A chapter's "where the lecture is loose" box for one entry, as an HTML admonition.

    The classes are the book theme's, so the site draws it as its other warnings; ``mathjax_process``
    asks the site's MathJax to typeset it (JupyterLab does so unasked).
    """
    c = get(correction_id)
    return (f'<div class="admonition warning mathjax_process" id="loose-{c.id}">'
            f'<p class="admonition-title">{_inline(c.title)}</p>'
            f'<p><em>The lecture:</em> {_inline(c.claim)}</p>'
            f'{card_html(c.corrected())}'
            f'<p><a href="{PAGE}#{c.id}">All corrections to the lecture</a></p></div>')


def _chapter_cell(c: Correction) -> str:
    ch = Chapter(c.chapter, ROOT)
    if ch.written:
        return f'<a href="{ch.url("chapter", SECTION)}">Chapter {ch.number}: {html.escape(ch.title)}</a>'
    return f"Chapter {ch.number}: {html.escape(ch.title)} <em>(to come)</em>"


# Entries are numbered by a CSS counter, not in the text: a list label such as "23." would read as
# a printed answer to the leak scan of the student site.
_CSS = """
.chalk-corrections dl { counter-reset: slip; }
.chalk-corrections dt { font-weight: 600; margin-top: 1.2em; counter-increment: slip; }
.chalk-corrections dt::before { content: counter(slip) ". "; }
.chalk-corrections dd { margin-left: 1.2em; }
.chalk-corrections .chalk-chapter-ref { font-size: 0.9em; color: #555; }
.chalk-corrections .chalk-pending { color: #666; }
"""


def page_html() -> str:
    """The corrections page: every entry with the lecture's claim, the corrected statement, its
    chapter and a link to the chapter's section."""
    items = []
    for c in REGISTRY:
        css = ' class="chalk-pending"' if c.pending else ""
        items.append(f'<dt id="{c.id}">{_inline(c.title)}</dt>'
                     f'<dd><p class="chalk-chapter-ref">{_chapter_cell(c)}</p>'
                     f'<p><em>The lecture:</em> {_inline(c.claim)}</p>'
                     f'<div{css}>{card_html("*Corrected:* " + c.corrected())}</div></dd>')
    return (f'<div class="chalk-corrections mathjax_process"><style>{_CSS}</style>'
            f'<dl>{"".join(items)}</dl></div>')
