"""Property tests (hypothesis) over the catalog: monotonicity and orderings the formulas promise."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chalk import DoesNotFit, calculator, hardware, models, roofline

MODELS = st.sampled_from(models.names())
CHIPS = st.sampled_from([c for c in hardware.names() if "bf16" in hardware.get(c).peak_flops])
settings.register_profile("chalk", max_examples=60, deadline=None)
settings.load_profile("chalk")


def _step(chip, model, batch, context, chips):
    try:
        # The roofline's own property: the all-reduce grows with the chips (test_calculator_contracts).
        return roofline.step_time(chip, model, batch, context, chips=chips, allreduce=False)
    except DoesNotFit:
        return None


@given(MODELS, CHIPS, st.integers(1, 512), st.integers(1, 512), st.integers(0, 200_000), st.integers(1, 512))
def test_more_batch_never_lowers_step_time(model, chip, b1, b2, context, chips):
    low, high = sorted((b1, b2))
    t_high = _step(chip, model, high, context, chips)
    assume(t_high is not None)
    assert _step(chip, model, low, context, chips) <= t_high * (1 + 1e-12)


@given(MODELS, CHIPS, st.integers(1, 256), st.integers(0, 100_000), st.integers(1, 256), st.integers(1, 256))
def test_more_chips_never_raise_step_time(model, chip, batch, context, c1, c2):
    few, many = sorted((c1, c2))
    t_few = _step(chip, model, batch, context, few)
    assume(t_few is not None)
    assert _step(chip, model, batch, context, many) <= t_few * (1 + 1e-12)


@given(MODELS, st.integers(0, 2_000_000), st.integers(0, 2_000_000))
def test_kv_bytes_grow_with_context(model, a, b):
    m = models.get(model)
    low, high = sorted((a, b))
    assert m.kv_bytes(low) <= m.kv_bytes(high)


@given(MODELS, st.integers(1, 2_000_000), st.integers(1, 2_000_000))
def test_kv_per_token_never_grows_once_windows_are_full(model, a, b):
    """Average KV bytes per token, kv_bytes(L)/L, is non-increasing past every window, and tends
    to kv_bytes_per_token() from above."""
    m = models.get(model)
    window = m.sliding_window or 1
    low, high = sorted((max(a, window), max(b, window)))
    per_low, per_high = m.kv_bytes(low) / low, m.kv_bytes(high) / high
    assert per_high <= per_low * (1 + 1e-12)
    assert per_high >= m.kv_bytes_per_token() * (1 - 1e-12)


@given(MODELS)
def test_total_at_least_active(model):
    m = models.get(model)
    assert m.total_params >= m.active_params > 0
    assert m.sparsity >= 1


@given(MODELS, st.floats(0.25, 4))
def test_kv_bytes_scale_with_bytes_per_element(model, bpe):
    m = models.get(model)
    assert m.kv_bytes(1000, bpe) == pytest.approx(m.kv_bytes(1000, 2) * bpe / 2)


@given(MODELS, st.integers(0, 1_000_000), st.integers(0, 1_000_000))
def test_forward_flops_grow_with_context_and_exceed_matmuls(model, a, b):
    m = models.get(model)
    low, high = sorted((a, b))
    assert 2 * (m.active_params - m.input_embedding_params) <= m.forward_flops_per_token(low) \
        <= m.forward_flops_per_token(high)


@given(MODELS, CHIPS, st.integers(0, 100_000), st.integers(1, 64))
def test_max_batch_fits_and_one_more_does_not(model, chip, context, chips):
    try:
        b = calculator.max_batch(model, chip, context, chips=chips)
    except DoesNotFit:
        return
    assume(np.isfinite(b) and b >= 1)
    assert calculator.fit(model, chip, int(b), context, chips=chips).fits
    assert not calculator.fit(model, chip, int(b) + 1, context, chips=chips).fits


@given(MODELS, CHIPS, st.integers(1, 256), st.integers(1, 4096), st.floats(0.05, 1), st.floats(0.05, 1))
def test_efficiency_below_one_never_speeds_up(model, chip, batch, context, mfu, mem):
    try:
        peak = calculator.decode(model, chip, batch, context, chips=8)
    except DoesNotFit:
        return
    slow = calculator.decode(model, chip, batch, context, chips=8, mfu=mfu, memory_efficiency=mem)
    assert slow.t_step >= peak.t_step * (1 - 1e-12)
    assert slow.tokens_per_second <= peak.tokens_per_second * (1 + 1e-12)


@given(st.integers(1, 8), st.sampled_from([1, 2, 4]))
def test_cross_layer_sharing_divides_kv(groups, share):
    base = dict(display="toy", attention="gqa", n_layers=8 * groups, d_model=512, n_heads=8, n_kv_heads=2,
                d_head=64, d_ff=1024, ffn_gated=True, vocab=1000, tied_embeddings=True)
    plain = models.from_config("toy", base)
    shared = models.from_config("toy-cla", base | {"kv_share": share})
    assert shared.kv_bytes_per_token() == pytest.approx(plain.kv_bytes_per_token() / share)
    assert shared.total_params <= plain.total_params
