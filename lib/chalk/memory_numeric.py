"""The formulas ``chalk.memory`` evaluates as numbers (``chalk.memory.numeric_forms``), as plain
Python, so that a kernel evaluates them without solving or lambdifying. Written by ``python -m
chalk.memory``; do not edit: a test keeps it equal to the formulas.
"""


per_chip = lambda N_tot, b_w, m, B, L, b_kv, E, P: (B*L*b_kv*m + N_tot*b_w)/(E*P)
weights_per_chip = lambda N_tot, b_w, m, B, L, b_kv, E, P: N_tot*b_w/(E*P)
kv_per_chip = lambda N_tot, b_w, m, B, L, b_kv, E, P: B*L*b_kv*m/(E*P)
t_read = lambda N_tot, N_rout, k, n_exp, b_w, B, L, b_kv, E, W_chip: (B*L*b_kv + b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot))/(E*W_chip)
token_time = lambda T_read, P, t_hop, n_moe, t_a2a, t_ar: P*t_hop + T_read + n_moe*t_a2a + t_ar
microbatches_busy = lambda P, t_hop, T_read: P**2*t_hop/T_read + P
weight_floor = lambda N_tot, N_rout, k, n_exp, b_w, B, E, W_chip: b_w*(-N_rout*(-k/n_exp + 1)**B + N_tot)/(E*W_chip)
hop_time = lambda t_link, B, d_model, b_act, E, W_out: B*b_act*d_model/(E*W_out) + t_link
crossover_stages = lambda N_tot, b_w, B, L, b_kv: N_tot*b_w/(B*L*b_kv)
crossover_capacity = lambda N_tot, b_w, C, E: 2*N_tot*b_w/(C*E)
max_batch = lambda C, E, P, m, N_tot, b_w, L, b_kv: (C*E*P - N_tot*b_w)/(L*b_kv*m)
max_context = lambda C, E, P, m, N_tot, b_w, B, b_kv: (C*E*P - N_tot*b_w)/(B*b_kv*m)
zero = {
    0: lambda N_tot, b_w, b_g, b_opt, n_DP: N_tot*(b_opt + b_g + b_w),
    1: lambda N_tot, b_w, b_g, b_opt, n_DP: N_tot*b_opt/n_DP + N_tot*(b_g + b_w),
    2: lambda N_tot, b_w, b_g, b_opt, n_DP: N_tot*b_w + N_tot*(b_opt + b_g)/n_DP,
    3: lambda N_tot, b_w, b_g, b_opt, n_DP: N_tot*(b_opt + b_g + b_w)/n_DP,
}
