"""The formulas of an MoE layer ``chalk.moe`` evaluates as numbers
(``chalk.moe.layer_numeric_forms``), as plain Python, so that a kernel evaluates them without
simplifying or lambdifying. Written by ``python -m chalk.moe``; do not edit: a test keeps it equal
to the formulas.
"""
from numpy import ceil, minimum
from .moe import _binomial as binomial

alltoall_bytes = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(1 - 1/E)/E
scale_up_bytes = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(S - 1)/E**2
scale_out_bytes = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(1 - S/E)/E
t_alltoall_up = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(1 - 1/E)/(E*W_up)
t_alltoall_out = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(1 - 1/E)/(E*W_out)
t_expert_compute = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*d_ff*d_model*n_mat*n_step*(k + n_sh)/F
t_expert_weights = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: E*b_w*d_ff*d_model*n_mat*(n_sh + (1 - (-k/n_exp + 1)**n_step)*ceil((n_exp + n_red)/E))/W
comm_to_compute = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: F*b_act*k*(E - 1)/(E**2*W_up*d_ff*n_mat*(k + n_sh))
experts_touched = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: n_exp*(1 - (-k/n_exp + 1)**n_step)
scale_up_bytes_dedup = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*S*b_act*d_model*n_step*(1 - 1/S)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)/E
scale_out_bytes_dedup = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*n_step*(1 - S/E)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - S*n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)/E
chips_reached = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: S*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)
domains_reached = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: (1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - S*n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)
t_up = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(S - 1)/(E**2*W_up*eta_link)
t_out = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*k*n_step*(1 - S/E)/(E*W_out*eta_link)
t_up_dedup = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*S*b_act*d_model*n_step*(1 - 1/S)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)/(E*W_up*eta_link)
t_out_dedup = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: 2*b_act*d_model*n_step*(1 - S/E)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - S*n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))*minimum(M_dom, E/S)/(E*W_out*eta_link)
compute_bound_tokens = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: (1/2)*E*F*b_w*(n_sh + ceil((n_exp + n_red)/E))/(W*(k + n_sh))
crossover_rho = lambda n_step, E, S, k, n_sh, n_exp, n_red, d_model, d_ff, n_mat, b_act, b_w, F, W, W_up, W_out, M_dom, eta_link: S*(1 - 1/S)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k))/((1 - S/E)*(1 - binomial(S*n_exp*minimum(M_dom, E/S)/E - S*n_exp/E, k)/binomial(S*n_exp*minimum(M_dom, E/S)/E, k)))
