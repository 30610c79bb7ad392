"""`--compile`: a training step's two halves through torch.compile, compiled once and kept (steps.py), and where
the compiled work is kept on disk and whether this machine can compile at all (cache.py)."""
