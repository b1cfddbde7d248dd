"""Figures drawn from the formulas, the live explorers (ipywidgets) and their static twins."""
