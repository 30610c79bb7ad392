"""Jobs through real bash: `torch fit --detach` + job list/wait/logs/stop, the model after a stop equals
PyTorch's loop replayed for as many steps, other commands answer while a job runs, and a foreground
fit's progress and Ctrl-C in a terminal (a pty) and without one."""
import json
import re

import torch
import torch.nn.functional as F
from support.apicall import call, post
from support.terminal import run_in_pty, screen_lines
from safetensors.torch import load_file

X = torch.randn(640, 2, generator=torch.Generator().manual_seed(5))
Y = torch.randn(640, 1, generator=torch.Generator().manual_seed(6))
BATCH, LR = 16, 0.1
STOPPED = re.compile(r"stopped at epoch (\d+) step (\d+)")


def setup(sh):
    """Shell text that makes $m, $o, $L (no shuffle: batches in order) and saves $m's first weights."""
    first = sh.tmp("first.safetensors")
    text = ("m=$(torch nn linear 2 1); torch nn save $m %s; o=$(torch optim sgd $m --lr %s); "
            "L=$(torch data loader $(torch data tensors %s %s) --batch_size %d); "
            % (first, LR, sh.put(X), sh.put(Y), BATCH))
    return text, first


def replay(weights, steps):
    """PyTorch's loop for `steps` optimizer steps over the same batches, in order."""
    model = torch.nn.Linear(2, 1)
    model.load_state_dict(weights)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    per_epoch = len(X) // BATCH
    for i in range(steps):
        k = (i % per_epoch) * BATCH
        opt.zero_grad()
        F.mse_loss(model(X[k:k + BATCH]), Y[k:k + BATCH]).backward()
        opt.step()
    return model.state_dict()


def test_detach_returns_a_job_and_list_wait_logs_show_it(sh):
    make, _ = setup(sh)
    out = sh(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 3 --detach); echo $j; torch job wait $j; echo wait=$?; "
             "torch job list; torch job logs $j; torch job logs $j --json")
    lines = out.splitlines()
    job = lines[0]
    assert job.startswith("job://")
    wait_rows = lines[1:5]
    assert wait_rows[0].split() == ["epoch", "loss", "lr", "seconds"]
    assert [r.split()[0] for r in wait_rows[1:]] == ["1", "2", "3"] and lines[5] == "wait=0"
    listed = next(line for line in lines[1:] if line.startswith(job)).split()
    assert listed[1:4] == ["fit", "done", "epoch"]
    assert lines[lines.index(wait_rows[0], 5):][:4] == wait_rows  # logs: the same rows
    assert [row.startswith('{"epoch":%d,' % n) for n, row in enumerate(lines[-3:], 1)] == [True] * 3
    r = sh.run("torch job logs %s" % job)
    assert r.code == 0 and "\r" not in r.err
    assert [line.split()[:3] for line in r.err.splitlines()] == [["epoch", "1", "batch"], ["epoch", "2", "batch"],
                                                                 ["epoch", "3", "batch"]]


def test_job_logs_follow_prints_rows_and_plain_progress_until_the_job_ends(sh):
    make, _ = setup(sh)
    r = sh.run(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 4 --detach); torch job logs $j -f; echo rc=$?")
    lines = r.out.splitlines()
    assert lines[0].split()[:2] == ["epoch", "loss"] and [l.split()[0] for l in lines[1:5]] == ["1", "2", "3", "4"]
    assert lines[5] == "rc=0" and "\r" not in r.err
    assert [line.split()[:2] for line in r.err.splitlines()] == [["epoch", str(n)] for n in range(1, 5)]


