"""`torch fit` and what trains: the loop run in the daemon (fit.py, over a plan.py; steps.py: eager or compiled/'s
steps; record.py: one run's rows, checkpoints and end, shared with sweep/vectorized.py), the model's card settled
before it (fitcard.py), its loss (loss/), metrics (metrics/), --resume (resume.py; the checkpoint file
itself: models/checkpoint.py), its log folder and the runs reader (logs/), and torch.distributed's processes
(distributed/); predict.py and evaluate.py run a trained model over data."""
