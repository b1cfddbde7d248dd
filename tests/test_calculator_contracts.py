"""Issue 23's contracts, each against the figure it cites, and one test per class of bad input
that used to return a number."""
import math
import warnings

import numpy as np
import pytest

from chalk import calculator, cli, hardware, models, pricing, roofline, scaling
from chalk.errors import ChalkError, ContextWarning, DoesNotFit, RangeWarning

GIB = 2.0 ** 30


# --- tensor-parallel all-reduce ----------------------------------------------------------------
def test_allreduce_llama_70b_on_8_h100_at_batch_930_is_9_5_ms_on_a_ring():
    # By hand: 80 layers x 2 all-reduces; each sums 930 x 8,192 x 2 B = 15.24 MB, and a ring sends
    # 2 x 7/8 of it each way at 450 GB/s: 59.3 us. 160 x 59.3 us = 9.48 ms, plus 160 x 5.9 us fixed
    # (SGLang's measured small all-reduce on 8 H100s).
    message = 930 * 8192 * 2
    assert message == pytest.approx(15.2e6, rel=0.01)
    wire = 160 * (2 * 7 / 8) * message / 450e9
    assert wire == pytest.approx(9.5e-3, rel=0.01)
    t = roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 930)
    assert t == pytest.approx(wire + 160 * 5.9e-6, rel=1e-9)
    assert roofline.tp_allreduce_time("llama-3.1-70b", "H100-SXM", 930, chips=8) == pytest.approx(t)


def test_allreduce_at_batch_one_is_about_a_millisecond_or_two():
    t = roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 1)
    assert 0.9e-3 < t < 2e-3


def test_allreduce_is_zero_on_one_chip_and_cheaper_in_the_switch():
    assert roofline.tp_allreduce_time("llama-3.1-8b", "H100-SXM", 64) == 0
    ring = roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 930)
    switch = roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 930, algorithm="in-switch")
    # In the switch each chip sends the 15.24 MB once, not 7/4 times.
    assert switch == pytest.approx(160 * (930 * 8192 * 2 / 450e9 + 5.9e-6), rel=1e-9) and switch < ring
    with pytest.raises(ChalkError, match="in-switch"):
        roofline.tp_allreduce_time("llama-3.1-70b", "mi300x-8", 930, algorithm="in-switch")


def test_step_time_and_calculator_count_the_allreduce_in_series():
    alone = roofline.step_time("H100-SXM", "llama-3.1-70b", 256, 4096, chips=8, allreduce=False)
    both = roofline.step_time("H100-SXM", "llama-3.1-70b", 256, 4096, chips=8)
    assert both == pytest.approx(alone + roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 256))
    point = calculator.decode("llama-3.1-70b", "hgx-h100", 256, 4096)
    assert point.t_step == pytest.approx(both)


def test_a_replica_past_one_scale_up_domain_rings_at_the_scale_out_rate():
    with pytest.warns(RangeWarning, match="scale-up domain"):
        t = roofline.tp_allreduce_time("llama-3.1-70b", "H100-SXM", 930, chips=16)
    assert t == pytest.approx(160 * (5.9e-6 + 2 * 15 / 16 * 930 * 8192 * 2 / 50e9), rel=1e-9)


# --- MLA prefill -------------------------------------------------------------------------------
def test_mla_prefill_runs_the_multi_head_form():
    # DeepSeek-V3, 61 layers of 128 heads: prefill 2 x 128 x (128 + 64 + 128) = 81,920 FLOPs per
    # pair per layer, 5.0 MFLOP in all; decode absorbed 2 x 128 x (2 x 512 + 64), 17.0 MFLOP.
    assert roofline.attention_flops_per_pair("deepseek-v3", "prefill") == pytest.approx(5.0e6, rel=0.001)
    assert roofline.attention_flops_per_pair("deepseek-v3", "decode") == pytest.approx(17.0e6, rel=0.001)
    gqa = "llama-3.1-70b"
    assert roofline.attention_flops_per_pair(gqa, "prefill") == roofline.attention_flops_per_pair(gqa, "decode")
    with pytest.raises(ChalkError, match="phase"):
        roofline.attention_flops_per_pair(gqa, "train")


