"""`torch nn load` of what real checkpoints look like, written here by in-process PyTorch: plain state dicts
(.pt, .safetensors), a Lightning .ckpt, DataParallel's `module.` keys, a Hugging Face sharded folder; its
diff (loaded, missing, unexpected, shape-mismatched) as text and JSON; strict refusals that change nothing;
pickles that need globals beyond weights_only refused by name, and a malicious one never run; a torch.export
archive (.pt2) read from its raw weights, its pickled weights through weights_only alone; TorchScript refused
with the jit_load route, and neither's malicious variant ever run."""
import io
import json
import os
import pickle
import zipfile

import pytest
import torch
from safetensors.torch import load_file, save_file

from support.planted import MaliciousPickle

nn = torch.nn
SPEC = "'linear 3 4' relu 'linear 4 2'"


def source():
    """The weights every file here holds: a seeded twin of SPEC, so the model's own (random) ones differ."""
    torch.manual_seed(7)
    return {k: v.clone() for k, v in nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).state_dict().items()}


def weights(sh, m):
    """The model's state_dict as torchsh holds it, through `nn save`."""
    path = sh.tmp("back.safetensors")
    sh("torch nn save %s %s" % (m, path))
    return load_file(path)


def assert_same(got, want):
    assert set(got) == set(want) and all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.parametrize("name", ["plain.pt", "plain.safetensors"])
def test_plain_state_dict_loads_bit_for_bit(sh, name):
    path = sh.tmp(name)
    (save_file if name.endswith(".safetensors") else torch.save)(source(), path)
    m = sh("torch nn sequential %s" % SPEC)
    assert sh("torch nn load %s %s" % (m, path)) == "loaded 4 of 4 keys from %s" % path
    assert_same(weights(sh, m), source())


def test_lightning_ckpt_loads_its_state_dict_key_with_the_prefix_stripped(sh):
    path = sh.tmp("epoch=3.ckpt")
    torch.save({"state_dict": {"model." + k: v for k, v in source().items()}, "epoch": 3,
                "hyper_parameters": {"lr": 0.1, "name": "mlp"}}, path)
    m = sh("torch nn sequential %s" % SPEC)
    r = sh.run("torch nn load %s '%s'" % (m, path))
    assert r.code != 0 and "--key state_dict picks the state dict" in r.err
    got = json.loads(sh("torch nn load %s '%s' --key state_dict --strip model. --json" % (m, path)))
    assert got == {"file": path, "loaded": 4, "of": 4, "missing": [], "unexpected": [], "mismatched": []}
    assert_same(weights(sh, m), source())


def test_dataparallel_prefix_is_stripped_and_map_renames_prefixes(sh):
    ddp, named = sh.tmp("ddp.pth"), sh.tmp("named.safetensors")
    torch.save({"module." + k: v for k, v in source().items()}, ddp)
    m = sh("torch nn sequential %s" % SPEC)
    sh("torch nn load %s %s --strip module." % (m, ddp))
    assert_same(weights(sh, m), source())
    save_file({k.replace("0.", "first.").replace("2.", "last."): v for k, v in source().items()}, named)
    m2 = sh("torch nn sequential %s" % SPEC)
    sh("torch nn load %s %s --map first.=0.,last.=2." % (m2, named))
    assert_same(weights(sh, m2), source())


def sharded(sh, shards):
    """A Hugging Face sharded folder: shards [{key: tensor}] as model-0000i-of-0000n.safetensors, and the
    model.safetensors.index.json naming each key's shard."""
    folder, weight_map = sh.tmp("hf"), {}
    os.makedirs(folder)
    for i, shard in enumerate(shards):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        save_file(shard, os.path.join(folder, name))
        weight_map.update({k: name for k in shard})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    return folder


def test_hugging_face_sharded_folder_loads_every_shard(sh):
    state = source()
    folder = sharded(sh, [{k: state[k] for k in ("0.weight", "0.bias")}, {k: state[k] for k in ("2.weight", "2.bias")}])
    m = sh("torch nn sequential %s" % SPEC)
    assert sh("torch nn load %s %s" % (m, folder)).startswith("loaded 4 of 4 keys")
    assert_same(weights(sh, m), state)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"0.weight": "../elsewhere.safetensors"}}, f)
    r = sh.run("torch nn load %s %s" % (m, folder))
    assert r.code != 0 and "outside its folder" in r.err and "[file_error]" in r.err


def test_sharded_refusal_comes_from_the_headers_before_any_data_is_read(sh):
    state = source()
    folder = sharded(sh, [dict(state), {"head.weight": torch.ones(2)}])
    first = os.path.join(folder, "model-00001-of-00002.safetensors")
    os.truncate(first, os.path.getsize(first) - 8)  # its header intact, its data cut: reading it would fail
    m = sh("torch nn sequential %s" % SPEC)
    r = sh.run("torch nn load %s %s" % (m, folder))
    assert r.code == 4 and "1 unexpected [head.weight]" in r.err and "[state_mismatch]" in r.err


