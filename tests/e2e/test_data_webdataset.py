"""`torch data open 'train-{000..002}.tar'` through real bash: WebDataset shards written by the webdataset
library's TarWriter (the oracle) read back as the samples written, in order, images as PIL + numpy decode them;
`data loader` with two workers gives the batches it gives with none."""
import io
import os

import numpy as np
import torch
from PIL import Image
from safetensors.torch import load_file
from support.required import missing

EPOCH = "hs=(); while b=$(torch data next --keep $L); do hs+=($b); done; torch save ${hs[@]} %s"


def _shards(sh):
    """train-000..002.tar in a folder of their own, 5 samples each {npy float32 [2], png 4×6 RGB, cls}."""
    try:
        import webdataset
    except ImportError:
        missing("webdataset is not installed (the oracle that writes the shards): pip install webdataset")
    folder, rng, written = sh.tmp("wds"), np.random.default_rng(7), []
    os.makedirs(folder)
    for s in range(3):
        with webdataset.TarWriter(os.path.join(folder, "train-%03d.tar" % s)) as sink:
            for k in range(5):
                sample = {"__key__": "%06d" % (5 * s + k), "npy": rng.standard_normal(2).astype(np.float32),
                          "png": rng.integers(0, 256, (4, 6, 3), dtype=np.uint8), "cls": (5 * s + k) % 3}
                sink.write(sample)
                written.append(sample)
    return folder, written


def _png(pixels):
    """The image as the shard holds it, decoded by PIL + numpy: float32 C×H×W in [0, 1]."""
    encoded = io.BytesIO()
    Image.fromarray(pixels).save(encoded, format="png")
    decoded = np.array(Image.open(io.BytesIO(encoded.getvalue())).convert("RGB"))
    return torch.from_numpy(decoded).permute(2, 0, 1).float() / 255


def _epoch(sh, folder, workers):
    out = sh.tmp("batches.safetensors")
    sh("d=$(torch data open 'train-{000..002}.tar'); L=$(torch data loader $d --batch_size 4 --num_workers %d); "
       % workers + EPOCH % out, cwd=folder)
    saved = load_file(out)
    return [saved[str(i)] for i in range(len(saved))]


def test_brace_named_shards_read_back_as_the_samples_written(sh):
    folder, written = _shards(sh)
    flat = _epoch(sh, folder, 0)
    batches = [flat[k:k + 3] for k in range(0, len(flat), 3)]  # (npy, png, cls): sorted, the class last
    assert [len(b[2]) for b in batches] == [4, 4, 4, 3]
    cls = torch.cat([b[2] for b in batches])
    assert cls.tolist() == [s["cls"] for s in written] and cls.dtype == torch.int64
    assert torch.equal(torch.cat([b[0] for b in batches]), torch.stack([torch.from_numpy(s["npy"]) for s in written]))
    assert torch.equal(torch.cat([b[1] for b in batches]), torch.stack([_png(s["png"]) for s in written]))


def test_two_loader_workers_give_the_batches_of_none(sh):
    folder, _ = _shards(sh)
    none, two = _epoch(sh, folder, 0), _epoch(sh, folder, 2)
    assert len(none) == len(two) == 12 and all(torch.equal(a, b) for a, b in zip(none, two))


def test_a_missing_shard_is_named(sh):
    folder, _ = _shards(sh)
    r = sh.run("torch data open 'train-{000..003}.tar'", cwd=folder)
    assert r.code != 0 and "train-003.tar" in r.err
