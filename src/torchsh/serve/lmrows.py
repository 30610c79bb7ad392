"""One request of a model served OpenAI-style (serve/lmserved.py), on the loop's side: a Row generates (its
tokens become text, cut at its stop strings, and go to its client as one reply or as Server-Sent Events), an
Embedding asks for vectors. Their tensor work is the batch's (lm/batchgen.py); here is only text and replies.

A streamed row holds back the last characters that could still begin a stop string (and a character whose
bytes are not all there yet), so that no stop string ever reaches the client, as OpenAI's API promises.
"""
import json
import time

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.lm import batchgen, choosing
from torchsh.serve import openai

DONE = b"data: [DONE]\n\n"


def event(body):
    """One Server-Sent Event carrying BODY as JSON."""
    return b"data: " + json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


class Row:
    """A generation request. respond(status, body): its whole reply (not streamed); stream: its
    wire/streamed.ChunkedStream (streamed)."""

    def __init__(self, ask, lm, respond=None, stream=None):
        self.ask, self.prompt, self.arrived = ask, ask.prompt, time.monotonic()
        self.choice = choosing.Choice.of(lm, ask.temperature, ask.top_p, None, ask.seed)
        self.tokenizer, self.eos = lm.tokenizer, lm.eos_ids()
        self.respond, self.stream = respond, stream
        self.tokens, self.text, self.sent = [], "", 0
        self.hold = max((len(s) for s in ask.stop), default=1) - 1  # characters that may begin a stop string
        self.ended = self.failed = False
        self.finish_reason = None
        if stream is not None and ask.chat:
            stream.write(event(openai.chunk(ask, first=True)))

    def gone(self):
        """Whether the client of a streamed reply left (its row ends at its next token)."""
        return self.stream is not None and self.stream.gone

    def take(self, token):
        """The row's next token; True when the row ended with it (its reply is then sent)."""
        if self.ended:
            return False
        if self.gone():
            return self._end("cancelled")
        self.tokens.append(token)
        whole = self.tokenizer.decode(self.tokens, skip_special_tokens=True)
        last = token in self.eos or len(self.tokens) >= self.ask.max_tokens
        if last or not whole.endswith("\ufffd"):  # a character still missing bytes waits, unless this is the end
            self.text = whole
        found = [i for i in (self.text.find(s, self.sent) for s in self.ask.stop) if i >= 0]
        if found:
            self.text = self.text[:min(found)]
        if found or token in self.eos:
            return self._end("stop")
        if len(self.tokens) >= self.ask.max_tokens:
            return self._end("length")
        self._send_piece(len(self.text) - self.hold)
        return False

    def fail(self, err):
        """End with ERR: its error reply, or, once streaming, an error event and the stream's end."""
        if self.ended:
            return
        self.ended = self.failed = True
        if self.stream is None:
            self.respond(protocol.http_status(err.code), openai.error_body(err))
            return
        self.stream.write(event(openai.error_body(err)))
        self.stream.end()

    def _send_piece(self, upto):
        if self.stream is not None and upto > self.sent:
            self.stream.write(event(openai.chunk(self.ask, self.text[self.sent:upto])))
            self.sent = upto

    def _end(self, reason):
        self.ended, self.finish_reason = True, reason
        if self.stream is None:
            self.respond(200, openai.answer(self.ask, self.text, reason, len(self.tokens)))
            return True
        if reason != "cancelled":
            self._send_piece(len(self.text))
            self.stream.write(event(openai.chunk(self.ask, finish_reason=reason)))
            if self.ask.include_usage:
                self.stream.write(event(openai.chunk(self.ask, with_usage=openai.usage(
                    len(self.prompt), len(self.tokens)))))
            self.stream.write(DONE)
        self.stream.end()
        return True


class Embedding:
    """An embeddings request: its vectors are made on the tensor thread (run), its reply sent on the loop's."""
    CHUNK = 32  # inputs a forward

    def __init__(self, ask, respond):
        self.ask, self.respond, self.arrived = ask, respond, time.monotonic()
        self.vectors, self.error = None, None

    def run(self, lm, budget=None):
        try:
            inputs = self.ask.inputs
            self.vectors = [v for i in range(0, len(inputs), self.CHUNK)
                            for v in batchgen.embed(lm, inputs[i:i + self.CHUNK], budget)]
        except TorchshError as e:
            self.error = e
        except (RuntimeError, ValueError, IndexError, MemoryError) as e:
            self.error = TorchshError("torch_error", "embeddings: %s: %s" % (type(e).__name__, e))

    def deliver_result(self):
        """Send the reply; True when it is an error."""
        if self.error is not None:
            self.fail(self.error)
            return True
        self.respond(200, openai.embeddings(self.ask.model, self.vectors, self.ask.base64,
                                            sum(len(i) for i in self.ask.inputs)))
        return False

    def fail(self, err):
        self.respond(protocol.http_status(err.code), openai.error_body(err))