def test_prefill_pass_uses_the_prefill_form():
    pre = calculator.prefill("deepseek-v3", "gb200-nvl72", 1, 32768, dtype="fp8")
    # 32,768 tokens see (32,768 + 1)/2 earlier ones on average, 5.0 MFLOP each, at 72 x 2.5 PFLOP/s.
    by_hand = 32768 * (32768 + 1) / 2 * 4.99712e6 / (72 * 2500e12)
    assert pre.t_attn == pytest.approx(by_hand, rel=1e-9)


# --- checkpoints and memory --------------------------------------------------------------------
def test_meta_fp8_405b_checkpoint_is_its_published_size():
    size = models.get("llama-3.1-405b-fp8").weight_bytes()
    # vLLM's log: 57.75 GiB of weights per GPU on 8 GPUs = 496 GB; 1 byte per weight gives 406 GB.
    assert size == pytest.approx(8 * 57.75 * GIB, rel=0.025)
    assert size > 1.15 * models.get("llama-3.1-405b").weight_bytes("fp8")


def test_mixed_checkpoint_halves_the_batch_at_128k():
    plain = calculator.max_batch("llama-3.1-405b", "hgx-h100", 131072, dtype="fp8")
    real = calculator.max_batch("llama-3.1-405b-fp8", "hgx-h100", 131072, dtype="fp8")
    assert real <= plain / 2 and real >= 1


# --- no silent numbers -------------------------------------------------------------------------
@pytest.mark.parametrize("call, words", [
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 2.5, 1024), "batch"),
    (lambda: calculator.fit("llama-3.1-8b", "H100-SXM", 0.5, 1024), "batch"),
    (lambda: calculator.decode("llama-3.1-8b", "H100-SXM", 1, 1024, chips=2.5), "chips"),
    (lambda: roofline.step_time("H100-SXM", "llama-3.1-8b", 1, 1024, chips=2.5), "chips"),
    (lambda: roofline.tp_allreduce_time("llama-3.1-70b", "hgx-h100", 2.5), "batch"),
])
def test_fractional_counts_are_refused(call, words):
    with pytest.raises(ChalkError, match=words):
        call()


def test_fit_at_batch_zero_is_refused():
    with pytest.raises(ChalkError, match="batch"):
        calculator.fit("llama-3.1-8b", "H100-SXM", 0, 1024)


def test_chips_beyond_any_system_are_refused():
    with pytest.raises(ChalkError, match="chips"):
        roofline.step_time("H100-SXM", "llama-3.1-8b", 1, 1024, chips=10**7)
    with pytest.raises(ChalkError, match="chips"):
        calculator.decode("llama-3.1-8b", "H100-SXM", 1, 1024, chips=10**7)


def test_context_past_the_model_warns_in_the_library():
    with pytest.warns(ContextWarning, match="8,192"):
        roofline.step_time("H100-SXM", "llama-3-8b", 1, 10_000)
    with pytest.warns(ContextWarning, match="8,192"):
        calculator.decode("llama-3-8b", "H100-SXM", 1, 10_000)


@pytest.mark.parametrize("call", [
    lambda: roofline.step_time("H100-SXM", None, 1, 1024),
    lambda: calculator.fit(None, "H100-SXM", 1, 1024),
    lambda: roofline.memory_needed(None, 1, 1024),
    lambda: roofline.attention_flops_per_pair(None),
])
def test_model_none_is_refused(call):
    with pytest.raises(ChalkError, match="model"):
        call()


