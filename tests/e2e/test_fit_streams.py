"""`torch fit` on a streamed Parquet set (`data open --stream`, issue 40) through real bash: `kill -9` of the daemon
mid-epoch, a new daemon, the same commands with `--resume auto`: the weights equal an uninterrupted run bit for
bit; a row group damaged on disk mid-epoch fails the fit with file_error naming the file and the row group, keeps
what was trained (the log's `last` checkpoint), and once the file is fixed `--resume auto` continues from there to
the weights of a run that never failed. `predict` and `data next` give on a stream what they give in memory."""
import json
import os
import shutil
import signal
import subprocess

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from support.waiting import wait_until

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FEATURES, CLASSES = 6, 3
BUILD = ("torch manual_seed 0; d=$(torch data open {path} --stream --target label); "
         "L=$(torch data loader $d --batch_size {batch} {loader}); "
         "m=$(torch nn sequential 'linear 6 16' relu 'linear 16 3'); o=$(torch optim adamw $m --lr 0.01); ")
FIT = "torch fit $m $o $L --loss cross_entropy --epochs {epochs} --log {log} --save_every {every} "


def write_parquet(path, rows, group, seed=0):
    """ROWS rows (FEATURES float32 columns and an int64 label) in row groups of GROUP rows, plain pages (no
    dictionary, no compression: a page's header is where metadata says it is)."""
    rng = np.random.default_rng(seed)
    columns = {"f%d" % i: rng.standard_normal(rows, dtype=np.float32) for i in range(FEATURES)}
    columns["label"] = rng.integers(0, CLASSES, rows)
    pq.write_table(pa.table(columns), path, row_group_size=group, use_dictionary=False, compression="none")
    return path


def fit_script(path, log, batch=16, loader="", epochs=2, every=10, flags=""):
    return (BUILD.format(path=path, batch=batch, loader=loader) + FIT.format(epochs=epochs, log=log, every=every)
            + flags + " >/dev/null")


def trained(shell, script, saved):
    shell(script + "; torch nn save $m %s" % saved)
    return load_file(saved)


def kill_daemon(shell):
    pid = json.loads(shell("torch daemon status --json"))["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not os.path.exists("/proc/%d" % pid))


def resumed_step(log):
    with open(os.path.join(log, "run.json")) as f:
        return json.load(f)["resumed"][0]["step"]


def equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# 6,000 rows in row groups of 500, batch 16: 375 steps an epoch, 750 in the run; a checkpoint every 10 steps
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.slow
def test_kill_9_mid_epoch_then_resume_auto_equals_the_uninterrupted_run(sh, fresh_sh, workers):
    path = write_parquet(sh.tmp("train.parquet"), 6000, 500)
    loader = "--shuffle --shuffle_buffer 1200 --seed 3 --num_workers %d" % workers
    want = trained(sh, fit_script(path, sh.tmp("straight"), loader=loader), sh.tmp("straight.safetensors"))
    s = fresh_sh()
    log = s.tmp("run")
    fit = subprocess.Popen(["bash", "-c", fit_script(path, log, loader=loader)], env=s.env, cwd=s.folder,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: os.path.exists(os.path.join(log, "last.safetensors")), timeout=60)
        kill_daemon(s)  # while the fit trains: its first checkpoint is there, 740 steps are not
    finally:
        fit.wait(timeout=60)
    got = trained(s, fit_script(path, log, loader=loader, flags="--resume auto"), s.tmp("resumed.safetensors"))
    assert 0 < resumed_step(log) < 375  # it was killed in the first epoch, and resumed there
    assert equal(got, want)


def damage_row_group(path, group):
    """Overwrite the page headers of every column chunk of row group GROUP, as a disk's rot would: the footer, the
    size and the mtime stay as they were (a file rewritten since the open is refused as changed, not read)."""
    meta = pq.ParquetFile(path).metadata.row_group(group)
    st = os.stat(path)
    with open(path, "r+b") as f:
        for c in range(meta.num_columns):
            f.seek(meta.column(c).data_page_offset)
            f.write(b"\xff" * 16)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


# 1,200 rows in row groups of 200, batch 20, index order: row group 1 is first read for step 11
@pytest.mark.slow
def test_a_damaged_row_group_names_the_file_and_group_keeps_what_was_trained_and_resume_continues(sh):
    path = write_parquet(sh.tmp("train.parquet"), 1200, 200)
    want = trained(sh, fit_script(path, sh.tmp("straight"), batch=20, every=1000), sh.tmp("straight.safetensors"))
    intact = sh.tmp("intact.parquet")
    shutil.copyfile(path, intact)
    log = sh.tmp("run")
    handles = sh(BUILD.format(path=path, batch=20, loader="") + "echo $m $o $L")  # the dataset is open
    damage_row_group(path, 1)
    r = sh.run("torch fit %s %s %s --loss cross_entropy --epochs 2 --log %s --save_every 1000" % (
        *handles.split(), log))
    assert r.code != 0 and "[file_error]" in r.err, r.err
    assert os.path.basename(path) in r.err and "row group 1" in r.err, r.err
    assert os.path.exists(os.path.join(log, "last.safetensors")), "what was trained was not kept"
    shutil.copyfile(intact, path)  # the file fixed
    got = trained(sh, fit_script(path, log, batch=20, every=1000, flags="--resume auto"), sh.tmp("resumed.safetensors"))
    assert resumed_step(log) == 10  # from the failing batch on, not from the start
    assert equal(got, want)


def test_predict_and_data_next_on_a_stream_give_what_they_give_in_memory(sh):
    path = write_parquet(sh.tmp("t.parquet"), 90, 16)
    both = ("s=$(torch data open {p} --stream --target label); d=$(torch data open {p} --target label); "
            "torch manual_seed 0; m=$(torch nn sequential 'linear 6 3'); ").format(p=path)
    predicted = sh(both + "torch predict --json $m $s; echo ==; torch predict --json $m $d").split("\n==\n")
    assert json.loads(predicted[0]) == json.loads(predicted[1])
    batches = sh(both + "A=$(torch data loader $s --batch_size 7); B=$(torch data loader $d --batch_size 7); "
                 "while a=$(torch data next --keep $A); do echo $a $(torch data next --keep $B); done").split("\n")
    assert len(batches) == 13  # 90 rows by 7: 12 whole batches and one of 6
    for line in batches:
        x, y, x_in_memory, y_in_memory = line.split()
        for stream, memory in ((x, x_in_memory), (y, y_in_memory)):
            a, b = sh.fetch(stream), sh.fetch(memory)
            assert a.dtype == b.dtype and torch.equal(a, b)
