"""Chapter 7: ciphers and reversible networks.

Four pieces, in the order the chapter teaches them:

* Mixing. A toy Feistel cipher over unsigned integers (vectorised: every function takes NumPy
  arrays of blocks, uint64 arithmetic masked to ``width`` bits), its avalanche (one input bit
  flipped, the fraction of output bits that flip) against the closed form for a random
  permutation, and the sensitivity of a small residual network layer by layer.
* Differences. The difference distribution table of an S-box and a greedy characteristic through
  a small substitution-permutation network: differential cryptanalysis as a discrete derivative.
* Invertibility. ``Coupling(f, g)``, the RevNet coupling, is invertible for any ``f`` and ``g``,
  as a Feistel round is for any round function; ``round_trip_error`` measures what finite
  precision does to the inverse over depth.
* Memory. Activation bytes kept for the backward pass under three policies (store everything,
  keep each layer's input and recompute the rest, reversible layers), the FLOPs that recomputation
  adds to 6ND, the peak (the running layer, inversion and gradient buffers, head and logits on top),
  and the time to keep a tensor against the time to recompute it.
"""
import math
from collections.abc import Callable

import numpy as np
import sympy as sp

from .catalog import models
from .catalog.models import ATTENTION_FLOPS, TRAINING_FLOPS
from .errors import ChalkError, lookup, non_negative, positive, positive_int
from .lazy import Lazy
from .notation import (D, L, N_act, b_act, b_logit, d_ff, d_head, d_model, n_kv, n_bits, n_heads, n_layers,
                       n_tok, n_vocab)

# Simplified and lambdified forms are built on first use (``chalk.lazy``), so that importing the
# module does not pay for them.
_derived = Lazy(__name__)

# --- activation memory: formulas ---------------------------------------------------------------
KEPT_PER_TOKEN = 16 * d_model * b_act + 2 * d_model
"""Bytes one token keeps in one layer when every intermediate is stored (Korthikanti et al. 2022,
arXiv 2205.05198, §4.1, for a GPT layer with a 4 d_model MLP and dropout): 16 d_model activation
elements (layer-norm inputs 2, QKV input 1, Q K V 3, attention output 1, MLP input 1, GeLU input
4, GeLU output 4) plus two dropout masks of one byte per element. With b_act = 2 this is the
paper's 34 d_model."""

KEPT_PER_TOKEN_GATED = (6 * d_model + 2 * n_kv * d_head + 4 * d_ff) * b_act
"""The same count for a Llama-style layer (grouped-query attention, SwiGLU MLP, no dropout): the
two norm inputs, the QKV input, Q, the attention output and the MLP input (6 d_model), K and V
(n_kv d_head each), and the gate and up projections, the SiLU output and their product (d_ff each).
For a GPT layer (n_kv d_head = d_model, GeLU input and output in place of the four d_ff arrays,
4 d_model each) the same list gives Korthikanti's 16 elements."""

KEPT_PER_SCORE = 2 * b_act + 1
"""Bytes per attention score a layer keeps when it stores the score matrices: the softmax output,
its dropout mask (1 byte) and the dropped-out probabilities. With b_act = 2 this is the paper's 5."""

SCORE_ELEMENTS = n_tok * n_heads * L
"""Attention scores of one layer: each of n_tok tokens against the L tokens of its sequence, per
head. Memory-efficient (flash) attention recomputes them instead and keeps none."""

KEPT_PER_TOKEN_GATED_FUSED = KEPT_PER_TOKEN_GATED - d_ff * b_act
"""The gated count when a fused SwiGLU kernel recomputes the SiLU output from the gate in the backward
instead of keeping it (one d_ff array fewer). For Llama 3 70B this is 33.5 bytes per token per unit
of d_model in BF16, close to the GPT layer's 34."""


def _memory_forms(per_token):
    """(kept, transient, peak) bytes by policy for a layer that keeps ``per_token`` bytes per token.

    Every policy holds, while one layer's backward runs, the gradient arriving at its output and the
    gradient it sends to its input, one array of n_tok x d_model per residual stream: one stream for
    a plain stack, two (y1 and y2) for reversible couplings.
    """
    layer = n_tok * per_token + SCORE_ELEMENTS * KEPT_PER_SCORE
    stream = n_tok * d_model * b_act
    kept = {"full": n_layers * layer,
            # Only each layer's input survives the forward pass; the backward recomputes the rest one
            # layer at a time.
            "block": n_layers * stream,
            # Only the last layer's output pair (y1, y2) survives, each n_tok x d_model as in the
            # Reformer's reversible transformer; every earlier input is recovered by inversion.
            "reversible": 2 * stream}
    gradients = {"full": 2 * stream, "block": 2 * stream, "reversible": 4 * stream}
    transient = {"full": gradients["full"],
                 "block": layer + gradients["block"],
                 # The running layer rebuilt, the recovered inputs (x1, x2) and the gradients of both streams.
                 "reversible": layer + 2 * stream + gradients["reversible"]}
    peak = {p: kept[p] + transient[p] + stream + LOGIT_BYTES for p in kept}
    return kept, transient, peak


# b_logit: 4 bytes when the loss is computed in FP32, as is usual for the softmax over a large
# vocabulary; 2 if the logits stay in BF16; 0 for a fused loss that never materialises them.
LOGIT_BYTES = n_tok * n_vocab * b_logit
"""The output head's logits, n_tok x n_vocab: held from the forward pass until the loss's backward."""

ACTIVATION_BYTES, TRANSIENT_BYTES, PEAK_BYTES = _memory_forms(KEPT_PER_TOKEN)
"""For a GPT layer (``KEPT_PER_TOKEN``). ACTIVATION_BYTES: bytes kept BETWEEN layers for the backward
pass. TRANSIENT_BYTES: bytes that exist only while one layer's backward runs (that layer rebuilt in
full, the recovered inputs of a coupling, the gradient buffers). PEAK_BYTES: both, plus the layers
no policy makes reversible: the head's input (n_tok x d_model) and its logits. Weights, their
gradients and the optimizer state come on top. ``activation_bytes`` takes another per-token count."""
POLICIES = tuple(ACTIVATION_BYTES)

