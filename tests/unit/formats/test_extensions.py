"""formats/extensions.py: every row `torch save` writes reads back equal through its own reader, so a new
format is one row and this test covers it; `torch load` and `torch save` take the same list."""
import pytest
import torch

from torchsh.errors import TorchshError
from torchsh.formats import extensions


@pytest.mark.parametrize("ext", extensions.SAVED)
def test_every_saved_format_reads_back_what_it_wrote(tmp_path, ext):
    fmt = extensions.FORMATS[ext]
    path = str(tmp_path / ("t" + ext))
    named = {"0": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    extensions.write(path, fmt, named)
    got = extensions.read(path, fmt.read)
    back = got[0] if fmt.table else next(iter(got.values()))
    assert torch.equal(back, named["0"])


def test_an_unknown_extension_is_refused_naming_the_formats_load_and_save_take(tmp_path):
    with pytest.raises(TorchshError) as e:
        extensions.saved(str(tmp_path / "t.parquet"))
    assert e.value.code == "bad_argument" and e.value.hint == "use one of .npy .npz .safetensors .pt .pth .csv"
