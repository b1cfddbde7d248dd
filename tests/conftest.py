"""Shared test settings: the repository root, and a bounded Hypothesis profile for CI."""
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

settings.register_profile("chalk", max_examples=60, deadline=None)
settings.load_profile("chalk")
