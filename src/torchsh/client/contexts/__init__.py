"""Named contexts, on the client's side (docs/remote.md): the store of records (store.py, private.py),
`torch context …` (cli.py), and the forwarders that make a remote daemon answer on a local socket: OpenSSH's
own (ssh.py, ssh_login.py) or ours over TLS (forwarder.py, a process of its own)."""
