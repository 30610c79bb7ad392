"""Language models in `torch history --python`: `lm open` as transformers' from_pretrained of the folder,
`lm lora` as model.add_adapter(peft.LoraConfig(…)) and the adapter module over it, `lm adapter use` as the
swap. The script imports transformers and peft offline, as the daemon does (lm/library.py), and carries the
source of lm/adapters.py's Adapter, so its adapter is the daemon's: the same LoRA init from the same generator
state, the same forward, the same parameters in the same order (a fit's losses and weights bit for bit).
"""
import inspect

from torchsh.history.forms import refuse
from torchsh.lm import adapters
from torchsh.lm.library import OFFLINE_ENVIRONMENT
from torchsh.lm.opening import DTYPES

HELPERS = {
    "_hf": '''import os
os.environ.update(%r)


def _hide_unusable_torchvision():
    """transformers imports torchvision whenever it is installed: one built for another torch is hidden."""
    import importlib.util
    if importlib.util.find_spec("torchvision") is None:
        return
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        sys.modules["torchvision"] = None


_hide_unusable_torchvision()
import peft  # noqa: E402
import transformers  # noqa: E402
''' % (OFFLINE_ENVIRONMENT,),
    "_lora": inspect.getsource(adapters.Adapter).replace("class Adapter(", "class _Adapter(", 1),
}


def opened(e, r):
    """`lm open DIR`: the folder's model as transformers loads it, in the dtype and on the device the daemon's is."""
    a = e.args
    held = r.registry.entry(e.outputs[0]).obj if r.registry is not None and e.outputs and \
        r.registry.holds(e.outputs[0]) else None
    dtype = held.dtype if held is not None else DTYPES.get((a.get("dtype") or "auto").lower())
    if dtype is None and a.get("dtype") not in (None, "auto"):
        raise refuse("lm.open", "its --dtype %r has no torch dtype" % a.get("dtype"))
    r.helpers.add("_hf")
    options = "dtype=%s" % (("torch." + str(dtype).replace("torch.", "")) if dtype is not None else "'auto'")
    device = ".to(%s)" % r.lit(a["device"]) if a.get("device") is not None else ""
    return ["%s = transformers.AutoModelForCausalLM.from_pretrained(%s, %s, use_safetensors=True, "
            "local_files_only=True)%s.eval()  # the folder as the daemon opened it" % (r.outs(e), r.lit(a["folder"]),
                                                                                     options, device)]


def lora(e, r):
    """`lm lora`: the adapter injected by peft (its init draws from the generator as the daemon's did), the
    module over it, and the adapter that was active before active again, as the verb leaves it."""
    a, made = e.args, e.made
    if "adapter_name" not in made:
        return None
    r.helpers.update(("_hf", "_lora"))
    model = r.lit(a["model"])
    config = "peft.LoraConfig(r=%s, lora_alpha=%s, target_modules=%s, lora_dropout=%s)" % (
        r.lit(a.get("r", 8)), r.lit(a.get("alpha", 16)), r.lit(made["targets"]), r.lit(float(a.get("dropout", 0.0))))
    return ["%s.add_adapter(%s, adapter_name=%s)" % (model, config, r.lit(made["adapter_name"])),
            "%s = _Adapter(%s, %s)" % (r.outs(e), model, r.lit(made["adapter_name"])),
            "_Adapter.activate(%s, %s)  # the adapter active before, as `torch lm lora` leaves it"
            % (model, r.lit(made.get("active")))]


def use(e, r):
    """`lm adapter use`: the swap."""
    if "adapter_name" not in e.made:
        return None
    r.helpers.update(("_hf", "_lora"))
    return ["_Adapter.activate(%s, %s)  # torch lm adapter use" % (r.lit(e.args["model"]), r.lit(e.made["adapter_name"]))]
