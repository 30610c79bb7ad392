"""train/loss/functions.py: --loss_args' tensor options (weight, pos_weight) made tensors in the model's parameters'
dtype on their device, from a list or a handle; what is no tensor, or no option of the loss, refused."""
import pytest
import torch

from torchsh.errors import TorchshError
from torchsh.registry import Registry
from torchsh.train.loss.functions import loss_options, same_value


def test_a_list_is_a_tensor_in_the_models_dtype_on_its_device_and_other_options_stay_as_given():
    model = torch.nn.Linear(2, 3, dtype=torch.float64, device="meta")
    got = loss_options('{"weight": [1, 2.5, 3], "label_smoothing": 0.1}', "cross_entropy", model)
    assert got["label_smoothing"] == 0.1
    assert (got["weight"].dtype, got["weight"].device.type, list(got["weight"].shape)) == (torch.float64, "meta", [3])


def test_a_handle_is_its_tensor_moved_to_the_models_device():
    registry, weight = Registry(), torch.tensor([2.5])
    handle = registry.put(weight, "tensor", None)
    got = loss_options({"pos_weight": handle}, "binary_cross_entropy_with_logits", torch.nn.Linear(2, 1), registry)
    assert got["pos_weight"] is weight  # on the CPU already: the same tensor, as w.to(device) gives
    meta = loss_options({"pos_weight": handle}, "binary_cross_entropy_with_logits",
                        torch.nn.Linear(2, 1, device="meta"), registry)
    assert meta["pos_weight"].device.type == "meta"
    with pytest.raises(TorchshError) as e:
        loss_options({"pos_weight": registry.put(torch.nn.Linear(1, 1), "nn", None)},
                     "binary_cross_entropy_with_logits", torch.nn.Linear(2, 1), registry)
    assert e.value.code == "wrong_kind" and e.value.message.startswith("--loss_args pos_weight: ")


@pytest.mark.parametrize("args, said", [({"weight": [1.0, True]}, "weight is a tensor"),
                                        ({"weight": [[1.0], [2.0, 3.0]]}, "weight is a tensor"),
                                        ({"weight": 2.0}, "weight is a tensor"),
                                        ({"weigth": [1.0]}, "takes no such option")])
def test_what_is_no_tensor_or_no_option_of_the_loss_is_refused(args, said):
    with pytest.raises(TorchshError) as e:
        loss_options(args, "cross_entropy", torch.nn.Linear(2, 2))
    assert e.value.code == "bad_argument" and said in e.value.message


def test_two_trials_options_compare_by_value_tensors_too():
    a = {"weight": torch.tensor([1.0, 2.0]), "reduction": "sum"}
    b = {"weight": torch.tensor([1.0, 2.0]), "reduction": "sum"}
    assert same_value(a, b) and not same_value(a, dict(b, weight=torch.tensor([1.0, 3.0])))
    assert not same_value(a, dict(b, weight=[1.0, 2.0])) and same_value({}, {})
