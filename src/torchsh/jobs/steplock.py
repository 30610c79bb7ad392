"""The tensor lock as a job holds it (jobs/job.py): taken for the work, let go at a step boundary when a request
waits for it, and the work's warnings recorded while it is held (torchsh/warned.py). At each step boundary it
calls the step hook the daemon's App hands in (app.hooks.step: `torch profile --steps` counts there), knowing
nothing of who listens."""


class StepLock:
    """The tensor lock as a job holds it: taken for the work, let go between steps when someone waits.
    On the tensor thread, "someone" is a request queued for that thread: the job answers it there.
    While it is held, the work's warnings go to catch (torchsh/warned.Catch); between steps, the others' are theirs."""

    def __init__(self, app, op, tensor_thread, catch, at_step):
        self.app, self.op, self.held, self.tensor_thread, self.catch = app, op, None, tensor_thread, catch
        self.at_step = at_step  # called at each step boundary, on the tensor thread

    def take(self):
        self.held = self.app.tensor_lock(self.op)
        self.held.__enter__()
        self.catch.__enter__()

    def give(self):
        if self.held is not None:
            held, self.held = self.held, None
            self.catch.__exit__(None, None, None)
            held.__exit__(None, None, None)

    def between_steps(self):
        """A step boundary: requests that queued for the lock meanwhile run now, then the work goes on.
        Returns False (for should_stop's `or`)."""
        self.at_step()  # `torch profile --steps N` counts steps here (and its --max_s is checked)
        if self.tensor_thread is not None:
            if self.tensor_thread.waiting():
                self.give()
                self.tensor_thread.serve_waiting()
                self.take()
        elif self.app.lock_waiters():
            self.give()
            self.take()
        return False


class Beside(StepLock):
    """A job beside the others (start's beside) holds no lock between its pieces of tensor work: it takes it
    for each, and records its warnings there itself (serve/batcher.py: a Catch around each batch)."""

    def take(self):
        pass

    def between_steps(self):
        return False
