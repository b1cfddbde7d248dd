"""The formulas ``chalk.roofline`` evaluates as numbers (``chalk.roofline.numeric_forms``), as plain
Python, so that a kernel evaluates them without solving or lambdifying. Written by ``python -m
chalk.roofline``; do not edit: a test keeps it equal to the formulas.
"""
from numpy import maximum

t_matmul = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: 2*B*N_act/F
t_attn = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: B*L*f_att/F_att
t_compute = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: B*L*f_att/F_att + 2*B*N_act/F
t_weights = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot)/W
t_weights_all = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: N_tot*b_w/W
t_kv = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: B*L*b_kv/W
t_mem = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: B*L*b_kv/W + b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot)/W
t_step = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: maximum(B*L*f_att/F_att + 2*B*N_act/F, B*L*b_kv/W + b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot)/W)
t_step_phases = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: maximum(2*B*N_act/F, b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot)/W) + maximum(B*L*f_att/F_att, B*L*b_kv/W)
balance_batch = lambda B, L, N_act, N_tot, b_w, b_kv, F, W, f_att, F_att, N_rout, k, n_exp: (F*F_att*N_tot*b_w)/(-F*F_att*L*b_kv + F*L*W*f_att + 2*F_att*N_act*W)
balance_context = lambda F_att, N_act, W, b_kv, f_att, r: 2*F_att*N_act/(r*(F_att*b_kv - W*f_att))