FORWARD_FLOPS = TRAINING_FLOPS / 3
"""One forward pass over D tokens, 2 N D: the forward is 2 of the 6 in 6ND, the backward the other 4."""
RECOMPUTE_FLOPS = {"full": sp.Integer(0), "block": FORWARD_FLOPS, "reversible": FORWARD_FLOPS}
"""Extra FLOPs of a training run: "block" recomputes every layer from its input, "reversible"
recomputes every layer's input by inversion and its intermediates with it; one forward either way.

Two caveats. For "reversible" one forward holds only if the inversion's evaluation of F and G is
kept and reused for that layer's backward; a naive implementation inverts, then runs F and G
again with gradients, about two forwards (10ND). And 2ND counts the weight matmuls only: the
recompute also reruns attention, whose FLOPs grow with context and which 6ND leaves out
(``selective_recompute_overhead`` counts them)."""
TRAINING_FLOPS_BY_POLICY = {p: TRAINING_FLOPS + extra for p, extra in RECOMPUTE_FLOPS.items()}
"""6ND plus recomputation: 8ND with block rematerialisation or reversible layers (see the caveats
of ``RECOMPUTE_FLOPS``)."""


@_derived
def _RECOMPUTE_OVERHEAD():
    """Extra FLOPs over a plain 6ND step: 0 or 1/3."""
    return {p: sp.simplify(extra / TRAINING_FLOPS) for p, extra in RECOMPUTE_FLOPS.items()}


ATTENTION_FORWARD_PER_TOKEN = n_layers * ATTENTION_FLOPS["gqa"] * L
"""Forward FLOPs of one token's attention against L tokens in every layer: scores q.k and the
weighted sum of values (``models.ATTENTION_FLOPS``). A causal sequence of length L averages L/2
attended tokens when masked blocks are skipped (flash attention), L when they are computed."""
_STEP = 3 * (2 * N_act + ATTENTION_FORWARD_PER_TOKEN)
"""FLOPs per token of a training step that counts attention: three forwards of the weights and of
the attention core (the backward costs two)."""
SELECTIVE_RECOMPUTE_OVERHEAD = ATTENTION_FORWARD_PER_TOKEN / _STEP
"""Selective recomputation (Korthikanti et al. 2022, §5), the scheme from before fused attention: keep
every layer's activations except the attention scores and recompute those in the backward. Extra
FLOPs: one forward of the attention core. A few per cent at 2k-8k context."""
SCORE_RECOMPUTE_PER_TOKEN = ATTENTION_FORWARD_PER_TOKEN / 2
"""What flash attention's backward recomputes (Dao 2023, FlashAttention-2, Algorithm 2): the scores
q.k and their softmax, not the weighted sum of values, so d_head of the core's 2 d_head per attended
token: half of one attention forward."""
STEP_RECOMPUTE_PER_TOKEN = {
    # Nothing stored is recomputed but the scores, which flash attention never stores.
    "full": SCORE_RECOMPUTE_PER_TOKEN,
    # One forward of the weights and the attention core, then the backward's score recompute.
    "block": 2 * N_act + ATTENTION_FORWARD_PER_TOKEN + SCORE_RECOMPUTE_PER_TOKEN,
    # The same when the inversion's evaluation of F and G is reused for the layer's backward.
    "reversible": 2 * N_act + ATTENTION_FORWARD_PER_TOKEN + SCORE_RECOMPUTE_PER_TOKEN,
}
"""Extra FLOPs per token of a step with flash attention, by policy, attention counted."""
STEP_OVERHEAD = {p: extra / _STEP for p, extra in STEP_RECOMPUTE_PER_TOKEN.items()}
"""``STEP_RECOMPUTE_PER_TOKEN`` over the step: what the "training FLOPs" of each policy really add."""

_ACT_ARGS = (n_tok, d_model, n_layers, b_act, n_heads, L)
_PER_TOKEN = sp.Dummy("kept_per_width")
"""Bytes one stored layer keeps per token per unit of d_model: 34 for a GPT layer in BF16 (the default),
``gated_kept_per_token`` for a SwiGLU one. A dummy: the lambdified forms take it as an argument."""


@_derived
def _numeric():
    """Vectorised NumPy versions of the memory and FLOP formulas: ``reversible_numeric``'s, written
    from ``numeric_forms``."""
    from . import reversible_numeric
    return reversible_numeric.numeric


def numeric_forms() -> dict:
    """The expressions ``numeric`` evaluates, each with its arguments in order, under the one name
    ``numeric`` of ``reversible_numeric.py``. A function, not a table: building the memory forms
    is what the generated file spares a kernel."""
    kept, _, peak = _memory_forms(_PER_TOKEN * d_model)
    args = _ACT_ARGS + (_PER_TOKEN,)
    out = {f"activation_bytes_{p}": (args, e) for p, e in kept.items()}
    out |= {f"activation_peak_{p}": (args + (n_vocab, b_logit), e) for p, e in peak.items()}
    out["gpt_per_width"] = ((b_act,), sp.cancel(KEPT_PER_TOKEN / d_model))
    attention = (N_act, n_layers, n_heads, d_head, L)
    out["selective_overhead"] = (attention, SELECTIVE_RECOMPUTE_OVERHEAD)
    out |= {f"step_overhead_{p}": (attention, e) for p, e in STEP_OVERHEAD.items()}
    out["score_elements"] = ((n_tok, n_heads, L), SCORE_ELEMENTS)
    out |= {f"training_flops_{p}": ((N_act, D), e) for p, e in TRAINING_FLOPS_BY_POLICY.items()}
    return {"numeric": out}


