"""The course's data: chips, systems, models, API prices, storage tiers and quoted figures.

Each kind lives in one TOML file under ``data/`` (every entry with its source URL and as-of date)
and one loader module here that validates it into frozen dataclasses: ``hardware``, ``systems``,
``models``, ``prices``, ``quoted``, ``operators`` (operators' published serving figures);
``reference`` renders them as the book's tables. This module
holds the checks every loader shares.
"""
import datetime
import tomllib
from importlib import resources

from ..errors import ChalkError


def load(filename: str) -> dict[str, dict]:
    """Parse ``data/<filename>`` and check the fields every entry must carry."""
    text = resources.files(__name__).joinpath("data", filename).read_text(encoding="utf-8")
    table = tomllib.loads(text)
    for name, entry in table.items():
        where = f"{filename} [{name}]"
        for key in ("source", "as_of"):
            if key not in entry:
                raise ChalkError(f"{where}: missing '{key}'")
        check_source(where, entry["source"], entry["as_of"])
    return table


def check_source(where: str, source, as_of, prefix: str = "") -> None:
    """A source must be an https URL and its as-of date an ISO date (``prefix`` names the keys)."""
    if not str(source).startswith("https://"):
        raise ChalkError(f"{where}: {prefix}source must be an https URL, got {source!r}")
    try:
        datetime.date.fromisoformat(as_of)
    except (TypeError, ValueError):
        raise ChalkError(f"{where}: {prefix}as_of must be a date YYYY-MM-DD, got {as_of!r}") from None


def require(where: str, entry: dict, fields: dict[str, type]) -> None:
    """Check that ``entry`` has each field with the given type and, for numbers, a positive value."""
    for key, kind in fields.items():
        if key not in entry:
            raise ChalkError(f"{where}: missing '{key}'")
        value = entry[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise ChalkError(f"{where}: '{key}' must be {kind.__name__}, got {value!r}")
        if kind in (int, float) and value <= 0:
            raise ChalkError(f"{where}: '{key}' must be > 0, got {value!r}")
