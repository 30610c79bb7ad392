"""`torch history --python` of whole walkthroughs: the examples/ scripts and the README's tours (its model
and gradient, its sessions across a load, training on data through its fit and resume), each sliced for
its model and replayed bit for bit."""
import os
import re
import sys

import pytest

from support.history_replay import check as _check, script as _script


_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


@pytest.mark.slow  # each runs an example
@pytest.mark.parametrize("name,steps", [("regression.sh", 100), ("classifier.sh", 40)])
def test_an_example_sliced_for_its_model_replays_bit_for_bit(fresh_sh, name, steps):
    sh = fresh_sh()
    sh("STEPS=%d bash %s >/dev/null" % (steps, os.path.join(_EXAMPLES, name)), timeout=600)
    model = sh("torch tensors --kind nn -q").split()[0]
    path, text = _script(sh, model)
    assert "for _ in range(" in text
    _check(path)


# Run in place of the example's own EXIT trap, before it stops its daemon and removes its files: the script
# reads the files the example made from their paths, so it must run while they are there
_REPLAY_TRAP = ("trap 'torch history --python --for $model --sidecar \"$REPLAY/s.safetensors\" > \"$REPLAY/s.py\" && "
                "(cd \"$REPLAY\" && \"$PYTHON\" -I s.py --check) > \"$REPLAY/check.txt\" 2>&1; echo $? > \"$REPLAY/rc\"; "
                "torch daemon stop >/dev/null 2>&1 || true; rm -rf \"$work\"' EXIT")


@pytest.mark.slow  # each runs an example, with a daemon of its own
@pytest.mark.parametrize("name,env", [("fit.sh", "EPOCHS=3"), ("predict.sh", ""), ("images.sh", "")])
def test_an_example_with_its_own_daemon_replays_for_its_model_bit_for_bit(sh, tmp_path, name, env):
    """fit.sh resumes in a fresh daemon from a checkpoint the run then overwrites; predict.sh opens a CSV
    and standardizes it; images.sh opens an image folder: each is sliced for its model at its end."""
    with open(os.path.join(_EXAMPLES, name)) as f:
        text = f.read()
    assert text.count("\ntrap '") == 1
    copy = tmp_path / name
    copy.write_text(re.sub(r"(?m)^trap '.*' EXIT$", lambda m: _REPLAY_TRAP, text))
    sh("REPLAY=%s PYTHON=%s %s bash %s >/dev/null" % (tmp_path, sys.executable, env, copy), timeout=600)
    check = (tmp_path / "check.txt").read_text()
    assert (tmp_path / "rc").read_text().strip() == "0", check
    assert re.search(r"check: (\d+) of \1 object", check), check


def test_the_readme_tour_sliced_for_its_model_and_its_gradient_replays_bit_for_bit(sh, tmp_path):
    from test_readme import tour
    model, w = sh("set -e\ncd %s\n%s\necho $model $w" % (tmp_path, tour())).split("\n")[-1].split()
    path, text = _script(sh, model)
    assert "torch.optim.lr_scheduler.CosineAnnealingLR(" in text and "torch.optim.AdamW(" in text
    _check(path)
    path, _ = _script(sh, w)
    _check(path)


@pytest.mark.slow  # two daemons
def test_the_readme_sessions_tour_sliced_for_its_model_replays_across_the_load(sh, tmp_path):
    """The tour draws in both daemons: the loading daemon's generator is its own, set again in the script."""
    from support.second_daemon import SecondDaemon
    from test_readme import section
    own = SecondDaemon(sh, "hist")
    try:
        m = own("set -e\ncd %s\n%s\necho $m" % (tmp_path, section("Sessions that outlive a daemon"))).split("\n")[-1]
        path = sh.tmp("s.py")
        own("torch history --python --for %s > %s" % (m, path))
        with open(path) as f:
            assert f.read().count("torch.set_rng_state(") == 2
        assert re.match(r"check: (\d+) of \1 ", _check(path))
    finally:
        own.stop()


def test_the_readme_train_on_data_tour_replays_bit_for_bit_through_its_fit_and_its_resume(sh, tmp_path):
    """Its .npy files, split, shuffling loaders, `data next` loop and `fit --val` (written as its loop); the
    resumed fit's checkpoint holds what the daemon holds, so it is the loop over the epochs left."""
    from test_readme import section
    tour = "\n".join(line for line in section("Train on data").split("\n") if not line.startswith("torch plot"))
    m = sh("set -e\ncd %s\n%s\necho $m" % (tmp_path, tour), timeout=300).split("\n")[-1]
    path, text = _script(sh, m)
    assert "torch.utils.data.random_split(" in text and "_Loader(" in text and "# the end of the epoch" in text
    assert "for _ in range(25):" in text and "for _epoch in range(5):  # torch fit --epochs 5\n" in text
    assert "for _epoch in range(5):  # torch fit --epochs 10, resumed at epoch 6 step " in text
    _check(path)