def test_job_stop_ends_at_a_step_boundary_and_the_model_keeps_the_last_completed_step(sh):
    make, first = setup(sh)
    last = sh.tmp("last.safetensors")
    r = sh.run(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --detach); "
               "for i in $(seq 600); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done; "
               "torch job stop $j; torch job wait $j; echo wait=$?; torch nn save $m %s; torch job list" % last)
    assert r.code == 0, r.err
    stop_line, = [line for line in r.out.splitlines() if line.startswith("stopped at")]
    epoch, step = map(int, STOPPED.fullmatch(stop_line).groups())
    assert step >= 1 and epoch == (step - 1) // (len(X) // BATCH) + 1
    assert "wait=130" in r.out and r.err.splitlines()[-1] == "torch: fit: " + stop_line
    assert re.search(r"job://\S+ +fit +stopped ", r.out)
    want, got = replay(load_file(first), step), load_file(last)
    for k in want:
        assert torch.equal(got[k], want[k]), k


def test_other_commands_answer_while_a_job_runs(sh):
    make, _ = setup(sh)
    t = sh.put(torch.tensor([1.5, 2.5]))
    r = sh.run(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --detach); "
               "torch daemon status >/dev/null && echo status=ok; torch tensors | grep -c '^job://'; "
               "torch value %s; torch value $(torch mul %s 2); torch job list | grep \"$j\"; torch job stop $j"
               % (t, t))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "status=ok" and int(lines[1]) >= 1
    assert lines[2:4] == ["[1.5,2.5]", "[3.0,5.0]"]
    assert " running " in lines[4] and STOPPED.fullmatch(lines[5])


def test_free_refuses_what_a_running_job_uses_until_it_has_stopped(sh):
    make, _ = setup(sh)
    r = sh.run(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --detach); torch free $m; echo free=$?; "
               "torch free $j; echo free=$?; torch free --all; echo all=$?; torch job stop $j >/dev/null; "
               "torch free $m $o $L $j; echo free=$?")
    assert re.findall(r"\w+=\d+", r.out) == ["free=3", "free=3", "all=3", "free=0"]
    first = r.err.splitlines()[0]
    assert re.fullmatch(r"torch: free: nn://\w+ is in use by the running job (job://\w+); "
                        r"stop it first: torch job stop \1 \[in_use\]", first), first


def test_a_scope_that_ends_while_its_job_runs_leaves_the_job_and_what_it_trains(sh):
    """`torch scope -- …` frees what was made inside, but not what a running job still trains: those move
    out of the scope, so the job finishes and its model, optimizer and job handle stay usable."""
    make, _ = setup(sh)
    inner, handles = sh.tmp("inner.sh"), sh.tmp("handles")
    with open(inner, "w") as f:
        f.write(make + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --detach); t=$(torch zeros 2); echo $m $o $L $j $t\n")
    r = sh.run("torch scope -- bash %s > %s; read m o L j t < %s; "
               "torch job stop $j >/dev/null; torch job wait $j >/dev/null; echo stopped=$?; "
               "torch forward $m $(torch zeros 1 2) >/dev/null; echo model=$?; torch optim info $o >/dev/null; "
               "echo optim=$?; torch job list | grep -c $j; torch value $t; echo tensor=$?"
               % (inner, handles, handles))
    assert re.findall(r"\w+=\d+", r.out) == ["stopped=130", "model=0", "optim=0", "tensor=3"], (r.out, r.err)
    assert r.out.splitlines()[3] == "1"  # the job is still listed
    stopped, freed = r.err.splitlines()
    assert STOPPED.search(stopped) and freed.endswith("[unknown_handle]")  # the plain tensor went with the scope


