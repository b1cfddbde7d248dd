"""The formulas ``chalk.pipeline`` evaluates as numbers (``chalk.pipeline.numeric_forms``), as plain
Python with t_F = 1, so that a kernel evaluates them without solving or lambdifying. Written by
``python -m chalk.pipeline``; do not edit: a test keeps it equal to the formulas.
"""
from numpy import maximum

bubble_fraction = lambda P, m, v: (P - 1)/(P + m*v - 1)
bubble_overhead = lambda P, m, v: (P - 1)/(m*v)
bubble_fraction_hops = lambda P, m, v, t_hop, t_B: (t_hop*v*(2*P - 2) + (P - 1)*(t_B + 1)/v)/(m*(t_B + 1) + t_hop*v*(2*P - 2) + (P - 1)*(t_B + 1)/v)
decode_idle = lambda P, m, t_hop: -m/maximum(m, P*(t_hop + 1)) + 1
decode_min_microbatches = lambda P, t_hop: P*(t_hop + 1)
rack_ratio = lambda k, L_stage, rho, E, b_disp, b_comb, b_bnd: L_stage*k*(E - 1)*(b_comb + b_disp)/(E*rho*b_bnd)
lecture_limit = lambda k, L_stage, rho, b_disp, b_comb, b_bnd: L_stage*k*(b_comb + b_disp)/(rho*b_bnd)
experts_per_crossing = lambda rho: rho
