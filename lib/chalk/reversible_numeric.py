"""The formulas ``chalk.reversible`` evaluates as numbers (``chalk.reversible.numeric_forms``), as
plain Python, so that a kernel evaluates them without lambdifying. Written by ``python -m
chalk.reversible``; do not edit: a test keeps it equal to the formulas.
"""


numeric = {
    'activation_bytes_full': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width: n_layers*(kept_per_width*d_model*n_tok + L*n_heads*n_tok*(2*b_act + 1)),
    'activation_bytes_block': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width: b_act*d_model*n_layers*n_tok,
    'activation_bytes_reversible': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width: 2*b_act*d_model*n_tok,
    'activation_peak_full': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width, n_vocab, b_logit: 3*b_act*d_model*n_tok + b_logit*n_tok*n_vocab + n_layers*(kept_per_width*d_model*n_tok + L*n_heads*n_tok*(2*b_act + 1)),
    'activation_peak_block': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width, n_vocab, b_logit: kept_per_width*d_model*n_tok + L*n_heads*n_tok*(2*b_act + 1) + b_act*d_model*n_layers*n_tok + 3*b_act*d_model*n_tok + b_logit*n_tok*n_vocab,
    'activation_peak_reversible': lambda n_tok, d_model, n_layers, b_act, n_heads, L, kept_per_width, n_vocab, b_logit: kept_per_width*d_model*n_tok + L*n_heads*n_tok*(2*b_act + 1) + 9*b_act*d_model*n_tok + b_logit*n_tok*n_vocab,
    'gpt_per_width': lambda b_act: 16*b_act + 2,
    'selective_overhead': lambda N_act, n_layers, n_heads, d_head, L: 4*L*d_head*n_heads*n_layers/(12*L*d_head*n_heads*n_layers + 6*N_act),
    'step_overhead_full': lambda N_act, n_layers, n_heads, d_head, L: 2*L*d_head*n_heads*n_layers/(12*L*d_head*n_heads*n_layers + 6*N_act),
    'step_overhead_block': lambda N_act, n_layers, n_heads, d_head, L: (6*L*d_head*n_heads*n_layers + 2*N_act)/(12*L*d_head*n_heads*n_layers + 6*N_act),
    'step_overhead_reversible': lambda N_act, n_layers, n_heads, d_head, L: (6*L*d_head*n_heads*n_layers + 2*N_act)/(12*L*d_head*n_heads*n_layers + 6*N_act),
    'score_elements': lambda n_tok, n_heads, L: L*n_heads*n_tok,
    'training_flops_full': lambda N_act, D: 6*D*N_act,
    'training_flops_block': lambda N_act, D: 8*D*N_act,
    'training_flops_reversible': lambda N_act, D: 8*D*N_act,
}
