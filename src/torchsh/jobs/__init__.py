"""Jobs: long work (`torch fit`) running in the daemon, to watch (`job logs`), leave (`--detach`),
wait for and stop. job.py runs the work and keeps what it says; render.py shows it to a follower;
follow.py answers a follower's bounded poll. docs/jobs.md is the user's view."""
from torchsh.jobs.job import Job, any_running, start, stop_all  # noqa: F401
