"""Answer key of problem set 7 (ciphers and reversible networks): ``exercises/07_ciphers_revnets.ipynb``.

Expected values and typical wrong answers are computed from ``chalk.reversible`` and the catalog
when a check runs. The scenario constants below are the inputs the problem set states; they
differ from the chapter's examples so that no answer is printed there.
"""

import numpy as np

from ... import reversible as rv
from ...catalog import models
from ...figures import revnets
from ..exercises import Exercise, Mistake

SMALL_BLOCK_BITS = 4
"""Block width of ``flip_random_4bit``: small enough that the answer is visibly not 1/2."""
PMF_BITS = 6
"""Block width of ``pmf_one_bit``."""
PRESENT_SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
"""The PRESENT cipher's S-box (Bogdanov et al., CHES 2007), as the problem set prints it."""
FEISTEL = dict(key=0x5EED, rounds=6, width=24)
CIPHERTEXT = 0xA1B2C3
"""The block ``feistel_plaintext`` decrypts."""
BIG, BIG_TOKENS = "llama-3.1-405b", 16 * 8192
SMALL, SMALL_SEQ = "llama-3.1-8b", 32768
"""Model and sequence length of ``selective_overhead``."""
GPT3, GPT3_TOKENS, GPT3_SEQ = "gpt-3-175b", 2048, 2048
REPORTED_FLOPS = 2.4e25
"""``deduced_tokens``: a training compute reported for a model of Llama 3.1 405B's shape. Not Meta's
3.8e25: the tokens that implies are the published 15.6 T, which the catalog and Chapter 5 print."""
PLOT_THRESHOLD = 0.6
"""The level ``linear_rounds`` reads off the mixing figure."""


def _ideal(bits):
    return float(rv.RANDOM_PERMUTATION_FLIP.subs(rv.n_bits, bits))


def _ddt_max(sbox):
    table = rv.difference_table(sbox)
    table[0] = 0
    return float(table.max())


def _act(model, tokens, policy, **kw):
    return rv.activation_memory(model, tokens, policy, **kw) / 1e9


def _peak(model, tokens, policy, **kw):
    return rv.activation_memory(model, tokens, policy, peak=True, **kw) / 1e9


def _logits_gb():
    return float(rv.LOGIT_BYTES.subs({rv.n_tok: BIG_TOKENS, rv.n_vocab: models.get(BIG).vocab, rv.b_logit: 4})) / 1e9


def _inversion_gb():
    m = models.get(BIG)
    return float((rv.TRANSIENT_BYTES["reversible"] - rv.TRANSIENT_BYTES["block"]).subs(
        {rv.n_tok: BIG_TOKENS, rv.d_model: m.d_model, rv.b_act: 2})) / 1e9


def _attention_vs_weights(model, seq_len):
    """The recompute's attention FLOPs over a step that counts the weights only (6N per token)."""
    m = models.get(model)
    attention = float(rv.ATTENTION_FORWARD_PER_TOKEN.subs(
        {rv.n_layers: m.n_attention_layers, rv.n_heads: m.n_heads, rv.d_head: m.d_head, rv.L: seq_len / 2}))
    return attention / (6 * m.active_params)


def _linear_rounds():
    means = revnets.avalanche_matrices("linear").mean(axis=(1, 2))
    return float(np.argmax(means > PLOT_THRESHOLD) + 1)


NO_BYTES = "activations are BF16 here, 2 bytes per element."

