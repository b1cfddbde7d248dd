"""The train timetable: the SymPy closed form against hand values, and the simulation against both.

The simulation is also checked against a plain event loop written here, train by train, so the
vectorised seat recurrence in ``chalk.timetable`` is tested by an independent implementation.
"""
import numpy as np
import pytest
import sympy as sp

from chalk import timetable
from chalk.errors import ChalkError
from chalk.notation import T, lam

INTERVAL = 0.023  # s, about a GB200's HBM drain time


def test_closed_form_matches_hand_derivation():
    # Wait uniform on (0, T]: mean T/2, worst T; the ride adds T.
    hand = {"wait_mean": T / 2, "wait_worst": T, "latency_mean": 3 * T / 2, "latency_worst": 2 * T}
    for name, expr in hand.items():
        assert sp.simplify(timetable.CLOSED_FORM[name] - expr) == 0, name
    assert sp.simplify(timetable.batch_mean - lam * T) == 0
    assert timetable.closed_form(0.02) == pytest.approx(
        {"wait_mean": 0.01, "wait_worst": 0.02, "latency_mean": 0.03, "latency_worst": 0.04})


def test_simulation_with_spare_seats_matches_closed_form():
    run = timetable.simulate(rate=2000 / INTERVAL, interval=INTERVAL, capacity=3000,
                             n_requests=200_000, seed=1)
    got = run.summary()
    # Mean of 200k uniform waits: standard error T/sqrt(12 n) ~ 0.07% of T; allow 1%.
    assert got["wait_mean"] == pytest.approx(INTERVAL / 2, rel=0.01)
    assert got["latency_mean"] == pytest.approx(1.5 * INTERVAL, rel=0.01)
    # The longest of 200k uniform waits misses T by about T/n; it can never exceed T here.
    assert INTERVAL * (1 - 1e-3) <= got["wait_worst"] <= INTERVAL * (1 + 1e-12)
    assert got["latency_worst"] == pytest.approx(2 * INTERVAL, rel=1e-3)
    assert np.all(run.waits >= 0)
    # Trains carry rate * T passengers on average.
    assert run.loads.mean() == pytest.approx(2000, rel=0.01)


def test_full_trains_push_waits_past_one_interval():
    run = timetable.simulate(rate=2000 / INTERVAL, interval=INTERVAL, capacity=2010,
                             n_requests=200_000, seed=3)
    assert run.loads.max() <= 2010
    # With free seats no wait can exceed T; left-behind requests do.
    assert run.waits.max() > INTERVAL
    assert np.all(np.diff(run.departures) >= 0)  # first come, first served


def _event_loop(arrivals, interval, capacity):
    """Departure time of each request, simulated train by train."""
    departures = np.empty_like(arrivals)
    next_request, train = 0, 0
    while next_request < len(arrivals):
        leaves = train * interval
        boarded = 0
        while (next_request < len(arrivals) and boarded < capacity
               and arrivals[next_request] <= leaves):
            departures[next_request] = leaves
            next_request += 1
            boarded += 1
        train += 1
    return departures


@pytest.mark.parametrize("capacity", [1, 3, 7])
def test_simulation_agrees_with_an_event_loop(capacity):
    rng_seed = 11
    run = timetable.simulate(rate=0.9 * capacity / 0.01, interval=0.01, capacity=capacity,
                             n_requests=3000, seed=rng_seed)
    np.testing.assert_allclose(run.departures, _event_loop(run.arrivals, 0.01, capacity), rtol=0, atol=1e-12)


def test_seed_makes_runs_reproducible_and_accepts_a_generator():
    a = timetable.simulate(100.0, 0.02, 10, 1000, seed=5)
    b = timetable.simulate(100.0, 0.02, 10, 1000, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a.arrivals, b.arrivals)
    assert not np.array_equal(a.arrivals, timetable.simulate(100.0, 0.02, 10, 1000, seed=6).arrivals)


@pytest.mark.parametrize("kwargs, name", [
    (dict(rate=-1.0, interval=0.02, capacity=10), "rate"),
    (dict(rate=10.0, interval=0.0, capacity=10), "interval"),
    (dict(rate=10.0, interval=0.02, capacity=0), "capacity"),
    (dict(rate=10.0, interval=0.02, capacity=2.5), "capacity"),
    (dict(rate=10.0, interval=0.02, capacity=10, n_requests=0), "n_requests"),
    (dict(rate=1000.0, interval=0.02, capacity=10), "capacity"),  # 20 arrivals per 10 seats
])
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ChalkError, match=name):
        timetable.simulate(**kwargs)


def test_closed_form_rejects_zero_interval():
    with pytest.raises(ChalkError, match="interval"):
        timetable.closed_form(0)
