"""`torch sweep`: hyperparameter search with Optuna (verbs/sweep.py is the verb; docs/experiments.md)."""
