"""`torch bench OP ARGS…`: one PyTorch op timed by torch.utils.benchmark.Timer, alone and as the daemon handles the
same command (how, and what each figure includes: cli/bench.py)."""
from torchsh.cli import bench as timing
from torchsh.verbs import verb


@verb("bench(Argv words, *, float min_run_time=0.01, float max_run_time=%s, int? num_threads=None) -> Json"
      % timing.MAX_RUN_TIME_DEFAULT, category="tensors", words="OP ARGS",
      examples=("torch bench matmul $(torch randn 64 64) $(torch randn 64 64)",
                "torch bench add $(torch randn 1000) 1 --json",
                "torch bench --min_run_time 0.1 -- sum $(torch randn 8 8) --dim 1"))
def bench(ctx, words, min_run_time=0.01, max_run_time=timing.MAX_RUN_TIME_DEFAULT, num_threads=None):
    """Time one op with torch.utils.benchmark.Timer, alone and through the daemon: median, IQR, runs, overhead.

    The op's own flags go after `--` (`torch bench -- sum $t --dim 1`). The daemon's figure is the request's
    handling in torchd (parse, bind, convert, call, register, render), not the socket or the `torch`
    process: bench/latency.py times those. Nothing is kept: results are freed, the random generator is put
    back, no history entry is written. Ops that change their inputs, verbs and jobs are refused.

    Args:
        words: the op and its words, as `torch OP ARGS…` takes them
        min_run_time: Timer.adaptive_autorange's min_run_time: seconds of runs before it may stop
        max_run_time: Timer.adaptive_autorange's max_run_time, for each of the two figures (at most 30): the
            tensor lock is held for about twice this, so other commands wait meanwhile
        num_threads: Timer's num_threads: PyTorch's intra-op threads while timing; by default the daemon's own
            number, as a request runs the op (Timer's own default is 1)
    """
    return timing.bench(ctx, words, min_run_time, max_run_time, num_threads)
