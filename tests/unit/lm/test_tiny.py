"""lm/tiny.py's kept folders: a tiny model made once is copied from the cache the next time (same bytes, no
build), a kept folder someone else could have written is never used (the model is built again), and a
folder that holds anything but this very model is left alone."""
import os

import pytest

from torchsh.lm import tiny


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TORCHSH_TABLE_CACHE", str(folder))
    return folder


def _files(folder):
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


def test_a_second_folder_is_the_kept_ones_copy_without_a_build(cache, tmp_path, monkeypatch):
    tiny.make(str(tmp_path / "a"))
    monkeypatch.setattr(tiny, "_build", lambda *a: pytest.fail("built again"))
    tiny.make(str(tmp_path / "b"))
    assert _files(tmp_path / "a") == _files(tmp_path / "b") and "model.safetensors" in _files(tmp_path / "b")


def test_a_kept_folder_others_can_write_is_not_used(cache, tmp_path, monkeypatch):
    tiny.make(str(tmp_path / "a"))
    kept = tiny._kept_folder("llama", 0, 2, 64, 384)
    planted = os.path.join(kept, "config.json")
    os.chmod(planted, 0o666)
    built = []
    real = tiny._build
    monkeypatch.setattr(tiny, "_build", lambda *a: built.append(a) or real(*a))
    tiny.make(str(tmp_path / "b"))
    assert built and _files(tmp_path / "a") == _files(tmp_path / "b")


def test_a_folder_that_holds_files_is_refused_and_left_as_it_was(cache, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text("my own")
    with pytest.raises(FileExistsError):
        tiny.make(str(mine))
    assert _files(mine) == {"config.json": b"my own"}


def test_making_the_same_model_twice_in_one_folder_is_harmless_and_a_changed_file_is_refused(cache, tmp_path):
    folder = tmp_path / "tiny"
    tiny.make(str(folder))
    before = _files(folder)
    tiny.make(str(folder))
    assert _files(folder) == before
    with pytest.raises(FileExistsError):
        tiny.make(str(folder), arch="gpt2")
    (folder / "config.json").write_text("edited by hand")
    with pytest.raises(FileExistsError):
        tiny.make(str(folder))
    assert (folder / "config.json").read_text() == "edited by hand"
