"""Seeing results: training metrics as a terminal chart (terminal.py) or a PNG (png.py), read from a
`torch fit --log DIR` metrics.jsonl (series.py), and tensors as PNG images (png.py)."""
