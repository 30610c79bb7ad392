"""A run's folder (`fit --log DIR`): where it is and whether it may be written (rundir.py), what is written while it
runs (logdir.py: run.json, metrics.jsonl/csv, checkpoints' place; writers.py; tfevents.py: TensorBoard's events),
and the reader behind `torch runs` and `torch plot` (runs.py)."""
