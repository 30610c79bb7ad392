"""Issue 13 in Nushell: a `data next` loop that ends at the epoch's end (a catchable error), and
`torch fit` rows as nu records, equal to bash's `torch fit --json`. Issue 24: fit's refusals (run_exists, a
missing --loss) as catchable errors with their code and hint, and its one-line notes (the loss and log folder
chosen, an early stop, nothing to do, queued behind a job) on nu's stderr."""
import json
import subprocess

import torch
from torch.utils.data import DataLoader, TensorDataset


def test_data_next_loop_gives_pytorch_dataloader_batches_and_ends_at_the_epoch(nu):
    out = nu("""
let L = (torch data loader (torch data tensors (torch arange 10)) --batch_size 4 --shuffle --seed 5)
mut epochs = []
for e in 1..2 {
  mut seen = []
  loop {
    let b = try { torch data next $L } catch { break }
    $seen = ($seen | append [($b | get 0 | torch value)])
  }
  $epochs = ($epochs | append [$seen])
}
$epochs | to json --raw | print
""")
    ref = DataLoader(TensorDataset(torch.arange(10)), batch_size=4, shuffle=True,
                     generator=torch.Generator().manual_seed(5))
    assert json.loads(out) == [[b[0].tolist() for b in ref] for _ in range(2)]


FIT = ("torch manual_seed 3; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
       "torch fit $m $o $(torch data loader $(torch data tensors {x} {y}) --batch_size 4 --shuffle --seed 1) --loss mse_loss "
       "--epochs 3 --json")


def test_fit_rows_are_records_equal_to_bash_json_lines(nu, sh):
    x, y = sh.put(torch.randn(12, 2)), sh.put(torch.randn(12, 1))
    bash = [json.loads(line) for line in sh(FIT.format(x=x, y=y)).splitlines()]
    rows = json.loads(nu("""
torch manual_seed 3
let m = (torch nn linear 2 1)
let o = (torch optim sgd $m --lr 0.1)
let L = (torch data loader (torch data tensors %s %s) --batch_size 4 --shuffle --seed 1)
torch fit $m $o $L --loss mse_loss --epochs 3 | to json --raw | print
""" % (x, y)))
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert [r["loss"] for r in rows] == [r["loss"] for r in bash]


def test_a_log_folder_holding_a_run_is_refused_and_version_is_named_on_stderr(nu, sh):
    x, y = sh.put(torch.randn(12, 2)), sh.put(torch.randn(12, 1))
    runs = sh.tmp("runs")
    script = """
let m = (torch nn linear 2 1)
let o = (torch optim sgd $m --lr 0.1)
let L = (torch data loader (torch data tensors %s %s) --batch_size 4)
torch fit $m $o $L --loss mse_loss --log %s --version | ignore
let e = (try { torch fit $m $o $L --loss mse_loss --log %s/version_0; {} } catch {|e| $e })
print ({msg: $e.msg, help: $e.details.help, code: $e.details.code} | to json --raw)
""" % (x, y, runs, runs)
    r = nu.run(script)
    assert r.code == 0, r.err
    assert "torch: fit: logging to %s/version_0\n" % runs in r.err
    refused = json.loads(r.out)
    assert refused["code"] == "torchsh::run_exists" and "holds a run" in refused["msg"]
    assert "--resume auto" in refused["help"] and "--overwrite" in refused["help"]


def test_without_loss_in_nushell_the_choice_is_on_stderr_and_a_refusal_names_loss(nu, sh):
    x, classes, floats = sh.put(torch.randn(24, 3)), sh.put(torch.arange(24) % 4), sh.put((torch.arange(24) % 4).float())
    r = nu.run("""
let m = (torch nn sequential 'linear 3 8' relu 'linear 8 4')
let o = (torch optim sgd $m --lr 0.1)
torch fit $m $o (torch data loader (torch data tensors %s %s) --batch_size 8) | ignore
let e = (try { torch fit $m $o (torch data loader (torch data tensors %s %s)); {} } catch {|e| $e.details })
print ({code: $e.code, msg: $e.msg, help: $e.help} | to json --raw)
""" % (x, classes, x, floats))
    assert r.code == 0, r.err
    assert "torch: fit: --loss cross_entropy (int64 class targets, a Linear head of 4 outputs)\n" in r.err
    assert '"code":"torchsh::missing_argument"' in r.out and "--loss is needed" in r.out
    assert "--target_dtype int64" in r.out


def test_early_stop_and_nothing_to_do_lines_reach_nushells_stderr(nu, sh):
    x, y = sh.put(torch.randn(16, 2)), sh.put(torch.randn(16, 1))
    log = sh.tmp("run")
    r = nu.run("""
let m = (torch nn linear 2 1)
let o = (torch optim sgd $m --lr 0)
let L = (torch data loader (torch data tensors %s %s) --batch_size 4)
torch fit $m $o $L --loss mse_loss --epochs 50 --patience 1 --log %s | ignore
torch fit $m $o $L --loss mse_loss --epochs 50 --patience 1 --log %s --resume auto | ignore
""" % (x, y, log, log))
    assert r.code == 0, r.err
    lines = [line for line in r.err.splitlines() if line.startswith("torch: fit: ")]
    assert len(lines) == 2 and lines[0].startswith("torch: fit: early stop after epoch 2: loss did not improve "
                                                   "for 1 epoch (best ")
    assert lines[1] == "torch: fit: nothing to do: the run is already at epoch 2 step 8 (it stopped early: --patience 1)"