def test_the_json_face_detaches_refuses_delete_and_answers_polls_with_follow(sh):
    make, _ = setup(sh)
    m, o, L = sh(make + "echo $m $o $L").split()
    status, reply = post(sh, "fit", {"args": [m, o, L], "kwargs": {"epochs": 100000, "detach": True}})
    job = reply["result"]
    assert status == 200 and job.startswith("job://")
    status, text = call(sh, "DELETE", "/v1/tensors/" + m)
    assert status == 409 and json.loads(text)["error"]["code"] == "in_use"
    status, reply = post(sh, "job.stop", {"args": [job]}, replies=["follow"])  # a caller that polls itself
    while "follow" in reply:  # {"follow": {"op": "job.poll", "args": [J, "stop"], "kwargs": {"offset": N}}}: poll on
        reply = post(sh, reply["follow"]["op"], {"args": reply["follow"]["args"], "kwargs": reply["follow"]["kwargs"]},
                     replies=["follow"])[1]
    r = reply["result"]
    assert STOPPED.fullmatch(r["stdout"].strip()) and r["exit"] == 0
    again = post(sh, "job.stop", {"args": [job]})[1]["result"]  # a caller that lists nothing: one answer, at the end
    assert again == r
    assert call(sh, "DELETE", "/v1/tensors/" + m)[0] == 204


def test_foreground_fit_without_a_terminal_prints_rows_and_plain_progress_lines(sh):
    make, _ = setup(sh)
    r = sh.run(make + "torch fit $m $o $L --loss mse_loss --epochs 2; echo rc=$?")
    lines = r.out.splitlines()
    assert lines[0].split() == ["epoch", "loss", "lr", "seconds"]
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"] and lines[3] == "rc=0"
    assert "\r" not in r.err and "\x1b" not in r.err
    assert [line.split()[:4] for line in r.err.splitlines()] == [["epoch", "1", "batch", "40/40"],
                                                                ["epoch", "2", "batch", "40/40"]]


def test_foreground_fit_in_a_terminal_redraws_a_live_progress_line(sh):
    make, _ = setup(sh)
    out, code = run_in_pty(sh, make + "torch fit $m $o $L --loss mse_loss --epochs 100000; echo rc=$?",
                           send_when=lambda out: b"\repoch " in out and re.search(rb"(\x1b\[K|\n)2 +[\d.]+ ", out))
    assert code == 0
    text = out.decode()
    assert re.search(r"\repoch \d+  batch \d+/40  [\d.]+ batch/s  ETA \d+:\d\d  loss [\d.e+-]+\x1b\[K", text)
    # a row clears the live line first (or follows a newline), so it stands on a line of its own
    assert re.search(r"(\r\x1b\[K|\n)2 +[\d.]+ +0\.1 +[\d.]+\r?\n", text)
    assert "rc=130" in screen_lines(out)


def test_ctrl_c_stops_a_foreground_fit_at_a_step_boundary_and_exits_130(sh):
    make, _ = setup(sh)
    out, code = run_in_pty(sh, make + "torch fit $m $o $L --loss mse_loss --epochs 100000; echo rc=$?; "
                           "torch job list | grep -c . || true", send_when=lambda out: b" batch " in out)
    lines = screen_lines(out)  # what the user sees: the live line cleared, the echoed ^C not counted
    assert code == 0
    at = [i for i, line in enumerate(lines) if line.startswith("torch: fit: stopped")]
    assert len(at) == 1 and re.fullmatch(r"torch: fit: stopped at epoch \d+ step \d+", lines[at[0]]), out[-800:]
    assert lines[at[0] + 1] == "rc=130"


def test_a_second_job_is_queued_until_the_first_ends_then_runs(sh):
    make, _ = setup(sh)
    out = sh(make + "a=$(torch fit $m $o $L --loss mse_loss --epochs 200 --detach); "
             "m2=$(torch nn linear 2 1); o2=$(torch optim sgd $m2 --lr 0.1); "
             "b=$(torch fit $m2 $o2 $L --loss mse_loss --epochs 1 --detach); "
             "echo $a $b; torch job list | grep $b; torch job stop $a >/dev/null; torch job wait $b; echo b=$?; "
             "torch job list")
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("job://") and len(line.split()) == 2)
    a, b = lines[i].split()
    assert lines[i + 1].split()[:3] == [b, "fit", "queued"]  # one job at a time, on the tensor thread
    assert "b=0" in lines
    states = {line.split()[0]: line.split()[2] for line in lines[i + 1:] if line.startswith("job://")}
    assert (states[a], states[b]) == ("stopped", "done")
