"""The daemon's history: a bounded log of the requests that changed its state (log.py), the backward slice
that keeps what produced one object (slice.py), each entry as the PyTorch it ran (forms.py, by the form its
verb's row holds: verbforms.py, datasets.py, files.py), and the plain PyTorch script `torch history --python`
writes from them (python.py, with digest.py's checks)."""
