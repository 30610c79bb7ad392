"""Everything that runs outside torchd: the `torch` client (main.py) and what it does besides one call —
its HTTP (http.py), the trusted connection (wire.py), the daemon's lifecycle (daemonctl.py), the replies it
carries out between two daemons or for a remote context (copyrelay.py, filerelay.py), and the contexts
(contexts/: the store, the ssh and TLS forwarders). Builtins only on the command's path: this package's
face imports nothing, so `torch add` pays for main.py, wire.py, http.py, protocol.py, paths.py and trust.py alone."""
