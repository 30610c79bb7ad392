"""How each handle kind outlives a daemon: its Persistence (capture, build, state, load), named by its row in
registry/kinds.py; session/recipe.py walks the objects through them.

base.py           the Persistence row, what torchsh built (record), JSON state, not_portable
tensors.py        tensors: shape, dtype, device; value and grad
modules.py        modules: class and constructor values, modes, frozen parameters, placement; state_dict
optimizers.py     optimizers (groups as references to parameters) and schedulers; state_dict as JSON
datasets.py       datasets (one row per class the data verbs make) and loaders
streams.py        a stream's piece-backed fields: Parquet and Arrow sets, a `data sql` result, tar shards
distributions.py  distributions: class and parameters
"""
