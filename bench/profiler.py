"""`torch profile --out DIR -- CMD` against CMD alone, CMD being 20 `torch add` commands on a 256x256 tensor: what
recording costs (the Python tracer on the tensor thread, the profile's start and finish, the trace, the folded
stacks and the table written). Reference: the same CMD, not profiled. No target: recording costs by nature; the
row says how much (docs/profile.md: Limits)."""
import itertools
import os
import shutil
import tempfile

from bench.common import CLIENT, interleaved, row, spawn_ms

COMMANDS = 20


def run(daemon, quick=False):
    t = daemon.cli("randn", "256", "256")
    loop = "for i in $(seq %d); do %s add %s 1 >/dev/null; done" % (COMMANDS, CLIENT, t)
    folder, rounds = tempfile.mkdtemp(prefix="tshprof-"), itertools.count()
    try:  # a fresh --out each round: a folder that holds a profile is refused (run_exists)
        subject = lambda: spawn_ms([CLIENT, "profile", "--out", os.path.join(folder, str(next(rounds))),  # noqa: E731
                                    "--", "bash", "-c", loop], env=daemon.env)
        reference = lambda: spawn_ms(["/bin/bash", "-c", loop], env=daemon.env)  # noqa: E731
        subj, refs, noise = interleaved(subject, reference, 2 if quick else 3, 2 if quick else 3)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [row("`torch profile --out DIR -- CMD`, CMD %d `torch add` commands" % COMMANDS, subj,
                "CMD alone", refs, noise=noise)]
