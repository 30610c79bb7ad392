"""`torch history --python` of a fit as the job it ran as: detached and waited for, it replays as its whole loop;
stopped (`torch job stop`, Ctrl-C of its follower) it replays cut where the daemon's run stopped, and a
`fit --resume auto` after the stop goes on from there, bit for bit; a job still running is refused by name."""
import re

import pytest

from support.history_replay import check as _check, script as _script
from support.terminal import run_in_pty

STOPPED = re.compile(r"stopped at epoch (\d+) step (\d+)")
# $m, $o, $L: a model, its optimizer and a shuffled loader of 40 batches an epoch
MAKE = ("torch manual_seed 7; m=$(torch nn sequential 'linear 2 4' relu 'linear 4 1'); o=$(torch optim sgd $m --lr 0.05)\n"
        "L=$(torch data loader $(torch data tensors $(torch randn 160 2) $(torch randn 160 1)) --batch_size 4 --shuffle)\n")
# waits until job $j has taken a step (`job list` shows its batch)
RUNNING = "for i in $(seq 600); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done\n"


def _stopped_at(text):
    """(epoch, step) of the one `stopped at` line in text."""
    found = STOPPED.findall(text)
    assert len(found) == 1, text
    return tuple(map(int, found[0]))


def test_a_detached_fit_waited_for_replays_as_its_whole_loop_bit_for_bit(sh):
    m = sh(MAKE + "j=$(torch fit $m $o $L --loss mse_loss --epochs 2 --detach); torch job wait $j >/dev/null; echo $m")
    path, text = _script(sh, m)
    assert "for _epoch in range(2):  # torch fit --epochs 2" in text and "_step" not in text
    _check(path)


@pytest.mark.slow
def test_a_detached_fit_stopped_by_job_stop_replays_to_its_stopped_weights_then_resumed_goes_on(sh, tmp_path):
    """job stop ends the run right after an optimizer step, before that epoch's end: the script cuts its loop
    there (as --max_steps does); `fit --resume auto` continues from that step's checkpoint."""
    r = sh.run("cd %s\n" % tmp_path + MAKE + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --log run --detach)\n"
               + RUNNING + "torch job stop $j >/dev/null; torch job wait $j; echo $m $o $L")
    assert r.code == 0, r.err
    epoch, step = _stopped_at(r.err)
    m, o, loader = r.out.split()[-3:]
    path, text = _script(sh, m)
    assert "while _step < %d:" % step in text and "stopped at epoch %d step %d" % (epoch, step) in text
    _check(path)
    sh("cd %s; torch fit %s %s %s --loss mse_loss --epochs %d --log run --resume auto >/dev/null"
       % (tmp_path, m, o, loader, epoch + 1))
    path, text = _script(sh, m)
    assert "resumed at epoch %d step %d" % (epoch, step) in text
    _check(path)


def test_a_running_fits_history_is_refused_naming_its_job(sh):
    r = sh.run(MAKE + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --detach); echo $j\n" + RUNNING
               + "torch history --python --for $m >/dev/null; echo history=$?; torch job stop $j >/dev/null; "
               "torch job wait $j >/dev/null 2>&1; true")
    job = r.out.split()[0]
    assert "history=2" in r.out, r.out + r.err
    line, = [line for line in r.err.splitlines() if "[not_portable]" in line]
    assert job in line and "torch job wait %s" % job in line, line


def test_a_followed_fit_stopped_by_ctrl_c_replays_to_its_stopped_weights(sh):
    path = sh.tmp("s.py")
    out, code = run_in_pty(sh, MAKE + "torch fit $m $o $L --loss mse_loss --epochs 100000; "
                           "torch history --python --for $m > %s; echo history=$?" % path,
                           send_when=lambda out: b" batch " in out)
    assert code == 0 and b"history=0" in out, out[-800:]
    epoch, step = _stopped_at(out.decode())
    with open(path) as f:
        assert "while _step < %d:" % step in f.read()
    _check(path)
