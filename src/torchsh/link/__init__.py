"""The link between a context's forwarder (client side) and a remote daemon's TLS listener (daemon side):
certificates, pinning and the token (tls.py; both ends), and two sockets joined (relay.py: the forwarder's)."""
