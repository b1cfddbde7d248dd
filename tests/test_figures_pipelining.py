"""Chapter 3's explorer and twin: their numbers are chalk.pipeline's, their pictures the simulator's,
and bad choices show a message instead of a chart."""
import json
import re

import pytest

from chalk import pipeline as pl
from chalk.figures import pipelining as pp


@pytest.fixture(scope="module")
def explorer():
    return pp.Explorer()


def percents(text):
    return [float(x) for x in re.findall(r"([\d.]+)%", text)]


@pytest.mark.parametrize("schedule,stages,m,chunks", [("gpipe", 4, 8, 1), ("1f1b", 8, 16, 1),
                                                      ("interleaved", 4, 8, 2), ("interleaved", 8, 32, 4)])
def test_readout_bubble_is_the_simulators_and_the_formulas(explorer, schedule, stages, m, chunks):
    text = explorer.update(schedule=schedule, stages=stages, microbatches=m, chunks=chunks, ratio=2.0)
    measured, formula = percents(text)[:2]
    assert measured == pytest.approx(100 * pl.simulate(stages, m, schedule, chunks).idle_fraction, abs=0.005)
    # The closed form is computed independently of the simulator: (P-1)/(v m + P - 1).
    assert formula == pytest.approx(100 * (stages - 1) / (chunks * m + stages - 1), abs=0.005)
    peak = float(re.search(r"one stage, in micro-batches: ([\d.]+)", text).group(1))
    assert peak == pl.simulate(stages, m, schedule, chunks).peak_activations


def test_other_schedules_ignore_chunks(explorer):
    a = explorer.update(schedule="gpipe", stages=4, microbatches=8, chunks=4)
    assert "(P-1)/(m+P-1)" in a and "error" not in a.lower()


def test_interleaving_with_m_not_a_multiple_of_p_shows_a_message(explorer):
    text = explorer.update(schedule="interleaved", stages=4, microbatches=6, chunks=2)
    assert "color:#b00" in text and "multiple of stages" in text
    assert explorer.image.value[:4] == b"\x89PNG"
    ok = explorer.update(microbatches=8)
    assert "color:#b00" not in ok


def test_inference_has_no_steady_state_bubble(explorer):
    text = explorer.update(schedule="inference", stages=4, microbatches=16, chunks=1)
    assert "steady-state idle 0.0%" in text


def test_raster_paints_every_operation_and_leaves_the_bubble_idle():
    run = pl.simulate(4, 4, "gpipe")
    img = pp.raster(run, 400, 40)
    idle = (img == [int(pp.COLORS["idle"][i:i + 2], 16) for i in (1, 3, 5)]).all(axis=2)
    # Stage 1 (rows 1..8) idles exactly the bubble share of its row (within a pixel per box edge).
    row = idle[5]
    busy_share = sum(e.end - e.start for e in run.events if e.stage == 0) / run.makespan
    assert row.mean() == pytest.approx(1 - busy_share, abs=0.02)


def test_twin_views_are_the_simulators():
    data = pp.twin_data()
    assert len(json.dumps(data, separators=(",", ":"))) < 250_000
    stops = data["controls"][-1]["values"]
    for (schedule, chunks) in pp.TWIN_SCHEDULES:
        for stages in pp.TWIN_STAGES:
            view = data["views"][f"{schedule}-{chunks}|{stages}"]
            for i, m in enumerate(stops):
                if schedule == "interleaved" and m % stages:
                    assert view["readout"]["pick"][i] == 2
                    assert "multiple of stages" in view["readout"]["values"]["why"][i]
                    continue
                run = pl.simulate(stages, m, schedule, chunks, t_forward=1, t_backward=pp.TWIN_RATIO)
                rects = [s for s in view["panels"][0]["frames"][i] if s["shape"] == "rect"]
                assert len(rects) == len(run.events)
                # in percent, as the chapter prints them
                assert view["readout"]["values"]["measured"][i] == pytest.approx(100 * run.idle_fraction, rel=1e-2)
                if schedule != "inference":
                    assert view["readout"]["values"]["formula"][i] == pytest.approx(
                        100 * pl.bubble_fraction(stages, m, schedule, chunks), rel=1e-2)


def test_session_is_replayable():
    ex = pp.Explorer()
    for params in pp.SESSION:
        ex.update(**params)
    assert ex.params["stages"] == 8



def test_traffic_table_runs_at_the_published_tokens_per_chip():
    # DeepSeek-V3's own step: 15,360 x 4,096 tokens on 2,048 GPUs, so 8 chips carry 8 x 30,720 tokens
    rows = {r.kind: r for r in pp.traffic_rows()}
    direct = {r.kind: r for r in pl.parallelism_table("deepseek-v3", "gb200-nvl72", 8, 8 * 30_720, grad_bytes=4)}
    assert rows.keys() == direct.keys()
    assert all(rows[k].bytes_per_chip == direct[k].bytes_per_chip and rows[k].network == direct[k].network
               for k in rows)
    # below its threshold the data-parallel all-reduce does not hide over the network card; above it, it does
    assert rows["data"].hides_above > 30_720 and rows["data"].network != "scale-out"
    big = {r.kind: r for r in pp.traffic_rows(tokens_per_chip=1.1 * rows["data"].hides_above)}
    assert big["data"].network == "scale-out"
