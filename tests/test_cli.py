"""``python -m chalk``: every subcommand answers, bad input gives one line on stderr and exit 2."""
import contextlib
import io
import re
import subprocess
import sys

import pytest

from chalk import cli


def run(*args):
    """What ``python -m chalk <args>`` prints and returns, run in this interpreter: a fresh one per
    call cost seconds of imports each, most of this file's time. ``__main__`` only calls
    ``cli.main``; test_the_module_entry_point_is_cli_main runs it for real."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as done:  # argparse's own errors and --help
            code = done.code
    return subprocess.CompletedProcess(["python", "-m", "chalk", *args], code, out.getvalue(), err.getvalue())


def test_the_module_entry_point_is_cli_main():
    """The one real ``python -m chalk`` of this file: its exit codes and streams are cli.main's."""
    args = ("serve", "--model", "deepseek-v3", "--chip", "H100-SXM", "--batch", "-1")
    bad = subprocess.run([sys.executable, "-m", "chalk", *args], capture_output=True, text=True)
    here = run(*args)
    assert (bad.returncode, bad.stdout, bad.stderr) == (here.returncode, here.stdout, here.stderr)
    assert bad.returncode == cli.EXIT_BAD_INPUT and len(bad.stderr.strip().splitlines()) == 1


def test_help_explains_every_option(capsys):
    for command in ("serve", "fit", "deduce"):
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        for option in ("--model", "--system", "--chip", "--dtype"):
            assert option in text
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "Exit codes" in capsys.readouterr().out


