"""The tests' helpers, apart from the tests: daemons of their own (a second daemon, a TLS remote, sshd, a
cgroup), callers (the JSON API, the Python client, a pty), a second uid, planted files, the differential
pipelines and their PyTorch oracle, bounded waits, and what a test needs from the machine (required.py).
Imported as `from support.NAME import …`: tests/ is on sys.path (pytest puts the folder of the rootdir
conftest.py there; bench/remote.py and bench/remote_ssh.py add it themselves). No test lives here."""
