"""`torch data transform D --standardize` and `--standardize_like D2` through real bash: scikit-learn's
StandardScaler fit on one dataset and applied to it or to another. The oracle is numpy in-process: the mean
and the population std (ddof=0) of each feature, a constant feature's std 1, (x - mean) / std."""
import json

import numpy as np
import torch
from support.second_daemon import SecondDaemon

RNG = np.random.default_rng(4)


def _items(sh, handle, n):
    return [json.loads(line) for line in sh("torch data head %s %d" % (handle, n)).split("\n") if line]


def _features(sh, handle, n):
    return np.array([x for x, _ in _items(sh, handle, n)], dtype=np.float32)


def _open(sh, name, x, y):
    xp, yp = sh.tmp(name + "_x.npy"), sh.tmp(name + "_y.npy")
    np.save(xp, x)
    np.save(yp, y)
    return sh("torch data open %s %s" % (xp, yp))


def _scaled(x, mean, std):
    """StandardScaler.transform's values, computed in float64 and rounded once to float32."""
    return ((x.astype(np.float64) - np.asarray(mean)) / np.asarray(std)).astype(np.float32)


def test_standardize_learns_each_features_mean_and_population_std_and_applies_them(sh):
    # more items than one chunk of the learning pass (4,096), so the chunks' statistics are merged
    x = (RNG.standard_normal((10000, 3)) * [1.0, 50.0, 0.01] + [0.0, -3.0, 7.0]).astype(np.float32)
    x[:, 2] = 7.0  # a constant feature: its std is taken as 1 (StandardScaler's), so it becomes 0, not NaN
    d = _open(sh, "train", x, np.arange(10000) % 3)
    t = sh("torch data transform %s --standardize" % d)
    learned = json.loads(sh("torch data info --json %s" % t))["standardize"]
    x64 = x.astype(np.float64)
    assert learned["field"] == 0
    assert np.allclose(learned["mean"], x64.mean(0), rtol=1e-12, atol=1e-12)
    assert np.allclose(learned["std"][:2], x64.std(0, ddof=0)[:2], rtol=1e-12) and learned["std"][2] == 1.0
    got = _features(sh, t, 10000)
    assert np.array_equal(got, _scaled(x, learned["mean"], learned["std"]))
    assert np.allclose(got.mean(0), [0, 0, 0], atol=1e-5) and np.allclose(got.std(0)[:2], [1, 1], atol=1e-4)
    assert np.array_equal(got[:, 2], np.zeros(10000, np.float32))
    assert "standardize  field 0: mean [" in sh("torch data info %s" % t)


def test_standardize_like_applies_the_statistics_another_dataset_learned(sh):
    train_x = RNG.standard_normal((50, 4)).astype(np.float32) * 3 + 1
    val_x = RNG.standard_normal((20, 4)).astype(np.float32)
    train = sh("torch data transform %s --standardize" % _open(sh, "tr", train_x, np.zeros(50, np.int64)))
    val = sh("torch data transform %s --standardize_like %s" % (_open(sh, "va", val_x, np.zeros(20, np.int64)), train))
    learned = json.loads(sh("torch data info --json %s" % train))["standardize"]
    assert json.loads(sh("torch data info --json %s" % val))["standardize"] == learned  # kept with the result
    assert np.array_equal(_features(sh, val, 20), _scaled(val_x, train_x.astype(np.float64).mean(0),
                                                          train_x.astype(np.float64).std(0)))


def test_standardize_refusals_name_what_to_do(sh):
    d = _open(sh, "r", np.ones((4, 2), np.float32), np.zeros(4, np.int64))
    r = sh.run("torch data transform %s --standardize_like %s" % (d, d))
    assert r.code == 2 and "learned no statistics" in r.err and "--standardize" in r.err
    r = sh.run("torch data transform %s --standardize --mean 1 --std 2" % d)
    assert r.code == 2 and "use one" in r.err
    train = sh("torch data transform %s --standardize" % d)
    other = _open(sh, "o", np.ones((4, 3), np.float32), np.zeros(4, np.int64))
    r = sh.run("torch data transform %s --standardize_like %s" % (other, train))
    assert r.code == 4 and "shape [2]" in r.err and r.err.rstrip().endswith("[shape_mismatch]")


def test_the_learned_statistics_survive_a_session_save(sh, tmp_path):
    x = RNG.standard_normal((6, 2)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    own = SecondDaemon(sh, "standardize")
    try:
        t = own("torch data transform $(torch data open %s) --standardize" % (tmp_path / "x.npy"))
        before = own("torch data info --json %s" % t)
        own("torch session save %s" % (tmp_path / "s"))
        own("torch daemon stop")
        own("torch session load %s" % (tmp_path / "s"))
        assert own("torch data info --json %s" % t) == before
        got = np.array([item[0] for item in _items(own, t, 6)], np.float32)
        assert np.array_equal(got, _scaled(x, json.loads(before)["standardize"]["mean"],
                                           json.loads(before)["standardize"]["std"]))
    finally:
        own.stop()
