"""`torch load x.png|x.jpg` through real bash: one C×H×W uint8 tensor, as torchvision.io.decode_image gives it
(channels kept: gray 1, gray+alpha 2, RGB 3, RGBA 4; a palette expands to RGB or RGBA), its pixels those
Pillow decodes in-process; and `torch value --format csv` of a 1-D tensor, one value a line (a column)."""
import os

import numpy as np
import pytest
import torch
from PIL import Image

RNG = np.random.default_rng(24)


def _chw(pixels):
    """decode_image's layout of an H×W or H×W×C array: C×H×W."""
    pixels = pixels[:, :, None] if pixels.ndim == 2 else pixels
    return torch.from_numpy(np.array(pixels.transpose(2, 0, 1)))


@pytest.mark.parametrize("mode,channels", [("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4)])
def test_a_png_is_channels_first_uint8_with_its_channels_kept(sh, mode, channels):
    shape = (5, 7) if channels == 1 else (5, 7, channels)
    pixels = RNG.integers(0, 256, shape, dtype=np.uint8)
    path = sh.tmp("img.png")
    Image.fromarray(pixels, mode).save(path)
    h = sh("torch load %s" % path)
    got = sh.fetch(h)
    assert got.dtype == torch.uint8 and tuple(got.shape) == (channels, 5, 7)
    assert torch.equal(got, _chw(np.array(Image.open(path))))
    assert sh("torch shape %s" % h) == "[%d,5,7]" % channels


def test_a_palette_png_expands_to_rgb_or_rgba_and_a_16_bit_png_stays_16_bit(sh):
    indices = RNG.integers(0, 4, (3, 4), dtype=np.uint8)
    palette = [0, 0, 0, 200, 10, 20, 30, 40, 250, 9, 99, 199]
    image = Image.new("P", (4, 3))
    image.putdata(indices.flatten().tolist())
    image.putpalette(palette)
    path = sh.tmp("palette.png")
    image.save(path)
    want = torch.tensor(palette, dtype=torch.uint8).reshape(4, 3)[torch.from_numpy(indices).long()].permute(2, 0, 1)
    assert torch.equal(sh.fetch(sh("torch load %s" % path)), want)
    image.save(path, transparency=0)  # index 0 transparent: RGBA, alpha 0 where it is used
    got = sh.fetch(sh("torch load %s" % path))
    assert tuple(got.shape) == (4, 3, 4) and torch.equal(got[3], torch.from_numpy((indices != 0) * 255).to(torch.uint8))
    deep = RNG.integers(0, 65536, (3, 5), dtype=np.uint16)
    Image.fromarray(deep).save(path)  # mode I;16
    got = sh.fetch(sh("torch load %s" % path))
    assert got.dtype == torch.uint16 and torch.equal(got, torch.from_numpy(deep.astype(np.int32)).to(torch.uint16)[None])


def test_a_jpeg_is_the_rgb_pixels_pillow_decodes(sh):
    path = sh.tmp("photo.jpg")
    Image.fromarray(RNG.integers(0, 256, (6, 9, 3), dtype=np.uint8)).save(path, quality=90)
    got = sh.fetch(sh("torch load %s" % path))
    assert got.dtype == torch.uint8 and tuple(got.shape) == (3, 6, 9)
    assert torch.equal(got, _chw(np.array(Image.open(path).convert("RGB"))))


def test_value_format_png_and_load_round_trip(sh):
    t = torch.randint(0, 256, (3, 4, 6), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    path = sh.tmp("round.png")
    sh("torch value %s --format png --out %s" % (sh.put(t), path))
    assert torch.equal(sh.fetch(sh("torch load %s" % path)), t)


def test_loading_an_image_without_pillow_names_the_extra(fresh_sh):
    s = fresh_sh(start=False)
    shim = os.path.join(s.folder, "shim")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "PIL.py"), "w") as f:
        f.write("raise ImportError('PIL is not installed (test shim)')\n")
    Image.new("RGB", (2, 2)).save(os.path.join(s.folder, "x.png"))
    s.env["PYTHONPATH"] = shim
    s("torch daemon start")
    r = s.run("torch load x.png")
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
    assert "pip install 'torchsh[images]'" in r.err and r.err.rstrip().endswith("[missing_extra]")


def test_value_format_csv_writes_a_1d_tensor_as_one_column_that_loads_back(sh):
    t = torch.tensor([1.5, -2.0, 3.25])
    h = sh.put(t)
    assert sh("torch value %s --format csv" % h) == "1.5\n-2.0\n3.25"
    path = sh.tmp("col.csv")
    sh("torch save %s %s" % (h, path))
    assert np.array_equal(np.loadtxt(path, delimiter=",", ndmin=2), t.numpy().reshape(-1, 1))  # pandas' Series.to_csv
    assert torch.equal(sh.fetch(sh("torch load %s" % path)), t)
