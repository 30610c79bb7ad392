"""`torch value T --format png --out FILE`: a tensor written as an image; read back, the pixels are the tensor's."""
import numpy as np
import pytest
import torch
from PIL import Image


def read_png(path):
    image = Image.open(path)
    return image.mode, np.asarray(image)


def test_a_uint8_matrix_is_a_grayscale_png_with_the_same_pixels(sh):
    t = torch.randint(0, 256, (7, 5), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    out = sh.tmp("gray.png")
    assert sh("torch value %s --format png --out %s" % (sh.put(t), out)) == out
    mode, pixels = read_png(out)
    assert mode == "L" and pixels.shape == (7, 5) and np.array_equal(pixels, t.numpy())


@pytest.mark.parametrize("channels,mode", [(1, "L"), (3, "RGB"), (4, "RGBA")])
def test_channels_first_uint8_is_gray_rgb_or_rgba(sh, channels, mode):
    t = torch.randint(0, 256, (channels, 4, 6), dtype=torch.uint8, generator=torch.Generator().manual_seed(channels))
    out = sh.tmp("c.png")
    sh("torch value %s --format png --out %s" % (sh.put(t), out))
    got_mode, pixels = read_png(out)
    expected = t[0].numpy() if channels == 1 else t.permute(1, 2, 0).numpy()
    assert got_mode == mode and np.array_equal(pixels, expected)


def test_a_float_image_in_0_1_becomes_round_of_255_times(sh):
    t = torch.rand(3, 5, 4, generator=torch.Generator().manual_seed(3))
    t[0, 0, 0], t[1, 0, 0] = 0.0, 1.0
    out = sh.tmp("f.png")
    sh("torch value %s --format png --out %s" % (sh.put(t), out))
    _, pixels = read_png(out)
    assert np.array_equal(pixels, (t * 255).round().to(torch.uint8).permute(1, 2, 0).numpy())


@pytest.mark.parametrize("make,code,status", [
    ("torch mul $(torch rand 4 4) 2", "bad_argument", 2),             # floats outside [0, 1]
    ("torch arange 16 | torch reshape - 4 4", "dtype_error", 4),      # int64 is no image dtype
    ("torch zeros 2 4 4 --dtype uint8", "shape_mismatch", 4),         # 2 channels
    ("torch zeros 4 --dtype uint8", "shape_mismatch", 4),             # 1-D
])
def test_what_is_no_image_is_a_one_line_error_and_no_file(sh, make, code, status):
    out = sh.tmp("bad.png")
    r = sh.run("t=$(%s) && torch value $t --format png --out %s" % (make, out))
    assert r.code == status and r.err.count("\n") == 1 and "[%s]" % code in r.err, r.err
    assert not __import__("os").path.exists(out)


def test_png_needs_out_and_out_needs_png(sh):
    t = sh("torch zeros 2 2 --dtype uint8")
    r = sh.run("torch value %s --format png" % t)
    assert r.code == 2 and "--format png needs --out FILE" in r.err and r.out == ""
    r = sh.run("torch value %s --out %s" % (t, sh.tmp("x.png")))
    assert r.code == 2 and "--out FILE goes with --format png" in r.err


def test_a_missing_pillow_is_missing_extra_naming_the_pip_extra(monkeypatch, tmp_path):
    import sys
    from torchsh.errors import TorchshError
    from torchsh.plot import png
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` now fails
    with pytest.raises(TorchshError) as err:
        png.write_image(str(tmp_path / "x.png"), torch.zeros(2, 2, dtype=torch.uint8))
    assert err.value.code == "missing_extra" and "pip install 'torchsh[images]'" in err.value.hint
