"""`torch lm lora`, `lm adapter use`, `lm save`: LoRA adapters on a language model (lm/adapters.py).

An adapter is an nn:// module whose parameters are its LoRA weights only, so `torch optim adamw $a` and
`torch fit $a $o $L --loss lm` train it as any module; the base model's weights stay frozen and shared with
generation and serving, which use the adapter `lm adapter use` made active (none at first: the base alone).
"""
from torchsh.errors import bad_argument
from torchsh.history import lmforms
from torchsh.lm import adapters
from torchsh.verbs import verb
from torchsh.verbs.lm import TINY

LORA = TINY + "m=$(torch lm open tiny) && a=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj) && "


@verb("lm.lora(LanguageModel model, *, int r=8, int alpha=16, str? targets=None, float dropout=0.0, "
      "str? name=None) -> Module", category="lm", writes=("model",), form=lmforms.lora,
      examples=(TINY + "torch lm lora $(torch lm open tiny) --r 8 --alpha 16 --targets q_proj,v_proj",
                LORA + "torch optim adamw $a --lr 2e-4 && torch lm info $m"))
def lm_lora(ctx, model, r=8, alpha=16, targets=None, dropout=0.0, name=None):
    """A new LoRA adapter on MODEL (peft's LoraConfig, injected into the one base model in place): an nn://
    module whose parameters are only its LoRA weights and whose forward(input_ids) gives the logits with it
    active. The base stays frozen and shared; generation keeps the adapter active before (`torch lm adapter
    use` swaps). Its init draws from torch's generator as peft's does (`torch manual_seed` first repeats it).

    Args:
        r: the LoRA rank
        alpha: lora_alpha (the update is scaled by alpha / r)
        targets: the linear layers adapted, by name, q_proj,v_proj (default: peft's for the architecture)
        dropout: lora_dropout, on while the adapter trains
        name: the adapter's name in the model (default lora1, lora2, …; `torch lm info` lists them)
    """
    config = adapters.lora_config(r, alpha, targets, dropout, model.config.get("model_type"))
    active = model.active
    adapter = adapters.make(model, config, name, getattr(ctx.app, "memory", None))
    ctx.noted = {"adapter_name": adapter.adapter_name, "targets": sorted(config.target_modules),  # the script's
                 "active": active}
    return adapter


@verb("lm.adapter.use(LanguageModel model, str adapter) -> Json", category="lm", writes=("model",),
      form=lmforms.use,
      examples=(LORA + "torch lm adapter use $m $a && torch lm adapter use $m none",))
def lm_adapter_use(ctx, model, adapter):
    """Make ADAPTER the one MODEL's generation and serving use, swapped in place (peft's set_adapter; the
    base's weights are not touched): an adapter's handle or name, or `none` for the base alone.

    Args:
        adapter: an adapter of MODEL (its nn:// handle or its name), or none
    """
    chosen = _adapter(ctx, model, adapter)
    adapters.use(model, chosen)
    ctx.noted = {"adapter_name": model.active}  # the script's
    return {"model": model.name, "active_adapter": model.active, "adapters": sorted(model.adapters)}


def _adapter(ctx, lm, word):
    if word == "none":
        return None
    if "://" in word:
        found = ctx.registry.get(word.strip(), "nn")
        if not isinstance(found, adapters.Adapter):
            raise bad_argument("%s is a %s, not a LoRA adapter" % (word.strip(), type(found).__name__),
                               "`torch lm lora LM` makes one")
        return found
    if word in lm.adapters:
        return lm.adapters[word]
    raise bad_argument("%s has no adapter %r" % (lm.name, word),
                       "its adapters: %s; or none for the base alone" % (", ".join(sorted(lm.adapters)) or "none"))


@verb("lm.save(Module adapter, OutDirPath folder) -> Json", category="lm",
      no_form="it writes files and changes no object (the script rebuilds the adapter itself)",
      examples=(LORA + "torch lm save $a out && ls out",))
def lm_save(ctx, adapter, folder):
    """Write an adapter as peft saves one: FOLDER/adapter_model.safetensors and adapter_config.json (each
    atomic and fsync'd), the layout peft's PeftModel.from_pretrained(base, FOLDER), vLLM and ollama read."""
    return adapters.save(adapter, folder)
