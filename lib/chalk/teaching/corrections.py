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
from collections.abc import Callable
from dataclasses import dataclass

from .. import roofline
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
    return (f"BF16 FLOP per byte is {r['A100-80GB']:.0f} on an A100 and {r['H100-SXM']:.0f} on an H100; "
            f"across the catalog it runs from {low:.0f} ({low_name}) to {high:.0f} ({high_name}), a factor "
            f"of {high / low:.1f}. \"Stable\" holds only within that factor: compute $B^\\star$ from the chip "
            "in front of you.")


def _drain_not_floor() -> str:
    drains = {n: c.drain_time for n, c in hardware.catalog_chips().items()}
    (low_name, low), (high_name, high) = _extremes(drains)
    chips = hardware.get("GB200").scale_up_domain
    floor = roofline.step_time("GB200", "deepseek-v3", 1, 0, "fp8", chips)
    return (f"The drain time $C/W$ runs from {1e3 * low:.0f} ms ({low_name}) to {1e3 * high:.0f} ms "
            f"({high_name}) across the catalog; it is the length of a step that reads a full HBM. The floor "
            f"is the weight read alone, $N_\\text{{tot}}b_w/W$: {1e3 * floor:.2f} ms for DeepSeek-V3 in FP8 "
            f"on {chips} GB200s, against the lecture's {LECTURE['step_ms']:.0f} ms.")


def _gemini_step() -> str:
    price = prices.get("google/gemini-3.1-pro-preview")
    to_input, to_output = price.long_context_multipliers
    return (f"Above {price.long_context['above_tokens']:,} tokens of prompt, {price.model}'s input price "
            f"is multiplied by {to_input:g} and its output price by {to_output:g} (list prices of "
            f"{price.as_of}): \"+50%\" is the output step only. The KV bytes per token the lecture deduces "
            f"from it depend on reading the step as the balance context and on the ≈{LECTURE['hardware_ratio']:.0f} "
            "convention.")


def _output_input() -> str:
    ratios = {p.name: p.output_to_input for p in prices.catalog_prices().values()}
    (low_name, low), (high_name, high) = _extremes(ratios)
    return (f"Across the catalog's list prices, output costs from {low:.1f}× (`{low_name}`) to "
            f"{high:.1f}× (`{high_name}`) the input price, so the implied decode MFU, $p_\\text{{in}}/"
            f"p_\\text{{out}}$, is not one number either.")


def _flash_disk() -> str:
    drives = [t for t in tiers.catalog_tiers().values() if t.name.startswith(("ssd", "hdd"))]
    listed = "; ".join(f"{t.display}: {t.drain_time / 3600:.1f} h" for t in drives)
    holds = " and ".join(f"{s / 3600:g}-hour" if s >= 3600 else f"{s / 60:g}-minute" for s in CACHE_HOLDS.values())
    return (f"Drain times $C/W$ of today's high-capacity drives, from the catalog: {listed}. Both are far "
            f"longer than the lecture's, which changes its \"flash and disk\" reading of the {holds} "
            "cache tiers.")


def _scale_up_out() -> str:
    ratios = {s.name: s.scale_up_to_out for s in systems.catalog_systems().values()}
    (low_name, low), (high_name, high) = _extremes(ratios)
    nvl72 = systems.get("gb200-nvl72")
    return (f"Scale-up over scale-out bandwidth per chip, from the catalog: {nvl72.scale_up_to_out:.0f}× on "
            f"a {nvl72.display}, and from {low:.0f}× (`{low_name}`) to {high:.0f}× (`{high_name}`) across "
            "the catalog's systems.")


