"""`torch lm open`, `info`, `tokenize` and `decode` through real bash, against tiny model folders made from configs
(tests/support/tinylm.py) and transformers in this process as the oracle: each architecture opens and is
described as transformers sees it, a folder of pickled weights or of its own code is refused with nothing of it
run, the memory budget refuses weights over it before they are read, and the tokenizer's ids round-trip."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from support import tinylm
from support.planted import MaliciousPickle

from torchsh import protocol

ARCHS = ("llama", "qwen2", "gpt2")
TEXT = "why is the sky blue? hello world"


def info(sh, folder, flags=""):
    return json.loads(sh("torch lm info $(torch lm open %s %s)" % (folder, flags)))


def refused(r, code, *words):
    assert r.code == protocol.exit_status(code), (r.code, r.err)
    assert r.err.count("\n") == 1 and r.err.rstrip().endswith("[%s]" % code), r.err
    for w in words:
        assert w in r.err, r.err


@pytest.mark.parametrize("arch", ARCHS)
def test_each_architecture_opens_and_info_describes_it_as_transformers_does(sh, arch):
    model, tokenizer = tinylm.oracle(arch)
    got = info(sh, tinylm.folder(arch))
    assert got["architecture"] == type(model).__name__ and got["model_type"] == model.config.model_type
    assert got["parameters"] == sum(p.numel() for p in model.parameters())
    assert got["memory"] == sum(p.numel() * p.element_size() for p in model.parameters())
    assert (got["dtype"], got["stored_dtype"], got["device"]) == ("float32", "float32", "cpu")
    assert got["context_length"] == 256 and got["vocab_size"] == len(tokenizer)
    assert got["chat_template"] is True and got["adapters"] == [] and got["active_adapter"] is None
    assert got["folder"] == tinylm.folder(arch)
    config = model.config
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = config.hidden_size // config.num_attention_heads
    assert got["kv_cache_per_token"] == 2 * config.num_hidden_layers * kv_heads * head_dim * 4


def test_bf16_gives_bfloat16_weights_and_an_unknown_dtype_is_refused(sh):
    got = info(sh, tinylm.folder("llama"), "--dtype bf16")
    model, _ = tinylm.oracle("llama")
    assert (got["dtype"], got["stored_dtype"]) == ("bfloat16", "float32")
    assert got["memory"] == sum(p.numel() for p in model.parameters()) * 2
    refused(sh.run("torch lm open %s --dtype int3" % tinylm.folder("llama")), "bad_argument", "--dtype", "bf16")


def copy_config(folder, **changes):
    os.makedirs(folder)
    with open(os.path.join(tinylm.folder("llama"), "config.json")) as f:
        config = json.load(f)
    config.update(changes)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return folder


def test_a_folder_of_pickled_weights_is_refused_and_nothing_is_unpickled(sh):
    folder = copy_config(sh.tmp("pickled"))
    marker = sh.tmp("unpickled")
    model, _ = tinylm.oracle("llama")
    state = dict(model.state_dict(), planted=MaliciousPickle(marker))
    torch.save(state, os.path.join(folder, "pytorch_model.bin"))
    refused(sh.run("torch lm open %s" % folder), "file_error", "pytorch_model.bin", "never loads", "safetensors")
    assert not os.path.exists(marker)


def test_a_config_that_names_its_own_code_is_refused(sh):
    folder = copy_config(sh.tmp("remote"), auto_map={"AutoModelForCausalLM": "modeling_evil.Evil"})
    shutil.copy(os.path.join(tinylm.folder("llama"), "model.safetensors"), folder)
    refused(sh.run("torch lm open %s" % folder), "file_error", "auto_map", "trust_remote_code is never set")


def test_a_missing_folder_and_one_without_config_json_get_one_line_each(sh):
    refused(sh.run("torch lm open %s" % sh.tmp("nowhere")), "file_error", "nowhere")
    bare = sh.tmp("bare")
    os.makedirs(bare)
    refused(sh.run("torch lm open %s" % bare), "bad_argument", "has no config.json", "save_pretrained")


def big_weights_folder(folder, gib):
    """config.json and a sparse model.safetensors whose header holds one float32 tensor of `gib` GiB."""
    copy_config(folder)
    numel = (gib << 30) // 4
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [numel],
                                                       "data_offsets": [0, numel * 4]}}).encode()
    header += b" " * (-len(header) % 8)
    path = os.path.join(folder, "model.safetensors")
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.truncate(8 + len(header) + numel * 4)  # sparse: no disk, and never read
    return folder


@pytest.mark.slow  # a daemon of its own, which imports transformers
def test_weights_over_the_memory_budget_are_refused_before_they_are_read_and_the_daemon_lives(fresh_sh):
    s = fresh_sh(start=False)
    s.env.update(TORCHSH_MAX_MEMORY="1G")
    s("torch daemon start")
    pid = json.loads(s("torch daemon status --json"))["pid"]
    r = s.run("torch lm open %s" % big_weights_folder(s.tmp("big"), 2))
    refused(r, "out_of_memory", "big's weights", "2.0 GiB")
    assert json.loads(s("torch daemon status --json"))["pid"] == pid
    assert json.loads(s("torch lm info $(torch lm open %s)" % tinylm.folder("llama")))["parameters"] > 0


@pytest.mark.parametrize("arch", ("llama", "gpt2"))
def test_tokenize_gives_the_tokenizers_ids_and_decode_gives_its_text_back(sh, arch):
    _, tokenizer = tinylm.oracle(arch)
    folder = tinylm.folder(arch)
    out = sh("m=$(torch lm open %s); torch lm decode $m $(torch lm tokenize $m '%s'); "
             "torch lm tokenize $m '%s' --chat | torch value" % (folder, TEXT, TEXT))
    decoded, chat = out.split("\n")
    assert decoded == tokenizer.decode(tokenizer(TEXT).input_ids)
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": TEXT}], add_generation_prompt=True,
                                             tokenize=False)
    assert json.loads(chat) == tokenizer(rendered, add_special_tokens=False).input_ids


def test_tokenize_ids_equal_the_oracles_bit_for_bit(sh):
    _, tokenizer = tinylm.oracle("qwen2")
    ids = sh.fetch(sh("torch lm tokenize $(torch lm open %s) '%s'" % (tinylm.folder("qwen2"), TEXT)))
    assert ids.dtype == torch.int64 and ids.tolist() == tokenizer(TEXT).input_ids
    assert sh("m=$(torch lm open %s); torch lm decode $m $(torch lm tokenize $m '%s')"
              % (tinylm.folder("qwen2"), TEXT)) == tokenizer.decode(ids.tolist())
    refused(sh.run("m=$(torch lm open %s); torch lm decode $m $(torch tensor '[1.5]')" % tinylm.folder("qwen2")),
            "bad_argument", "1-D integer tensor")


def torchvision_is_broken():
    """Whether the torchvision installed here fails to import with this torch (as this venv's PyPI build does)."""
    code = ("import importlib.util, sys\nif importlib.util.find_spec('torchvision') is None: sys.exit(3)\n"
            "import torchvision")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    return r.returncode not in (0, 3)


@pytest.mark.slow  # a daemon of its own, which imports transformers
def test_model_open_still_says_torchvision_is_broken_after_lm_hid_it(fresh_sh):
    if not torchvision_is_broken():
        pytest.skip("torchvision imports here (or is absent): `torch lm` hides nothing")
    s = fresh_sh()
    assert json.loads(s("torch lm info $(torch lm open %s)" % tinylm.folder("llama")))["torchvision_hidden"] is True
    r = s.run("torch model open torchvision:resnet18")
    refused(r, "missing_extra", "torchvision does not import with PyTorch", "built for another torch")
    assert "not installed" not in r.err
    # transformers alone was told torchvision is absent: a user's own class in this daemon still finds it
    s.run("printf 'import importlib.util, torch\\nclass Net(torch.nn.Linear):\\n    def __init__(self):\\n"
          "        assert importlib.util.find_spec(\"torchvision\") is not None\\n"
          "        super().__init__(2, 1)\\n' > seesvision.py")
    assert s("torch model open seesvision.py:Net | torch nn info").startswith("Net")
