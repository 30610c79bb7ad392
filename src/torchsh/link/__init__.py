"""The link between a context's forwarder (client side) and a remote daemon's TLS listener (daemon side):
certificates, pinning and the token (tls.py), and two sockets joined (relay.py). Both ends import it."""
