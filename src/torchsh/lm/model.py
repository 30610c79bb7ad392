"""A language model as torchsh holds it (`lm://`): a transformers causal LM, its tokenizer, the folder they came
from, and the LoRA adapters made on it (all share the one copy of the base weights; one is active at a time).
The object is plain: the daemon's verbs and jobs read and change it under the tensor lock."""
import os


class LanguageModel:
    def __init__(self, model, tokenizer, folder, config, stored_dtype):
        self.model = model            # transformers' *ForCausalLM, in eval mode; peft's LoRA layers once adapted
        self.tokenizer = tokenizer    # transformers' PreTrainedTokenizerFast from the folder's tokenizer files
        self.folder = folder          # the absolute folder it was opened from (history and `lm info` name it)
        self.config = config          # config.json as read (the architecture, context length)
        self.stored_dtype = stored_dtype  # the weights' dtype on disk (PyTorch's name: float32, bfloat16)
        self.adapters = {}            # adapter name -> its Adapter module (lm/adapters.py)
        self.active = None            # the adapter name generation and serving use now; None: the base alone

    @property
    def name(self):
        return os.path.basename(os.path.normpath(self.folder))

    @property
    def device(self):
        return next(self.model.parameters()).device

    @property
    def dtype(self):
        return next(self.model.parameters()).dtype

    def text_config(self):
        config = self.model.config
        return config.get_text_config() if hasattr(config, "get_text_config") else config

    def context_length(self):
        c = self.text_config()
        return getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None)

    def base_parameters(self):
        """The base model's own weights (LoRA's are the adapters')."""
        return [p for n, p in self.model.named_parameters() if "lora_" not in n]

    def chat_template(self):
        return getattr(self.tokenizer, "chat_template", None)

    def eos_ids(self):
        """The token ids that end a generation: the generation config's, else the tokenizer's eos."""
        gen = getattr(self.model, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return set() if eos is None else set(eos if isinstance(eos, (list, tuple)) else [eos])

