"""A fit's epoch metrics (--metrics): running totals over the epoch's batches and the figures read from them
(epoch.py: EpochSums and the metric rows), and the scores past accuracy, from a confusion matrix or per-column
sums (scores.py)."""
