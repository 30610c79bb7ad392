"""Remote daemons as contexts (docs/remote.md): the context store, the TLS listener and forwarder, the
ssh forwarder (ssh.py), and the handle names a named context's daemon prints (`tensor://gpu1/k3f00012`)."""
