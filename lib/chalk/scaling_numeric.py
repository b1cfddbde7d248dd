"""The formulas ``chalk.scaling`` evaluates as numbers (``chalk.scaling.numeric_forms``), as plain
Python, so that a kernel evaluates them without solving or lambdifying. Written by ``python -m
chalk.scaling``; do not edit: a test keeps it equal to the formulas.
"""


loss = lambda N_act, D, E_0, A, B_0, alpha, beta: A*N_act**(-alpha) + B_0*D**(-beta) + E_0
n_star = lambda C_train, E_0, A, B_0, alpha, beta: ((1/6)*C_train)**(beta/(alpha + beta))*(A*alpha/(B_0*beta))**(1/(alpha + beta))
frontier_tokens = lambda N_act, E_0, A, B_0, alpha, beta: (B_0*N_act**alpha*beta/(A*alpha))**(1/beta)
n_of_u = lambda u, ell, E_0, A, B_0, alpha, beta: (A/(u*(-E_0 + ell)))**(1/alpha)
d_of_u = lambda v, ell, E_0, A, B_0, alpha, beta: (B_0/(v*(-E_0 + ell)))**(1/beta)
per_param = lambda u, v, ell, E_0, A, B_0, alpha, beta: 6*(-B_0/(v*(E_0 - ell)))**(1/beta)*(alpha*u - beta*v)/(beta*v)
u_compute_optimal = lambda alpha, beta: beta/(alpha + beta)
penalty = lambda p, q: 2*p**(p/(p + q))*q**(q/(p + q))/(p + q)
place = lambda p, q: (p/q)**(1/(p + q))
phases = {
    'pretraining': lambda N_act, D, D_inf, eta_inf, D_RL, kappa, eta_RL: 6*D*N_act,
    'rl': lambda N_act, D, D_inf, eta_inf, D_RL, kappa, eta_RL: D_RL*N_act*kappa/eta_RL,
    'inference': lambda N_act, D, D_inf, eta_inf, D_RL, kappa, eta_RL: 2*D_inf*N_act/eta_inf,
}
linear = lambda D_inf, eta_inf, D_RL, kappa, eta_RL: D_RL*kappa/eta_RL + 2*D_inf/eta_inf
rl_per_token = lambda eta_dec, trained_fraction, extra_forwards: 2*(eta_dec*trained_fraction*(extra_forwards + 3) + 1)/eta_dec
split_rl_shares = lambda eta_RL, kappa, s_RL, s_pre: (1/6)*kappa*s_pre/(eta_RL*s_RL)
split_inf_shares = lambda eta_inf, s_inf, s_pre: (1/3)*s_pre/(eta_inf*s_inf)