EXERCISES = (
    Exercise(
        id="flip_random_4bit", expected=lambda: _ideal(SMALL_BLOCK_BITS),
        unit="fraction of the output bits", rel_tol=0.01,
        hint="the new output is uniform over the 2^n - 1 blocks other than the old one: average the "
             "number of differing bits over those.",
        mistakes=(Mistake("1/2 is the limit for large blocks; the output cannot stay the same, which "
                          "excludes a block with 0 bits flipped.", value=lambda: 0.5),)),
    Exercise(
        id="pmf_one_bit", expected=lambda: float(rv.random_permutation_flip_pmf(PMF_BITS)[1]),
        unit="probability", rel_tol=0.005,
        hint="count the blocks one bit away from the old output, out of all the blocks it can become.",
        mistakes=(Mistake("a permutation never maps two inputs to one output: divide by 2^n - 1, not 2^n.",
                          value=lambda: PMF_BITS / 2 ** PMF_BITS),)),
    Exercise(
        id="present_ddt_prob", expected=lambda: _ddt_max(PRESENT_SBOX) / 16,
        unit="probability", rel_tol=0.01,
        hint="build the difference distribution table with rv.difference_table and take its largest "
             "entry outside the row a = 0, divided by 16.",
        mistakes=(Mistake("that is a count of inputs; divide by the 16 inputs to get a probability.", factor=16),
                  Mistake("row a = 0 is trivial (no difference in, none out): leave it out.", value=lambda: 1.0))),
    Exercise(
        id="feistel_plaintext",
        expected=lambda: float(rv.feistel_decrypt(CIPHERTEXT, **FEISTEL)),
        unit="integer block", rel_tol=1e-9,
        hint="rv.feistel_decrypt with the same key, rounds and width; the subkeys run in reverse order.",
        mistakes=(Mistake("that encrypts the block again; decryption runs the rounds backwards.",
                          value=lambda: float(rv.feistel_encrypt(CIPHERTEXT, **FEISTEL))),)),
    Exercise(
        id="block_gb", expected=lambda: _act(BIG, BIG_TOKENS, "block"),
        unit="GB (1e9 bytes)", rel_tol=0.01,
        hint="each layer keeps its input: tokens x d_model x n_layers x 2 bytes.",
        mistakes=(Mistake(NO_BYTES, factor=0.5),
                  Mistake("that stores every intermediate; block rematerialisation keeps only each "
                          "layer's input.", value=lambda: _act(BIG, BIG_TOKENS, "full")))),
    Exercise(
        id="peak_ratio", expected=lambda: _peak(BIG, BIG_TOKENS, "block") / _peak(BIG, BIG_TOKENS, "reversible"),
        unit="ratio", rel_tol=0.02,
        hint="at the peak both policies also hold the running layer's intermediates (34 bytes per token "
             "per d_model), the head's input (one layer-sized array) and the FP32 logits (tokens x vocab x 4); "
             "reversible layers add four layer-sized inversion buffers to their two kept arrays.",
        mistakes=(Mistake("that is the ratio of what is kept between layers; the peak adds the running layer "
                          "and the logits to both.",
                          value=lambda: _act(BIG, BIG_TOKENS, "block") / _act(BIG, BIG_TOKENS, "reversible")),
                  Mistake("the logits are held in FP32 here, 4 bytes each.",
                          value=lambda: (_peak(BIG, BIG_TOKENS, "block", logit_bytes=2)
                                         / _peak(BIG, BIG_TOKENS, "reversible", logit_bytes=2))),
                  Mistake("the head's logits, tokens x vocabulary, are held under every policy: add them to both.",
                          value=lambda: ((_peak(BIG, BIG_TOKENS, "block") - _logits_gb())
                                         / (_peak(BIG, BIG_TOKENS, "reversible") - _logits_gb()))),
                  Mistake("inverting a coupling needs four more layer-sized buffers (x1, x2, dy1, dy2).",
                          value=lambda: (_peak(BIG, BIG_TOKENS, "block")
                                         / (_peak(BIG, BIG_TOKENS, "reversible") - _inversion_gb()))))),
    Exercise(
        id="gpt3_full_gb", expected=lambda: _act(GPT3, GPT3_TOKENS, "full", seq_len=GPT3_SEQ),
        unit="GB (1e9 bytes)", rel_tol=0.02,
        hint="per layer 34 s b h + 5 a s^2 b bytes (Korthikanti et al.), with the attention scores stored.",
        mistakes=(Mistake("the attention scores are stored here (no flash attention): add 5 a s^2 b per layer.",
                          value=lambda: _act(GPT3, GPT3_TOKENS, "full")),
                  Mistake(NO_BYTES, value=lambda: _act(GPT3, GPT3_TOKENS, "full", seq_len=GPT3_SEQ) / 2))),
    Exercise(
        id="deduced_tokens",
        expected=lambda: REPORTED_FLOPS / (6 * models.get(BIG).total_params),
        unit="tokens", rel_tol=0.02,
        hint="the reported compute is the model FLOPs 6 N D; solve for D.",
        mistakes=(Mistake("recomputation is hardware work, not model FLOPs: the report counts 6ND.",
                          factor=0.75),
                  Mistake("a training step costs 6 N D (forward 2, backward 4), not 2 N D.", factor=3))),
    Exercise(
        id="selective_overhead", expected=lambda: rv.selective_recompute_overhead(SMALL, SMALL_SEQ),
        unit="fraction of the step's FLOPs", rel_tol=0.01,
        hint="the recompute is one forward of the attention core: per token and layer, 4 n_heads d_head FLOPs "
             "per attended token, over seq_len / 2 tokens on average (causal). The step costs three forwards "
             "of the weights (2N) and of that attention.",
        mistakes=(Mistake("that is full recomputation, one whole forward; selective recomputes only the "
                          "attention scores and their weighted sum.", value=lambda: 1 / 3),
                  Mistake("causal attention skips the masked half: a token attends to seq_len / 2 tokens "
                          "on average.",
                          value=lambda: rv.selective_recompute_overhead(SMALL, SMALL_SEQ, causal=False)),
                  Mistake("the step also pays for attention, forward and backward: count it in the "
                          "denominator, 3 (2N + attention) per token.",
                          value=lambda: _attention_vs_weights(SMALL, SMALL_SEQ)))),
    Exercise(
        id="linear_rounds", expected=_linear_rounds,
        unit="rounds (a whole number)", rel_tol=0.05,
        hint="on the left panel follow the linear round's curve until it first rises above the level.",
        mistakes=(Mistake("at that round the linear cipher is at one half; the level asked for is higher.",
                          value=lambda: _linear_rounds() - 1),)),
)
