"""stfile: a safetensors file's values read into memory of their own, equal byte for byte to safetensors' own
reader, and never backed by the file: a file truncated or written over in place (cp, a script saving over
it) cannot reach a value already read (with a mapped value, touching it raised SIGBUS and ended the daemon)."""
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

from torchsh.formats import stfile
from torchsh.errors import TorchshError

VALUES = {"f32": torch.randn(3, 4), "f64": torch.tensor(2.5, dtype=torch.float64), "bf16": torch.randn(5).bfloat16(),
          "f16": torch.randn(2, 2).half(), "bool": torch.tensor([True, False, True]), "i8": torch.arange(-3, 3, dtype=torch.int8),
          "u8": torch.arange(4, dtype=torch.uint8), "i64": torch.arange(7), "u16": torch.arange(4).to(torch.uint16),
          "f8": torch.randn(4).to(torch.float8_e4m3fn), "empty": torch.empty(0, 3)}


def _bytes(t):
    return t.reshape(-1).view(torch.uint8)


def test_every_dtype_reads_byte_for_byte_as_safetensors_reads_it(tmp_path):
    path = str(tmp_path / "all.safetensors")
    save_file(VALUES, path, metadata={"note": "kept"})
    oracle = load_file(path)
    with stfile.File(path) as f:
        assert sorted(f.keys()) == sorted(VALUES) and f.metadata() == {"note": "kept"}
        for key in f.keys():
            value = f.read(key)
            assert value.dtype == oracle[key].dtype and value.shape == oracle[key].shape, key
            assert torch.equal(_bytes(value), _bytes(oracle[key])), key


def _truncated_after(path, read):
    """read(path) -> tensors; then the file is cut to 100 bytes in place, as `cp small.safetensors path` would."""
    values = read(path)
    with open(path, "r+b") as f:
        f.truncate(100)
    return values


def test_values_read_survive_their_file_being_cut_in_place(tmp_path):
    big = {"w": torch.randn(1 << 18), "b": torch.randn(10)}
    path = str(tmp_path / "w.safetensors")
    save_file(big, path)
    with stfile.File(path) as f:
        got = _truncated_after(path, lambda p: {k: f.read(k) for k in f.keys()})
    assert torch.equal(got["w"], big["w"]) and torch.equal(got["b"], big["b"])  # a mapped value: SIGBUS here
    save_file(big, path)
    got, _ = _truncated_after(path, stfile.read)  # nn load, checkpoint load
    assert torch.equal(got["w"], big["w"])


def test_a_file_cut_after_it_was_opened_is_a_file_error_when_read(tmp_path):
    path = str(tmp_path / "w.safetensors")
    save_file({"w": torch.randn(1000)}, path)
    with stfile.File(path) as f:
        with open(path, "r+b") as g:
            g.truncate(100)
        with pytest.raises(TorchshError) as e:
            f.read("w")
    assert e.value.code == "file_error" and "changed while it was read" in e.value.message


def test_the_descriptor_is_closed_with_the_file(tmp_path):
    path = str(tmp_path / "w.safetensors")
    save_file({"w": torch.ones(2)}, path)
    before = len(os.listdir("/proc/self/fd"))
    with stfile.File(path) as f:
        assert len(os.listdir("/proc/self/fd")) == before + 1
        f.read("w")
    assert len(os.listdir("/proc/self/fd")) == before
