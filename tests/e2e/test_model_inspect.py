"""`torch model inspect FILE`: what a file holds from its headers alone, against the libraries that wrote it
(safetensors, numpy, PyTorch's own static scan of a .pt's pickle), and nothing ever unpickled."""
import json
import os

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from support.planted import MaliciousPickle


def _inspect(sh, path):
    return json.loads(sh("torch model inspect %s --json" % path))


def test_safetensors_keys_dtypes_shapes_bytes_and_metadata_are_the_files(sh):
    path = sh.tmp("m.safetensors")
    save_file({"w": torch.zeros(3, 4), "n": torch.zeros((), dtype=torch.int64), "h": torch.zeros(5, dtype=torch.bfloat16)},
              path, metadata={"source": "test"})
    got = _inspect(sh, path)
    assert got["format"] == "safetensors" and got["bytes"] == os.path.getsize(path)
    assert got["metadata"] == {"source": "test"}
    with safe_open(path, "pt") as f:  # the library's own reading of the same header
        want = {k: (str(f.get_tensor(k).dtype).replace("torch.", ""), list(f.get_slice(k).get_shape()),
                    f.get_tensor(k).nbytes) for k in f.keys()}
    assert {t["key"]: (t["dtype"], t["shape"], t["bytes"]) for t in got["tensors"]} == want
    assert set(want) == {"w", "n", "h"}


def test_a_2_gib_safetensors_file_is_read_by_its_header_alone(sh):
    path = sh.tmp("big.safetensors")
    header = json.dumps({"big": {"dtype": "F32", "shape": [1 << 29], "data_offsets": [0, 2 << 30]}}).encode()
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.truncate(8 + len(header) + (2 << 30))  # sparse: no data on disk, none read
    got = _inspect(sh, path)
    assert got["tensors"] == [{"key": "big", "dtype": "float32", "shape": [1 << 29], "bytes": 2 << 30}]


def test_npy_and_npz_headers_are_numpys(sh):
    npy, npz = sh.tmp("a.npy"), sh.tmp("b.npz")
    np.save(npy, np.zeros((2, 3), np.float32))
    np.savez(npz, x=np.ones(4), y=np.arange(3, dtype=np.int16))
    assert _inspect(sh, npy)["tensors"] == [{"key": "", "dtype": "float32", "shape": [2, 3], "bytes": 24}]
    got = {t["key"]: t for t in _inspect(sh, npz)["tensors"]}
    with np.load(npz) as want:
        assert {k: (str(want[k].dtype), list(want[k].shape), want[k].nbytes) for k in want.files} == {
            k: (t["dtype"], t["shape"], t["bytes"]) for k, t in got.items()}


def test_a_state_dict_pt_lists_its_storages_and_needs_no_globals(sh):
    path = sh.tmp("sd.pt")
    state = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).state_dict()
    torch.save(state, path)
    got = _inspect(sh, path)
    assert got["format"] == "pt" and got["globals_needed"] == [] and got["weights_only"] is True
    assert len(got["storages"]) == len(state)
    assert sum(s["bytes"] for s in got["storages"]) == sum(t.nbytes for t in state.values())


def test_a_whole_module_pickle_names_the_globals_pytorch_would_need(sh):
    path = sh.tmp("whole.pt")
    torch.save(torch.nn.Linear(2, 2), path)
    got = _inspect(sh, path)
    assert got["globals_needed"] == sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    assert "torch.nn.modules.linear.Linear" in got["globals_needed"] and got["weights_only"] is False
    assert "torch.nn.modules.linear.Linear" in sh("torch model inspect %s" % path)


def test_a_malicious_pickle_is_listed_and_never_runs(sh):
    marker, path = sh.tmp("ran"), sh.tmp("evil.pt")
    torch.save({"w": torch.zeros(2), "x": MaliciousPickle(marker)}, path)
    got = _inspect(sh, path)
    assert any(g.endswith(".system") for g in got["globals_needed"]), got
    assert not os.path.exists(marker)


def test_a_torch_export_archive_lists_its_weights_as_the_program_holds_them(sh):
    path = sh.tmp("m.pt2")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2, dtype=torch.float64))
    model[2].register_buffer("steps", torch.zeros(5, dtype=torch.int64))
    program = torch.export.export(model, (torch.randn(2, 3),))
    torch.export.save(program, path)
    got = _inspect(sh, path)
    assert got["format"] == "pt2" and got["metadata"] == {"archive_format": "pt2", "archive_version": "0"}
    want = program.state_dict
    assert {t["key"]: (t["dtype"], t["shape"], t["bytes"]) for t in got["tensors"]} == {
        k: (str(v.dtype).replace("torch.", ""), list(v.shape), v.numel() * v.element_size()) for k, v in want.items()}


@pytest.mark.parametrize("name,data,code", [("x.txt", b"hello", "bad_argument"),
                                             ("bad.safetensors", b"\xff" * 16, "file_error"),
                                             ("old.pt", b"\x80\x02}q\x00.", "file_error")])
def test_what_it_cannot_read_is_one_line_with_its_code(sh, name, data, code):
    path = sh.tmp(name)
    with open(path, "wb") as f:
        f.write(data)
    r = sh.run("torch model inspect %s" % path)
    assert r.code != 0 and r.err.rstrip().endswith("[%s]" % code) and r.err.count("\n") == 1, r.err
