"""--overwrite's move aside, in every way a new run can end: with a checkpoint the old run goes, without one
(a failure, a stop before its first step) it comes back byte for byte; run_exists; and --version's numbering,
as Lightning's _get_next_version: folders named version_<digits>[_…], the highest + 1, version_0 first."""
import os

import pytest

from torchsh.errors import TorchshError
from torchsh.train.logs import rundir

OLD = {"run.json": b"{}\n", "metrics.jsonl": b'{"kind": "epoch"}\n', "last.safetensors": b"old checkpoint",
       "notes.txt": b"the user's own file"}


def folder_with_a_run(tmp_path):
    for name, data in OLD.items():
        (tmp_path / name).write_bytes(data)
    return str(tmp_path)


def contents(folder):
    return {name: open(os.path.join(folder, name), "rb").read() for name in os.listdir(folder)}


def test_a_new_run_without_a_checkpoint_gives_the_folder_back_to_the_old_run(tmp_path):
    folder = folder_with_a_run(tmp_path)
    replacing = rundir.Replacing(folder)
    assert sorted(os.listdir(folder)) == sorted([os.path.basename(replacing.aside), "notes.txt"])
    (tmp_path / "metrics.jsonl").write_bytes(b"the new run's first rows\n")  # then it failed, or was stopped
    replacing.settle()
    assert contents(folder) == OLD


def test_settle_after_a_checkpoint_removes_the_hidden_folder(tmp_path):
    folder = folder_with_a_run(tmp_path)
    replacing = rundir.Replacing(folder)
    (tmp_path / "last.safetensors").write_bytes(b"new checkpoint")
    replacing.settle()
    assert contents(folder) == {"last.safetensors": b"new checkpoint", "notes.txt": b"the user's own file"}


def test_a_folder_holding_a_run_is_refused_naming_what_it_holds(tmp_path):
    rundir.refuse_a_run_there(str(tmp_path), "runs/1")  # empty: fine
    folder = folder_with_a_run(tmp_path)
    with pytest.raises(TorchshError) as e:
        rundir.refuse_a_run_there(folder, "runs/1")
    assert e.value.code == "run_exists" and "runs/1 holds a run (run.json, metrics.jsonl, last.safetensors)" \
        in e.value.message


def test_version_folders_count_as_lightnings_get_next_version(tmp_path):
    parent = str(tmp_path / "runs")
    assert rundir.new_version(parent) == os.path.join(parent, "version_0")  # the parent is made too
    for name in ("version_12", "version_x", "version_", "other_99"):
        os.mkdir(os.path.join(parent, name))
    (tmp_path / "runs" / "version_40").write_text("a file, not a version")
    assert rundir.new_version(parent) == os.path.join(parent, "version_13")
    os.mkdir(os.path.join(parent, "version_20_old"))  # Lightning reads the part after the first "_": 20
    assert rundir.new_version(parent) == os.path.join(parent, "version_21")


def test_tensorboard_event_files_are_a_run_that_overwrite_moves_aside_and_gives_back(tmp_path):
    events = "events.out.tfevents.1796170392.host.42.0"
    (tmp_path / events).write_bytes(b"records")
    folder = str(tmp_path)
    with pytest.raises(TorchshError) as e:
        rundir.refuse_a_run_there(folder, "runs/1")
    assert "runs/1 holds a run (%s)" % events in e.value.message
    replacing = rundir.Replacing(folder)
    assert not os.path.exists(os.path.join(folder, events))
    (tmp_path / "events.out.tfevents.1796170399.host.42.1").write_bytes(b"the new run's")  # then it failed
    replacing.settle()
    assert contents(folder) == {events: b"records"}
