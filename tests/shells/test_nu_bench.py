"""`torch bench` from Nushell: a record (op, pytorch, daemon, overhead_s, num_threads) to take fields from."""


def test_bench_is_a_record_in_nu(nu):
    bench = "let t = (torch randn 100); torch bench add $t 1 --max_run_time 0.1"
    assert nu.json("%s | columns" % bench) == ["op", "pytorch", "daemon", "overhead_s", "num_threads"]
    runs = nu.json("%s | [$in.pytorch.runs $in.daemon.runs]" % bench)
    assert all(isinstance(n, int) and n >= 1 for n in runs), runs
