"""The formulas of ``chalk.moe`` that the catalog's tables evaluate, as plain Python, so that
``python -m chalk list deployments`` needs no SymPy. Written by ``python -m chalk.moe``; do not
edit: a test keeps it equal to the formulas.
"""
from numpy import ceil

EXPERTS_PER_CHIP = lambda E, n_exp, n_red: ceil((n_exp + n_red)/E)
MAX_TOTAL_PARAMS = lambda C, S, b_w: C*S/b_w