def test_a_fit_queued_behind_another_job_says_so_in_nushell(nu, sh):
    make = "m=$(torch nn linear 2 1); L=$(torch data loader $(torch data tensors %s %s) --batch_size 4); " % (
        sh.put(torch.randn(16, 2)), sh.put(torch.randn(16, 1)))
    first = sh(make + "torch fit $m $(torch optim sgd $m) $L --loss mse_loss --epochs 1000000 --detach; echo $L")
    job, loader = first.splitlines()
    # stop the long job once the nu fit is queued behind it (a shell of its own, meanwhile)
    stopper = subprocess.Popen(["bash", "-c", "until torch job list | awk -v s=queued '$3 == s {f = 1} END {exit !f}'; do sleep 0.1; done; "
                                "torch job stop %s" % job], env=sh.env, stdout=subprocess.DEVNULL)
    r = nu.run("let m = (torch nn linear 2 1)\ntorch fit $m (torch optim sgd $m) %s --loss mse_loss | ignore" % loader)
    stopper.wait(timeout=60)
    assert r.code == 0, r.err
    assert "torch: fit: queued behind %s (one job runs at a time" % job in r.err


def test_fit_rows_in_nu_carry_the_new_metrics_and_the_confusion_matrix_as_a_nested_list(nu, sh):
    x = sh.put(torch.randn(20, 2, generator=torch.Generator().manual_seed(4)))
    y = sh.put(torch.randint(0, 3, (20,), generator=torch.Generator().manual_seed(5)))
    bash = [json.loads(line) for line in sh(
        "torch manual_seed 3; m=$(torch nn linear 2 3); o=$(torch optim sgd $m --lr 0.1); "
        "L=$(torch data loader $(torch data tensors %s %s) --batch_size 6); torch fit $m $o $L --loss cross_entropy "
        "--val $L --epochs 2 --metrics precision,recall,f1,f1_micro,confusion --json" % (x, y)).splitlines()]
    rows = json.loads(nu("""
torch manual_seed 3
let m = (torch nn linear 2 3)
let o = (torch optim sgd $m --lr 0.1)
let L = (torch data loader (torch data tensors %s %s) --batch_size 6)
let rows = (torch fit $m $o $L --loss cross_entropy --val $L --epochs 2 --metrics [precision recall f1 f1_micro confusion])
print ($rows | select val_precision val_recall val_f1 val_f1_micro val_confusion confusion | to json --raw)
""" % (x, y)))
    keys = ("val_precision", "val_recall", "val_f1", "val_f1_micro", "val_confusion", "confusion")
    assert rows == [{k: r[k] for k in keys} for r in bash]
    assert len(rows[1]["val_confusion"]) == 3 and sum(map(sum, rows[1]["val_confusion"])) == 20


def test_a_warning_raised_in_every_training_step_reaches_nushells_stderr_once(nu, sh):
    """Issue 36: PyTorch's warning inside the job's steps (mse_loss's reduce=, deprecated) is a note of the job."""
    x, y = sh.put(torch.randn(16, 2)), sh.put(torch.randn(16, 1))
    r = nu.run("""
let m = (torch nn linear 2 1)
let L = (torch data loader (torch data tensors %s %s) --batch_size 4)
torch fit $m (torch optim sgd $m) $L --loss mse_loss --loss_args '{"reduce": true}' --epochs 2 | ignore
""" % (x, y))
    assert r.code == 0, r.err
    assert r.err.count("torch: fit: warning: size_average and reduce args will be deprecated, please use "
                       "reduction='mean' instead.\n") == 1, r.err


def test_a_fit_interrupted_with_ctrl_c_keeps_the_rows_of_the_epochs_it_ended_and_says_where_it_stopped(nu, sh):
    """SIGINT to nu's process group, as a terminal's Ctrl-C sends it: the next poll asks the run to stop (as the
    bash function's trap does), the rows already ended are shown, then the run's stop line as nu's error."""
    import os
    import signal
    import tempfile
    from support.waiting import wait_until
    loader = sh("torch data loader $(torch data tensors %s %s) --batch_size 4"
                % (sh.put(torch.randn(400, 2)), sh.put(torch.randn(400, 1))))
    script = "use %s\nlet m = (torch nn linear 2 1)\ntorch fit $m (torch optim sgd $m) %s --loss mse_loss " \
             "--epochs 1000000\n" % (nu.module, loader)
    with tempfile.NamedTemporaryFile("w", suffix=".nu", dir=sh.folder, delete=False) as f:
        f.write(script)
    out, err = sh.tmp("nu.out"), sh.tmp("nu.err")
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen([nu.bin, "--no-config-file", f.name], env=nu.env, cwd=sh.folder, stdout=o, stderr=e,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_until(lambda: "epoch 3 " in open(err).read(), 120)  # two epochs ended, a third going
        os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    text, errors = open(out).read(), open(err).read()
    epochs = [int(line.split("│")[2]) for line in text.splitlines() if line.count("│") > 3 and "epoch" not in line]
    assert p.returncode == 1 and epochs[:2] == [1, 2] and epochs == list(range(1, len(epochs) + 1)), text
    assert "torch: fit: stopped at epoch " in errors and "torchsh::stopped" in errors
    assert not [j for j in json.loads(sh("torch job list --json") or "[]") if j["state"] in ("running", "queued")]
