"""The jobs of one daemon not yet ended: an object its App owns (app.jobs), handed to jobs.start through the
request's ctx. `free` and a scope's end ask it what a running job uses; the TTL and stopping ask whether any
runs, and stopping asks each to stop. Cheap without a running job (nearly every `free`): no walk at all.
"""
from torchsh.errors import TorchshError


class RunningJobs:
    def __init__(self):
        self._jobs = set()  # added by start(), taken out by Job.finish (on its own thread): copied before a walk

    def add(self, job):
        self._jobs.add(job)

    def discard(self, job):
        self._jobs.discard(job)

    def any_running(self):
        return bool(self._jobs)

    def newest_serial(self):
        """The newest job on the tensor thread (not beside the others), or None: a new one queues behind it."""
        return max((j for j in list(self._jobs) if not j.beside), key=lambda j: j.started, default=None)

    def in_use(self, obj):
        """Is obj a running job, or used by one? (registry.end_scope asks; cheap without a running job.)"""
        return bool(self._jobs) and self._user_of(obj) is not None

    def _user_of(self, obj):
        """The running job that is obj or trains it, or None."""
        return next((job for job in list(self._jobs) if obj is job or any(obj is u for u in job.uses)), None)

    def refuse_freeing(self, registry, handles):
        """`torch free` of what a running job uses, or of the running job itself: refused (in_use), naming
        the job. Its work holds the objects anyway; freeing the handles would only lose the trained result."""
        if not self._jobs:
            return
        for handle in handles:
            try:
                obj = registry.get(handle)
            except TorchshError:
                continue  # free itself says what is wrong with this one
            job = self._user_of(obj)
            if job is not None:
                raise TorchshError("in_use", "%s is in use by the running job %s" % (handle.strip(), job.handle),
                                   "stop it first: torch job stop %s" % job.handle)

    def stop_all(self, reason):
        """Ask every running job to stop at its next step boundary (the daemon is stopping: each writes its
        checkpoint first); returns how many were running."""
        running = list(self._jobs)
        for job in running:
            job.request_stop(reason)
        return len(running)