def _speculative() -> str:
    return ("The fast-mode inversion of Chapter 1 assumes batch size is the only lever: a consistent "
            "story, not an identification. Speculative decoding, dedicated hardware or priority queues "
            "could explain fast mode too.")


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
               "DeepSeek's sparse attention makes the KV term grow as about $\\sqrt{L}$.",
               to_come="The speaker's characterization; the chapter checks it against the paper's "
                       "mechanism before using it."),
    Correction("equal-cost", "05_overtraining", "The equal-cost heuristic",
               "A sum of a falling and a rising cost is smallest where the two costs are equal.",
               to_come="Exact only for equal exponents: for $ax^p + bx^{-q}$ the terms at the optimum "
                       "stand in ratio $q/p$. The chapter derives it in SymPy."),
    Correction("rl-coefficients", "05_overtraining", "The RL cost coefficients",
               "The board arithmetic that weighs pre-training, RL and inference tokens.",
               to_come="The board first multiplied by the RL inefficiency, then divided by it; the chapter "
                       "redoes the balance of $D_\\text{pre}$, $D_\\text{RL}$ and $D_\\text{inf}$ cleanly."),
    Correction("overtraining-guess", "05_overtraining", "\"About 100× over-trained\"",
               "Frontier models are about a hundred times past Chinchilla-optimal.",
               to_come="The figure rests on guessed inputs (active parameters, serving rate, lifetime, the "
                       "split of compute, a dense Chinchilla ratio applied to an MoE's active parameters); "
                       "the chapter shows how far each moves it."),
    Correction("gemini-step", "06_long_context_pricing", "Gemini's long-context step",
               "Gemini costs 50% more above its long-context step.", _gemini_step),
    Correction("output-input-ratio", "06_long_context_pricing", "Output against input prices",
               "Output tokens cost about five times input tokens.", _output_input),
    Correction("flash-disk-drain", "06_long_context_pricing", "Drain times of flash and disk",
               "Flash drains in about a minute and a disk in about an hour.", _flash_disk),
    Correction("quadratic-attention", "06_long_context_pricing", "Quadratic attention \"negligible until millions\"",
               "The quadratic attention term does not matter until contexts of millions of tokens.",
               to_come="True only when few layers attend globally; the chapter computes where the attention "
                       "FLOPs catch up with the matmuls."),
    Correction("speculative-decoding", "01_batching", "Speculative decoding is announced, never analysed",
               "Speculative decoding and multi-token prediction are the second lever behind fast mode.",
               _speculative),
    Correction("hop-latency", "04_memory_capacity", "Latency of a rack-to-rack hop",
               "A hop between racks costs a few milliseconds, \"maybe an order of magnitude off\".",
               to_come="Unverified in the lecture; the chapter sets it against measured network latencies."),
    Correction("scale-up-out", "02_moe_racks", "Scale-up against scale-out bandwidth",
               "Scale-out is about eight times slower than scale-up.", _scale_up_out),
    Correction("transcript-slips", "06_long_context_pricing", "Small slips in the transcript",
               "\"A hundred trillion parameters\"; output costing \"50%\" more than input; \"Gemini 1.5\".",
               to_come="The first means tokens; the second is corrected in the lecture itself to several "
                       "times; the model is the current Gemini Pro of the price list, which some auto-caption "
                       "summaries misname. The chapters quote the corrected forms."),
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


_CSS = """
.chalk-corrections dt { font-weight: 600; margin-top: 1.2em; }
.chalk-corrections dd { margin-left: 1.2em; }
.chalk-corrections .chalk-chapter-ref { font-size: 0.9em; color: #555; }
.chalk-corrections .chalk-pending { color: #666; }
"""


def page_html() -> str:
    """The corrections page: every entry with the lecture's claim, the corrected statement, its
    chapter and a link to the chapter's section."""
    items = []
    for n, c in enumerate(REGISTRY, 1):
        css = ' class="chalk-pending"' if c.pending else ""
        items.append(f'<dt id="{c.id}">{n}. {_inline(c.title)}</dt>'
                     f'<dd><p class="chalk-chapter-ref">{_chapter_cell(c)}</p>'
                     f'<p><em>The lecture:</em> {_inline(c.claim)}</p>'
                     f'<div{css}>{card_html("*Corrected:* " + c.corrected())}</div></dd>')
    return (f'<div class="chalk-corrections mathjax_process"><style>{_CSS}</style>'
            f'<dl>{"".join(items)}</dl></div>')
