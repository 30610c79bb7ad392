"""LoRA adapters on a language model's one base model (`torch lm lora`, `lm adapter use`, `lm save`).

peft injects each adapter's LoRA layers into the base model in place (transformers' model.add_adapter, which is
peft's inject_adapter_in_model): several named adapters on one base, whose weights stay shared and frozen.
The handle of one is an Adapter: a torch.nn.Module whose parameters are only its LoRA weights and whose
forward(input_ids) gives the logits [B, T, V] with it active, so `torch optim adamw $a` and `torch fit $a …
--loss lm` train it through the machinery every module goes through.

Adapter needs nothing but torch and transformers' model (no torchsh name): `torch history --python` copies its
source into the script, as it copies digest(), so the script's adapter is the daemon's, bit for bit.
"""
import json
import os
import warnings

import torch

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.lm import library

WEIGHTS_FILE, CONFIG_FILE = "adapter_model.safetensors", "adapter_config.json"  # peft's layout


class Adapter(torch.nn.Module):
    """One LoRA adapter of a transformers model (model.add_adapter put it there): its parameters are its LoRA
    weights only; forward(input_ids) is the model's logits with this adapter active, the one active before
    it active again after (the base model's weights, frozen, are not this module's)."""

    def __init__(self, model, name):
        super().__init__()
        self.__dict__["base"] = model  # a plain attribute, not a child: the base's weights are not the adapter's
        self.adapter_name = name
        self.lora = torch.nn.ModuleDict()
        self.__dict__["dropouts"] = []  # its LoRA dropout, on only inside its own forward in training mode
        for path, module in model.named_modules():
            for kind in ("lora_A", "lora_B", "lora_dropout"):
                layers = getattr(module, kind, None)
                if isinstance(layers, torch.nn.ModuleDict) and name in layers:
                    if kind == "lora_dropout":
                        self.dropouts.append(layers[name].eval())
                    else:
                        self.lora[(path + "." + kind).replace(".", "-")] = layers[name]
        if not len(self.lora):
            raise ValueError("the model holds no LoRA adapter named %r" % name)

    def forward(self, input_ids):
        before = self.active(self.base)
        self.activate(self.base, self.adapter_name)
        for dropout in self.dropouts:
            dropout.train(self.training)
        try:
            return self.base(input_ids=input_ids).logits
        finally:
            for dropout in self.dropouts:
                dropout.eval()
            if before != self.adapter_name:
                self.activate(self.base, before)
            for p in self.parameters():  # peft's set_adapter turns an inactive adapter's grads off: a
                p.requires_grad_(True)   # backward after this forward must still reach these weights

    @staticmethod
    def active(model):
        """The name of the adapter the model's forward uses, or None (the base alone)."""
        from peft.tuners.tuners_utils import BaseTunerLayer
        layer = next((m for m in model.modules() if isinstance(m, BaseTunerLayer)), None)
        if layer is None or layer.disable_adapters:
            return None
        return layer.active_adapters[0] if layer.active_adapters else None

    @staticmethod
    def activate(model, name):
        """Make adapter NAME the one the model's forward uses (None: the base alone)."""
        if name is None:
            model.disable_adapters()
        else:
            model.set_adapter(name)
            model.enable_adapters()


def lora_config(r, alpha, targets, dropout, model_type=None):
    """peft's LoraConfig of `torch lm lora`'s options, checked (peft's own errors say less); without targets,
    the layers peft adapts for MODEL_TYPE's architecture."""
    peft = library.peft()
    if r < 1:
        raise bad_argument("--r (the LoRA rank) must be at least 1, not %d" % r)
    if not 0 <= dropout < 1:
        raise bad_argument("--dropout is a probability in [0, 1), not %g" % dropout)
    if targets is None:
        from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as known
        names = list(known.get(model_type) or ())
        if not names:
            raise TorchshError("missing_argument", "--targets is needed: peft knows no default layers for %s"
                               % model_type, "--targets q_proj,v_proj (`torch lm lora` names the layers there are)")
    else:
        names = [t.strip() for t in targets.split(",") if t.strip()]
    if not names:
        raise bad_argument("--targets names the linear layers LoRA adapts", "--targets q_proj,v_proj")
    return peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=names, lora_dropout=dropout)


def adapted_shapes(model, names):
    """[(in, out)] of the model's linear layers whose name ends with one of NAMES (as peft matches a list)."""
    out = []
    for path, module in model.named_modules():
        if hasattr(module, "get_base_layer"):  # adapted already (another adapter): its base layer's shape
            module = module.get_base_layer()
        if path.rsplit(".", 1)[-1] in names and getattr(module, "weight", None) is not None \
                and module.weight.dim() == 2:
            out.append(tuple(module.weight.shape))
    return out


def linear_names(model):
    """The last names of the model's 2-D weight layers (what --targets may name)."""
    return sorted({p.rsplit(".", 1)[-1] for p, m in model.named_modules()
                   if p and isinstance(getattr(m, "weight", None), torch.Tensor) and m.weight.dim() == 2
                   and "lora_" not in p})


