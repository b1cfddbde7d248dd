"""Input checks shared by every public function.

Each check raises with the parameter's name and its valid range, so a bad value fails where the
user typed it rather than as a NaN or an exception from deep inside NumPy.
"""
import difflib

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


class ChalkWarning(UserWarning):
    """A legal input outside what a model or a fit was made for: the number is extrapolated."""


class ContextWarning(ChalkWarning):
    """A context longer than the model's published maximum: the numbers are extrapolated."""


class RangeWarning(ChalkWarning):
    """An input outside the range a formula or fit was made for (a fit's data, one scale-up domain)."""


def _as_array(name: str, value):
    # NumPy reads "100" and True as numbers; a caller who typed either made a mistake.
    if isinstance(value, (str, bytes)) or np.asarray(value).dtype.kind in "bSUV":
        raise ChalkError(f"{name} must be a number, got {value!r}")
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


def whole(name: str, value, low: float = 1):
    """Return ``value`` if every element is a whole number >= ``low`` (a count: sequences, chips),
    else raise naming ``name``. Arrays are checked elementwise."""
    arr = _as_array(name, value)
    if np.any(arr < low) or np.any(arr != np.floor(arr)):
        raise ChalkError(f"{name} must be a whole number >= {number_text(low)}, got {value!r}")
    return value


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ChalkError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def in_range(name: str, value, low: float, high: float):
    arr = _as_array(name, value)
    if np.any(arr < low) or np.any(arr > high):
        raise ChalkError(f"{name} must be between {number_text(low)} and {number_text(high)}, got {value!r}")
    return value


def number_text(x: float) -> str:
    """1000000 -> '1,000,000'; 0.001 -> '0.001': a range a reader takes in at a glance."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def find(name, table):
    """The key of ``table`` that ``name`` names, ignoring case (``h100-sxm``, ``DeepSeek-V3``), or None."""
    if name in table:
        return name
    folded = {str(key).casefold(): key for key in table}
    return folded.get(str(name).casefold())


def unknown(kind: str, name, known, param: str = "name", plural: str | None = None) -> UnknownName:
    """The error for a name not in ``known``: the closest known name, then all of them."""
    names = sorted(str(k) for k in known)
    typed = str(name).casefold()
    # A name typed short is a prefix or a part of the one meant (h100 -> H100-SXM), whatever its
    # letters share with others; only a name that is neither is taken for a typo (deepsek).
    close = ([n for n in names if n.casefold().startswith(typed)] or [n for n in names if typed in n.casefold()]
             if typed else [])
    if close and all(n.startswith(min(close, key=len)) for n in close):
        close = [min(close, key=len)]  # the others are its variants (a dated price: name@2026-01)
    if not close:
        by_fold = {n.casefold(): n for n in names}
        close = [by_fold[n] for n in difflib.get_close_matches(typed, list(by_fold), n=1, cutoff=0.6)]
    hint = (f"; did you mean {close[0]!r}?" if len(close) == 1 else
            f"; did you mean one of {', '.join(map(repr, close))}?" if close else "")
    return UnknownName(f"{param}: unknown {kind} {name!r}{hint} (known {plural or kind + 's'}: "
                       f"{', '.join(names)})")


def lookup(kind: str, name, table: dict, param: str = "name", plural: str | None = None):
    """``table[name]`` ignoring case, or an UnknownName error with a did-you-mean and the known names."""
    key = find(name, table)
    if key is None:
        raise unknown(kind, name, table, param, plural)
    return table[key]
