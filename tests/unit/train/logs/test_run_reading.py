"""train/logs/runs.py reads a run folder's metrics.jsonl in chunks: the epoch rows and the last step row come
out whole across chunk boundaries, a last line cut short is skipped, and a FIFO planted as a run's file
is not read (it would block the daemon)."""
import json
import os

from torchsh.train.logs import runs


def write_log(folder, rows, tail=""):
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows) + tail)


def test_epoch_rows_and_the_last_step_row_come_whole_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "CHUNK", 7)  # every line crosses a chunk boundary
    rows = []
    for step in range(1, 7):
        rows.append({"kind": "step", "epoch": (step + 2) // 3, "step": step, "loss": 1.0 / step, "seconds": 0.1})
        if step % 3 == 0:
            rows.append({"kind": "epoch", "epoch": step // 3, "step": step, "loss": 1.0 / step, "seconds": 0.3})
    write_log(tmp_path, rows + [{"kind": "step", "epoch": 3, "step": 7, "loss": 0.1, "seconds": 0.1}],
              tail='{"kind": "step", "epoch": 3, "st')  # a run writing its next row
    run = runs.read(".", str(tmp_path))
    assert [r["epoch"] for r in run.epochs] == [1, 2]
    assert run.last_step["step"] == 7
    assert run.best("loss") == 1.0 / 6 and run.seconds() == 0.3 + 0.3 + 0.1


def test_a_fifo_planted_as_metrics_jsonl_is_not_read(tmp_path):
    os.mkfifo(os.path.join(tmp_path, "metrics.jsonl"))  # opening it to read would wait for a writer
    run = runs.read(".", str(tmp_path))
    assert (run.epochs, run.last_step, run.status) == ([], None, "failed")


def test_the_command_options_read_back_as_fit_was_given_them():
    options = runs.command_options("torch fit MODEL OPT LOADER --loss_args {'a': 1} --epochs 3 --clip 0.5 "
                                   "--val VAL_LOADER --overwrite")
    assert options == {"loss_args": "{'a': 1}", "epochs": 3, "clip": 0.5, "val": "VAL_LOADER", "overwrite": True}


def test_a_damaged_run_json_and_rows_of_the_wrong_types_are_listed_not_fatal(tmp_path):
    with open(os.path.join(tmp_path, "run.json"), "w") as f:
        json.dump({"command": "torch fit --epochs x --max_steps 3", "optimizer": ["SGD"], "seeds": 7,
                   "loader": {"batch_size": 8}}, f)
    write_log(tmp_path, [{"kind": "epoch", "epoch": "one", "step": "two", "loss": "NaN", "seconds": None}])
    run = runs.read(".", str(tmp_path))
    assert (run.epochs_done(), run.best("loss"), run.seconds(), run.status) == (0, None, 0.0, "failed")
    assert runs.hyperparameters(run.record) == {"max_epochs": "x", "max_steps": 3, "batch_size": 8}
