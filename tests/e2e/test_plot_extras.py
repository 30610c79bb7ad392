"""Without the optional extras (matplotlib, Pillow) `torch plot --png` and `torch value --format png`
fail with missing_extra naming the pip extra, and everything else still works. The daemon here
runs with a PYTHONPATH whose matplotlib and PIL packages refuse to import."""
import os

import pytest


@pytest.fixture
def bare(fresh_sh):
    s = fresh_sh(start=False)
    blocker = os.path.join(s.folder, "blocked")
    for package in ("matplotlib", "PIL"):
        os.makedirs(os.path.join(blocker, package))
        with open(os.path.join(blocker, package, "__init__.py"), "w") as f:
            f.write("raise ImportError('%s is not installed (blocked for a test)')\n" % package)
    s.env["PYTHONPATH"] = blocker
    s("torch daemon start")
    return s


def test_missing_extras_are_one_line_missing_extra_errors_with_the_pip_extra(bare):
    with open(os.path.join(bare.folder, "metrics.jsonl"), "w") as f:
        f.write('{"kind": "step", "step": 1, "loss": 1.0}\n{"kind": "step", "step": 2, "loss": 0.5}\n')
    r = bare.run("torch plot metrics.jsonl --png out.png")
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert "needs matplotlib" in r.err and "pip install 'torchsh[plot]'" in r.err and "[missing_extra]" in r.err
    r = bare.run("torch value $(torch zeros 2 2 --dtype uint8) --format png --out out.png")
    assert r.code == 2 and "needs Pillow" in r.err and "pip install 'torchsh[images]'" in r.err
    assert not os.path.exists(os.path.join(bare.folder, "out.png"))
    assert bare("torch plot metrics.jsonl --width 30 --height 3").split("\n")[-1].startswith("  ⠒⠒ loss: 1 -> 0.5")
