"""--compile's cache folder and compiler check (train/compiled/cache.py), without compiling anything: no C++
compiler is not_supported with the fix, a cache folder another user could write is refused, and inductor's
cache is pointed into the daemon's private folder, never its shared /tmp default."""
import os
import time

import pytest
from torch._inductor import config, cpp_builder

from torchsh.errors import TorchshError
from torchsh.train.compiled import cache as compilecache


@pytest.fixture
def no_compiler():
    # config.patch, not monkeypatch.setattr: undoing a setattr on inductor's config proxy deletes the option
    with config.patch({"cpp.cxx": (None, "/nonexistent/g++")}):
        cpp_builder.cpp_compiler_search.cache_clear()  # a compiler found before is remembered
        yield
    cpp_builder.cpp_compiler_search.cache_clear()


def test_no_cxx_compiler_is_not_supported_with_what_to_install(no_compiler):
    with pytest.raises(TorchshError) as e:
        compilecache.require_compiler()
    assert e.value.code == "not_supported" and "apt install g++" in e.value.hint and "CXX" in e.value.hint


def test_a_cache_folder_others_can_write_is_refused(tmp_path):
    folder = tmp_path / "torchd.compile"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with pytest.raises(TorchshError) as e:
        compilecache._use_folder(str(folder))
    assert e.value.code == "untrusted"


def test_inductors_cache_goes_to_the_daemons_private_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/elsewhere")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/elsewhere")
    folder = compilecache.folder_for(str(tmp_path / "torchd.sock"))
    compilecache._use_folder(folder)
    assert folder == str(tmp_path / "torchd.compile") and os.stat(folder).st_mode & 0o777 == 0o700
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(folder, "inductor")


def test_the_first_compile_waits_for_the_warm_up_a_start_began(tmp_path, monkeypatch):
    """Inductor's CPU probe is cached but not locked: a compile beside the warm-up would run it again."""
    done = []
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):  # prepare points them at the folder: put back after
        monkeypatch.setenv(name, os.environ.get(name, "/tmp/elsewhere"))
    monkeypatch.setattr(compilecache, "_prepared", set())
    monkeypatch.setattr(compilecache, "_warming", [])
    monkeypatch.setattr(compilecache, "_warm", lambda folder: (time.sleep(0.5), done.append(folder)))
    folder = compilecache.folder_for(str(tmp_path / "torchd.sock"))
    os.mkdir(folder, 0o700)
    compilecache.warm_in_background(folder)
    compilecache.prepare(folder)
    assert done == [folder]
