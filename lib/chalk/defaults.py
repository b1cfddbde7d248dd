"""The library's default headroom and the valid ranges of its inputs, as plain data.

They live apart from ``roofline`` (which re-exports them) so that ``python -m chalk``'s argument
parser can read them without importing SymPy: ``--help`` and ``list`` start as fast as NumPy loads.
"""

HEADROOM = 0.10
"""Fraction of HBM every fit check keeps free for activations, the runtime and fragmentation.

The one default of the library, the calculator and ``python -m chalk``; pass ``headroom=0`` for
the bare capacity bound (as the scaling book's worked answers use)."""

LIMITS = {"chips": (1, 1_000_000), "batch": (1, 1e9), "context": (0, 1e9), "prompt": (1, 1e9),
          "usd_per_chip_hour": (0.001, 10_000)}
"""Valid ranges of the inputs: wider than any real deployment, narrow enough that a slip of the
keyboard (1e20 sequences, 1e30 chips) is an error naming the range, not an answer."""
