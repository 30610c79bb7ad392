"""data/tarshards.py against shards written by the webdataset library's TarWriter (the oracle): items are what
was written, grouped by key, fields in sorted order with the target last; images decode as PIL + numpy do;
shards are the pieces; pickles, text and unknown kinds are refused by name; a missing member, a damaged tar and
a shard cut short after opening are file_error naming the shard and the member."""
import io
import os
import tarfile

import numpy as np
import pytest
import torch
import torch.utils.data
from PIL import Image
from support.required import missing

from torchsh.data import tarshards
from torchsh.data.datasets import FileDataset
from torchsh.data.openers import Options, open_dataset
from torchsh.errors import TorchshError


def _webdataset():
    try:
        import webdataset
    except ImportError:
        missing("webdataset is not installed (the oracle that writes the shards): pip install webdataset")
    return webdataset


def write_shards(folder, shards=3, per_shard=4, image=False, extra=None):
    """Shards of samples {x.npy float32 [3], meta.json, cls int (and png)}: the samples as written, in order."""
    wds, rng, written = _webdataset(), np.random.default_rng(0), []
    for s in range(shards):
        with wds.TarWriter(os.path.join(folder, "train-%03d.tar" % s)) as sink:
            for k in range(per_shard):
                n = s * per_shard + k
                sample = {"__key__": "s%05d" % n, "npy": rng.standard_normal(3).astype(np.float32),
                          "json": [n, n + 0.5], "cls": n % 3}
                if image:
                    sample["png"] = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
                sample.update(extra or {})
                sink.write(sample)
                written.append(sample)
    return [os.path.join(folder, "train-%03d.tar" % s) for s in range(shards)], written


def _open(paths, **options):
    return FileDataset(tarshards.tar_fields(paths, Options(**options)))


def test_items_are_the_samples_written_fields_sorted_and_the_class_last(tmp_path):
    paths, written = write_shards(str(tmp_path))
    d = _open(paths)
    assert [f.name for f in d.fields] == ["json", "npy", "cls"] and len(d) == len(written)
    for i, sample in enumerate(written):
        meta, x, cls = d[i]
        assert torch.equal(x, torch.from_numpy(sample["npy"])) and cls.dtype == torch.int64
        assert int(cls) == sample["cls"] and cls.shape == ()
        assert torch.equal(meta, torch.tensor(sample["json"], dtype=torch.float32))


def test_each_shard_is_a_piece(tmp_path):
    paths, _ = write_shards(str(tmp_path), shards=3, per_shard=4)
    assert _open(paths).fields[0].piece_starts.tolist() == [0, 4, 8]


def test_images_decode_as_pil_and_numpy_do(tmp_path):
    paths, written = write_shards(str(tmp_path), shards=1, image=True)
    d = _open(paths, columns="png", target="cls")
    with tarfile.open(paths[0]) as tar:
        raw = tar.extractfile("s00002.png").read()
    want = torch.from_numpy(np.array(Image.open(io.BytesIO(raw)).convert("RGB"))).permute(2, 0, 1).float() / 255
    image, cls = d[2]
    assert image.dtype == torch.float32 and image.shape == (3, 5, 7) and torch.equal(image, want)
    assert torch.equal((image * 255).round().to(torch.uint8).permute(1, 2, 0), torch.from_numpy(written[2]["png"]))


def test_a_loader_with_two_workers_gives_the_batches_of_none(tmp_path):
    paths, _ = write_shards(str(tmp_path), shards=3, per_shard=5)
    d = _open(paths)
    one = list(torch.utils.data.DataLoader(d, batch_size=4))
    two = list(torch.utils.data.DataLoader(d, batch_size=4, num_workers=2))
    assert len(one) == len(two) == 4
    for a, b in zip(one, two):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_rows_stack_the_items(tmp_path):
    paths, written = write_shards(str(tmp_path))
    field = _open(paths).fields[1]
    want = torch.stack([torch.from_numpy(written[i]["npy"]) for i in (5, 0)])
    assert torch.equal(field.rows(torch.tensor([5, 0])), want)
    assert field.rows(slice(2, 6)).shape == (4, 3)


@pytest.mark.parametrize("ext,words", [("pth", "never unpickled"), ("txt", "text"), ("mp3", "no decoder")])
def test_pickles_text_and_unknown_kinds_are_refused_by_name(tmp_path, ext, words):
    paths, _ = write_shards(str(tmp_path), shards=1, extra={ext: b"abc"})
    with pytest.raises(TorchshError) as e:
        _open(paths)
    assert e.value.code == "bad_argument" and repr(ext) in e.value.message and words in e.value.message
    assert len(_open(paths, columns="npy")) == 4  # --columns leaves it out


def test_a_sample_missing_a_field_is_named_with_its_shard(tmp_path):
    paths, _ = write_shards(str(tmp_path), shards=2)
    with tarfile.open(paths[1], "a") as tar:
        info = tarfile.TarInfo("lonely.npy")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    with pytest.raises(TorchshError) as e:
        _open(paths)
    assert e.value.code == "file_error" and paths[1] in e.value.message and "'lonely'" in e.value.message


def test_a_damaged_tar_and_a_missing_shard_are_file_errors_naming_them(tmp_path):
    paths, _ = write_shards(str(tmp_path), shards=2)
    with open(paths[1], "r+b") as f:
        f.seek(0)
        f.write(b"\xff" * 600)
    for shards in (paths, [paths[0], str(tmp_path / "gone.tar")]):
        with pytest.raises(TorchshError) as e:
            _open(shards)
        assert e.value.code == "file_error" and shards[1] in e.value.message


def test_a_shard_cut_short_after_opening_names_the_member(tmp_path):
    paths, _ = write_shards(str(tmp_path), shards=1)
    d = _open(paths)
    os.truncate(paths[0], 1024)
    with pytest.raises(TorchshError) as e:
        d[3]
    assert e.value.code == "file_error" and "s00003" in e.value.message and paths[0] in e.value.message
    assert "cut short" in e.value.message


def test_open_dataset_dispatches_tar_files(tmp_path):
    paths, written = write_shards(str(tmp_path), shards=1)
    d = open_dataset([paths[0]], Options(target="cls"))
    assert len(d) == len(written) and d.field_names[-1] == "cls"
