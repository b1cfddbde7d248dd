"""The formulas ``chalk.pricing`` evaluates as numbers (``chalk.pricing.numeric_forms``), as plain
Python, so that a kernel evaluates them without solving or lambdifying. Written by ``python -m
chalk.pricing``; do not edit: a test keeps it equal to the formulas.
"""
from numpy import log, minimum

hold_cost = lambda p_hold, T_hold, C, W: p_hold*(C/W + T_hold)
reload_wait = lambda n_chips, p_chip, W, W_out: (1/3600)*n_chips*p_chip/minimum(W, W_out*n_chips)
mismatch = lambda C, W, T_hold: abs(log(C/(T_hold*W)))
kv_lecture = lambda N_act, r, L_star, b_w, f_att: f_att/r + N_act*b_w/(L_star*r)
decode_mfu = lambda p_in, p_out: p_in/p_out
