"""Answer keys of the problem sets: one module ``ch<NN_name>`` per chapter, each with EXERCISES."""
