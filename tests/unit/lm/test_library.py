"""lm/library.py: the Hugging Face libraries are imported offline. The environment that keeps them off every hub
(HF_HUB_OFFLINE=1, USE_HUB_KERNELS=0) is set before transformers' first import, since both are read once, at
import time: a daemon that set them later would fetch kernels and models as if they had never been set."""
import importlib
import json
import os
import subprocess
import sys

from torchsh.lm import library

HUB_SETTINGS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "USE_HUB_KERNELS", "HF_HUB_DISABLE_TELEMETRY")


def test_the_offline_environment_is_set_before_transformers_is_imported(monkeypatch):
    for key in HUB_SETTINGS:
        monkeypatch.setenv(key, "unset")  # so that the test's end puts back what was there
        monkeypatch.delenv(key)
    seen = {}

    def recording_import(name):
        seen[name] = {key: os.environ.get(key) for key in HUB_SETTINGS}
        return object()
    monkeypatch.setattr(library.importlib, "import_module", recording_import)
    monkeypatch.setitem(library._state, "torchvision_checked", True)
    library.transformers()
    assert seen == {"transformers": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "USE_HUB_KERNELS": "0",
                                     "HF_HUB_DISABLE_TELEMETRY": "1"}}
    assert library.importlib is importlib


def test_a_fresh_process_imports_transformers_with_the_hub_and_its_kernels_off():
    code = ("import json, os\nfrom torchsh.lm import library\nlibrary.transformers()\n"
            "import huggingface_hub.constants as hub\nfrom transformers.integrations import hub_kernels\n"
            "print(json.dumps([hub.HF_HUB_OFFLINE, hub_kernels._kernels_enabled]))")
    env = {k: v for k, v in os.environ.items() if k not in HUB_SETTINGS}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [True, False]


def test_a_missing_library_is_missing_extra_with_what_to_install(monkeypatch):
    def absent(name):
        raise ModuleNotFoundError("No module named %r" % name, name=name)
    monkeypatch.setattr(library.importlib, "import_module", absent)
    monkeypatch.setitem(library._state, "torchvision_checked", True)
    try:
        library.peft()
    except library.TorchshError as e:
        assert e.code == "missing_extra" and "peft" in e.message and "torchsh[lm]" in e.hint
    else:
        raise AssertionError("peft imported though it is absent")
