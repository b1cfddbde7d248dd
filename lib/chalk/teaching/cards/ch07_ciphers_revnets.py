"""Chapter 7 (ciphers and reversible networks): the numbers its flashcards quote and the figures
they show, all computed by ``chalk.reversible`` (and the chapter's figure data)."""
from collections.abc import Callable

import numpy as np

from ... import reversible as rv
from ...catalog import models
from ...figures import revnets
from ...figures.canvas import describe, new_figure, style
from ...figures.explorer import number

_MODEL, _TOKENS = "llama-3-70b", 8 * 8192
"""The chapter's memory example: Llama 3 70B, eight 8k sequences per micro-batch."""


def _peak_ratio(logit_bytes: int) -> float:
    """Block rematerialisation's peak over reversible layers' in the chapter's example."""
    block, rev = (rv.activation_memory(_MODEL, _TOKENS, p, peak=True, logit_bytes=logit_bytes)
                  for p in ("block", "reversible"))
    return block / rev


def _gb(policy: str, peak: bool = False) -> str:
    return f"{rv.activation_memory(_MODEL, _TOKENS, policy, peak=peak) / 1e9:,.1f}"


VALUES: dict[str, Callable[[], str]] = {
    "ch07_ideal_16": lambda: f"{revnets.random_permutation_flip(16):.6f}",
    "ch07_full_per_token": lambda: f"{float(rv.KEPT_PER_TOKEN.subs({rv.b_act: 2, rv.d_model: 1})):.0f}",
    "ch07_block_gb": lambda: _gb("block"),
    "ch07_rev_gb": lambda: _gb("reversible"),
    "ch07_model": lambda: models.get(_MODEL).display,
    "ch07_tokens": lambda: f"{_TOKENS:,}",
    "ch07_sbox_stall": lambda: f"{revnets.avalanche_matrices('sbox')[-1].mean():.2f}",
    "ch07_chaotic_range": lambda: revnets.sweep_range("plain tanh, 24 layers", 4.0),
    "ch07_gentle_range": lambda: revnets.sweep_range("residual, 12 layers", 1.0),
    "ch07_peak_ratio": lambda: f"{_peak_ratio(4):.1f}",
    "ch07_peak_ratio_fused": lambda: f"{_peak_ratio(0):.1f}",
    "ch07_sac_r4": lambda: f"{revnets.strict_avalanche_by_round('middle-square')[3]['beyond']}",
    "ch07_sac_round": lambda: f"{revnets.first_sac_round('middle-square')}",
    "ch07_gated": lambda: f"{rv.gated_kept_per_token(_MODEL):.1f}",
    "ch07_gated_fused": lambda: f"{rv.gated_kept_per_token(_MODEL, fused=True):.1f}",
    "ch07_rt32": lambda: f"{rv.round_trip_error(64, dtype='float32')[-1]:.1e}",
    "ch07_heys_best": lambda: f"{int(np.max(rv.difference_table(rv.HEYS_SBOX)[1:]))}",
}
"""Numbers the cards quote, each computed from chalk and formatted as the card shows it."""


def _avalanche():
    fig, (ax,) = new_figure(3.6, 2.5)
    fig.subplots_adjust(left=0.17, right=0.97, bottom=0.2, top=0.9)
    rounds = np.arange(1, revnets.MAX_ROUNDS + 1)
    means = {rf: revnets.avalanche_matrices(rf).mean(axis=(1, 2)) for rf in ("middle-square", "sbox")}
    with style():
        for rf, m in means.items():
            ax.plot(rounds, m, marker=revnets.MARKERS[rf], ms=3, label=revnets.ROUND_FUNCTIONS[rf])
        ax.axhline(revnets.random_permutation_flip(), color="#555555", ls="--", lw=1, label="random permutation")
        ax.set(xlabel="rounds", ylabel="mean flip fraction", ylim=(0, 0.7), title="avalanche, 16-bit Feistel")
        ax.legend(frameon=False, fontsize=6.5, loc="lower right")
    said = "; ".join(f"{revnets.ROUND_FUNCTIONS[rf]} from {m[0]:.2f} after 1 round to {m[-1]:.2f} after "
                     f"{rounds[-1]}" for rf, m in means.items())
    return describe(fig, f"{said}; a random permutation flips {revnets.random_permutation_flip():.2f}.")


def _memory():
    fig, (ax,) = new_figure(3.6, 2.5)
    fig.subplots_adjust(left=0.17, right=0.97, bottom=0.2, top=0.9)
    curves = revnets.memory_curves(_MODEL, _TOKENS)
    m = models.get(_MODEL)
    depths = np.array(revnets.DEPTHS, dtype=float)
    per = rv.layer_kept_per_width(_MODEL)
    peaks = {p: rv.activation_bytes(_TOKENS, m.d_model, depths, p, peak=True, vocab=m.vocab, kept_per_width=per) / 1e9
             for p in ("block", "reversible")}
    # Solid: kept between layers; dashed: the peak. The marker names the policy.
    with style():
        for p, ys in curves.items():
            ax.plot(revnets.DEPTHS, ys, color=revnets.COLORS[p], marker=revnets.POLICY_MARKERS[p], ms=3,
                    markevery=4, label=f"{p}, kept")
        for p, peak in peaks.items():
            ax.plot(revnets.DEPTHS, peak, color=revnets.COLORS[p], ls="--", marker=revnets.POLICY_MARKERS[p],
                    ms=3, mfc="white", markevery=4, label=f"{p}, peak")
        ax.set_yscale("log")
        ax.set(xlabel="layers", ylabel="GB", title="activation memory against depth")
        ax.legend(frameon=False, fontsize=6.5)
    at = revnets.DEPTHS[-1]
    kept = ", ".join(f"{p} {number(ys[-1])} GB" for p, ys in curves.items())
    peak = ", ".join(f"{p} {number(ys[-1])} GB" for p, ys in peaks.items())
    return describe(fig, f"{m.display}, {_TOKENS:,} tokens per micro-batch, log scale: storing everything and "
                         f"block rematerialisation grow with depth, reversible layers stay flat; at {at} layers "
                         f"kept between layers: {kept}; at the peak: {peak}.")


FIGURES: dict[str, Callable] = {"ch07_avalanche": _avalanche, "ch07_memory": _memory}
"""Figures a card may name; each returns a small matplotlib Figure drawn from chalk."""