def make(lm, config, name=None, budget=None):
    """Inject a new LoRA adapter into LM's base model (its weights admitted by BUDGET first) and return its
    Adapter; the LoRA init draws from torch's global generator as peft's does."""
    name = name or _free_name(lm)
    if name in lm.adapters or not name.isidentifier():
        raise bad_argument("--name %r: %s" % (name, "taken by another adapter of this model" if name in lm.adapters
                                              else "an adapter's name is a Python identifier"),
                           "adapters of %s: %s" % (lm.name, ", ".join(sorted(lm.adapters)) or "none"))
    shapes = adapted_shapes(lm.model, config.target_modules)
    if not shapes:
        raise bad_argument("--targets %s: %s has no such linear layer" % (",".join(sorted(config.target_modules)),
                                                                         lm.name),
                           "its layers: %s" % ",".join(linear_names(lm.model)))
    if budget is not None and lm.device.type == "cpu":
        budget.admit_bytes(sum(config.r * (a + b) for a, b in shapes) * lm.dtype.itemsize, "the LoRA weights")
    try:
        with warnings.catch_warnings():  # "Already found a peft_config … multiple adapters": what was asked for
            warnings.filterwarnings("ignore", message="Already found a `peft_config`")
            lm.model.add_adapter(config, adapter_name=name)
    except (ValueError, TypeError) as e:
        raise bad_argument("peft cannot add this adapter: %s" % str(e).split("\n")[0][:300]) from None
    adapter = Adapter(lm.model, name)
    adapter.lm = lm
    Adapter.activate(lm.model, lm.active)  # a new adapter waits for `lm adapter use`: generation is unchanged
    for other in list(lm.adapters.values()) + [adapter]:
        for p in other.parameters():
            p.requires_grad_(True)
    lm.adapters[name] = adapter
    return adapter


def _free_name(lm):
    n = len(lm.adapters) + 1
    while "lora%d" % n in lm.adapters:
        n += 1
    return "lora%d" % n


def use(lm, adapter):
    """Make ADAPTER (one of LM's, or None: the base alone) the one generation and serving use."""
    if adapter is not None and lm.adapters.get(adapter.adapter_name) is not adapter:
        raise bad_argument("%s is no adapter of %s" % (adapter.adapter_name, lm.name),
                           "its adapters: %s" % (", ".join(sorted(lm.adapters)) or "none (`torch lm lora`)"))
    if not lm.adapters:
        lm.active = None
        return
    Adapter.activate(lm.model, adapter.adapter_name if adapter is not None else None)
    for held in lm.adapters.values():
        for p in held.parameters():
            p.requires_grad_(True)
    lm.active = adapter.adapter_name if adapter is not None else None


def remove(lm, name):
    """Take adapter NAME out of LM's base model (peft's delete_adapter): its LoRA weights go, the active adapter
    stays the one it was (the base alone if it was this one), and once no adapter is left every LoRA layer
    gives back the base layer it wrapped, so the model is the modules and weights it was before any adapter."""
    adapter = lm.adapters.get(name)
    if adapter is None:
        raise bad_argument("%s has no adapter %r" % (lm.name, name),
                           "its adapters: %s" % (", ".join(sorted(lm.adapters)) or "none"))
    with warnings.catch_warnings():  # peft warns when the active adapter goes; lm.active says what is active
        warnings.simplefilter("ignore")
        lm.model.delete_adapter(name)
    del lm.adapters[name]
    adapter.__dict__.pop("lm", None)  # a handle still held refuses `lm save` and `adapter use` (lm_of)
    if lm.active == name:
        lm.active = None
    if lm.adapters:
        Adapter.activate(lm.model, lm.active)
        for held in lm.adapters.values():  # set_adapter turned the inactive adapters' grads off
            for p in held.parameters():
                p.requires_grad_(True)
    else:
        _unwrap(lm.model)


def _unwrap(model):
    """Every LoRA layer (peft's BaseTunerLayer, empty now) replaced by the base layer it wraps."""
    from peft.tuners.tuners_utils import BaseTunerLayer
    wrapped = [(path, m) for path, m in model.named_modules() if isinstance(m, BaseTunerLayer)]
    for path, layer in wrapped:
        parent, _, child = path.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, layer.get_base_layer())


def lm_of(adapter):
    """The LanguageModel an Adapter handle was made on (a module that is none: bad_argument)."""
    lm = getattr(adapter, "lm", None) if isinstance(adapter, Adapter) else None
    if lm is None and isinstance(adapter, Adapter):
        raise bad_argument("adapter %s was taken out of its model (a sweep's trial ends so)" % adapter.adapter_name,
                           "its run folder's best.safetensors holds its weights: `torch checkpoint load` them into "
                           "a new `torch lm lora`")
    if lm is None:
        raise bad_argument("%s is not a LoRA adapter" % type(adapter).__name__, "`torch lm lora LM` makes one")
    return lm


def save(adapter, folder):
    """peft's layout in FOLDER: adapter_model.safetensors (keys as PeftModel.save_pretrained writes them) and
    adapter_config.json, each written atomically and fsync'd."""
    lm = lm_of(adapter)
    peft = library.peft()
    name = adapter.adapter_name
    state = peft.get_peft_model_state_dict(lm.model, adapter_name=name)
    tensors = {"base_model.model." + k: v.detach().to("cpu").contiguous() for k, v in state.items()}
    config = lm.model.peft_config[name].to_dict()
    config["base_model_name_or_path"] = lm.folder
    config = {k: sorted(v) if isinstance(v, set) else v for k, v in config.items()}
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise fileio.file_error(folder, "make", e) from None
    from safetensors.torch import save_file
    weights = os.path.join(folder, WEIGHTS_FILE)
    fileio.atomic_write(weights, lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    text = json.dumps(config, indent=2, sort_keys=True, default=str) + "\n"
    fileio.atomic_write_bytes(os.path.join(folder, CONFIG_FILE), text.encode())
    return {"folder": os.path.abspath(folder), "files": [WEIGHTS_FILE, CONFIG_FILE], "tensors": len(tensors),
            "bytes": sum(t.numel() * t.element_size() for t in tensors.values())}

