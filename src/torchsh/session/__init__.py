"""Objects that outlive a daemon: recipes (recipe.py), session folders and bundles (store.py, bundle.py).

recipe.py    capture, build, state_tensors, load_state: each object through its handle kind's persistence
             (registry/kinds.py names it; recipes/ holds one per kind), constructor values as JSON, no pickle
snapshot.py  many objects (a whole session) as one safetensors stream with a JSON manifest
transfer.py  session folders and bundles in and out of a registry
"""
