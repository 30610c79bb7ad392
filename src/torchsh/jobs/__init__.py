"""Jobs: long work (`torch fit`) running in the daemon, to watch (`job logs`), leave (`--detach`),
wait for and stop. job.py runs the work and keeps what it says; render.py shows it to a follower;
follow.py answers a follower's bounded poll; running.py is the daemon's set of running jobs (App owns it:
app.jobs). docs/jobs.md is the user's view."""
from torchsh.jobs.job import Job, start  # noqa: F401
from torchsh.jobs.running import RunningJobs  # noqa: F401
