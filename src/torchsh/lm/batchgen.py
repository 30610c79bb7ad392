"""Generation for many requests at once (`torch serve --openai`): their prompts left-padded into one batch that
shares one KV cache, one forward a step, each row's next token chosen by its own settings (lm/choosing.py: greedy, or sampled as generate samples).
Rows that end leave the batch (their cache rows dropped), and new requests join it between steps: a new
prompt is prefilled alone, then its cache and the batch's are left-padded to one length and stacked (continuous
batching). Where the cache is not transformers' plain DynamicCache, new requests wait for the batch to end.

A row's positions count from its first real token, and its padding is masked, so a prompt sees in the batch
what it sees alone; the prefill computes only the last position's logits, as transformers' generate does.
Everything here runs on the tensor thread; the rows' text and stops are the caller's (serve/lmserved.py).
"""
import inspect

import torch

from torchsh.lm import choosing


class Batch:
    """The rows now generating: their cache, attention mask and next positions; rows[i] is row i of each."""

    def __init__(self, lm):
        self.lm, self.rows, self.cache, self.mask, self.positions = lm, [], None, None, None
        self.last = None  # [B, 1]: each row's newest token, the next step's input
        self.pad_id = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
        self.keeps_logits = "logits_to_keep" in inspect.signature(lm.model.forward).parameters

    def joinable(self):
        """Whether new rows can join while others generate (the cache's layers are plain DynamicLayers)."""
        return self.cache is None or all(type(layer).__name__ == "DynamicLayer" for layer in self.cache.layers)

    def add(self, rows):
        """Prefill ROWS (their prompts left-padded together) and join them to the batch; -> their first tokens."""
        tf = _transformers()
        width = max(len(r.prompt) for r in rows)
        ids = torch.tensor([[self.pad_id] * (width - len(r.prompt)) + list(r.prompt) for r in rows])
        mask = torch.tensor([[0] * (width - len(r.prompt)) + [1] * len(r.prompt) for r in rows])
        cache = tf.DynamicCache(config=self.lm.model.config)
        logits = self._forward(ids, mask, _positions(mask), cache, prefill=True)
        chosen = choosing.choose(logits, [r.choice for r in rows])
        last = torch.tensor(chosen).unsqueeze(1)
        if self.cache is None:
            self.cache, self.mask, self.rows, self.last = cache, mask, list(rows), last
        else:
            self._stack(cache, mask, rows, last)
        return chosen

    def step(self):
        """One forward of every row's newest token; -> the next token of each row."""
        self.mask = torch.cat([self.mask, torch.ones(len(self.rows), 1, dtype=self.mask.dtype)], 1)
        positions = self.mask.sum(1, keepdim=True) - 1
        logits = self._forward(self.last, self.mask, positions, self.cache)
        chosen = choosing.choose(logits, [r.choice for r in self.rows])
        self.last = torch.tensor(chosen).unsqueeze(1)
        return chosen

    def keep(self, kept):
        """Only the rows whose indices are in KEPT go on (the others ended); an empty batch is reset."""
        if len(kept) == len(self.rows):
            return
        if not kept:
            self.rows, self.cache, self.mask, self.last = [], None, None, None
            return
        index = torch.tensor(kept)
        self.cache.batch_select_indices(index.to(self.lm.device))
        self.rows = [self.rows[i] for i in kept]
        self.mask, self.last = self.mask[index], self.last[index]
        unused = int(self.mask.any(0).int().argmax())  # leading columns that are padding in every row left
        if unused and self.joinable():  # (a sliding window's cache keeps its own length)
            self.mask = self.mask[:, unused:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, unused:], layer.values[:, :, unused:]

    def _forward(self, ids, mask, positions, cache, prefill=False):
        device = self.lm.device
        extra = {"logits_to_keep": 1} if prefill and self.keeps_logits else {}
        with torch.inference_mode():
            out = self.lm.model(input_ids=ids.to(device), attention_mask=mask.to(device),
                                position_ids=positions.to(device), past_key_values=cache, use_cache=True, **extra)
        return out.logits[:, -1, :].float()

    def _stack(self, cache, mask, rows, last):
        """Join a prefilled group to the batch: the shorter side's cache and mask left-padded to the longer."""
        have, new = self.mask.shape[1], mask.shape[1]
        width = max(have, new)
        for mine, theirs in zip(self.cache.layers, cache.layers):
            mine.keys = torch.cat([_left_pad(mine.keys, width), _left_pad(theirs.keys, width)], 0)
            mine.values = torch.cat([_left_pad(mine.values, width), _left_pad(theirs.values, width)], 0)
        self.mask = torch.cat([_left_pad(self.mask, width), _left_pad(mask, width)], 0)
        self.rows += list(rows)
        self.last = torch.cat([self.last, last], 0)


def _left_pad(tensor, width):
    """TENSOR ([B, L] mask or [B, H, L, D] cache) with zeros before its columns, to WIDTH along the length."""
    if tensor.dim() == 2:
        missing = width - tensor.shape[1]
        return torch.cat([tensor.new_zeros(tensor.shape[0], missing), tensor], 1) if missing else tensor
    missing = width - tensor.shape[2]
    if not missing:
        return tensor
    shape = list(tensor.shape)
    shape[2] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], 2)


def _positions(mask):
    """Each token's position counted from its row's first real token (padding at 0), as generate counts them."""
    return (mask.cumsum(1) - 1).clamp(min=0)


def _transformers():
    from torchsh.lm import library
    return library.transformers()


def embed(lm, prompts, budget=None):
    """Each prompt's embedding: the mean of the model's last hidden state over its tokens, unit length; [N, H].
    The decoder alone runs (base_model: no logits over the vocabulary, no hidden state kept per layer); its
    activations are admitted by BUDGET first."""
    width = max(len(p) for p in prompts)
    if budget is not None and lm.device.type == "cpu":
        c = lm.text_config()
        inner = getattr(c, "intermediate_size", None) or 4 * c.hidden_size
        budget.admit_bytes(len(prompts) * width * (4 * c.hidden_size + inner) * 4, "the embeddings' activations")
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([list(p) + [pad] * (width - len(p)) for p in prompts], device=lm.device)
    mask = torch.tensor([[1] * len(p) + [0] * (width - len(p)) for p in prompts], device=lm.device)
    with torch.inference_mode():
        hidden = lm.model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * weights).sum(1) / weights.sum(1)
    return torch.nn.functional.normalize(mean, dim=-1).cpu()
