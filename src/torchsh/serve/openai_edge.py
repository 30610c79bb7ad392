"""The OpenAI routes' handlers (`torch serve LM --openai`), the same for the daemon's Unix socket (rows of
daemon/routes.py) and --port (serve/tcp.py): GET /v1/models[/NAME], POST /v1/chat/completions,
/v1/completions, /v1/embeddings. The body's "model" names the served model (app.served, serve/repository.py).

A handler never waits: it checks the request and tokenizes its prompt (on a lock-free worker), then queues it on
its model (serve/lmserved.py) and returns a Deferred reply (sent whole when the row ends) or, with "stream":
true, a Streamed one (wire/streamed.py: Server-Sent Events as the tokens come). Errors are OpenAI's error
object (serve/openai.py) with torchsh's stable code and the code's HTTP status.
"""
import json

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.lm import conversation
from torchsh.serve import openai
from torchsh.serve.lmrows import Embedding, Row
from torchsh.wire.http import Deferred, Response
from torchsh.wire.streamed import Streamed


def json_reply(status, body):
    return Response(status, json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


def _openai(handler):
    """A handler whose refusals are OpenAI's error object."""
    def answer(app, request, params):
        try:
            return handler(app, request, params)
        except TorchshError as e:
            return json_reply(protocol.http_status(e.code), openai.error_body(e))
    answer.__name__, answer.__doc__ = handler.__name__, handler.__doc__
    return answer


def served_lm(app, name):
    """The model served OpenAI-style as NAME (unknown_model, also for a model served over V2)."""
    return app.served.get(name, "openai")


@_openai
def get_models(app, request, params):
    """The models served OpenAI-style."""
    return json_reply(200, {"object": "list", "data": [openai.model(s.name, s.created) for s in app.served.served("openai")]})


@_openai
def get_openai_model(app, request, params):
    served = served_lm(app, params["name"])
    return json_reply(200, openai.model(served.name, served.created))


@_openai
def post_chat(app, request, params):
    """A chat completion: the messages through the model's chat template."""
    return _generate(app, request, chat=True)


@_openai
def post_completion(app, request, params):
    """A text completion of the prompt as it is."""
    return _generate(app, request, chat=False)


def _generate(app, request, chat):
    doc = openai.parse(request.body, chat)
    served = served_lm(app, doc["model"])
    lm = served.lm
    ids = _chat_ids(lm, openai.messages_of(doc)) if chat else _prompt_ids(lm, openai.prompt_of(doc))
    ask = openai.ask_of(doc, chat, ids, lm.context_length())
    served.check_room()  # refused now, with its own status, rather than inside a stream already begun

    def offer(row):
        try:
            served.offer(row)
        except TorchshError as e:
            row.fail(e)
    if ask.stream:
        return Streamed(lambda stream: offer(Row(ask, lm, stream=stream)))
    return Deferred(lambda send: offer(Row(ask, lm, respond=lambda status, body: send(json_reply(status, body)))))


@_openai
def post_embeddings(app, request, params):
    """Embeddings: each input's mean last hidden state, unit length."""
    doc, inputs = openai.parse_embed(request.body)
    served = served_lm(app, doc["model"])
    ids = [_prompt_ids(served.lm, item, "input") for item in inputs]
    ask = openai.EmbedAsk(doc["model"], ids, doc.get("encoding_format") == "base64")
    limit = served.lm.context_length()
    if limit and max(len(i) for i in ids) > limit:
        raise openai.bad("an input of %d tokens is longer than the model's context of %d"
                         % (max(len(i) for i in ids), limit), "input")
    served.check_room()

    def attach(send):
        embedding = Embedding(ask, lambda status, body: send(json_reply(status, body)))
        try:
            served.offer(embedding)
        except TorchshError as e:
            embedding.fail(e)
    return Deferred(attach)


def _chat_ids(lm, messages):
    """The messages through the model's chat template, ready for the assistant's turn, as token ids."""
    try:
        return conversation.chat_ids(lm, messages)[0].tolist()
    except TorchshError as e:  # no template, or the template refused them: OpenAI's 400 on `messages`
        raise openai.bad("%s (/v1/completions takes a prompt as it is)" % e.message if lm.chat_template() is None
                         else e.message, "messages") from None


def _prompt_ids(lm, prompt, param="prompt"):
    """A text's token ids (special tokens added, as `torch lm generate --raw` adds them), or ids as given."""
    if isinstance(prompt, str):
        ids = lm.tokenizer(prompt, add_special_tokens=True).input_ids
        if not ids:
            raise openai.bad("the %s has no tokens" % param, param)
        return ids
    vocab = lm.text_config().vocab_size
    if not all(0 <= t < vocab for t in prompt):
        raise openai.bad("token ids are from 0 to %d (the model's vocabulary)" % (vocab - 1), param)
    return list(prompt)


# (method, path regex, handler, summary): rows of daemon/routes.py's table, and of --port's
ROUTES = (
    ("GET", r"/v1/models", get_models, "OpenAI: the models served with torch serve --openai (docs/serve.md)"),
    ("GET", r"/v1/models/(?P<name>[\w.-]+)", get_openai_model, "OpenAI: one served model"),
    ("POST", r"/v1/chat/completions", post_chat, "OpenAI: a chat completion (streamed as SSE with stream: true)"),
    ("POST", r"/v1/completions", post_completion, "OpenAI: a text completion (streamed as SSE with stream: true)"),
    ("POST", r"/v1/embeddings", post_embeddings, "OpenAI: embeddings (the mean last hidden state, unit length)"),
)


def lockfree(path):
    """True for the OpenAI routes: their handlers only check and queue, never take the tensor lock."""
    return path.startswith("/v1/models") or path in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
