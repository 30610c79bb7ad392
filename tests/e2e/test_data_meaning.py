"""What a model's data stands for (data/meaning.py: classes, one-hot categories, standardization) goes wherever
the model goes: `nn save` to .safetensors and `nn load`, `nn load` of a fit checkpoint, `session save|load`,
`cp` to another daemon; `model inspect` shows a file's. The oracle is the fitted model itself: after each move,
`torch predict` on raw, unlabeled rows gives the same class names and the same probabilities, bit for bit."""
import csv
import json
import os

import numpy as np
import pytest
import safetensors.torch
import torch

from support.second_daemon import SecondDaemon

MODEL = "torch nn sequential 'linear 4 8' relu 'linear 8 3'"
NAMES = ("setosa", "versicolor", "virginica")
FIT = ("torch manual_seed 0; m=$(%s); o=$(torch optim adam $m --lr 0.05); "
       "T=$(torch data transform $(torch data open {train} --target species --onehot color) --standardize); "
       "L=$(torch data loader $T --batch_size 8 --shuffle --seed 0); "
       "torch fit $m $o $L --loss cross_entropy --epochs 5 --log {log} > /dev/null; echo $m" % MODEL)
PREDICT = "torch predict --json --proba {m} $(torch data open {new} --onehot color)"


def _tables(sh, n=30):
    """Three blobs labelled by name, with a one-hot colour column; and new rows as they arrive (no label),
    raw: neither one-hot nor standardized."""
    g = np.random.default_rng(0)
    train, new = sh.tmp("train.csv"), sh.tmp("new.csv")
    for path, rows, labelled in ((train, n, True), (new, 9, False)):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["a", "b", "color"] + (["species"] if labelled else []))
            for i in range(rows):
                k = i % 3
                w.writerow(["%.3f" % v for v in g.normal(3.0 * k, 0.5, 2)] + [("blue", "red")[i % 2]]
                           + ([NAMES[k]] if labelled else []))
    return train, new


def _fitted(run, sh):
    """(model, the new rows' file, fit's log folder, its predictions on them) on run's daemon."""
    train, new = _tables(sh)
    log = sh.tmp("run")
    m = run(FIT.format(train=train, log=log))
    before = json.loads(run(PREDICT.format(m=m, new=new)))
    assert [r["prediction"] for r in before] == [NAMES[i % 3] for i in range(9)]  # named, and right
    assert list(before[0]) == ["row", "prediction", *NAMES]
    return m, new, log, before


def _kept(log):
    """The model's card fit kept (run.json's `contract`): its inputs, the classes, the colour's categories, the
    statistics, the task."""
    with open(log + "/run.json") as f:
        card = json.load(f)["contract"]
    assert sorted(card) == ["categories", "classes", "decision", "inputs", "loss", "output", "preprocessing", "target",
                            "task"]
    assert card["task"] == "multiclass" and card["decision"] == "argmax" and card["output"] == {"shape": [3]}
    assert [p["kind"] for p in card["preprocessing"]] == ["standardize"]
    return card


def test_nn_save_to_safetensors_and_nn_load_bring_back_the_classes_and_standardization(sh):
    m, new, log, before = _fitted(sh, sh)
    f = sh.tmp("m.safetensors")
    out = sh("torch nn save %s %s; m2=$(%s); torch nn load $m2 %s; %s"
             % (m, f, MODEL, f, PREDICT.format(m="$m2", new=new))).split("\n")
    assert "classes: " + " ".join(NAMES) in out
    assert json.loads(out[-1]) == before
    with safetensors.safe_open(f, framework="pt") as st:  # one metadata key, JSON; Python reads the weights as ever
        assert json.loads(st.metadata()["torchsh"]) == {"contract": _kept(log)}
    python = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    python.load_state_dict(safetensors.torch.load_file(f))


def test_nn_load_of_a_fit_checkpoint_loads_its_model_part_with_what_its_data_stands_for(sh):
    m, new, log, before = _fitted(sh, sh)
    last = sh("m2=$(%s); torch nn load $m2 %s/last.safetensors > /dev/null; %s"
              % (MODEL, log, PREDICT.format(m="$m2", new=new)))
    assert json.loads(last) == before  # last: where the run stopped
    best = sh("m2=$(%s); m3=$(%s); torch nn load $m2 {log}/best.safetensors > /dev/null; "
              "torch checkpoint load {log}/best.safetensors $m3; %s; %s".format(log=log)
              % (MODEL, MODEL, PREDICT.format(m="$m2", new=new), PREDICT.format(m="$m3", new=new))).split("\n")
    assert json.loads(best[0]) == json.loads(best[1])


