"""OpenAI's REST API as `torch serve LM --openai` speaks it, pure: request bodies checked into an Ask (what to
generate, how, when to stop) or an EmbedAsk, and the response bodies, stream chunks and errors built back.

Spec: https://platform.openai.com/docs/api-reference (chat/create, completions/create, embeddings/create,
models/list). Fields read: model, messages (chat), prompt (completions: a string, or one list of token ids),
max_tokens / max_completion_tokens, temperature, top_p, seed, stop (a string or up to 4), n (1 only), stream,
stream_options.include_usage, user (ignored); embeddings: input (a string, strings, token ids, lists of ids),
encoding_format (float or base64). What would change the answer and is not served (n > 1, logprobs, tools,
penalties, echo, a JSON response_format) is refused (400) rather than ignored. Errors are
{"error": {"message", "type", "param", "code"}}, code being torchsh's stable code, with its HTTP status.
"""
import base64
import secrets
import time
from dataclasses import dataclass, field

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.serve import v2

MAX_STOPS = 4
COMPLETIONS_MAX_TOKENS = 16  # OpenAI's default for /v1/completions; chat's is the rest of the context
MAX_EMBED_INPUTS = 2048
_REFUSED = {"logprobs": (False, None), "top_logprobs": (None, 0), "tools": (None, []), "functions": (None, []),
            "tool_choice": (None, "none"), "presence_penalty": (None, 0, 0.0), "frequency_penalty": (None, 0, 0.0),
            "logit_bias": (None, {}), "echo": (False, None), "suffix": (None, ""), "best_of": (None, 1)}


def bad(message, param=None):
    err = TorchshError("bad_argument", message, "see https://platform.openai.com/docs/api-reference")
    err.param = param
    return err


@dataclass
class Ask:
    """One generation request, checked: its prompt as token ids and how to answer it."""
    chat: bool
    model: str
    prompt: list
    max_tokens: int
    temperature: float = None
    top_p: float = None
    seed: int = None
    stop: tuple = ()
    stream: bool = False
    include_usage: bool = False
    id: str = field(default_factory=lambda: "")
    created: int = field(default_factory=lambda: int(time.time()))

    def __post_init__(self):
        self.id = self.id or ("chatcmpl-" if self.chat else "cmpl-") + secrets.token_hex(12)


@dataclass
class EmbedAsk:
    model: str
    inputs: list          # token id lists
    base64: bool = False


def parse(body, chat):
    """The JSON of POST /v1/chat/completions (chat) or /v1/completions -> (the document, the sampling fields)."""
    doc = _object(body)
    for name, allowed in _REFUSED.items():
        if name in doc and doc[name] not in allowed:
            raise bad("%r is not served by torch serve --openai" % name, name)
    if doc.get("n", 1) != 1:
        raise bad("n must be 1: one choice a request (send the request again for another)", "n")
    if chat and not isinstance(doc.get("messages"), list) or chat and not doc["messages"]:
        raise bad("\"messages\" is a non-empty list of {\"role\", \"content\"}", "messages")
    fmt = doc.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise bad("only the text response_format is served", "response_format")
    _number(doc, "temperature", 0, 2)
    _number(doc, "top_p", 0, 1, low_open=True)
    for name in ("seed", "max_tokens", "max_completion_tokens"):
        if doc.get(name) is not None and type(doc[name]) is not int:
            raise bad("%r is an integer" % name, name)
    if not isinstance(doc.get("stream", False), bool):
        raise bad("\"stream\" is true or false", "stream")
    return doc


def messages_of(doc):
    """The chat messages as the chat template takes them: role and text content (text parts joined)."""
    out = []
    for i, m in enumerate(doc["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad("messages[%d] is an object with a \"role\"" % i, "messages")
        content = m.get("content")
        if isinstance(content, list):
            if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                       for p in content):
                raise bad("messages[%d]: only text content parts are served" % i, "messages")
            content = "".join(p["text"] for p in content)
        if not isinstance(content, str):
            raise bad("messages[%d].content is a string or a list of text parts" % i, "messages")
        out.append({"role": m["role"], "content": content})
    return out


def prompt_of(doc):
    """/v1/completions' prompt: its text, or its token ids (a list of ints); a list of prompts is refused."""
    prompt = doc.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str) or isinstance(prompt, list) and prompt and all(type(t) is int for t in prompt):
        return prompt
    raise bad("\"prompt\" is one string or one list of token ids (one prompt a request)", "prompt")