def test_strict_load_refuses_with_the_whole_diff_and_partial_loads_what_fits(sh):
    path = sh.tmp("other.pt")
    state = source()
    torch.save({"0.weight": state["0.weight"], "0.bias": state["0.bias"], "2.weight": torch.ones(3, 4),
                "head.weight": torch.ones(1)}, path)
    m = sh("torch nn sequential %s" % SPEC)
    before = weights(sh, m)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 4 and "[state_mismatch]" in r.err
    assert "1 missing [2.bias], 1 unexpected [head.weight], 1 shape-mismatched [2.weight: file [3, 4] vs " \
           "model [2, 4]]" in r.err
    assert_same(weights(sh, m), before)  # nothing changed
    got = json.loads(sh("torch nn load %s %s --partial --json" % (m, path)))
    assert got == {"file": path, "loaded": 2, "of": 4, "missing": ["2.bias"], "unexpected": ["head.weight"],
                   "mismatched": [{"key": "2.weight", "file": [3, 4], "model": [2, 4]}]}
    after = weights(sh, m)
    assert torch.equal(after["0.weight"], state["0.weight"]) and torch.equal(after["0.bias"], state["0.bias"])
    assert torch.equal(after["2.weight"], before["2.weight"]) and torch.equal(after["2.bias"], before["2.bias"])
    text = sh("torch nn load %s %s --partial" % (m, path)).split("\n")
    assert text[0] == "loaded 2 of 4 keys from %s" % path
    assert text[-1].split() == ["shape-mismatched", "2.weight", "[3,", "4]", "[2,", "4]"]


def test_whole_module_pickle_is_refused_naming_its_globals_until_trusted(sh):
    path = sh.tmp("whole.pt")
    torch.manual_seed(7)
    torch.save(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), path)
    m = sh("torch nn sequential %s" % SPEC)
    r = sh.run("torch nn load %s %s" % (m, path))
    needed = ["torch.nn.modules.activation.ReLU", "torch.nn.modules.container.Sequential",
              "torch.nn.modules.linear.Linear"]
    assert r.code != 0 and "needs globals beyond weights_only: %s" % " ".join(needed) in r.err
    assert "nothing was unpickled" in r.err and "[file_error]" in r.err
    sh("torch nn load %s %s --trust %s" % (m, path, ",".join(needed)))
    assert_same(weights(sh, m), source())
    r = sh.run("torch nn load %s %s --trust math.pi" % (m, path))
    assert r.code == 2 and "--trust math.pi: never trusted: " in r.err


def test_malicious_pickle_is_refused_and_its_payload_never_runs(sh):
    path, marker = sh.tmp("evil.pt"), sh.tmp("pwned")
    torch.save({"0.weight": MaliciousPickle(marker)}, path)
    m = sh("torch nn sequential %s" % SPEC)
    before = weights(sh, m)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code != 0 and "needs globals beyond weights_only: posix.system" in r.err
    assert not os.path.exists(marker)
    assert_same(weights(sh, m), before)
    # Copying the refusal's names into --trust must not run it either: a function is never trusted.
    for trust in ("posix.system", "os.system", "builtins.eval", "subprocess.call"):
        r = sh.run("torch nn load %s %s --trust %s" % (m, path, trust))
        assert r.code == 2 and "--trust %s: never trusted: it comes from " % trust in r.err and "[bad_argument]" in r.err
    assert not os.path.exists(marker)
    assert_same(weights(sh, m), before)


def exported(path):
    """A torch.export archive of SPEC's seeded twin, as torch.export.save writes it."""
    torch.manual_seed(7)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    torch.export.save(torch.export.export(model, (torch.randn(1, 3),)), path)


def rewritten(src, dst, change):
    """A copy of the zip archive src as dst, each member's bytes through change(name, data)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info, change(info.filename, zin.read(info)))


def test_torch_export_archive_loads_its_state_dict_bit_for_bit(sh):
    path = sh.tmp("model.pt2")
    exported(path)
    m = sh("torch nn sequential %s" % SPEC)
    assert sh("torch nn load %s %s" % (m, path)) == "loaded 4 of 4 keys from %s" % path
    assert_same(weights(sh, m), source())
    assert_same(weights(sh, m), dict(torch.export.load(path).state_dict))


def test_a_pt2_weight_stored_as_a_malicious_pickle_is_refused_and_never_runs(sh):
    """torch.export.load reads a use_pickle weight with weights_only=False: this file runs its payload there."""
    good, path, marker = sh.tmp("good.pt2"), sh.tmp("evil.pt2"), sh.tmp("pwned")
    exported(good)
    payload = io.BytesIO()
    torch.save(MaliciousPickle(marker), payload)

    def change(name, data):
        if name.endswith("model_weights_config.json"):
            config = json.loads(data)
            config["config"]["0.weight"]["use_pickle"] = True
            return json.dumps(config).encode()
        return payload.getvalue() if name.endswith("/weights/weight_0") else data
    rewritten(good, path, change)
    m = sh("torch nn sequential %s" % SPEC)
    before = weights(sh, m)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 6 and "weight_0 needs globals beyond weights_only: posix.system" in r.err
    assert "nothing was unpickled" in r.err and r.err.rstrip().endswith("[file_error]")
    assert not os.path.exists(marker)
    assert_same(weights(sh, m), before)


def test_torchscript_is_refused_naming_jit_load_and_a_malicious_one_never_runs(sh):
    path, evil, marker = sh.tmp("scripted.pt"), sh.tmp("evil_ts.pt"), sh.tmp("pwned")
    torch.manual_seed(7)
    torch.jit.script(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))).save(path)
    m = sh("torch nn sequential %s" % SPEC)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 6 and "is TorchScript (code and weights), not a state dict" in r.err
    assert "`torch nn jit_load FILE` opens it as a model" in r.err and r.err.rstrip().endswith("[file_error]")
    sh("torch nn save $(torch nn jit_load %s 2>/dev/null) w.safetensors && torch nn load %s w.safetensors" % (path, m))
    assert_same(weights(sh, m), source())  # the route the hint names
    rewritten(path, evil, lambda name, data: pickle.dumps(MaliciousPickle(marker)) if name.endswith("/data.pkl")
              else data)
    for verb in ("nn load %s" % m, "nn jit_load"):
        r = sh.run("torch %s %s" % (verb, evil))
        assert r.code == 6 and r.err.rstrip().endswith("[file_error]"), (verb, r.err)
    assert not os.path.exists(marker)