def test_a_pt_keeps_the_weights_alone_as_torch_save_and_its_card_beside_it(sh):
    m, new, log, before = _fitted(sh, sh)
    pt, st = sh.tmp("m.pt"), sh.tmp("m.safetensors")
    r = sh.run("torch nn save %s %s && torch nn save %s %s" % (m, pt, m, st))
    assert r.code == 0, r.err
    loaded, want = torch.load(pt, weights_only=True), safetensors.torch.load_file(st)
    assert list(loaded) == ["0.weight", "0.bias", "2.weight", "2.bias"]  # the state_dict itself, in its order
    assert loaded.keys() == want.keys() and all(torch.equal(loaded[k], want[k]) for k in want)
    with open(pt + ".card.json") as f:
        assert json.load(f) == {"contract": _kept(log)}
    got = sh("m2=$(%s); torch nn load $m2 %s > /dev/null; %s" % (MODEL, pt, PREDICT.format(m="$m2", new=new)))
    assert json.loads(got) == before  # the card came back from beside the .pt: standardized, named classes
    sh("torch nn save $(%s) %s" % (MODEL, pt))  # a model without a card: the old card would describe other weights
    assert not os.path.exists(pt + ".card.json")


def test_model_inspect_shows_the_kept_classes_categories_and_statistics(sh):
    m, _, log, _ = _fitted(sh, sh)
    f = sh.tmp("m.safetensors")
    sh("torch nn save %s %s" % (m, f))
    for path in (f, log + "/best.safetensors"):
        assert json.loads(sh("torch model inspect --json %s" % path))["contract"] == _kept(log)
        text = sh("torch model inspect %s" % path).split("\n")
        assert "classes: " + " ".join(NAMES) in text and "one-hot color: blue red" in text
        assert any(line.startswith("preprocessing: standardize field 0, mean [") for line in text)
    assert "data" not in json.loads(sh("torch nn save $(%s) %s; torch model inspect --json %s" % (MODEL, f, f)))


def test_session_save_and_load_keep_what_the_model_s_data_stands_for(sh, tmp_path):
    own = SecondDaemon(sh, "own")  # a daemon of the test's own, stopped in between
    try:
        m, new, _, before = _fitted(own, sh)
        own("torch session save %s > /dev/null; torch daemon stop" % (tmp_path / "s"))
        own("torch session load %s" % (tmp_path / "s"))  # a fresh daemon
        assert json.loads(own(PREDICT.format(m=m, new=new))) == before
    finally:
        own.stop()


def test_cp_to_another_daemon_keeps_what_the_model_s_data_stands_for(sh):
    t2 = SecondDaemon(sh, "t2")
    t2("torch daemon start")
    try:
        m, new, _, before = _fitted(sh, sh)
        copied = sh("torch cp %s --to t2" % m, env={"XDG_RUNTIME_DIR": t2.xdg})
        kind, _, rest = copied.partition("://")
        there = "%s://%s" % (kind, rest.split("/", 1)[-1])  # nn://t2/k… as t2 itself names it
        assert json.loads(t2(PREDICT.format(m=there, new=new))) == before
    finally:
        t2.stop()


@pytest.mark.parametrize("kept", ['{"data": {"classes": [0, 1], "standardization": [1]}}', "[1]", '{"data": 3}',
                                  '{"data": ["setosa"]}'])
def test_torchsh_metadata_edited_by_hand_loads_the_weights_and_is_shown_nowhere(sh, kept):
    f = sh.tmp("edited.safetensors")
    safetensors.torch.save_file(torch.nn.Linear(1, 2).state_dict(), f, metadata={"torchsh": kept})
    loaded = json.loads(sh("torch nn load --json $(torch nn linear 1 2) %s" % f))
    assert loaded["loaded"] == 2 and "data" not in loaded
    assert "data" not in json.loads(sh("torch model inspect --json %s" % f))
