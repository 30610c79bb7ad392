"""The output store is budgeted: bytes and count, oldest dropped first; one item over its cap is refused."""
import os

import pytest
from mcp.server.mcpserver.exceptions import ResourceError

from torchsh.agents.store import Store
from torchsh.errors import TorchshError


def test_the_oldest_item_goes_when_the_count_is_reached(tmp_path):
    store = Store(folder=str(tmp_path), max_count=2)
    first, second, third = (store.put_text("out", text) for text in ("a", "b", "c"))
    with pytest.raises(ResourceError, match="not held"):
        store.read("out", first)
    assert (store.read("out", second), store.read("out", third)) == ("b", "c")


def test_the_oldest_items_go_when_the_bytes_are_spent(tmp_path):
    store = Store(folder=str(tmp_path), max_bytes=10, item_cap=10)
    first = store.put_text("out", "x" * 6)
    second = store.put_text("out", "y" * 6)
    assert store.held_bytes() == 6 and [n for _, n in store.items] == [second]
    with pytest.raises(ResourceError):
        store.read("out", first)


def test_one_item_over_its_cap_is_refused_and_drops_nothing(tmp_path):
    store = Store(folder=str(tmp_path), item_cap=4)
    kept = store.put_text("out", "abc")
    with pytest.raises(TorchshError) as refused:
        store.put_text("out", "abcde")
    assert refused.value.code == "too_large" and "torch save" in refused.value.hint
    assert store.read("out", kept) == "abc"


def test_a_plot_file_is_served_as_bytes_and_removed_when_dropped(tmp_path):
    store = Store(folder=str(tmp_path), max_count=1)
    n, path = store.reserve_file("plot")
    with open(path, "wb") as f:
        f.write(b"\x89PNG")
    store.adopt_file("plot", n, path)
    assert store.read("plot", str(n)) == b"\x89PNG" and store.uri("plot", n) == "torchsh://plot/%d.png" % n
    store.put_text("out", "next")
    assert not os.path.exists(path)


def test_a_symlink_planted_for_a_plot_is_refused(tmp_path):
    store = Store(folder=str(tmp_path))
    n, path = store.reserve_file("plot")
    os.symlink("/etc/passwd", path)
    with pytest.raises(TorchshError, match="not a regular file"):
        store.adopt_file("plot", n, path)


def test_close_removes_the_private_folder(tmp_path):
    folder = tmp_path / "private"
    folder.mkdir()
    store = Store(folder=str(folder))
    store.put_text("out", "x")
    store.close()
    assert not folder.exists()
