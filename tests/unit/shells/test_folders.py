"""TAB after `torch lm open `: the model folders (config.json inside) in the caller's cwd (shells/folders.py), how
complete.py asks for them, file names for every other file or folder slot, and an lm:// handle's description."""
import json
import os
import threading

import pytest

from torchsh.shells import complete, folders
from torchsh.table import build_table


@pytest.fixture(scope="module")
def table():
    return build_table()[0]


def model(path, model_type="llama", arch="LlamaForCausalLM"):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model_type": model_type, "architectures": [arch]}, f)
    return path


def words(found):
    return [w for w, _ in found]


def test_the_model_folders_in_the_cwd_and_one_level_down_are_offered(tmp_path):
    model(tmp_path / "tiny")
    model(tmp_path / "models" / "qwen", "qwen2", "Qwen2ForCausalLM")
    (tmp_path / "models" / "notes").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "config.json").write_text("{}")  # a file, not a folder
    found = dict(folders.model_folders("", str(tmp_path)))
    assert found == {"models/qwen": "model folder: qwen2 (Qwen2ForCausalLM)",
                     "tiny": "model folder: llama (LlamaForCausalLM)"}


def test_the_typed_word_narrows_and_names_its_folder(tmp_path):
    model(tmp_path / "models" / "qwen")
    model(tmp_path / "models" / "llama")
    model(tmp_path / "tiny")
    assert words(folders.model_folders("models/q", str(tmp_path))) == ["models/qwen"]
    assert words(folders.model_folders("models/", str(tmp_path))) == ["models/llama", "models/qwen"]
    assert words(folders.model_folders("ti", str(tmp_path))) == ["tiny"]
    assert words(folders.model_folders(str(tmp_path / "ti"), "/")) == [str(tmp_path / "tiny")]


def test_hidden_folders_only_when_a_dot_is_typed(tmp_path):
    model(tmp_path / ".cache")
    assert folders.model_folders("", str(tmp_path)) == [(folders.FILES, "")]
    assert words(folders.model_folders(".c", str(tmp_path))) == [".cache"]


def test_no_model_folder_or_no_local_cwd_lets_the_shell_list_files(tmp_path):
    (tmp_path / "plain").mkdir()
    assert folders.model_folders("", str(tmp_path)) == [(folders.FILES, "")]
    assert folders.model_folders("", str(tmp_path / "missing")) == [(folders.FILES, "")]
    model(tmp_path / "tiny")
    assert folders.model_folders("", None) == [(folders.FILES, "")]  # a remote context: the caller's files


def test_a_config_that_is_no_json_or_too_big_still_names_a_model_folder(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "config.json").write_text(json.dumps({"model_type": "x" * folders.MAX_CONFIG_BYTES}))
    assert dict(folders.model_folders("", str(tmp_path))) == {"big": "model folder", "broken": "model folder"}


def test_a_fifo_named_config_json_does_not_hold_the_daemon(tmp_path):
    (tmp_path / "trap").mkdir()
    os.mkfifo(tmp_path / "trap" / "config.json")
    result = []
    worker = threading.Thread(target=lambda: result.append(folders.model_folders("", str(tmp_path))), daemon=True)
    worker.start()
    worker.join(30)
    assert result == [[(folders.FILES, "")]]


def test_lm_open_completes_model_folders_positionally_and_after_its_flag(table, tmp_path):
    model(tmp_path / "tiny")
    assert complete.candidates(table, [], ["lm", "open", ""], str(tmp_path)) == [
        ("tiny", "model folder: llama (LlamaForCausalLM)")]
    assert words(complete.candidates(table, [], ["lm", "open", "--folder", "t"], str(tmp_path))) == ["tiny"]
    assert complete.candidates(table, [], ["lm", "open", ""], None) == [(complete.FILES, "")]


@pytest.mark.parametrize("typed", [["runs", "ls", ""], ["session", "load", ""], ["data", "open", "x.npy", ""]])
def test_other_file_and_folder_slots_ask_the_shell_for_file_names(table, typed):
    assert complete.candidates(table, [], typed, "/") == [(complete.FILES, "")]


def test_an_lm_slot_offers_lm_handles_described_by_class_and_folder(table):
    census = [{"handle": "lm://k3f00001", "kind": "lm", "type": "LlamaForCausalLM", "folder": "/m/tiny/",
               "parameters": 123200, "dtype": "float32", "device": "cpu", "active": "fr"},
              {"handle": "tensor://k3f00002", "kind": "tensor", "shape": [2], "dtype": "int64", "device": "cpu"}]
    assert complete.candidates(table, census, ["lm", "info", ""]) == [
        ("lm://k3f00001", "lm LlamaForCausalLM 123200 parameters tiny adapter fr")]


def test_adapter_use_offers_none_the_models_adapter_names_and_the_adapter_handles(table):
    census = [{"handle": "lm://k3f00001", "kind": "lm", "type": "LlamaForCausalLM", "adapters": ["fr", "de"]},
              {"handle": "nn://k3f00002", "kind": "nn", "type": "Adapter", "layers": 1},
              {"handle": "nn://k3f00003", "kind": "nn", "type": "Linear", "parameters": 2}]
    got = complete.candidates(table, census, ["lm", "adapter", "use", "lm://k3f00001", ""])
    assert [w for w, _ in got] == ["none", "fr", "de", "nn://k3f00002"]
    assert [w for w, _ in complete.candidates(table, census, ["lm", "adapter", "use", "lm://k3f00001", "f"])] == ["fr"]
