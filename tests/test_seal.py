"""The sealed keys against an offline search (issue 28, section 2): a number's cells are hashed
under a key scrypt derives per tolerance-wide bucket, so the search that found 80 of 81 answers
from the wheel in 20 s (SHA-256 of each grid cell) finds none, and every try costs one scrypt call.

Only Chapter 1 is searched here: its table comes from the seal cache, and each bucket derived
costs a few hundredths of a second.
"""
import hashlib

import pytest

from chalk.teaching import exercises
from chalk.teaching.exercises import (KDF, NUMBER, cells, digest, judge, problem_set, sealed_digest,
                                      sealed_exercises, whole_cell)
from chalk.teaching.seal import kdf_text, seal

CHAPTER = "01_batching"
TABLE = seal(CHAPTER)
KEY = problem_set(CHAPTER)
NUMBERS = [e for e in TABLE["exercises"] if e["kind"] == NUMBER]


def names_of(ex) -> list[str]:
    """Every grid cell that counts as the right answer: what a search that knew it would try."""
    value = ex.expected()
    return cells(value, ex.rel_tol) + [whole_cell(round(value))]


def test_the_fast_search_of_the_wheel_finds_nothing():
    # the attack as it ran on the old seal: SHA-256 of salt and cell, no key derivation
    for e in NUMBERS:
        tried = {digest(e["salt"], n) for n in names_of(KEY[e["id"]])}
        assert not tried & set(e["right"]), e["id"]


def test_the_slow_hash_of_the_right_cell_is_what_the_table_holds():
    # the same cells through scrypt do find it: the seal is keyed by the derivation, nothing else
    for e in NUMBERS[:3]:
        assert {sealed_digest(e["salt"], n) for n in names_of(KEY[e["id"]])} & set(e["right"]), e["id"]


def test_the_table_records_a_memory_hard_cost():
    assert TABLE["format"] == 3 and TABLE["kdf"] == kdf_text() == f"scrypt n={KDF['n']},r={KDF['r']},p={KDF['p']}"
    assert 128 * KDF["n"] * KDF["r"] >= 8 * 2 ** 20  # scrypt's memory per call: at least 8 MiB


def test_one_check_costs_one_derivation_and_each_bucket_of_a_search_one_more(monkeypatch):
    calls = []
    real = hashlib.scrypt
    monkeypatch.setattr(exercises.hashlib, "scrypt", lambda *a, **k: calls.append(k["salt"]) or real(*a, **k))
    exercises._slow.cache_clear()
    e = next(e for e in NUMBERS if not e["exact"])
    sealed = sealed_exercises(TABLE)[e["id"]]
    value = KEY[e["id"]].expected()
    assert judge(sealed, value).status == "right" and calls == [f"chalk/{CHAPTER}".encode()]
    step = (1 + e["rel_tol"]) ** 1.5  # more than one tolerance-wide bucket away each time
    for k in range(1, 4):
        judge(sealed, value * step ** k)
    assert len(calls) == 4
    exercises._slow.cache_clear()


@pytest.mark.parametrize("salt", ["chalk/01_batching/x", "chalk/02_moe_racks/x"])
def test_the_salt_is_per_problem_set(salt, monkeypatch):
    seen = []
    monkeypatch.setattr(exercises.hashlib, "scrypt", lambda *a, **k: seen.append(k["salt"]) or b"\0" * 32)
    exercises._slow.cache_clear()
    sealed_digest(salt, "+5")
    assert seen == [salt.rsplit("/", 1)[0].encode()]
    exercises._slow.cache_clear()
