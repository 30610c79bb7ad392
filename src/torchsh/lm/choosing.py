"""How each row of a batch picks its next token (lm/batchgen.py): greedy (argmax), or sampled as transformers'
generate samples: the logits divided by the temperature, cut to the top k, then to the top p of probability
mass, softmax, one multinomial draw. A row with a seed draws from its own generator seeded with it, so that a
seeded request draws what `generate` draws after torch.manual_seed(seed) when it runs alone."""
from dataclasses import dataclass

import torch


@dataclass
class Choice:
    temperature: float = 0.0   # 0: greedy
    top_p: float = None
    top_k: int = None
    generator: object = None   # a seeded torch.Generator, or None: torch's global one

    @property
    def greedy(self):
        return not self.temperature

    @classmethod
    def of(cls, lm, temperature=None, top_p=None, top_k=None, seed=None):
        """A request's choice; what it leaves out comes from the folder's generation_config.json (its do_sample
        false: greedy), as `torch lm generate` leaves it in charge."""
        config = getattr(lm.model, "generation_config", None)
        if temperature is None:
            temperature = (getattr(config, "temperature", None) or 1.0) if getattr(config, "do_sample", False) else 0.0
        if temperature and top_p is None:
            top_p = getattr(config, "top_p", None)
        if temperature and top_k is None:
            top_k = getattr(config, "top_k", None)
        generator = None
        if seed is not None and temperature:
            generator = torch.Generator(device=lm.device).manual_seed(seed)
        return cls(float(temperature), top_p, top_k, generator)


def choose(logits, choices):
    """logits [B, V] (float32) -> each row's next token id (a list of B ints)."""
    chosen = logits.argmax(-1).tolist()
    for i, choice in enumerate(choices):
        if not choice.greedy:
            chosen[i] = _sample(logits[i:i + 1], choice)
    return chosen


def _sample(scores, choice):
    if choice.temperature != 1.0:
        scores = scores / choice.temperature
    if choice.top_k:
        top_k = min(choice.top_k, scores.shape[-1])
        scores = scores.masked_fill(scores < torch.topk(scores, top_k)[0][..., -1, None], -float("inf"))
    if choice.top_p is not None and choice.top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= (1 - choice.top_p)
        remove[..., -1:] = False  # at least one token stays
        scores = scores.masked_fill(remove.scatter(1, sorted_indices, remove), -float("inf"))
    probs = torch.nn.functional.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, num_samples=1, generator=choice.generator)[0, 0])
