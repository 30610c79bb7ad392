"""lm/adapters.py in this process, against peft's own PeftModel as the oracle: an Adapter's parameters are only
its LoRA weights, its init is peft's from the same generator state, its forward is the model's with it
active and leaves the adapter active before it active, and a backward reaches its weights even while another
adapter is the active one (peft's set_adapter turns an inactive adapter's grads off)."""
import torch
from support import tinylm

from torchsh.lm import adapters, library, opening


def _lm():
    return opening.open_folder(tinylm.folder("llama"))


def _oracle(seed, targets=("q_proj", "v_proj"), r=4):
    peft = library.peft()
    model, _ = tinylm.oracle("llama")
    torch.manual_seed(seed)
    return peft.get_peft_model(model, peft.LoraConfig(r=r, lora_alpha=8, target_modules=list(targets)),
                               adapter_name="x")


def test_an_adapters_parameters_are_its_lora_weights_initialized_as_peft_does_from_the_same_seed():
    lm = _lm()
    torch.manual_seed(3)
    a = adapters.make(lm, adapters.lora_config(4, 8, "q_proj,v_proj", 0.0), "x")
    oracle = [p for n, p in _oracle(3).named_parameters() if "lora_" in n]
    mine = list(a.parameters())
    assert len(mine) == len(oracle) == 8  # A and B of q_proj and v_proj in 2 layers
    assert all(torch.equal(x, y) for x, y in zip(mine, oracle))
    assert not any(p.requires_grad for p in lm.base_parameters())


def test_forward_is_the_model_with_the_adapter_active_and_leaves_the_one_before_active():
    lm = _lm()
    torch.manual_seed(0)
    a = adapters.make(lm, adapters.lora_config(4, 8, "q_proj,v_proj", 0.0), "x")
    with torch.no_grad():
        for p in a.parameters():
            p.add_(0.5)  # lora_B starts at zero: an adapter that changes nothing tells nothing
    ids = torch.tensor([[3, 40, 41, 42, 43]])
    base = lm.model(input_ids=ids).logits
    oracle = _oracle(0)
    with torch.no_grad():
        for p in (p for n, p in oracle.named_parameters() if "lora_" in n):
            p.add_(0.5)
    out = a(ids)
    assert torch.equal(out, oracle(input_ids=ids).logits) and not torch.equal(out, base)
    assert lm.active is None and torch.equal(lm.model(input_ids=ids).logits, base)


def test_a_backward_reaches_the_adapter_trained_while_another_is_the_active_one():
    lm = _lm()
    a = adapters.make(lm, adapters.lora_config(4, 8, "q_proj", 0.0), "a")
    b = adapters.make(lm, adapters.lora_config(4, 8, "v_proj", 0.0), "b")
    adapters.use(lm, b)
    a(torch.tensor([[3, 40, 41]])).sum().backward()
    assert all(p.grad is not None for p in a.parameters())
    assert all(p.grad is None for p in b.parameters())
    assert adapters.Adapter.active(lm.model) == "b" == lm.active


def test_unknown_targets_are_refused_naming_the_layers_there_are():
    import pytest
    from torchsh.errors import TorchshError
    with pytest.raises(TorchshError) as e:
        adapters.make(_lm(), adapters.lora_config(4, 8, "c_attn", 0.0))
    assert e.value.code == "bad_argument" and "q_proj" in e.value.hint
