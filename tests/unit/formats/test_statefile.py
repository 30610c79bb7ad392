"""formats/statefile: a model's weights are written from the live tensors (formats/stfile.py writes them), one
copy only for tied ones, and read back equal (nn save, checkpoint save, a fit's checkpoints)."""
import torch

from torchsh.formats import statefile as state, stfile


def test_a_model_with_tied_weights_saves_from_its_live_tensors_and_loads_equal(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    model[1].weight = model[0].weight
    tensors = state.model_tensors(model)
    assert tensors["0.weight"].data_ptr() == model[0].weight.data_ptr()  # not a copy
    stfile.write(str(tmp_path / "m.safetensors"), tensors, {"note": 1})
    back, meta = stfile.read(str(tmp_path / "m.safetensors"))
    assert meta == {"note": 1} and set(back) == set(model.state_dict())
    assert all(torch.equal(back[k], v) for k, v in model.state_dict().items())
