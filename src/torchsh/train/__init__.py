"""`torch fit`: the training loop run in the daemon (fit.py), its metrics (metrics.py), its log folder
(logdir.py) and the checkpoint it resumes from (resume.py)."""
