"""The op-table cache: JSON keyed by the torch version and the generator's source; a round trip
gives the same rows, a stale or broken file is rebuilt, and it can be turned off."""
from torchsh.table import cache, from_torch


def _rows_text(rows):
    return [(r.name, r.category, r.summary, r.doc, r.factory, r.call, [ov.signature(r.name) for ov in r.overloads],
             [[(a.name, a.kind, a.optional, a.keyword_only, a.required) for a in ov.args] for ov in r.overloads])
            for r in rows]


def test_cached_rows_equal_freshly_built_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHSH_TABLE_CACHE", str(tmp_path))
    built = cache.cached_rows(from_torch.torch_ops)
    files = list(tmp_path.glob("optable-*.json"))
    assert len(files) == 1 and cache.cache_key() in files[0].name
    loaded = cache.cached_rows(lambda: [])  # a current file: the builder is not called
    assert _rows_text(loaded) == _rows_text(built)


def test_a_broken_cache_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHSH_TABLE_CACHE", str(tmp_path))
    (tmp_path / ("optable-%s.json" % cache.cache_key())).write_text("{not json")
    assert cache.cached_rows(lambda: ["rebuilt"]) == ["rebuilt"]


def test_cache_can_be_turned_off():
    assert cache.cache_folder({"TORCHSH_TABLE_CACHE": "off"}) is None
    assert cache.cache_folder({"XDG_CACHE_HOME": "/x"}) == "/x/torchsh"
