"""The exercise of Chapter 1's lab, whose answer depends on the reader's machine.

A problem set's key is a number computed once and sealed; this one is computed in the reader's
kernel from the ceilings the lab just measured there, so the same question has a different answer
on every machine and no printed number answers it. ``check(exercise_id, answer, ceilings)`` judges
like a problem set's ``check`` (same tolerance grid, same typical-mistake hints, same display).
"""
from .. import measure
from ..errors import lookup
from .exercises import Exercise, Mistake, Result, judge

CORES = 4
"""The scenario: the same machine with this many cores at work, each as fast as the one measured,
sharing the one memory bandwidth measured (F grows fourfold, W does not)."""


def exercises(ceilings) -> dict[str, Exercise]:
    """The lab's exercises, keyed by id, with answers from ``ceilings`` (a ``measure.Ceilings``)."""
    return {"balance_four_cores": Exercise(
        "balance_four_cores", lambda: measure.balance_batch(CORES * ceilings.flops, ceilings.bandwidth),
        "sequences per step", 0.05,
        hint="B* = r b_w / 2 for a dense step; which of F and W grows with the cores here?",
        mistakes=(Mistake("that is the balance batch of one core: four cores do four times the FLOPs, "
                          "and here the bandwidth stays, so r grows fourfold", factor=1 / CORES),
                  Mistake("the step is float32: b_w = 4 bytes per weight", factor=0.5),
                  Mistake("a weight costs 2 FLOPs per token (a multiply and an add): divide by 2", factor=2)),
        topic="balance batch from your own r", judgement=True)}


def check(exercise_id: str, answer, ceilings) -> Result:
    """Judge ``answer`` against the key computed from this machine's ``ceilings``."""
    return judge(lookup("exercise", exercise_id, exercises(ceilings), param="exercise_id"), answer)
