"""PyTorch classes built from the shell: the nn layer, optimizer and scheduler tables (tables.py),
constructor signatures as op-table arguments (signature.py), and pickle-free state files (state.py)."""
