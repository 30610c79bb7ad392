"""`torch lm lora`: an adapter whose init is peft's from the same generator state (get_peft_model after the same
torch.manual_seed, the oracle), whose parameters are only its LoRA weights, the base frozen and shared (lm info
counts the base's parameters alone and lists the adapters); peft's default layers for the architecture
without --targets; a name taken or a layer the model lacks refused naming what there is."""
import json

import pytest
from safetensors.torch import load_file
from support import tinylm, tinylora

from torchsh import protocol


@pytest.mark.slow
def test_an_adapters_init_is_pefts_from_the_same_seed_and_the_base_stays_as_it_was(sh, tmp_path):
    out = sh("m=$(torch lm open %s); torch manual_seed 5; a=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj)\n"
             "torch lm save $a %s >/dev/null; torch lm info $m"
             % (tinylm.folder("llama"), tmp_path / "a"))
    info = json.loads(out)
    model, _ = tinylora.peft_model(5)
    saved = load_file(str(tmp_path / "a/adapter_model.safetensors"))
    lora = {n.replace(".lora1", ""): p for n, p in model.named_parameters() if "lora_" in n}
    assert saved.keys() == lora.keys() and all(saved[k].equal(lora[k]) for k in saved)
    base, _ = tinylm.oracle("llama")
    assert info["parameters"] == sum(p.numel() for p in base.parameters())
    assert info["adapters"] == ["lora1"] and info["active_adapter"] is None


def test_without_targets_the_adapter_adapts_peft_s_layers_for_the_architecture(sh, tmp_path):
    sh("torch lm save $(torch lm lora $(torch lm open %s)) %s >/dev/null" % (tinylm.folder("gpt2"), tmp_path / "g"))
    config = json.load(open(tmp_path / "g/adapter_config.json"))
    assert config["target_modules"] == ["c_attn"]


def test_a_taken_name_and_a_layer_the_model_lacks_are_refused_naming_what_there_is(sh):
    m = sh("m=$(torch lm open %s); torch lm lora $m --name x >/dev/null; echo $m" % tinylm.folder("llama"))
    taken = sh.run("torch lm lora %s --name x" % m)
    assert taken.code == protocol.exit_status("bad_argument") and "x" in taken.err, taken.err
    lacking = sh.run("torch lm lora %s --targets c_attn" % m)
    assert lacking.code == protocol.exit_status("bad_argument") and "q_proj" in lacking.err, lacking.err


def test_a_second_adapter_on_the_same_layers_is_made_without_peft_s_multiple_adapters_warning(sh):
    r = sh.run("m=$(torch lm open %s); torch lm lora $m --targets q_proj,v_proj >/dev/null; "
               "torch lm lora $m --targets q_proj,v_proj >/dev/null; torch lm info $m" % tinylm.folder("llama"))
    assert r.code == 0 and r.err == "", r.err  # several adapters on one base is the design, not a mistake
    assert json.loads(r.out)["adapters"] == ["lora1", "lora2"]
