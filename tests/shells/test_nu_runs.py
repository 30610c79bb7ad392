"""`torch runs` from Nushell: `runs ls` is a table (one record per run, the differing hyperparameters as
columns), `runs best` a path to use, and `runs diff` a table of the differences (empty when the runs agree)."""
import json
import os


def make_run(folder, lr, losses):
    """A finished run as `torch fit --log` writes it: run.json and metrics.jsonl's epoch rows."""
    os.makedirs(folder)
    record = {"command": "torch fit MODEL OPT LOADER --epochs %d --log %s" % (len(losses), folder),
              "optimizer": {"type": "SGD", "param_groups": [{"lr": lr, "momentum": 0}]},
              "loader": {"batch_size": 8}}
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump(record, f)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps({"kind": "epoch", "epoch": e, "step": e, "loss": v, "val_loss": v, "seconds": 0.5})
                     + "\n" for e, v in enumerate(losses, 1))


def test_runs_ls_is_a_table_and_best_a_path_in_nu(nu, sh):
    runs = sh.tmp("nu-runs")
    make_run(os.path.join(runs, "a"), 0.1, [1.0, 0.5])
    make_run(os.path.join(runs, "b"), 0.01, [1.0, 0.8, 0.7])
    rows = nu.json("torch runs ls %s | select name status epochs best lr" % runs)
    assert rows == [{"name": "a", "status": "finished", "epochs": 2, "best": 0.5, "lr": 0.1},
                    {"name": "b", "status": "finished", "epochs": 3, "best": 0.7, "lr": 0.01}]
    assert nu.json("torch runs ls %s | where lr < 0.05 | get name" % runs) == ["b"]
    best = nu.json("torch runs best %s --by val_loss | str trim" % runs)  # a path from the caller's cwd
    assert os.path.join(sh.folder, best) == os.path.join(runs, "a")
    a, b = os.path.join(runs, "a"), os.path.join(runs, "b")
    assert {"key": "lr", "a": 0.1, "b": 0.01} in nu.json("torch runs diff %s %s" % (a, b))
    assert nu.json("torch runs diff %s %s | is-empty" % (a, a)) is True
