"""Issue 13's `dist`, `cuda`, `plot` and `value --format png` from Nushell: the same answers as in-process PyTorch."""
import json

import numpy as np
import torch
import torch.distributions as D
from PIL import Image


def test_dist_sample_after_manual_seed_equals_pytorchs(nu):
    got = nu.json("torch manual_seed 3; torch dist sample (torch dist normal --loc [0.0 2.0] --scale 0.5) 4 "
                  "| torch value")
    torch.manual_seed(3)
    want = D.Normal(torch.tensor([0.0, 2.0]), 0.5).sample((4,))
    assert torch.equal(torch.tensor(got, dtype=torch.float32), want)


def test_dist_sample_takes_sample_shape_and_the_older_shape_in_nu(nu):
    torch.manual_seed(5)
    want = D.Normal(0.0, 1.0).sample((2, 3))
    for flag in ("sample_shape", "shape"):
        got = nu.json("torch manual_seed 5; torch dist sample (torch dist normal 0 1) --%s [2 3] | torch value" % flag)
        assert torch.equal(torch.tensor(got, dtype=torch.float32), want), flag


def test_dist_kl_and_log_prob_read_as_numbers(nu):
    got = nu.json("[(torch dist kl (torch dist normal 0 1) (torch dist normal 1 2) | torch item) "
                  "(torch dist log_prob (torch dist bernoulli --probs 0.25) 1.0 | torch item)]")
    want = [D.kl_divergence(D.Normal(0, 1), D.Normal(1, 2)), D.Bernoulli(probs=0.25).log_prob(torch.tensor(1.0))]
    assert [np.float32(v) for v in got] == [w.numpy() for w in want]  # float32 printed shortest, read back exactly


def test_cuda_answers_are_nu_values(nu):
    assert nu.json("torch cuda available") is torch.cuda.is_available()
    assert nu.json("torch cuda device_count") == torch.cuda.device_count()


def test_plot_draws_text_and_a_png_and_value_writes_an_image(nu, sh):
    folder = sh.tmp("nu-run")
    rows = [{"kind": "step", "epoch": 1, "step": s, "loss": 1.0 / s} for s in range(1, 11)]
    nu("mkdir %s; %s | each { to json --raw } | str join \"\\n\" | save %s/metrics.jsonl"
       % (folder, json.dumps(rows).replace('"', "'").replace("'", '"'), folder))
    chart = nu("torch plot %s --width 44 --height 5 | print" % folder).split("\n")
    assert len(chart) == 5 + 2 + 1 and {len(r) for r in chart[:5]} == {44}
    assert chart[-1].startswith("  ⠒⠒ loss: 1 -> 0.1")
    png = sh.tmp("nu.png")
    assert nu("torch plot %s --png %s | print" % (folder, png)) == png
    assert Image.open(png).size == (800, 500)
    image = sh.tmp("nu-image.png")
    nu("torch value (torch eye 4 --dtype uint8 | torch mul - 255) --format png --out %s | ignore" % image)
    assert np.array_equal(np.asarray(Image.open(image)), np.eye(4, dtype=np.uint8) * 255)