def test_fits_warn_far_outside_their_data():
    with pytest.warns(RangeWarning, match="N"):
        scaling.loss(70, 1e12)
    with pytest.warns(RangeWarning, match="C"):
        scaling.compute_optimal(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaling.compute_optimal(5.76e23)  # Chinchilla's budget: inside


def test_a_pass_longer_than_its_context_is_refused(capsys):
    with pytest.raises(ChalkError, match="context"):
        calculator.run_pass("llama-3.1-8b", "H100-SXM", 1, 100, n=200)
    code = cli.main(["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1",
                     "--context", "100", "--prompt", "200"])
    assert code == 2 and "prompt" in capsys.readouterr().err


@pytest.mark.parametrize("call, words", [
    (lambda: pricing.typed_price(10, 5), "output"),
    (lambda: pricing.typed_price(1, 10, cache_read=2), "cache_read"),
    (lambda: pricing.deduce(pricing.typed_price(1, 10), active_params=70), "active_params"),
])
def test_deduce_refuses_prices_and_counts_no_model_has(call, words):
    with pytest.raises(ChalkError, match=words):
        call()


def test_deduce_help_says_which_flags_are_ratios():
    parser = cli.build_parser()
    deduce = parser._subparsers._group_actions[0].choices["deduce"]
    assert "multipliers (ratios, not prices)" in deduce.description
    for action in deduce._actions:
        if action.dest in ("step_input", "step_output"):
            assert "multiplier" in action.help and "USD" not in action.help


def test_a_sweep_marks_the_points_that_do_not_fit():
    batches = np.array([1, 64, 100_000])
    for t in (roofline.step_time("H100-SXM", "llama-3.1-70b", batches, 4096, chips=8),
              calculator.decode("llama-3.1-70b", "hgx-h100", batches, 4096).t_step):
        assert list(np.ma.getmaskarray(t)) == [False, False, True] and math.isnan(t.data[2])
        assert t[1] == pytest.approx(calculator.decode("llama-3.1-70b", "hgx-h100", 64, 4096).t_step)
    with pytest.raises(DoesNotFit):
        roofline.step_time("H100-SXM", "llama-3.1-70b", 100_000, 4096, chips=8)


def test_does_not_fit_exits_3_from_any_command(monkeypatch, capsys):
    def refuses(args):
        raise DoesNotFit("does not fit: short by 1 GB", 2.0, 1.0)
    monkeypatch.setitem(cli.COMMANDS, "prices", refuses)
    assert cli.main(["prices"]) == cli.EXIT_DOES_NOT_FIT
    assert "short by" in capsys.readouterr().err
    code = cli.main(["serve", "--model", "llama-3.1-405b", "--system", "hgx-h100", "--batch", "1", "--context", "10"])
    assert code == 3


def test_serve_prints_the_allreduce_line(capsys):
    assert cli.main(["serve", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--batch", "930",
                     "--context", "1024", "--dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    assert "all-reduce time (tensor parallel)" in out and "10.425 ms" in out
    assert "2 x 80 all-reduces of 15.2 MB" in out and "what overlaps" in out


def test_moe_layouts_pay_no_tensor_parallel_allreduce():
    # DeepSeek-V3 runs expert-parallel with data-parallel attention; its all-to-all is chalk.moe's.
    alone = roofline.step_time("GB200", "deepseek-v3", 64, 4096, "fp8", chips=72, allreduce=False)
    assert roofline.step_time("GB200", "deepseek-v3", 64, 4096, "fp8", chips=72) == alone
    assert calculator.decode("deepseek-v3", "gb200-nvl72", 64, 4096, dtype="fp8").t_comm == 0
    assert roofline.tp_allreduce_time("deepseek-v3", "gb200-nvl72", 64) > 0  # the TP layout's, if chosen


# --- published measurements beside the bound ---------------------------------------------------
def test_published_runs_are_read_as_their_sources_print_them():
    from chalk.catalog import systems
    runs = {m.name: m for m in systems.measurements_for("deepseek-v3", hardware.get("H200"))}
    sglang = runs["sglang-deepseek-v3-h100@2025-05-05"]
    # LMSYS: 22.3k output and 52.3k input tokens/s per node of 8 H100s.
    assert sglang.per_chip("decode") == pytest.approx(22.3e3 / 8)
    assert sglang.per_chip("prefill") == pytest.approx(52.3e3 / 8)
    # DeepSeek's day: 14.8k output and 73.7k input tokens/s per node of 8 H800s (operators.toml's).
    day = runs["deepseek-v3-r1-h800@2025-02-28"]
    assert (day.per_chip("decode"), day.per_chip("prefill")) == pytest.approx((14.8e3 / 8, 73.7e3 / 8))
    assert systems.measurements_for("deepseek-v3", hardware.get("B200")) == []
    assert systems.measurements_for("llama-3.1-70b", hardware.get("H100-SXM")) == []


def test_serve_prints_the_measurement_beside_the_bound(capsys):
    assert cli.main(["serve", "--model", "deepseek-v3", "--system", "hgx-h200", "--batch", "256",
                     "--context", "4096", "--prompt", "2000", "--dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    bound = calculator.prefill("deepseek-v3", "hgx-h200", 256, 2000, dtype="fp8").tokens_per_second / 8
    assert f"6,538 input tokens/s per H100-SXM, {52.3e3 / 8 / bound:.0%} of this bound" in out
    assert "https://lmsys.org/blog/2025-05-05-large-scale-ep/ (2025-05-05)" in out


# --- --efficiency presets from the published runs ------------------------------------------------
def test_deepseek_decode_preset_is_their_published_day_against_the_bound():
    """DeepSeek, 'Inference System Overview' (2025-03-01): 14.8k output tokens/s per H800 node of 8,
    20-22 tokens/s per user, 4,989 cached tokens per output token, decode on EP144, FP8 matmuls and
    BF16 attention. Little's law: 14,800 / 8 / 21 = 88.1 sequences per GPU. At that batch the
    bound is compute-bound, so its step per GPU is B (2 N_act / F_fp8 + L f_att / F_bf16), and the
    preset is the bound's step over the measured one, 1/21 s."""
    from chalk import efficiency
    v3 = models.get("deepseek-v3")
    h800 = hardware.get("H800")  # FlashMLA write-up: 990 TFLOP/s BF16, FP8 twice that, 3.35 TB/s
    batch = 14.8e3 / 8 / 21
    mla_decode = 2 * 128 * (2 * 512 + 64) * 61  # 2 n_heads (2 d_c + d_R) per layer, absorbed form
    compute = batch * (2 * v3.active_params / h800.flops("fp8") + 4989 * mla_decode / h800.flops("bf16"))
    memory = (v3.total_params * 1 + 144 * batch * 4989 * (512 + 64) * 61 * 2) / (144 * h800.hbm_bandwidth)
    assert compute > memory
    preset = efficiency.get("deepseek-decode")
    assert preset.phase == "decode"
    assert preset.value == pytest.approx(compute * 21, rel=1e-3)
    assert preset.value == pytest.approx(0.229, abs=0.001)  # the ~4.37x gap of Chapter 1, inverted


def test_sglang_prefill_preset_is_their_published_prefill_against_the_compute_ceiling():
    """LMSYS (2025-05-05): 52.3k input tokens/s per node of 8 H100s for 2,000-token inputs, FP8
    weights. The bound's ceiling per H100 at that prompt: 2 N_act FLOPs per token at the FP8 peak
    plus MLA's prefill (multi-head) attention over 1,000.5 tokens on average at the BF16 peak."""
    from chalk import efficiency
    v3 = models.get("deepseek-v3")
    h100 = hardware.get("H100-SXM")  # datasheet: 989 TFLOP/s BF16 dense, 1,979 FP8
    mla_prefill = 2 * 128 * (2 * 128 + 64) * 61  # 2 n_heads (2 d_head + d_R) per layer: MLA's multi-head form
    per_token = 2 * v3.active_params / h100.flops("fp8") + (2000 - 1999 / 2) * mla_prefill / h100.flops("bf16")
    preset = efficiency.get("sglang-prefill")
    assert preset.phase == "prefill"
    assert preset.value == pytest.approx(52.3e3 / 8 * per_token, rel=1e-3)
    assert preset.value == pytest.approx(0.28, abs=0.005)


def test_a_preset_reproduces_its_run_at_its_own_operating_point(capsys):
    """With the decode preset at DeepSeek's own batch and context, serve prints the published 1,850
    output tokens/s per H800 (14.8k per node of 8) as 100% of the estimate."""
    assert cli.main(["serve", "--model", "deepseek-v3", "--chip", "H800", "--chips", "144", "--batch", "12686",
                     "--context", "4989", "--dtype", "fp8", "--efficiency", "deepseek-decode"]) == 0
    out = capsys.readouterr().out
    decode = out.split("Prefill pass")[0]
    assert "preset deepseek-decode" in decode and "open-infra-index" in decode and "(2025-03-01)" in decode
    assert "1,850 output tokens/s per H800, 100% of this estimate" in decode
    assert "Money (decode: efficiency 0.229, preset deepseek-decode; prefill: mfu 1, memory efficiency 1)" in out


def test_efficiency_help_lists_the_presets_and_an_unknown_name_exits_2(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", "--efficiency", "help"])
    listed = capsys.readouterr().out
    assert done.value.code == 0
    for words in ("deepseek-decode", "sglang-prefill", "(2025-03-01)", "(2025-05-05)", "lmsys.org"):
        assert words in listed
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", "--model", "deepseek-v3", "--system", "hgx-h200", "--batch", "8", "--context", "100",
                  "--efficiency", "vllm-decode"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "'vllm-decode'" in err and "deepseek-decode, sglang-prefill" in err.replace(
        "sglang-prefill, deepseek-decode", "deepseek-decode, sglang-prefill")


@pytest.mark.parametrize("argv", [["--efficiency", "0.5", "--mfu", "0.3"], ["--efficiency", "0.5", "--efficiency", "0.4"],
                                  ["--efficiency", "deepseek-decode", "--efficiency", "deepseek-decode"],
                                  ["--efficiency", "1.5"], ["--efficiency", "0"]])
def test_efficiency_refuses_conflicts_before_any_output(capsys, argv):
    try:
        code = cli.main(["serve", "--model", "deepseek-v3", "--system", "hgx-h200", "--batch", "8", "--context", "100",
                         "--dtype", "fp8", *argv])
    except SystemExit as done:
        code = done.code
    printed = capsys.readouterr()
    assert code == 2 and "efficiency" in printed.err and printed.out == ""


@pytest.mark.parametrize("entry, words", [
    ({"preset": "x", "preset_phase": "training"}, "'decode' or 'prefill'"),
    ({"preset": "x", "preset_phase": "decode"}, "'operator'"),
    ({"preset": "x", "preset_phase": "prefill", "input_tokens": 2000}, "'dtype', 'prefill_nodes'"),
])
def test_a_preset_entry_missing_what_its_ratio_needs_is_refused(entry, words):
    from chalk.catalog import systems
    with pytest.raises(ChalkError, match=words):
        systems._preset_phase("measured.toml [x]", entry)


def test_a_typed_efficiency_divides_both_rates():
    """--efficiency 0.5 is --mfu 0.5 --memory-efficiency 0.5: every time doubles, here twice the bound's step."""
    base = calculator.decode("deepseek-v3", "hgx-h200", 64, 4096, dtype="fp8")
    half = calculator.decode("deepseek-v3", "hgx-h200", 64, 4096, dtype="fp8", mfu=0.5, memory_efficiency=0.5)
    assert half.t_step == pytest.approx(2 * base.t_step)
    args = cli.build_parser().parse_args(["serve", "--model", "deepseek-v3", "--system", "hgx-h200", "--batch", "64",
                                          "--context", "4096", "--efficiency", "0.5"])
    assert cli._knobs(args)["decode"][:2] == cli._knobs(args)["prefill"][:2] == (0.5, 0.5)


def test_readme_shows_the_allreduce_line_and_a_published_run(capsys):
    import pathlib
    import shlex
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    calls = [shlex.split(line.strip())[3:] for line in readme.splitlines() if line.strip().startswith("python -m chalk serve")]
    printed = []
    for argv in calls:
        assert cli.main(argv) == 0, argv
        printed.append(capsys.readouterr().out)
    assert any("all-reduce time (tensor parallel)" in out for out in printed)
    assert any("published (" in out and "of this bound" in out for out in printed)


def test_deduce_refuses_a_slipped_parameter_count_before_any_output(capsys):
    code = cli.main(["deduce", "--input", "1", "--output", "4", "--step-context", "65536", "--step-input", "2",
                     "--step-output", "1.5", "--active-params", "70"])
    printed = capsys.readouterr()
    assert code == 2 and "active_params" in printed.err and printed.out == ""
