"""The answer key of problem set 7: every check behaves, the key agrees with hand calculations
from published figures, and the prompts state the key's inputs."""
import math

import nbformat
import pytest

from chalk.teaching.chapters import ROOT
from chalk.teaching.exercises import problem_set
from chalk.teaching.problems import ch07_ciphers_revnets as key

EXERCISES = problem_set("07_ciphers_revnets")


# --- independent checks: hand calculations from published figures, not from chalk ----------------
L405_D, L405_LAYERS, L405_PARAMS = 16384, 126, 405.9e9  # Llama 3.1 405B config.json / model card
L405_VOCAB = 128256  # Llama 3.1 config.json
L8_PARAMS, L8_LAYERS, L8_HEADS, L8_DHEAD = 8.03e9, 32, 32, 128  # Llama 3.1 8B model card / config.json
T405 = 16 * 8192
LAYER405 = T405 * L405_D * 2  # one BF16 layer-sized array
# At the peak both policies hold the running layer (34 s b h), the head's input and FP32 logits.
SHARED405 = 34 * T405 * L405_D + LAYER405 + T405 * L405_VOCAB * 4
ATTN8 = L8_LAYERS * 4 * L8_HEADS * L8_DHEAD * 32768 / 2  # causal: 16,384 tokens attended on average
GPT3_D, GPT3_LAYERS, GPT3_HEADS = 12288, 96, 96  # Brown et al. 2020, Table 2.1
INDEPENDENT = {
    "flip_random_4bit": (sum(k * math.comb(4, k) for k in range(1, 5)) / 15 / 4, 1e-9),
    "pmf_one_bit": (6 / 63, 1e-9),
    # PRESENT's S-box is differentially 4-uniform (Bogdanov et al. 2007, §4.3): best probability 4/16.
    "present_ddt_prob": (4 / 16, 1e-9),
    "block_gb": (16 * 8192 * L405_D * L405_LAYERS * 2 / 1e9, 0.001),
    # Block keeps 126 layer inputs; reversible keeps 2 and inverts with 4 more buffers.
    "peak_ratio": ((L405_LAYERS * LAYER405 + SHARED405) / (6 * LAYER405 + SHARED405), 0.001),
    # Korthikanti et al. 2022, eq. 1: s b h (34 + 5 a s / h) bytes per layer, s = 2048, b = 1.
    "gpt3_full_gb": (GPT3_LAYERS * 2048 * GPT3_D * (34 + 5 * GPT3_HEADS * 2048 / GPT3_D) / 1e9, 0.001),
    # Llama 3 paper: 3.8e25 FLOPs for about 15.6 T tokens on the 405B model; at a fixed size the
    # tokens scale with the compute, so 2.4e25 FLOPs is 2.4/3.8 of them.
    "deduced_tokens": (15.6e12 * 2.4 / 3.8, 0.02),
    # Korthikanti et al. 2022, §5: recompute the attention core only; the step is 3 forwards.
    "selective_overhead": (ATTN8 / (3 * (2 * L8_PARAMS + ATTN8)), 0.005),
}


@pytest.mark.parametrize("name", INDEPENDENT)
def test_key_agrees_with_hand_calculation(name):
    value, tol = INDEPENDENT[name]
    assert math.isclose(EXERCISES[name].expected(), value, rel_tol=tol)


def test_decryption_answer_encrypts_back_to_the_ciphertext():
    plain = int(EXERCISES["feistel_plaintext"].expected())
    assert key.rv.feistel_encrypt(plain, **key.FEISTEL) == key.CIPHERTEXT


def test_prompts_state_the_keys_inputs():
    text = "\n".join(c.source for c in nbformat.read(ROOT / "exercises" / "07_ciphers_revnets.ipynb", 4).cells)
    for ex_id in EXERCISES:
        assert f"check(\"{ex_id}\", {ex_id})" in text, ex_id
    for stated in ("0xA1B2C3", "0x5EED", "rounds=6", "width=24", "16 * 8192", "2.4e25", "0.6",
                   "llama-3.1-405b", "gpt-3-175b",
                   "llama-3.1-8b", "32768", "FP32"):
        assert stated in text, stated
    assert ", ".join(f"0x{v:X}" for v in key.PRESENT_SBOX) in text