def numeric_source() -> str:
    """The text of ``reversible_numeric.py``; keeping the file equal to it is a test."""
    from .catalog.model_formulas import generated_source
    return generated_source("chalk.reversible", numeric_forms(), _names(),
                            "The formulas ``chalk.reversible`` evaluates as numbers "
                            "(``chalk.reversible.numeric_forms``), as plain Python, so that a "
                            "kernel evaluates them without lambdifying.")


def _names() -> dict:
    """Each symbol of this module by its name here, for the generated file's arguments."""
    from .catalog.model_formulas import symbol_names
    return symbol_names(globals()) | {_PER_TOKEN: "kept_per_width"}


__getattr__, __dir__ = _derived.module_getattr, _derived.module_dir

# --- ciphers: closed form --------------------------------------------------------------------------
RANDOM_PERMUTATION_FLIP = 2 ** (n_bits - 1) / (2 ** n_bits - 1)
"""Expected fraction of output bits that flip when one input bit flips, for a uniformly random
permutation of n_bits-bit blocks: the new output is uniform over the 2^n - 1 other blocks, and
of those, n 2^(n-1) / (2^n - 1) bits differ on average. It tends to 1/2 from above."""


RANDOM_PERMUTATION_FLIP_CORRELATION = -1 / (2 ** n_bits - 2)
"""Correlation between the flips of two output bits when one input bit flips, for a random permutation
of n_bits-bit blocks: the output difference is uniform over the 2^n - 1 nonzero differences, so a
bit flips with probability 2^(n-1) / (2^n - 1) and two together with 2^(n-2) / (2^n - 1). Not zero:
even the ideal reference misses the bit independence criterion, by a term of order 2^-n."""


def random_permutation_flip_pmf(bits: int) -> np.ndarray:
    """P(k output bits flip), k = 0..bits, for a random permutation: C(n, k) / (2^n - 1), k >= 1."""
    bits = positive_int("bits", bits)
    counts = np.array([math.comb(bits, k) for k in range(bits + 1)], dtype=float)
    counts[0] = 0.0
    return counts / (2.0 ** bits - 1)


# --- bit arithmetic ------------------------------------------------------------------------------
_U64 = np.uint64
_MAX_WIDTH = 64


def _check_width(width) -> int:
    width = positive_int("width", width)
    if width % 2 or width > _MAX_WIDTH:
        raise ChalkError(f"width must be an even number of bits from 2 to {_MAX_WIDTH}, got {width!r}")
    return width


def _mask(bits: int) -> np.uint64:
    return _U64((1 << bits) - 1)


def _as_blocks(name: str, value, bits: int) -> np.ndarray:
    """``value`` as a uint64 array, checked to hold whole numbers in [0, 2^bits)."""
    arr = np.asarray(value)
    if arr.dtype.kind == "u":
        arr = arr.astype(_U64)
    elif arr.dtype.kind in "ib":
        if np.any(arr < 0):
            raise ChalkError(f"{name} must be between 0 and 2^{bits} - 1, got {value!r}")
        arr = arr.astype(_U64)
    elif arr.dtype == object and all(isinstance(v, int) and 0 <= v < 2 ** 64 for v in arr.flat):
        arr = arr.astype(_U64)
    else:
        raise ChalkError(f"{name} must be unsigned whole numbers (a Python int or a NumPy integer "
                         f"array), got {value!r}")
    if bits < _MAX_WIDTH and np.any(arr > _mask(bits)):
        raise ChalkError(f"{name} must be between 0 and 2^{bits} - 1 (width {bits} bits), got {value!r}")
    return arr


def _rotl(x: np.ndarray, shift: int, bits: int) -> np.ndarray:
    shift %= bits
    if shift == 0:
        return x
    return ((x << _U64(shift)) | (x >> _U64(bits - shift))) & _mask(bits)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """A fixed 64-bit mixer (Steele et al.'s SplitMix64 finaliser): spreads a key into round keys."""
    x = (x + _U64(0x9E3779B97F4A7C15)) & _mask(64)
    x = ((x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9))
    x = ((x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB))
    return x ^ (x >> _U64(31))


def popcount(x) -> np.ndarray:
    """Number of set bits of each element of a uint64 array."""
    return np.bitwise_count(np.asarray(x, dtype=_U64)).astype(np.int64)


# --- round functions -----------------------------------------------------------------------------
HEYS_SBOX = (0xE, 0x4, 0xD, 0x1, 0x2, 0xF, 0xB, 0x8, 0x3, 0xA, 0x6, 0xC, 0x5, 0x9, 0x0, 0x7)
"""The 4-bit S-box of Heys' tutorial cipher (H. M. Heys, "A Tutorial on Linear and Differential
Cryptanalysis", Cryptologia 26(3), 2002, Table 1; the first row of DES's S1)."""
HEYS_PBOX = (0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)
"""Heys' bit permutation (Table 2): input bit i goes to output bit ``HEYS_PBOX[i]``, bits numbered
from 0 at the most significant end of the 16-bit block."""


