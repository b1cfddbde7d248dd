"""Figures drawn from the formulas, the live explorers (ipywidgets) and their static twins.

* ``canvas``: the shared style, PNG output and layered fast redraw;
* ``explorer``: the explorers' base class and control declarations;
* ``twin``: the static-twin JSON and markup, drawn on the site by ``static/chalk-twin.js``;
* one module per chapter: ``plotting`` (Chapter 1's figures), ``batching`` (its explorer and twin)
  and ``serving`` (its serving-loop figures), then one per later chapter, named in ``CHAPTERS``.
"""
import importlib

CHAPTERS = {"01_batching": "batching", "02_moe_racks": "moe_racks", "03_pipelining": "pipelining", "04_memory_capacity": "memory_capacity", "05_overtraining": "overtraining", "06_long_context_pricing": "long_context", "07_ciphers_revnets": "revnets"}
"""Chapter -> the module defining its ``Explorer`` and the reader's ``SESSION`` the bench replays."""


def explorers() -> dict:
    """{chapter: (Explorer class, scripted session)} for every chapter, imported on demand so
    that importing ``chalk.figures`` does not load ipywidgets."""
    out = {}
    for chapter, name in CHAPTERS.items():
        module = importlib.import_module(f"{__name__}.{name}")
        out[chapter] = (module.Explorer, module.SESSION)
    return out
