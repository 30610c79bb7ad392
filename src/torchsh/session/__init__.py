"""Objects that outlive a daemon: recipes (recipe.py), session folders and bundles (store.py, bundle.py).

recipe.py   how to rebuild a module, optimizer, scheduler, dataset or loader: JSON, no tensors, no pickle
datasets.py the datasets' part of the recipes (files, splits, transforms, tensors)
"""
