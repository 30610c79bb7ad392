"""Remote contexts, on the daemon's side (docs/remote.md): the TLS listener (listener.py), the handle names a
named context's daemon prints (`tensor://gpu1/k3f00012`, naming.py), and the caller's files staged on this
host (staging.py). The client's side lives in client/ (contexts/, filerelay.py, copyrelay.py)."""
