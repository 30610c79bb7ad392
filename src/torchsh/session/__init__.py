"""Objects that outlive a daemon: recipes (recipe.py), session folders and bundles (store.py, bundle.py).

recipe.py    how to rebuild a module, optimizer, scheduler, dataset or loader: JSON, no tensors, no pickle
state.py     the values that fill a rebuilt object (state_tensors, load_state)
datasets.py  the datasets' part of the recipes (files, splits, transforms, tensors)
snapshot.py  many objects (a whole session) as one safetensors stream with a JSON manifest
transfer.py  session folders and bundles in and out of a registry
"""