def _middle_square(r, k, half):
    # Keeping only the middle bits of the product throws the rest away, so F is many-to-one (not
    # invertible), and those bits depend nonlinearly on every bit of t.
    t = r ^ k
    return ((t * (t | _U64(1))) >> _U64(half // 2)) & _mask(half)


def _sbox_layer(r, k, half):
    table = np.array(HEYS_SBOX, dtype=_U64)
    t, out = r ^ k, np.zeros_like(r)
    for shift in range(0, half, 4):
        out |= table[((t >> _U64(shift)) & _U64(0xF)).astype(np.intp)] << _U64(shift)
    return out


def _linear(r, k, half):
    return r ^ _rotl(r, 1, half) ^ k


ROUND_FUNCTIONS: dict[str, Callable] = {
    "middle-square": _middle_square,
    "sbox": _sbox_layer,
    "linear": _linear,
}
"""Round functions F(r, k, half_width) on uint64 arrays of ``half_width``-bit halves.

* "middle-square": the middle bits of t (t | 1), t = r XOR k; nonlinear and not invertible.
* "sbox": Heys' S-box on each 4-bit nibble of r XOR k (half width a multiple of 4); nonlinear but
  with no spreading between nibbles, and the round function of the differential worked example.
* "linear": r XOR rotl(r, 1) XOR k; affine over GF(2), so the whole cipher is: each input bit
  flips a fixed set of output bits whatever the block and key (an avalanche matrix of only 0s and
  1s), and every difference propagates with probability 1.
"""


def _round_function(round_function, half: int) -> Callable:
    if callable(round_function):
        return round_function
    if not isinstance(round_function, str):
        raise ChalkError(f"round_function must be a name or a callable, got {round_function!r}")
    fn = lookup("round function", round_function, ROUND_FUNCTIONS, param="round_function")
    if fn is _sbox_layer and half % 4:
        raise ChalkError(f"round_function 'sbox' needs width a multiple of 8 (4-bit nibbles per half), "
                         f"got width {2 * half}")
    return fn


def round_keys(key, rounds: int, half: int) -> list[np.ndarray]:
    """The ``rounds`` subkeys of ``half`` bits each derived from ``key`` (arrays broadcast)."""
    with np.errstate(over="ignore"):
        return [_splitmix64(key ^ _U64(i * 0x632BE59BD9B4E019 & (2 ** 64 - 1))) & _mask(half)
                for i in range(rounds)]


def _feistel(block, key, rounds, width, round_function, decrypt: bool):
    width = _check_width(width)
    rounds = positive_int("rounds", rounds)
    half = width // 2
    fn = _round_function(round_function, half)
    x = _as_blocks("block", block, width)
    k = _as_blocks("key", key, _MAX_WIDTH)
    left, right = x >> _U64(half), x & _mask(half)
    keys = round_keys(k, rounds, half)
    with np.errstate(over="ignore"):
        if decrypt:
            for sub in reversed(keys):
                left, right = right ^ (fn(left, sub, half) & _mask(half)), left
        else:
            for sub in keys:
                left, right = right, left ^ (fn(right, sub, half) & _mask(half))
    out = (left << _U64(half)) | right
    return int(out) if np.ndim(out) == 0 and isinstance(block, int) else out


def feistel_encrypt(block, key, rounds: int = 8, width: int = 32, round_function="middle-square"):
    """Encrypt ``width``-bit blocks: ``rounds`` rounds of (L, R) -> (R, L XOR F(R, k_i)).

    ``block`` and ``key`` are unsigned integers or NumPy integer arrays (broadcast together); a
    Python int block gives a Python int back. ``round_function`` is a name in ``ROUND_FUNCTIONS``
    or any callable F(r, k, half_width) on uint64 arrays; it need not be invertible.
    """
    return _feistel(block, key, rounds, width, round_function, decrypt=False)


def feistel_decrypt(block, key, rounds: int = 8, width: int = 32, round_function="middle-square"):
    """Invert ``feistel_encrypt``: the same rounds with the subkeys in reverse order, F never inverted."""
    return _feistel(block, key, rounds, width, round_function, decrypt=True)


# --- avalanche -------------------------------------------------------------------------------------
def _random_blocks(rng, size: int) -> np.ndarray:
    return rng.integers(0, np.iinfo(_U64).max, size=size, dtype=_U64, endpoint=True)


def _flips(function, n_bits: int, samples: int, seed: int, bit=None):
    """(input bit flipped, output XOR) over ``samples`` random inputs; ``bit`` fixed or random."""
    n_bits = positive_int("n_bits", n_bits)
    if n_bits > _MAX_WIDTH:
        raise ChalkError(f"n_bits must be between 1 and {_MAX_WIDTH}, got {n_bits!r}")
    samples = positive_int("samples", samples)
    rng = np.random.default_rng(seed)
    x = _random_blocks(rng, samples) & _mask(n_bits)
    j = rng.integers(0, n_bits, size=samples) if bit is None else np.full(samples, bit)
    y0 = np.asarray(function(x), dtype=_U64)
    y1 = np.asarray(function(x ^ (_U64(1) << j.astype(_U64))), dtype=_U64)
    if y0.shape != x.shape:
        raise ChalkError(f"function must map an array of {samples} blocks to {samples} blocks, "
                         f"got shape {y0.shape}")
    return j, y0 ^ y1


def avalanche(function: Callable, n_bits: int, samples: int = 1000, seed: int = 0) -> float:
    """Mean fraction of the ``n_bits`` output bits that flip when one random input bit flips.

    ``function`` maps a uint64 array of n_bits-bit blocks to an array of the same shape. A random
    permutation scores ``RANDOM_PERMUTATION_FLIP`` (about 1/2).
    """
    _, diff = _flips(function, n_bits, samples, seed)
    return float(popcount(diff).mean() / n_bits)


def avalanche_matrix(function: Callable, n_bits: int, samples: int = 1000, seed: int = 0) -> np.ndarray:
    """P(output bit j flips | input bit i flipped), an n_bits x n_bits array, ``samples`` inputs per row.

    Bit 0 is the least significant. An ideal cipher has every entry near 1/2 (the strict avalanche
    criterion); its mean is what ``avalanche`` estimates.
    """
    bits = np.arange(positive_int("n_bits", n_bits), dtype=_U64)
    rows = []
    for i in range(n_bits):
        _, diff = _flips(function, n_bits, samples, seed + i, bit=i)
        rows.append(((diff[:, None] >> bits) & _U64(1)).mean(axis=0))
    return np.array(rows)


SAC_SIGMAS = 5
"""A cell of a measured flip matrix fails the strict avalanche criterion when it lies more than this
many standard errors from 1/2: with 256 cells, a 5-sigma excursion by chance alone is unlikely
(about 1.5e-4 for the whole matrix)."""


def strict_avalanche(matrix, samples: int) -> dict[str, float]:
    """How far a measured flip matrix (``avalanche_matrix``, ``samples`` inputs per row) is from the
    strict avalanche criterion, every cell 1/2.

    Returns the worst cell's |P - 1/2|, the number of cells more than ``SAC_SIGMAS`` standard errors
    (sqrt(1/4 / samples)) from 1/2, and the share of cells exactly 0 or 1 (bits that never or always
    flip: a fixed pattern, not a probability). The plain avalanche criterion asks only that the
    matrix's mean be near 1/2; bit independence, that output bits flip independently of each
    other, is a statement about pairs of columns that this matrix cannot test.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.size == 0 or np.any((m < 0) | (m > 1)):
        raise ChalkError(f"matrix must be a 2-D array of flip probabilities in [0, 1], got shape {m.shape}")
    samples = positive_int("samples", samples)
    deviation = np.abs(m - 0.5)
    sigma = 0.5 / math.sqrt(samples)
    return {"worst": float(deviation.max()), "beyond": int(np.sum(deviation > SAC_SIGMAS * sigma)),
            "binary": float(np.mean((m == 0) | (m == 1))), "sigma": sigma}


def feistel_distinguisher(rounds: int, width: int = 32, round_function="middle-square", samples: int = 10_000,
                          seed: int = 0) -> float:
    """Share of chosen-plaintext pairs that give a Feistel cipher away: (L, R) and (L', R), same right
    half and key, whose ciphertexts' left halves differ by exactly L XOR L'.

    After two rounds the left half is L XOR F_1(R), so every pair does (share 1); a random permutation
    does so with probability about 2^-(width/2). From three rounds with random round functions no
    attack that only encrypts does much better (Luby and Rackoff 1988), which this test illustrates
    and does not prove.
    """
    width = _check_width(width)
    samples = positive_int("samples", samples)
    half = width // 2
    rng = np.random.default_rng(seed)
    key = _random_blocks(rng, samples)
    left, left2, right = (_random_blocks(rng, samples) & _mask(half) for _ in range(3))
    same = left == left2
    left2 = np.where(same, left ^ _U64(1), left2)  # two distinct plaintexts
    y0 = feistel_encrypt((left << _U64(half)) | right, key, rounds, width, round_function)
    y1 = feistel_encrypt((left2 << _U64(half)) | right, key, rounds, width, round_function)
    return float(np.mean(((y0 ^ y1) >> _U64(half)) == (left ^ left2)))


def feistel_avalanche_by_round(rounds: int, width: int = 32, round_function="middle-square",
                               samples: int = 1000, seed: int = 0, key: int = 0x0123456789ABCDEF) -> np.ndarray:
    """``avalanche`` of the Feistel cipher after 1, 2, ..., ``rounds`` rounds."""
    rounds = positive_int("rounds", rounds)
    return np.array([avalanche(lambda x, r=r: feistel_encrypt(x, key, r, width, round_function),
                               width, samples, seed) for r in range(1, rounds + 1)])


# --- differences -----------------------------------------------------------------------------------
def _check_sbox(sbox) -> np.ndarray:
    table = np.asarray(sbox)
    size = table.size
    if table.ndim != 1 or size < 2 or size & (size - 1) or table.dtype.kind not in "iu":
        raise ChalkError(f"sbox must be a 1-D integer table whose length is a power of 2, got {sbox!r}")
    if np.any(table < 0):
        raise ChalkError("sbox entries must be >= 0")
    return table.astype(np.int64)


def difference_table(sbox) -> np.ndarray:
    """Difference distribution table: entry [a, b] counts inputs x with S(x) XOR S(x XOR a) = b.

    The discrete derivative of the S-box: divided by the table length it is the probability that
    input difference a becomes output difference b.
    """
    table = _check_sbox(sbox)
    size, width = table.size, 1 << int(table.max()).bit_length()
    x = np.arange(size)
    out = np.zeros((size, width), dtype=np.int64)
    for a in range(size):
        np.add.at(out[a], table[x] ^ table[x ^ a], 1)
    return out


def _permute_bits(value: int, pbox, bits: int) -> int:
    out = 0
    for i, target in enumerate(pbox):
        if value >> (bits - 1 - i) & 1:
            out |= 1 << (bits - 1 - target)
    return out


def greedy_characteristic(input_difference: int, rounds: int, sbox=HEYS_SBOX, pbox=HEYS_PBOX):
    """Follow a difference through ``rounds`` rounds of an S-box layer then a bit permutation.

    Greedy, S-box by S-box: at each active S-box the most probable output difference is taken (the
    first on ties), as in Heys' worked characteristic, so it is one trail, not necessarily the best.
    Returns (probability, differences): the product of the S-box probabilities, which is the
    trail's probability only under independent round keys, and the block difference entering each
    round and after the last. The differential (same input and output difference, any trail in
    between) sums over all trails and can be larger: ``spn_differential`` measures it.
    """
    table = _check_sbox(sbox)
    ddt = difference_table(table)
    box_bits = int(table.size).bit_length() - 1
    bits = len(pbox)
    if sorted(pbox) != list(range(bits)) or bits % box_bits:
        raise ChalkError(f"pbox must be a permutation of 0..n-1 with n a multiple of {box_bits}, got {pbox!r}")
    rounds = positive_int("rounds", rounds)
    diff = _as_blocks("input_difference", input_difference, bits)
    diff = int(diff)
    probability, trail = 1.0, [diff]
    for _ in range(rounds):
        out = 0
        for shift in range(0, bits, box_bits):
            a = diff >> shift & (table.size - 1)
            if a:
                b = int(np.argmax(ddt[a]))
                probability *= ddt[a, b] / table.size
                out |= b << shift
        diff = _permute_bits(out, pbox, bits)
        trail.append(diff)
    return probability, trail


def _spn_rounds(x, keys, sbox, pbox, bits):
    """Full rounds of an SPN: key mixing, the S-box on every nibble, the bit permutation."""
    table = np.asarray(sbox, dtype=_U64)
    box_bits = int(table.size).bit_length() - 1
    for k in keys:
        t, x = x ^ k, np.zeros_like(x)
        for shift in range(0, bits, box_bits):
            x |= table[((t >> _U64(shift)) & _U64(table.size - 1)).astype(np.intp)] << _U64(shift)
        t, x = x, np.zeros_like(x)
        for i, target in enumerate(pbox):
            x |= ((t >> _U64(bits - 1 - i)) & _U64(1)) << _U64(bits - 1 - target)
    return x


def spn_differential(input_difference: int, output_difference: int, rounds: int = 3, samples: int = 200_000,
                     seed: int = 0, sbox=HEYS_SBOX, pbox=HEYS_PBOX) -> float:
    """Measured P(difference after ``rounds`` full rounds | input difference) in Heys' 16-bit SPN.

    Each sample draws a plaintext and independent random round keys, encrypts the pair through
    ``rounds`` rounds of key mixing, S-boxes and bit permutation, and compares the XOR of the two
    results. That is the differential, summed over every trail between the two differences; compare
    it with one trail's probability from ``greedy_characteristic``.
    """
    bits = len(pbox)
    _check_sbox(sbox)
    if sorted(pbox) != list(range(bits)):
        raise ChalkError(f"pbox must be a permutation of 0..n-1, got {pbox!r}")
    rounds = positive_int("rounds", rounds)
    samples = positive_int("samples", samples)
    d_in = _as_blocks("input_difference", input_difference, bits)
    d_out = _as_blocks("output_difference", output_difference, bits)
    rng = np.random.default_rng(seed)
    x = _random_blocks(rng, samples) & _mask(bits)
    keys = [_random_blocks(rng, samples) & _mask(bits) for _ in range(rounds)]
    diff = _spn_rounds(x, keys, sbox, pbox, bits) ^ _spn_rounds(x ^ d_in, keys, sbox, pbox, bits)
    return float(np.mean(diff == d_out))


def feistel_differential(input_difference: int, output_difference: int, rounds: int, width: int = 8,
                         round_function="sbox", samples: int = 100_000, seed: int = 0) -> float:
    """Measured P(output difference | input difference) over random blocks and random keys."""
    width = _check_width(width)
    samples = positive_int("samples", samples)
    d_in = _as_blocks("input_difference", input_difference, width)
    d_out = _as_blocks("output_difference", output_difference, width)
    rng = np.random.default_rng(seed)
    x = _random_blocks(rng, samples) & _mask(width)
    key = _random_blocks(rng, samples)
    y0 = feistel_encrypt(x, key, rounds, width, round_function)
    y1 = feistel_encrypt(x ^ d_in, key, rounds, width, round_function)
    return float(np.mean((y0 ^ y1) == d_out))


# --- networks --------------------------------------------------------------------------------------
def mlp(width: int, hidden: int | None = None, scale: float = 1.0, seed: int = 0,
        dtype="float64") -> Callable[[np.ndarray], np.ndarray]:
    """A random two-layer perceptron x -> tanh(x W1) W2 on the last axis (width -> hidden -> width).

    Weights are normal with variance scale^2 / fan-in, so ``scale`` sets the gain of the block.
    Not invertible in general (hidden < width makes that certain): the F and G of a coupling.
    """
    width = positive_int("width", width)
    hidden = positive_int("hidden", width if hidden is None else hidden)
    positive("scale", scale)
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise ChalkError(f"dtype must be a floating-point type (float16, float32, float64), got {dtype!r}")
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((width, hidden)) * scale / math.sqrt(width)).astype(dt)
    w2 = (rng.standard_normal((hidden, width)) * scale / math.sqrt(hidden)).astype(dt)
    return lambda x: np.tanh(x @ w1) @ w2


class Coupling:
    """The RevNet coupling (Gomez et al. 2017, arXiv 1707.04585, eqs. 6-7), invertible for any f, g.

    forward: y1 = x1 + f(x2), y2 = x2 + g(y1); inverse: x2 = y2 - g(y1), x1 = y1 - f(x2). Neither
    f nor g is ever inverted, only evaluated again: the Feistel construction with + for XOR.
    """

    def __init__(self, f: Callable, g: Callable):
        for name, fn in (("f", f), ("g", g)):
            if not callable(fn):
                raise ChalkError(f"{name} must be a callable on NumPy arrays, got {fn!r}")
        self.f, self.g = f, g

    @staticmethod
    def _apply(name: str, fn: Callable, arg, like):
        out = np.asarray(fn(arg))
        if out.shape != np.shape(like):
            raise ChalkError(f"{name} must return an array shaped like its input {np.shape(like)}, "
                             f"got {out.shape}")
        return out

    def forward(self, x1, x2):
        y1 = x1 + self._apply("f", self.f, x2, x1)
        y2 = x2 + self._apply("g", self.g, y1, x2)
        return y1, y2

    def inverse(self, y1, y2):
        x2 = y2 - self._apply("g", self.g, y1, y2)
        x1 = y1 - self._apply("f", self.f, x2, y1)
        return x1, x2


def reversible_stack(depth: int, width: int, scale: float = 1.0, seed: int = 0, dtype="float64") -> list[Coupling]:
    """``depth`` couplings whose f and g are independent random ``mlp``s."""
    depth = positive_int("depth", depth)
    return [Coupling(mlp(width, scale=scale, seed=seed + 2 * i, dtype=dtype),
                     mlp(width, scale=scale, seed=seed + 2 * i + 1, dtype=dtype)) for i in range(depth)]


def round_trip_error(depth: int, width: int = 32, tokens: int = 16, scale: float = 1.0, seed: int = 0,
                     dtype="float32") -> np.ndarray:
    """Largest |x - inverse(forward(x))| / max|x| after 1, 2, ..., ``depth`` couplings, in ``dtype``.

    Exact in real arithmetic; in floating point each y1 = x1 + f(x2) rounds, and x1 = y1 - f(x2)
    cannot undo the rounding. The size is specific to this toy: the random, unnormalised couplings
    grow the activations with depth, and the inverse amplifies each rounding by the Lipschitz
    constants of f and g (Behrmann et al. 2021 on exploding inverses), so the error depends on
    ``scale`` and on normalisation as much as on depth.
    """
    stack = reversible_stack(depth, width, scale, seed, dtype)
    tokens = positive_int("tokens", tokens)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, tokens, width)).astype(dtype)
    states, errors = [(x[0], x[1])], []
    for coupling in stack:
        states.append(coupling.forward(*states[-1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for d in range(1, depth + 1):
            y1, y2 = states[d]
            for coupling in reversed(stack[:d]):
                y1, y2 = coupling.inverse(y1, y2)
            err = max(np.max(np.abs(y1.astype(float) - x[0])), np.max(np.abs(y2.astype(float) - x[1])))
            errors.append(err / np.max(np.abs(x)))
    return np.array(errors)


def residual_sensitivity(depth: int, width: int = 32, scale: float = 1.0, epsilon: float = 1e-6,
                         seed: int = 0, residual: bool = True) -> np.ndarray:
    """|h_l(x + d) - h_l(x)| / |d| for l = 0..depth, h_{l+1} = h_l + mlp_l(h_l), |d| = ``epsilon`` |x|.

    A finite-difference estimate of the Jacobian norm of an untrained network along one random
    direction, layer after layer; a cipher's answer to one flipped bit is half the block
    (``avalanche``). ``scale`` is the gain of the weights (variance scale^2 / fan-in). With
    ``residual=False`` the skip connections go: a plain tanh network, h_{l+1} = tanh(h_l W_l), which
    is chaotic (a small change grows layer after layer) at gains above 1 (Poole et al. 2016). It says
    nothing about the worst direction of a trained network.
    """
    depth = positive_int("depth", depth)
    width = positive_int("width", width)
    positive("scale", scale)
    positive("epsilon", epsilon)
    if residual:
        blocks = [mlp(width, scale=scale, seed=seed + i) for i in range(depth)]
        step = lambda h, block: h + block(h)  # noqa: E731
    else:
        blocks = [np.random.default_rng(seed + i).standard_normal((width, width)) * scale / math.sqrt(width)
                  for i in range(depth)]
        step = lambda h, w: np.tanh(h @ w)  # noqa: E731
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(width)
    d = rng.standard_normal(width)
    d *= epsilon * np.linalg.norm(x) / np.linalg.norm(d)
    a, b, ratios = x, x + d, [1.0]
    for block in blocks:
        a, b = step(a, block), step(b, block)
        ratios.append(np.linalg.norm(b - a) / np.linalg.norm(d))
    return np.array(ratios)


def sensitivity_sweep(scales, depth: int, residual: bool = True, seeds=range(10), width: int = 32) -> np.ndarray:
    """The output change over the input change after ``depth`` layers (``residual_sensitivity``'s last
    entry), one row per gain in ``scales``, one column per seed."""
    seeds = list(seeds)
    if not seeds:
        raise ChalkError("seeds must name at least one seed")
    return np.array([[residual_sensitivity(depth, width, s, seed=seed, residual=residual)[-1] for seed in seeds]
                     for s in np.atleast_1d(scales)])


# --- activation memory and FLOPs -------------------------------------------------------------------
def _policy(policy: str) -> str:
    if not isinstance(policy, str):
        raise ChalkError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    lookup("policy", policy, ACTIVATION_BYTES, param="policy")
    return policy


def activation_bytes(tokens, d_model, layers, policy: str = "block", bytes_per_element=2, *,
                     heads=0, seq_len=0, peak=False, vocab=0, logit_bytes=4, kept_per_width=None):
    """Bytes of activations kept for the backward pass (``ACTIVATION_BYTES``; arrays broadcast).

    "block": each layer's input, tokens x d_model x layers x bytes_per_element. "reversible": the
    last layer's output pair, 2 tokens x d_model x bytes_per_element at any depth. "full": every
    intermediate of a layer, ``kept_per_width`` bytes per token per unit of d_model (default a GPT
    layer as Korthikanti et al. 2022 count it, 34 in BF16; ``layer_kept_per_width`` gives a catalog
    model's); pass ``heads`` and ``seq_len`` to add the stored attention-score matrices (their
    5 a s / h), leave them 0 for memory-efficient attention that keeps no scores.

    These are the bytes kept between layers. ``peak=True`` gives the peak instead (``PEAK_BYTES``):
    it adds the running layer's intermediates, the inversion and gradient buffers, the head's input
    and the logits, tokens x ``vocab`` x ``logit_bytes`` (4: FP32; 0: a fused loss that never
    materialises them).
    """
    policy = _policy(policy)
    for name, value in (("tokens", tokens), ("d_model", d_model), ("layers", layers),
                        ("bytes_per_element", bytes_per_element)):
        positive(name, value)
    non_negative("heads", heads)
    non_negative("seq_len", seq_len)
    numeric = _numeric()
    if kept_per_width is None:
        kept_per_width = numeric["gpt_per_width"](np.asarray(bytes_per_element, dtype=float))
    positive("kept_per_width", kept_per_width)
    args = (tokens, d_model, layers, bytes_per_element, heads, seq_len, kept_per_width)
    if peak:
        positive("vocab", vocab)
        non_negative("logit_bytes", logit_bytes)
        args += (vocab, logit_bytes)
    kind = "peak" if peak else "bytes"
    out = numeric[f"activation_{kind}_{policy}"](*args) * np.ones(np.broadcast_shapes(*map(np.shape, args)))
    return float(out) if np.ndim(out) == 0 else out


def layer_kept_per_width(model: str, bytes_per_element=2, fused: bool = False) -> float:
    """Bytes one layer of a catalog model keeps per token per unit of d_model when it stores everything.

    A gated (SwiGLU) model gets ``gated_kept_per_token``; any other the GPT layer's ``KEPT_PER_TOKEN``.
    """
    m = models.get(model)
    if m.ffn_gated:
        return gated_kept_per_token(model, bytes_per_element, fused)
    positive("bytes_per_element", bytes_per_element)
    return float(_numeric()["gpt_per_width"](bytes_per_element))


def activation_memory(model: str, tokens, policy: str = "block", bytes_per_element=2, seq_len=0, *,
                      peak=False, logit_bytes=4):
    """``activation_bytes`` for a catalog model's n_layers, d_model, query heads, vocabulary and layer.

    The "full" count and the running layer at the peak use the model's own layer
    (``layer_kept_per_width``: 40.5 bytes per token per unit of width for Llama 3 70B, 34 for a GPT
    layer). ``seq_len`` > 0 adds stored attention scores; ``peak=True`` gives the peak.
    """
    m = models.get(model)
    return activation_bytes(tokens, m.d_model, m.n_layers, policy, bytes_per_element,
                            heads=m.n_heads if seq_len else 0, seq_len=seq_len,
                            peak=peak, vocab=m.vocab, logit_bytes=logit_bytes,
                            kept_per_width=layer_kept_per_width(model, bytes_per_element))


def gated_kept_per_token(model: str, bytes_per_element=2, fused: bool = False) -> float:
    """``KEPT_PER_TOKEN_GATED`` of a catalog model per unit of d_model: compare ``KEPT_PER_TOKEN``'s 34.

    ``fused``: ``KEPT_PER_TOKEN_GATED_FUSED``, the SiLU output recomputed rather than kept.
    """
    m = models.get(model)
    if not m.ffn_gated:
        raise ChalkError(f"model must have a gated (SwiGLU) MLP for this count, {model!r} has not; "
                         "use KEPT_PER_TOKEN for a GPT layer")
    positive("bytes_per_element", bytes_per_element)
    values = {d_model: m.d_model, n_kv: m.n_kv_heads, d_head: m.d_head, d_ff: m.d_ff, b_act: bytes_per_element}
    expr = KEPT_PER_TOKEN_GATED_FUSED if fused else KEPT_PER_TOKEN_GATED
    return float(expr.subs(values)) / m.d_model


def _attention_shape(model: str, seq_len, causal: bool):
    m = models.get(model)
    positive("seq_len", seq_len)
    attended = np.asarray(seq_len, dtype=float) / (2 if causal else 1)
    return m.active_params, m.n_attention_layers, m.n_heads, m.d_head, attended


def selective_recompute_overhead(model: str, seq_len, causal: bool = True):
    """Extra FLOPs of selective recomputation over a training step, for a catalog model at ``seq_len``.

    ``SELECTIVE_RECOMPUTE_OVERHEAD`` with the model's active parameters and attention shape. With
    ``causal`` each token attends to seq_len / 2 tokens on average (masked blocks skipped), without
    it to all seq_len (the score matrix computed in full, as Korthikanti et al. count it).
    """
    out = _numeric()["selective_overhead"](*_attention_shape(model, seq_len, causal))
    return float(out) if np.ndim(out) == 0 else out


def step_overhead(model: str, policy: str, seq_len, causal: bool = True):
    """Extra FLOPs of ``policy`` over a training step with flash attention, attention counted
    (``STEP_OVERHEAD``): "full" pays flash attention's score recompute, "block" and "reversible" one
    forward of weights and attention on top of it."""
    policy = _policy(policy)
    out = _numeric()[f"step_overhead_{policy}"](*_attention_shape(model, seq_len, causal))
    return float(out) if np.ndim(out) == 0 else out


def recompute_overhead(policy: str) -> float:
    """Extra training FLOPs over a plain 6ND step: 0 for "full", 1/3 for "block" and "reversible"."""
    return float(_RECOMPUTE_OVERHEAD()[_policy(policy)])


def training_flops(params, tokens, policy: str = "full"):
    """6 N D plus the recomputation of ``policy`` (8 N D for "block" and "reversible")."""
    policy = _policy(policy)
    positive("params", params)
    positive("tokens", tokens)
    out = _numeric()[f"training_flops_{policy}"](params, tokens)
    return float(out) if np.ndim(out) == 0 else out


def store_or_recompute(model: str, chip: str) -> dict[str, dict[str, float]]:
    """Seconds per token to keep a tensor in HBM against recomputing it, for the KV cache and for
    training activations, on one ``chip`` (the lecture's "spending memory to save compute is the
    profitable direction", tested on the time axis).

    Recomputing either costs one forward of the token, 2N FLOPs at the chip's peak. Keeping a KV
    entry costs one read of its b_kv bytes per decode step; keeping a token's activations costs a
    write in the forward and a read in the backward of everything a stored layer keeps, in every
    layer. All in BF16. Capacity is left out: it is what makes training recompute anyway.
    """
    from .catalog import hardware
    m, hw = models.get(model), hardware.get(chip)
    recompute = 2 * m.active_params / hw.flops("bf16")
    kv = m.kv_bytes_per_token(2) / hw.hbm_bandwidth
    acts = 2 * layer_kept_per_width(model, 2) * m.d_model * m.n_layers / hw.hbm_bandwidth
    return {"kv cache": {"store": kv, "recompute": recompute},
            "activations": {"store": acts, "recompute": recompute}}


if __name__ == "__main__":
    from .catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "reversible_numeric.py")
