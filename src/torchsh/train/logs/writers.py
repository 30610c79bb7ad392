"""Which `torch fit --log` folders a process is writing now: `torch runs ls` calls those runs `running`.

A fit holds its metrics.jsonl open for appending from its first row to its end (train/logs/logdir.py), in the
daemon or, for `fit --nproc_per_node`, in rank 0's process; a reader (`torch plot`) opens it read-only and
briefly. So a run is running when a process holds the file open for writing, which Linux shows in
/proc/PID/fd (the link) and /proc/PID/fdinfo (the open flags) for the processes this user may look into.
Elsewhere (no /proc) nothing is found, and no run reads as running.
"""
import os


def writing_logs():
    """The metrics.jsonl files processes hold open for writing (/proc; empty where there is none)."""
    found = set()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        fds = "/proc/%s/fd" % pid
        try:
            names = os.listdir(fds)
        except OSError:
            continue  # another user's process, or gone
        for fd in names:
            try:
                target = os.readlink("%s/%s" % (fds, fd))
                if target.endswith("/metrics.jsonl") and _for_writing(pid, fd):
                    found.add(target)
            except OSError:
                continue
    return found


def _for_writing(pid, fd):
    with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
        for line in f:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY
    return False
