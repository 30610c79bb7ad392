"""fileio: atomic saves are fsync'd (file, then folder) and leave nothing behind on failure; reads refuse
FIFOs and .npy headers that claim more data than the file holds."""
import io
import os
import stat

import numpy as np
import pytest

from torchsh import fileio
from torchsh.errors import TorchshError


def test_atomic_write_fsyncs_the_file_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append(("fsync", os.path.basename(os.readlink(
        "/proc/self/fd/%d" % fd)))) or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append(("replace", os.path.basename(b))) or real_replace(a, b))
    target = tmp_path / "x.npy"
    fileio.atomic_write(str(target), lambda tmp: np.save(tmp, np.arange(3)))
    assert [e[0] for e in events] == ["fsync", "replace", "fsync"]
    assert events[0][1].startswith(".torchsh-") and events[2][1] == tmp_path.name
    assert os.listdir(tmp_path) == ["x.npy"]


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), ValueError("bad"), KeyboardInterrupt()])
def test_a_failing_writer_leaves_no_temp_file(tmp_path, exc):
    def writer(tmp):
        open(tmp, "wb").write(b"half")
        raise exc
    with pytest.raises((TorchshError, KeyboardInterrupt)) as e:
        fileio.atomic_write(str(tmp_path / "x.pt"), writer)
    if isinstance(e.value, TorchshError):
        assert e.value.code == "file_error"
    assert os.listdir(tmp_path) == []


def test_a_new_file_gets_0666_less_the_umask_and_a_replaced_file_keeps_its_mode(tmp_path, monkeypatch):
    monkeypatch.setattr(fileio, "_umask", [0o027])
    new = tmp_path / "new.npy"
    fileio.atomic_write(str(new), lambda tmp: np.save(tmp, np.arange(3)))
    assert stat.S_IMODE(new.stat().st_mode) == 0o640  # not mkstemp's 0600
    shared = tmp_path / "shared.npy"
    shared.write_bytes(b"")
    os.chmod(shared, 0o604)
    fileio.atomic_write(str(shared), lambda tmp: np.save(tmp, np.arange(3)))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o604 and np.load(shared).tolist() == [0, 1, 2]


def test_the_umask_is_read_without_changing_it(monkeypatch):
    monkeypatch.setattr(fileio, "_umask", [])
    old = os.umask(0o023)
    try:
        assert fileio.umask() == 0o023
        assert os.umask(0o023) == 0o023  # still what it was
    finally:
        os.umask(old)


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    os.mkfifo(tmp_path / "p")
    with pytest.raises(TorchshError) as e:
        fileio.regular_file(str(tmp_path / "p"))
    assert e.value.code == "file_error" and "FIFO" in e.value.message


def test_an_npy_header_claiming_more_than_the_data_is_refused():
    buf = io.BytesIO()
    np.save(buf, np.zeros(1000))
    data = buf.getvalue()
    assert fileio.npy_from_bytes(data).shape == (1000,)
    with pytest.raises(TorchshError) as e:
        fileio.npy_from_bytes(data[:-8])
    assert e.value.code == "bad_request" and "claims shape [1000]" in e.value.message


def test_an_uploaded_npy_becomes_an_array_on_the_body_itself_not_a_copy():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    for src in (a, np.asfortranarray(a)):
        f = io.BytesIO()
        np.save(f, src)
        body = bytearray(f.getvalue())  # a big body arrives as a bytearray (daemon/bodies.py)
        got = fileio.npy_from_bytes(body)
        assert np.array_equal(got, a) and got.flags.writeable  # torch.from_numpy takes it as it is
        assert np.shares_memory(got, np.frombuffer(body, np.uint8))
