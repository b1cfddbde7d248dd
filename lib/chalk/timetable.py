"""Chapter 1's train timetable: a decode step departs every T seconds and requests board the next.

The closed form is derived in SymPy: a request that arrives a time u after a departure waits
T - u. Poisson arrivals land at a uniform phase u in [0, T), so the mean wait is T/2 and the worst
approaches T; the ride (the step itself) adds T, so the first token comes 1.5 T after the request
on average and 2 T at worst. ``simulate`` checks this with an independent discrete-event model,
Poisson arrivals boarding first-come first-served trains with a seat limit.
"""
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .errors import ChalkError, positive, positive_int
from .notation import T, lam

_u = sp.Dummy("u", nonnegative=True)
"""Arrival phase after the last departure: only a variable of integration, so not notation."""

wait_mean = sp.integrate((T - _u) / T, (_u, 0, T))
"""Mean wait for the next departure, averaging T - u over a uniform phase u."""
wait_worst = (T - _u).subs(_u, 0)
"""Arriving just after a departure: a full interval to wait."""
latency_mean = wait_mean + T
"""Request to first token: wait, then ride one step of length T."""
latency_worst = wait_worst + T
batch_mean = lam * T
"""Requests per departure on average: the batch each train carries in steady state."""

CLOSED_FORM = {"wait_mean": wait_mean, "wait_worst": wait_worst,
               "latency_mean": latency_mean, "latency_worst": latency_worst}


def closed_form(interval: float) -> dict[str, float]:
    """The four closed-form times, in seconds, for departures every ``interval`` seconds."""
    positive("interval", interval)
    return {name: float(expr.subs(T, interval)) for name, expr in CLOSED_FORM.items()}


@dataclass(frozen=True)
class Run:
    """One simulated day of the timetable: each request's arrival and its train's departure."""
    interval: float
    capacity: int
    arrivals: np.ndarray
    departures: np.ndarray

    @property
    def waits(self) -> np.ndarray:
        return self.departures - self.arrivals

    @property
    def latencies(self) -> np.ndarray:
        """Arrival to first token: the wait plus the step that produces the token."""
        return self.waits + self.interval

    @property
    def loads(self) -> np.ndarray:
        """Passengers on each train, empty trains included."""
        return np.bincount(np.rint(self.departures / self.interval).astype(np.int64))

    def summary(self) -> dict[str, float]:
        """Measured counterparts of ``closed_form``'s keys."""
        return {"wait_mean": float(self.waits.mean()), "wait_worst": float(self.waits.max()),
                "latency_mean": float(self.latencies.mean()),
                "latency_worst": float(self.latencies.max())}


def simulate(rate: float, interval: float, capacity: int, n_requests: int = 100_000,
             seed=0) -> Run:
    """Poisson arrivals at ``rate`` per second board trains leaving every ``interval`` seconds.

    A train seats ``capacity`` requests, first come first served; the rest wait for the next. If
    ``rate * interval`` exceeds ``capacity`` the queue grows without bound (an error is raised),
    and close to it the overflow pushes waits past the closed form's worst case T.
    ``seed`` is an int or a ``numpy.random.Generator``.
    """
    positive("rate", rate)
    positive("interval", interval)
    capacity = positive_int("capacity", capacity)
    n_requests = positive_int("n_requests", n_requests)
    if rate * interval > capacity:
        raise ChalkError(f"capacity must be at least rate * interval = {rate * interval:g} "
                         f"(mean arrivals per train), got {capacity}: the queue would grow forever")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, n_requests))
    # Index of the first departure at or after each arrival.
    train = np.ceil(arrivals / interval).astype(np.int64)
    # Seats: with FIFO boarding request i leaves at least one train after request i - capacity.
    # Each block of `capacity` requests depends only on the block before it, so the recurrence
    # train[i] = max(train[i], train[i - capacity] + 1) runs one vectorised step per block.
    for start in range(capacity, n_requests, capacity):
        stop = min(start + capacity, n_requests)
        np.maximum(train[start:stop], train[start - capacity:stop - capacity] + 1, out=train[start:stop])
    return Run(float(interval), capacity, arrivals, train * float(interval))
