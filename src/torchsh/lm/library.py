"""transformers, tokenizers and peft, imported offline and only when `torch lm` needs them.

Before the first import the daemon's environment keeps every Hugging Face library off the network
(HF_HUB_OFFLINE; transformers 5.x also fetches kernels from the Hub unless USE_HUB_KERNELS=0). A torchvision that
is installed but does not import with this torch (a PyPI build for another torch: its C extension fails to
load) would take transformers down with it, since transformers imports torchvision whenever it says it is
installed: transformers alone is told it is absent (_tell_transformers_it_is_absent), so a language model opens
anyway, and every other importer in the daemon still meets the real one.
"""
import importlib
import importlib.util
import os
import sys

from torchsh.errors import TorchshError

OFFLINE_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                       "USE_HUB_KERNELS": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false",
                       "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
EXTRA_HINT = "pip install 'torchsh[lm]' (transformers, tokenizers, peft, safetensors)"
_state = {"torchvision_checked": False}


def go_offline(environ=os.environ):
    """Set the environment that keeps the Hugging Face libraries from reaching any hub (the user's own
    stricter settings stay)."""
    for key, value in OFFLINE_ENVIRONMENT.items():
        environ[key] = value


def transformers():
    """The transformers module, offline, or missing_extra with what to install."""
    return _import("transformers")


def peft():
    return _import("peft")


def tokenizers():
    return _import("tokenizers")


def _import(name):
    go_offline()
    _hide_unusable_torchvision()
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise TorchshError("missing_extra", "torch lm needs %s, which is not installed (%s)" % (name, e.name),
                           EXTRA_HINT) from None
    except ImportError as e:
        raise TorchshError("missing_extra", "%s does not import here: %s" % (name, str(e).split("\n")[0][:200]),
                           EXTRA_HINT) from None


def _hide_unusable_torchvision():
    """transformers told that a torchvision which does not import is absent; nobody else is (below)."""
    if _state["torchvision_checked"]:
        return
    _state["torchvision_checked"] = True
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is None:
        return
    try:
        importlib.import_module("torchvision")
    except Exception as e:  # a build for another torch raises anything from its C extension's registrations
        _state["torchvision_error"] = e
        _forget("torchvision")
        _tell_transformers_it_is_absent()


def _tell_transformers_it_is_absent():
    """transformers asks once (its is_torchvision_available is an lru_cache over importlib.util.find_spec):
    it asks while torchvision is marked absent in sys.modules, and the mark goes after, so a user's own code in
    this daemon (a class that imports torchvision its own way, `model open torchvision:…`'s message) still
    meets the real torchvision."""
    sys.modules["torchvision"] = None
    try:
        from transformers.utils import import_utils
        import_utils.is_torchvision_available()
        import_utils.is_torchvision_v2_available()
        _state["torchvision_hidden"] = not import_utils.is_torchvision_available()
    except ImportError:
        pass  # no transformers: the import that follows says what to install
    finally:
        if "torchvision" in sys.modules and sys.modules["torchvision"] is None:
            del sys.modules["torchvision"]


def _forget(package):
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


def torchvision_hidden():
    """Whether transformers was told that this process's torchvision (which does not import) is absent
    (`lm info` says so)."""
    return bool(_state.get("torchvision_hidden"))