def test_list_shows_every_catalog(capsys):
    assert cli.main(["list"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    for word in ("H100-SXM", "gb200-nvl72", "deepseek-v3", "Gemini 2.5 Pro", "Rubin", "announced"):
        assert word in out


def test_serve_prints_formula_values_result_and_regime(capsys):
    code = cli.main(["serve", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--batch", "2048",
                     "--context", "32768", "--dtype", "fp8"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK
    assert "Max(B*L*f_att/F_att + 2*B*N_act/F" in out and "2048" in out and "32768" in out
    assert "memory-bound (KV cache)" in out and "step time" in out and "tokens/s" in out


def test_serve_prices_from_rental_range(capsys):
    assert cli.main(["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "8", "--context", "1024"]) == 0
    assert "$1.99/chip-hour" in capsys.readouterr().out


def test_does_not_fit_is_an_answer_not_a_crash(capsys):
    code = cli.main(["serve", "--model", "llama-3.1-405b", "--chip", "H100-SXM", "--chips", "4",
                     "--batch", "64", "--context", "8192"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_DOES_NOT_FIT
    assert "does not fit: short by" in out and "step time (lower bound)" not in out


def test_fit_reports_back_solves(capsys):
    assert cli.main(["fit", "--model", "llama-3-70b", "--system", "hgx-h100", "--batch", "16", "--context", "8192"]) == 0
    out = capsys.readouterr().out
    assert "largest batch" in out and "longest context" in out


def test_fit_names_the_capacity_and_the_headroom_it_subtracts():
    # An H100 reports 81,559 MiB = 85.52 GB (80 nominal); 90% of 8 of them is 615.7 GB.
    out = run("fit", "--model", "llama-3-70b", "--system", "hgx-h100", "--batch", "16", "--context", "8192").stdout
    assert "HBM 85.5 GB as reported, 80 GB nominal, per chip" in out
    assert re.search(r"usable \(8 x 90% of 85\.5 GB as reported\)\s+615\.7 GB", out), out
    # No reported figure for a GB200: its nominal 186 GB, said so; --headroom moves the share.
    out = run("fit", "--model", "llama-3-70b", "--chip", "GB200", "--chips", "2", "--batch", "16", "--context", "8192",
              "--headroom", "0.2").stdout
    assert "HBM 186.0 GB nominal, per chip" in out
    assert re.search(r"usable \(2 x 80% of 186\.0 GB nominal\)\s+297\.6 GB", out), out


def test_prices_and_deduce(capsys):
    assert cli.main(["prices"]) == 0
    assert cli.main(["prices", "google/gemini-2.5-pro"]) == 0
    assert cli.main(["deduce", "--price", "google/gemini-2.5-pro", "--model", "deepseek-v3"]) == 0
    out = capsys.readouterr().out
    assert "decode MFU" in out and "KV bytes per token" in out and "as of 2025-06-17" in out


@pytest.mark.parametrize("args, param", [
    (["serve", "--model", "nope", "--chip", "H100-SXM", "--batch", "1", "--context", "1"], "model"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H999", "--batch", "1", "--context", "1"], "system"),
    (["serve", "--model", "llama-3.1-8b", "--system", "nope", "--batch", "1", "--context", "1"], "system"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "-3", "--context", "1"], "batch"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "x", "--context", "1"], "batch"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "-1"], "context"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1", "--dtype", "fp7"], "dtype"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "A100-80GB", "--batch", "1", "--context", "1", "--dtype", "fp8"], "dtype"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1", "--mfu", "2"], "mfu"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1",
      "--usd-per-chip-hour", "-1"], "usd-per-chip-hour"),
    (["serve", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--chips", "4", "--batch", "1", "--context", "1"], "chips"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--chips", "0", "--batch", "1", "--context", "1"], "chips"),
    (["fit", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1", "--headroom", "5"], "headroom"),
    (["prices", "nope/nothing"], "price"),
    (["deduce", "--price", "nope"], "price"),
    (["deduce", "--price", "google/gemini-2.5-pro", "--model", "gpt5"], "model"),
    (["deduce", "--price", "google/gemini-2.5-pro", "--chip", "A100-80GB", "--dtype", "fp8"], "dtype"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--chips", "1000000000000", "--batch", "1",
      "--context", "1"], "1,000,000"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1e20", "--context", "1"], "batch"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "100000000000000000000",
      "--context", "1"], "1,000,000,000"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1",
      "--usd-per-chip-hour", "1e308"], "10,000"),
    (["list", "planets"], "what"),
    (["frobnicate"], "COMMAND"),
])
def test_bad_input_one_line_on_stderr(args, param):
    result = run(*args)
    assert result.returncode == cli.EXIT_BAD_INPUT
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert param in lines[0] or "invalid choice" in lines[0]
    assert result.stdout == ""


def test_names_ignore_case(capsys):
    code = cli.main(["serve", "--model", "DeepSeek-V3", "--chip", "h100-sxm", "--chips", "16", "--batch", "8",
                     "--context", "4096", "--dtype", "FP8"])
    assert code == cli.EXIT_OK and "DeepSeek-V3 on 16 x H100-SXM, fp8 weights" in capsys.readouterr().out


@pytest.mark.parametrize("args, suggestion", [
    (["serve", "--model", "deepsek-v3", "--chip", "H100-SXM", "--batch", "1", "--context", "1"], "'deepseek-v3'"),
    (["serve", "--model", "deepseek-v3", "--chip", "H100-SMX", "--batch", "1", "--context", "1"], "'H100-SXM'"),
    (["prices", "google/gemini-2.5-pr"], "'google/gemini-2.5-pro'"),
])
def test_a_typo_gets_a_did_you_mean(args, suggestion):
    result = run(*args)
    assert result.returncode == cli.EXIT_BAD_INPUT and result.stdout == ""
    assert f"did you mean {suggestion}?" in result.stderr


def test_messages_read_as_english():
    dtype = run("serve", "--model", "llama-3.1-8b", "--chip", "A100-80GB", "--batch", "1", "--context", "1",
                "--dtype", "fp8").stderr
    assert "A100-80GB has no published 'fp8' rate; its formats: bf16" in dtype
    assert "known price entries:" in run("prices", "nope").stderr


def test_context_past_the_model_maximum_warns_once_and_still_answers():
    # DeepSeek-V3 supports 128K tokens (arXiv 2412.19437, §4.3): 200,000 is past it.
    result = run("serve", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--batch", "1",
                 "--context", "200000", "--dtype", "fp8")
    assert result.returncode == cli.EXIT_OK and "step time" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "131,072" in warnings[0]
    assert "warning" not in run("serve", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--batch", "1",
                                "--context", "100000", "--dtype", "fp8").stderr


def test_list_prints_no_tex_in_a_terminal(capsys):
    assert cli.main(["list"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "\\text" not in out and "N_tot" in out and "$N" not in out


def test_substituted_formula_reads_term_for_term(capsys):
    cli.main(["serve", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--batch", "3", "--context", "1000",
              "--dtype", "fp8", "--mfu", "0.5"])
    lines = capsys.readouterr().out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("t >="):
            formula, filled = line.split(">=", 1)[1].strip(), lines[i + 1].split("=", 1)[1].strip()
            assert "**" not in filled and "**" not in formula
            # The same shape once every symbol and every number is replaced by one placeholder.
            numbers = lambda text: re.sub(r"\b\d[\d.]*(e[+-]\d+)?", "x", text)
            symbols = lambda text: re.sub(r"\b(?!Max\b)[A-Za-z_]\w*\b", "x", text)
            assert numbers(symbols(formula)) == numbers(filled), (formula, filled)


def test_one_token_is_singular(capsys):
    cli.main(["serve", "--model", "llama-3.1-8b", "--chip", "H100-SXM", "--batch", "1", "--context", "1", "--prompt", "1"])
    out = capsys.readouterr().out
    assert "Prefill pass (1 token per sequence)" in out and "batch 1 x 1 token)" in out
    assert not re.search(r"\b1 tokens\b", out), out


def test_deduce_typed_in_prices_with_the_lecture_form(capsys):
    # Typed in: $2 / $12 per Mtok, a hit at $0.20, a step at 200,000 tokens x2 input and x1.5 output.
    # By hand: decode MFU relative to prefill 2 / 12 = 0.1667; hit 0.2 / 2 = 0.1x. Lecture's form on
    # an H100 SXM (989.4 TFLOP/s BF16 over 3.35 TB/s: r = 295.34) with 100e9 active parameters in FP8
    # (b_w = 1): 100e9 x 1 / (295.34 x 200,000) = 1,693 bytes per token.
    code = cli.main(["deduce", "--input", "2", "--output", "12", "--cache-read", "0.2", "--step-context", "200000",
                     "--step-input", "2", "--step-output", "1.5", "--active-params", "100e9", "--dtype", "fp8"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK
    assert "typed-in prices" in out and "decode MFU relative to prefill" in out and "0.1667" in out
    assert "cache read" in out and "0.1x input" in out
    assert "above 200,000 tokens" in out and "input x2, output x1.5" in out
    assert "lecture's form" in out and "1,693" in out


def test_deduce_without_a_model_says_what_the_prices_alone_imply(capsys):
    # Gemini 2.5 Pro (as of 2025-06-17): $1.25 / $10, so 1.25 / 10 = 0.125; the step multipliers
    # $2.50 / $1.25 = x2 input and $15 / $10 = x1.5 output.
    assert cli.main(["deduce", "--price", "google/gemini-2.5-pro"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "0.125" in out and "input x2, output x1.5" in out and "--active-params" in out
    assert "KV bytes per token" not in out.replace("into KV bytes per token", "")


@pytest.mark.parametrize("args, param", [
    (["deduce", "--input", "2"], "output"),
    (["deduce", "--input", "-2", "--output", "12"], "input"),
    (["deduce", "--input", "2", "--output", "nan"], "output"),
    (["deduce", "--input", "2", "--output", "12", "--cache-read", "0"], "cache-read"),
    (["deduce", "--input", "2", "--output", "12", "--step-context", "200000", "--step-output", "1.5"], "step_input"),
    (["deduce", "--input", "2", "--output", "12", "--step-context", "0", "--step-input", "2", "--step-output", "1.5"],
     "step-context"),
    (["deduce", "--price", "openai/gpt-5", "--output", "3"], "output"),
    (["deduce", "--price", "openai/gpt-5", "--input", "3"], "not allowed with"),
    (["deduce", "--input", "2", "--output", "12", "--active-params", "0"], "active-params"),
    (["deduce", "--input", "2", "--output", "12", "--model", "nope"], "model"),
    (["deduce"], "one of the arguments --price --input"),
])
def test_deduce_typed_in_bad_input_one_line_before_any_output(args, param):
    result = run(*args)
    assert result.returncode == cli.EXIT_BAD_INPUT
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and param in lines[0], result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("what, words", [
    # DeepSeek-V3 report (arXiv 2412.19437): decode on EP320 over 40 nodes; DeepEP's table: EP256.
    ("deployments", ("paper-decode", "| 320 | 40 |", "Rubin Ultra NVL576", "deepep-low-latency", "| 256 |")),
    # ZeRO (arXiv 1910.02054): mixed-precision Adam; Epoch AI's 2025-Q4 HBM share, 63%.
    ("memory", ("zero-mixed-adam", "2025-Q4", "63%", "nccl-net-step", "memory_capex_share")),
    ("quoted", ("copper-reach-100g", "torus-tpu-v5p-cube", "lecture-moe", "nvidia-gtc2025-roadmap")),
    ("tiers", ("hdd-exos-x24", "drain C/W s")),
])
def test_list_shows_each_chapters_data_with_sources(capsys, what, words):
    assert cli.main(["list", what]) == cli.EXIT_OK
    out = capsys.readouterr().out
    for word in words:
        assert word in out, word
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    data = [row for row in rows if "[source](https://" in row]
    assert len(data) >= 2 and len(rows) - len(data) == out.count("\n## ") + out.startswith("## ")


def test_list_all_prints_every_choice(capsys):
    assert cli.main(["list"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    for heading in ("## chips", "## tiers", "## DeepSeek-V3's expert placement", "## training recipes",
                    "## quoted figures"):
        assert heading in out
    assert "\\" not in out and not re.search(r"\$[^$\s|][^$|]*\$", out), "TeX left in the terminal output"
