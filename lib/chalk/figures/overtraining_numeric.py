"""The closed forms Chapter 5's figures draw (``chalk.figures.overtraining.numeric_forms``), as
plain Python, so that importing the figures solves and lambdifies nothing. Written by ``python -m
chalk.figures.overtraining``; do not edit: a test keeps it equal to the formulas.
"""


ISO_TOKENS = lambda C_train, N_act: (1/6)*C_train/N_act
F = lambda a, b, p, q, x: a*x**p + b*x**(-q)
RISING = lambda a, p, x: a*x**p
FALLING = lambda b, q, x: b*x**(-q)
X_MIN = lambda a, b, p, q: (b*q/(a*p))**(1/(p + q))
X_EQUAL = lambda a, b, p, q: (b/a)**(1/(p + q))
