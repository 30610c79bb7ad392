"""A job's progress as text: the plain progress line and the elapsed clock (jobs/job.py, render.py, `job list`)."""


def progress_text(event):
    """One progress line (no newline): batch/total, rate, ETA, running loss."""
    parts = ["epoch %s" % event.get("epoch"), "batch %s/%s" % (event.get("batch"), event.get("batches"))]
    if event.get("trial") is not None:  # a sweep's: one trial (7), or those training together (0..7)
        parts.insert(0, "trial %s" % event["trial"])
    if event.get("rate") is not None:
        parts.append("%.1f batch/s" % event["rate"])
    if event.get("eta_s") is not None:
        parts.append("ETA %s" % clock(event["eta_s"]))
    if event.get("loss") is not None:
        parts.append("loss %.4g" % event["loss"])
    return "  ".join(parts)


def clock(seconds):
    seconds = int(max(0, seconds))
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return "%d:%02d:%02d" % (h, m, s) if h else "%d:%02d" % (m, s)