def ask_of(doc, chat, prompt_ids, context_length):
    """The Ask of a checked request whose prompt came to PROMPT_IDS; max_tokens checked against the context."""
    room = context_length - len(prompt_ids) if context_length else None
    if room is not None and room < 1:
        raise bad("the prompt's %d tokens fill the model's context of %d" % (len(prompt_ids), context_length),
                  "messages" if chat else "prompt")
    asked = doc.get("max_completion_tokens") if doc.get("max_completion_tokens") is not None else doc.get("max_tokens")
    if asked is None:
        asked = room if chat and room else COMPLETIONS_MAX_TOKENS if not chat else 256
    if asked < 1 or room is not None and asked > room:
        raise bad("max_tokens %d: from 1 to %s (the model's context of %s less the prompt's %d tokens)"
                  % (asked, room, context_length, len(prompt_ids)), "max_tokens")
    return Ask(chat, doc.get("model"), list(prompt_ids), asked, doc.get("temperature"), doc.get("top_p"),
               doc.get("seed"), _stops(doc.get("stop")), doc.get("stream", False),
               bool((doc.get("stream_options") or {}).get("include_usage")))


def parse_embed(body):
    """POST /v1/embeddings -> (the document, its inputs: each a string or a list of token ids)."""
    doc = _object(body)
    inputs = doc.get("input")
    if isinstance(inputs, str) or isinstance(inputs, list) and inputs and all(type(t) is int for t in inputs):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or len(inputs) > MAX_EMBED_INPUTS or not all(
            isinstance(t, str) and t or isinstance(t, list) and t and all(type(i) is int for i in t) for t in inputs):
        raise bad("\"input\" is a non-empty string, token ids, or a list of up to %d of them" % MAX_EMBED_INPUTS,
                  "input")
    if doc.get("encoding_format", "float") not in ("float", "base64"):
        raise bad("\"encoding_format\" is float or base64", "encoding_format")
    if doc.get("dimensions") is not None:
        raise bad("\"dimensions\" is not served: the embedding is the model's hidden size", "dimensions")
    return doc, inputs


def _object(body):
    try:
        doc = v2.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad("the body is not JSON: %s" % e)
    if not isinstance(doc, dict):
        raise bad("the body is a JSON object")
    if not isinstance(doc.get("model"), str):
        raise bad("\"model\" names a served model (GET /v1/models lists them)", "model")
    return doc


def _number(doc, name, low, high, low_open=False):
    value = doc.get(name)
    if value is None:
        return
    if type(value) not in (int, float) or value < low or value > high or low_open and value == low:
        raise bad("%r is a number in %s%g, %g]" % (name, "(" if low_open else "[", low, high), name)


def _stops(stop):
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > MAX_STOPS or not all(isinstance(s, str) and s for s in stops):
        raise bad("\"stop\" is a string or a list of up to %d non-empty strings" % MAX_STOPS, "stop")
    return tuple(stops)


# -- what goes back ---------------------------------------------------------------------------------------
def usage(prompt_tokens, completion_tokens=None):
    done = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + (completion_tokens or 0)}
    if completion_tokens is not None:
        done["completion_tokens"] = completion_tokens
    return done


def answer(ask, text, finish_reason, completion_tokens):
    """The whole reply of a request not streamed: a chat.completion or a text_completion."""
    if ask.chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                  "finish_reason": finish_reason}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
    return {"id": ask.id, "object": "chat.completion" if ask.chat else "text_completion", "created": ask.created,
            "model": ask.model, "choices": [choice], "usage": usage(len(ask.prompt), completion_tokens),
            "system_fingerprint": None}


def chunk(ask, text=None, finish_reason=None, first=False, with_usage=None):
    """One streamed chunk: a piece of text, the finish reason, or (with_usage) the usage after the last."""
    if with_usage is not None:
        choices = []
    elif ask.chat:
        delta = ({"role": "assistant", "content": ""} if first else {} if text is None else {"content": text})
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
    else:
        choices = [{"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish_reason}]
    body = {"id": ask.id, "object": "chat.completion.chunk" if ask.chat else "text_completion",
            "created": ask.created, "model": ask.model, "choices": choices, "system_fingerprint": None}
    if ask.include_usage:
        body["usage"] = with_usage
    return body


def embeddings(model, vectors, as_base64, prompt_tokens):
    """The embeddings reply: one vector a input, as floats or as base64 of little-endian float32."""
    data = [{"object": "embedding", "index": i, "embedding": base64.b64encode(
        v.contiguous().numpy().astype("<f4").tobytes()).decode() if as_base64 else v.tolist()}
        for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": model, "usage": usage(prompt_tokens)}


def models(names, created):
    return {"object": "list", "data": [model(name, created) for name in names]}


def model(name, created):
    return {"id": name, "object": "model", "created": created, "owned_by": "torchsh"}


def error_body(err):
    """OpenAI's error object, with torchsh's stable code as its code and the hint after the message."""
    status = protocol.http_status(err.code)
    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
        status, "invalid_request_error" if status < 500 else "server_error")
    message = err.message + ("; %s" % err.hint if err.hint else "")
    return {"error": {"message": message, "type": kind, "param": getattr(err, "param", None), "code": err.code}}
