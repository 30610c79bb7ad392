"""Generation, as a job's work or a served request's: transformers' own `generate` (so greedy output is its
output, token for token) with a streamer that hands each new token's text on as it comes and a stopping
criterion that polls the job's should_stop() at every token boundary (Ctrl-C, `job stop`, the tensor lock let go
to waiting requests). The KV cache is admitted by the memory budget before the first token, and a prompt plus
--max_new_tokens past the model's context length is refused rather than run into positions it never learned."""
import contextlib
import time
from dataclasses import dataclass

import torch

from torchsh.errors import bad_argument
from torchsh.lm import library


@dataclass
class Sampling:
    """How tokens are chosen: PyTorch users' generate() arguments. temperature 0 is greedy; None everywhere
    leaves the folder's generation_config.json in charge (greedy for most base models)."""
    max_new_tokens: int = 64
    temperature: float = None
    top_p: float = None
    top_k: int = None
    seed: int = None

    def generate_kwargs(self, lm):
        kw = dict(max_new_tokens=self.max_new_tokens, pad_token_id=_pad_id(lm))
        if self.temperature == 0:
            kw["do_sample"] = False
        elif self.temperature is not None or self.top_p is not None or self.top_k is not None:
            kw["do_sample"] = True
            for key in ("temperature", "top_p", "top_k"):
                if getattr(self, key) is not None:
                    kw[key] = getattr(self, key)
        return kw

    def check(self):
        if self.max_new_tokens < 1:
            raise bad_argument("--max_new_tokens must be at least 1, not %d" % self.max_new_tokens)
        if self.temperature is not None and self.temperature < 0:
            raise bad_argument("--temperature must be 0 (greedy) or more, not %g" % self.temperature)
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise bad_argument("--top_p is a probability mass in (0, 1], not %g" % self.top_p)
        if self.top_k is not None and self.top_k < 1:
            raise bad_argument("--top_k must be at least 1, not %d" % self.top_k)


def _pad_id(lm):
    tok = lm.tokenizer
    if tok.pad_token_id is not None:
        return tok.pad_token_id
    eos = sorted(lm.eos_ids())
    return eos[0] if eos else 0


def kv_cache_bytes(lm, batch, length):
    """The bytes of a full KV cache for `batch` sequences of `length` tokens: keys and values per layer."""
    c = lm.text_config()
    heads = getattr(c, "num_attention_heads", 1)
    kv_heads = getattr(c, "num_key_value_heads", None) or heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    return 2 * c.num_hidden_layers * kv_heads * head_dim * length * batch * lm.dtype.itemsize


def admit(lm, budget, batch, prompt_tokens, max_new_tokens):
    """Refuse a generation that runs past the context length or whose KV cache does not fit the budget."""
    limit = lm.context_length()
    if limit and prompt_tokens + max_new_tokens > limit:
        raise bad_argument("%d prompt tokens + --max_new_tokens %d exceed %s's context length of %d"
                           % (prompt_tokens, max_new_tokens, lm.name, limit),
                           "--max_new_tokens %d at most, or a shorter prompt" % max(0, limit - prompt_tokens))
    if budget is not None and lm.device.type == "cpu":
        budget.admit_bytes(kv_cache_bytes(lm, batch, prompt_tokens + max_new_tokens), "the KV cache")


@dataclass
class Generated:
    """One generation's outcome: the --json row's fields."""
    text: str
    tokens: list
    prompt_tokens: int
    finish_reason: str          # stop (an end-of-sequence token), length (--max_new_tokens), stopped (Ctrl-C)
    first_token_s: float
    seconds: float

    def row(self):
        n = len(self.tokens)
        decode_s = self.seconds - self.first_token_s
        return dict(text=self.text, tokens=self.tokens, prompt_tokens=self.prompt_tokens, completion_tokens=n,
                    finish_reason=self.finish_reason, first_token_s=round(self.first_token_s, 6),
                    seconds=round(self.seconds, 6),
                    tokens_per_s=round((n - 1) / decode_s, 3) if n > 1 and decode_s > 0 else None)


def generate(lm, input_ids, sampling, on_token=None, should_stop=None):
    """Generate from input_ids ([1, T] int64) and return a Generated; on_token(id, text) gets each new token and
    the text it completes (empty while a multi-byte character is incomplete) as it comes."""
    tf = library.transformers()
    started = time.perf_counter()
    stream = _Stream(lm.tokenizer, on_token, started)
    stopper = _stopping(tf, should_stop)
    kwargs = sampling.generate_kwargs(lm)
    attention = torch.ones_like(input_ids)
    with torch.inference_mode(), _seeded(sampling.seed, lm.device):
        lm.model.generate(input_ids=input_ids.to(lm.device), attention_mask=attention.to(lm.device),
                          streamer=stream, stopping_criteria=tf.StoppingCriteriaList([stopper]), **kwargs)
    seconds = time.perf_counter() - started
    if stopper.stopped:
        reason = "stopped"
    elif stream.ids and stream.ids[-1] in lm.eos_ids():
        reason = "stop"
    else:
        reason = "length"
    return Generated(stream.text, stream.ids, int(input_ids.shape[-1]), reason,
                     stream.first_s if stream.first_s is not None else seconds, seconds)


@contextlib.contextmanager
def _seeded(seed, device):
    """--seed: the sampling draws from torch.manual_seed(seed) inside a fork of the RNG, entered first, so the
    daemon's own generator is as it was after (seeding before the fork would leave the seed behind)."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


class _Stream:
    """transformers' streamer protocol (put the prompt once, then each new token; end): each token's text
    is the growth of the decoded whole, held back while it ends in an incomplete character (U+FFFD)."""

    def __init__(self, tokenizer, on_token, started):
        self.tokenizer, self.on_token, self.started = tokenizer, on_token, started
        self.ids, self.text, self.first_s, self._prompt_seen = [], "", None, False

    def put(self, value):
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for token in value.reshape(-1).tolist():
            if self.first_s is None:
                self.first_s = time.perf_counter() - self.started
            self.ids.append(token)
            whole = self.tokenizer.decode(self.ids, skip_special_tokens=True)
            piece = "" if whole.endswith("\ufffd") else whole[len(self.text):]
            if piece:
                self.text = whole
            if self.on_token is not None:
                self.on_token(token, piece)

    def end(self):
        whole = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if whole != self.text and self.on_token is not None and whole.startswith(self.text):
            self.on_token(None, whole[len(self.text):])
        self.text = whole


def _stopping(tf, should_stop):
    """A StoppingCriteria that ends every sequence once should_stop() says so (polled after each token)."""
    class Stop(tf.StoppingCriteria):
        stopped = False

        def __call__(self, input_ids, scores, **kwargs):
            if not self.stopped and should_stop is not None and should_stop():
                self.stopped = True
            return torch.full((input_ids.shape[0],), self.stopped, dtype=torch.bool, device=input_ids.device)
    return Stop()
