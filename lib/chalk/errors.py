"""Input checks shared by every public function.

Each check raises with the parameter's name and its valid range, so a bad value fails where the
user typed it rather than as a NaN or an exception from deep inside NumPy.
"""
import numpy as np


class ChalkError(ValueError):
    """Bad input to a chalk function; the message names the parameter and the valid range."""


class UnknownName(ChalkError, KeyError):
    """A chip, system, model or dtype name that the catalog does not hold."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return self.args[0]


class DoesNotFit(ChalkError):
    """The weights and KV cache need more memory than the chips have."""

    def __init__(self, message: str, needed: float, available: float):
        super().__init__(message)
        self.needed = needed
        self.available = available

    @property
    def shortfall(self) -> float:
        return self.needed - self.available


def _as_array(name: str, value):
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ChalkError(f"{name} must be a number, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ChalkError(f"{name} must be finite, got {value!r}")
    return arr


def positive(name: str, value):
    """Return ``value`` if every element is > 0, else raise naming ``name``."""
    arr = _as_array(name, value)
    if np.any(arr <= 0):
        raise ChalkError(f"{name} must be > 0, got {value!r}")
    return value


def non_negative(name: str, value):
    """Return ``value`` if every element is >= 0, else raise naming ``name``."""
    arr = _as_array(name, value)
    if np.any(arr < 0):
        raise ChalkError(f"{name} must be >= 0, got {value!r}")
    return value


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ChalkError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def in_range(name: str, value, low: float, high: float):
    arr = _as_array(name, value)
    if np.any(arr < low) or np.any(arr > high):
        raise ChalkError(f"{name} must be between {low:g} and {high:g}, got {value!r}")
    return value


def lookup(kind: str, name: str, table: dict, param: str = "name"):
    """``table[name]``, or an UnknownName error that lists the known names."""
    if name in table:
        return table[name]
    known = ", ".join(sorted(table))
    raise UnknownName(f"{param}: unknown {kind} {name!r}; known {kind}s: {known}")
