"""The formulas of ``model_formulas`` as plain Python, so that a catalog entry's parameters,
KV-cache bytes and FLOPs are evaluated without SymPy. Written by ``python -m
chalk.catalog.model_formulas``; do not edit: a test keeps it equal to the formulas.
"""
from numpy import minimum

ATTENTION_PARAMS = {
    'gqa': lambda d_head, d_model, n_heads, n_kv: 2*d_head*d_model*(n_heads + n_kv),
    'mla': lambda d_R, d_c, d_cq, d_head, d_model, n_heads: d_head*d_model*n_heads + 2*d_head*d_c*n_heads + d_model*d_cq + d_model*(d_R + d_c) + d_cq*n_heads*(d_R + d_head),
    'mha': lambda d_head, d_model, n_heads, n_kv: 2*d_head*d_model*(n_heads + n_kv),
    'mqa': lambda d_head, d_model, n_heads, n_kv: 2*d_head*d_model*(n_heads + n_kv),
}
RELATIVE_POSITION_PARAMS = lambda d_head, d_model, n_heads: d_head*d_model*n_heads
KV_PROJECTION_PARAMS = lambda d_head, d_model, n_kv: 2*d_head*d_model*n_kv
FFN_PARAMS = lambda d_ff, d_model, n_mat: d_ff*d_model*n_mat
EMBEDDING_PARAMS = lambda d_model, n_vocab: d_model*n_vocab
SSM_PARAMS = lambda d_conv, d_inner, d_model, d_state, r_dt: d_inner*(d_conv + 3*d_model + 3*d_state + 2*r_dt)
KV_BYTES_LONG = {
    'gqa': lambda b_el, d_head, g_kv, n_G, n_kv: 2*b_el*d_head*n_G*n_kv/g_kv,
    'mla': lambda b_el, d_R, d_c, g_kv, n_G: b_el*n_G*(d_R + d_c)/g_kv,
    'mha': lambda b_el, d_head, g_kv, n_G, n_kv: 2*b_el*d_head*n_G*n_kv/g_kv,
    'mqa': lambda b_el, d_head, g_kv, n_G, n_kv: 2*b_el*d_head*n_G*n_kv/g_kv,
}
KV_BYTES_WINDOWED = {
    'gqa': lambda L, b_el, d_head, g_kv, n_kv, n_loc, w: 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
    'mla': lambda L, b_el, d_R, d_c, g_kv, n_loc, w: b_el*n_loc*(d_R + d_c)*minimum(L, w)/g_kv,
    'mha': lambda L, b_el, d_head, g_kv, n_kv, n_loc, w: 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
    'mqa': lambda L, b_el, d_head, g_kv, n_kv, n_loc, w: 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
}
KV_BYTES_CONTEXT = {
    'gqa': lambda L, b_el, d_head, g_kv, n_G, n_kv, n_loc, w: 2*L*b_el*d_head*n_G*n_kv/g_kv + 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
    'mla': lambda L, b_el, d_R, d_c, g_kv, n_G, n_loc, w: L*b_el*n_G*(d_R + d_c)/g_kv + b_el*n_loc*(d_R + d_c)*minimum(L, w)/g_kv,
    'mha': lambda L, b_el, d_head, g_kv, n_G, n_kv, n_loc, w: 2*L*b_el*d_head*n_G*n_kv/g_kv + 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
    'mqa': lambda L, b_el, d_head, g_kv, n_G, n_kv, n_loc, w: 2*L*b_el*d_head*n_G*n_kv/g_kv + 2*b_el*d_head*n_kv*n_loc*minimum(L, w)/g_kv,
}
ATTENTION_LONG = {
    'decode': {
        'gqa': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
        'mla': lambda d_R, d_c, n_G, n_heads: 2*n_G*n_heads*(d_R + 2*d_c),
        'mha': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
        'mqa': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
    },
    'prefill': {
        'gqa': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
        'mla': lambda d_R, d_head, n_G, n_heads: 2*n_G*n_heads*(d_R + 2*d_head),
        'mha': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
        'mqa': lambda d_head, n_G, n_heads: 4*d_head*n_G*n_heads,
    },
}
ATTENTION_WINDOWED = {
    'decode': {
        'gqa': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
        'mla': lambda L, d_R, d_c, n_heads, n_loc, w: 2*n_heads*n_loc*(d_R + 2*d_c)*minimum(L, w),
        'mha': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
        'mqa': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
    },
    'prefill': {
        'gqa': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
        'mla': lambda L, d_R, d_head, n_heads, n_loc, w: 2*n_heads*n_loc*(d_R + 2*d_head)*minimum(L, w),
        'mha': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
        'mqa': lambda L, d_head, n_heads, n_loc, w: 4*d_head*n_heads*n_loc*minimum(L, w),
    },
}
FORWARD_FLOPS_PER_TOKEN = {
    'gqa': lambda L, N_act, N_emb, d_head, n_G, n_heads, n_loc, w: 2*N_act - 2*N_emb + 4*d_head*n_heads*(L*n_G + n_loc*minimum(L, w)),
    'mla': lambda L, N_act, N_emb, d_R, d_head, n_G, n_heads, n_loc, w: 2*N_act - 2*N_emb + 2*n_heads*(d_R + 2*d_head)*(L*n_G + n_loc*minimum(L, w)),
    'mha': lambda L, N_act, N_emb, d_head, n_G, n_heads, n_loc, w: 2*N_act - 2*N_emb + 4*d_head*n_heads*(L*n_G + n_loc*minimum(L, w)),
    'mqa': lambda L, N_act, N_emb, d_head, n_G, n_heads, n_loc, w: 2*N_act - 2*N_emb + 4*d_head*n_heads*(L*n_G + n_loc*minimum(L, w)),
}
TRAINING_FLOPS = lambda D, N_act: 6*D*N_act
