"""The serve job: a Job (jobs/job.py) that says what a server says, and wakes its batch loop at a stop request."""
from torchsh.jobs.job import Job
from torchsh.serve import metrics


class ServeJob(Job):
    def __init__(self, served):
        super().__init__("serve", list(metrics.COLUMNS), uses=(served.model,))
        self.served = served

    def request_stop(self, reason=None):
        super().request_stop(reason)
        self.served.wake()  # an idle loop waits on its queue: it looks at should_stop now

    def progress_text(self):
        """`torch job list`'s progress: the counts, and how many requests wait."""
        return "%s  %d waiting" % (self.served.metrics.text(), len(self.served.queue))  # not "queued": a job STATE

    def stopped_line(self):
        return "stopped serving %s after %d requests" % (self.served.name, self.served.metrics.requests) + (
            ": %s" % self.stop_reason if self.stop_reason else "")
