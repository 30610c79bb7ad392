"""`torch serve LM --openai` through real bash, spoken to in raw HTTP (http.client over the daemon's Unix socket
and over --port with the token): the served model answers what `torch lm generate` and transformers' own
generate answer, greedy; streamed replies are Server-Sent Events in chunked framing ending in [DONE], on a
connection kept alive; requests that arrive together are generated together and each answers what it answers
alone; stop strings cut the text; embeddings are the mean last hidden state, unit length; errors are OpenAI's
error object with torchsh's stable code and status."""
import http.client
import json
import re
import threading

import pytest
import torch
from support import tinylm
from support.apicall import UnixHTTPConnection

PROMPTS = ("hello world", "why is the sky blue? the answer is", "a model is trained", "pytorch tensors live in")


def serve(sh, name, flags=""):
    """The tiny llama served OpenAI-style as NAME (detached): (job, lm handle, stderr)."""
    m = sh("torch lm open %s" % tinylm.folder("llama"))
    r = sh.run("torch serve %s --openai --name %s --detach %s" % (m, name, flags))
    assert r.code == 0, r.err
    return r.out.strip(), m, r.err


def post(conn, path, doc, headers=None):
    conn.request("POST", path, body=json.dumps(doc), headers=dict({"Content-Type": "application/json"},
                                                                    **(headers or {})))
    reply = conn.getresponse()
    return reply.status, json.loads(reply.read())


def oracle_text(prompt, max_new_tokens, chat=False):
    """transformers' greedy generate on the same folder, in this process: (text, token count)."""
    model, tokenizer = tinylm.oracle("llama")
    if chat:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                               tokenize=False)
    ids = tokenizer(prompt, add_special_tokens=not chat, return_tensors="pt").input_ids
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                         do_sample=False)[0, ids.shape[1]:]
    return tokenizer.decode(out, skip_special_tokens=True), len(out)


def final_row(sh, job):
    sh("torch job stop %s" % job)
    return json.loads(sh("torch job logs %s --json" % job).splitlines()[-1])


@pytest.mark.slow
def test_completions_and_chat_answer_what_generate_answers(sh):
    job, m, _ = serve(sh, "same")
    conn = UnixHTTPConnection(sh.socket)
    conn.request("GET", "/v1/models")
    listed = json.loads(conn.getresponse().read())
    assert listed["object"] == "list" and "same" in [d["id"] for d in listed["data"]]
    status, out = post(conn, "/v1/completions", {"model": "same", "prompt": PROMPTS[1], "max_tokens": 12,
                                                 "temperature": 0})
    generated = json.loads(sh("torch lm generate %s '%s' --raw --temperature 0 --max_new_tokens 12 --json"
                              % (m, PROMPTS[1])).splitlines()[-1])
    assert status == 200 and out["object"] == "text_completion" and out["id"].startswith("cmpl-")
    (choice,) = out["choices"]
    assert choice["text"] == generated["text"] == oracle_text(PROMPTS[1], 12)[0]
    assert choice["finish_reason"] == generated["finish_reason"]
    assert out["usage"] == {"prompt_tokens": generated["prompt_tokens"], "completion_tokens":
                            generated["completion_tokens"], "total_tokens": generated["prompt_tokens"]
                            + generated["completion_tokens"]}
    status, out = post(conn, "/v1/chat/completions", {"model": "same", "max_completion_tokens": 10, "temperature": 0,
                                                      "messages": [{"role": "user", "content": PROMPTS[0]}]})
    said = json.loads(sh("torch lm generate %s '%s' --temperature 0 --max_new_tokens 10 --json"
                         % (m, PROMPTS[0])).splitlines()[-1])
    assert status == 200 and out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-")
    assert out["choices"][0]["message"] == {"role": "assistant", "content": said["text"]}
    assert said["text"] == oracle_text(PROMPTS[0], 10, chat=True)[0]
    assert out["usage"]["completion_tokens"] == said["completion_tokens"] and isinstance(out["created"], int)
    final_row(sh, job)


def sse_events(reply):
    """The data lines of a Server-Sent Events body (http.client undoes the chunked framing), framing checked."""
    body = reply.read().decode()
    assert body.endswith("\n\n") and all(block.startswith("data: ") for block in body[:-2].split("\n\n")), body
    return [block[len("data: "):] for block in body[:-2].split("\n\n")]


def test_streamed_replies_are_server_sent_events_ending_in_done(sh):
    job, _, _ = serve(sh, "streams")
    conn = UnixHTTPConnection(sh.socket)
    for chat in (False, True):
        doc = {"model": "streams", "max_tokens": 16, "temperature": 0}
        doc.update({"messages": [{"role": "user", "content": PROMPTS[2]}]} if chat else {"prompt": PROMPTS[2]})
        path = "/v1/chat/completions" if chat else "/v1/completions"
        whole = post(conn, path, doc)[1]
        conn.request("POST", path, body=json.dumps(dict(doc, stream=True, stream_options={"include_usage": True})))
        reply = conn.getresponse()
        assert reply.status == 200 and reply.getheader("Content-Type") == "text/event-stream"
        assert reply.getheader("Transfer-Encoding") == "chunked"
        events = sse_events(reply)
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert len({c["id"] for c in chunks}) == 1
        usage, finish = chunks[-1], chunks[-2]
        assert usage["choices"] == [] and usage["usage"] == whole["usage"]
        assert finish["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
        if chat:
            assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
            text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1])
            assert chunks[0]["object"] == "chat.completion.chunk" and text == whole["choices"][0]["message"]["content"]
        else:
            text = "".join(c["choices"][0]["text"] for c in chunks[:-1])
            assert text == whole["choices"][0]["text"]
        assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-2])
    status, again = post(conn, "/v1/chat/completions", doc)  # the same connection, kept alive after a stream
    assert status == 200 and again["choices"] == whole["choices"]
    final_row(sh, job)


@pytest.mark.slow
def test_requests_arriving_together_are_generated_together_and_answer_as_alone(sh):
    job, _, _ = serve(sh, "together", "--max_wait_ms 300")
    asks = [(p, 6 + 3 * i) for i, p in enumerate(PROMPTS * 3)]  # each its own prompt length and max_tokens
    conn = UnixHTTPConnection(sh.socket)
    alone = [post(conn, "/v1/completions", {"model": "together", "prompt": p, "max_tokens": n, "temperature": 0})[1]
             for p, n in asks]
    together = [None] * len(asks)

    def client(i):
        p, n = asks[i]
        together[i] = post(UnixHTTPConnection(sh.socket), "/v1/completions",
                           {"model": "together", "prompt": p, "max_tokens": n, "temperature": 0})[1]
    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(asks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [t["choices"] for t in together] == [a["choices"] for a in alone]
    assert [a["choices"][0]["text"] for a in alone[:4]] == [oracle_text(p, n)[0] for p, n in asks[:4]]
    row = final_row(sh, job)
    assert row["requests"] == 2 * len(asks) and row["max_batch"] > 1


def test_stop_strings_cut_the_text_and_end_with_stop(sh):
    job, _, _ = serve(sh, "stops")
    conn = UnixHTTPConnection(sh.socket)
    doc = {"model": "stops", "prompt": PROMPTS[3], "max_tokens": 24, "temperature": 0}
    text = post(conn, "/v1/completions", doc)[1]["choices"][0]["text"]
    stop = text[len(text) // 2:len(text) // 2 + 2]
    assert stop and len(text) > 4
    for stream in (False, True):
        conn.request("POST", "/v1/completions", body=json.dumps(dict(doc, stop=[stop, "\x00never"], stream=stream)))
        reply = conn.getresponse()
        if stream:
            chunks = [json.loads(e) for e in sse_events(reply)[:-1]]
            got = "".join(c["choices"][0]["text"] for c in chunks), chunks[-1]["choices"][0]["finish_reason"]
        else:
            choice = json.loads(reply.read())["choices"][0]
            got = choice["text"], choice["finish_reason"]
        assert got == (text[:text.index(stop)], "stop")
    final_row(sh, job)


def test_embeddings_are_the_mean_last_hidden_state_of_unit_length(sh):
    job, _, _ = serve(sh, "embeds")
    conn = UnixHTTPConnection(sh.socket)
    status, out = post(conn, "/v1/embeddings", {"model": "embeds", "input": list(PROMPTS[:2])})
    model, tokenizer = tinylm.oracle("llama")
    assert status == 200 and out["object"] == "list" and [d["index"] for d in out["data"]] == [0, 1]
    for prompt, item in zip(PROMPTS, out["data"]):
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            hidden = model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0]
        expected = torch.nn.functional.normalize(hidden.mean(0), dim=0)
        torch.testing.assert_close(torch.tensor(item["embedding"]), expected, rtol=1e-4, atol=1e-5)
    assert out["usage"]["prompt_tokens"] == sum(len(tokenizer(p).input_ids) for p in PROMPTS[:2])
    final_row(sh, job)


def test_errors_are_openai_error_objects_with_the_stable_code(sh):
    job, m, _ = serve(sh, "errs")
    conn = UnixHTTPConnection(sh.socket)
    chat = {"model": "errs", "messages": [{"role": "user", "content": "hi"}]}
    cases = [(dict(chat, n=2), 400, "bad_argument", "n"), (dict(chat, model="nope"), 404, "unknown_model", None),
             (dict(chat, temperature=3), 400, "bad_argument", "temperature"),
             (dict(chat, max_tokens=100000), 400, "bad_argument", "max_tokens"),
             (dict(chat, messages=[]), 400, "bad_argument", "messages"),
             (dict(chat, logprobs=True), 400, "bad_argument", "logprobs"),
             ({"messages": chat["messages"]}, 400, "bad_argument", "model")]
    for doc, status, code, param in cases:
        got, out = post(conn, "/v1/chat/completions", doc)
        assert got == status and set(out) == {"error"}, (doc, out)
        assert out["error"]["code"] == code and out["error"]["param"] == param and out["error"]["message"]
        assert out["error"]["type"] == ("not_found_error" if status == 404 else "invalid_request_error")
    conn.request("POST", "/v1/completions", body=b"{not json")
    reply = conn.getresponse()
    assert reply.status == 400 and json.loads(reply.read())["error"]["code"] == "bad_argument"
    conn.request("POST", "/v2/models/errs/infer", body=b'{"inputs": []}')  # a language model is no V2 model
    reply = conn.getresponse()
    assert reply.status == 404 and json.loads(reply.read())["code"] == "unknown_model"
    refused = sh.run("torch serve $(torch nn linear 2 2) --openai --name lin2")
    assert refused.code != 0 and "[bad_argument]" in refused.err and "language model" in refused.err
    refused = sh.run("torch serve %s --name plain" % m)
    assert refused.code != 0 and "--openai" in refused.err
    final_row(sh, job)


def test_the_port_wants_the_token_and_answers_as_the_socket(sh):
    job, _, err = serve(sh, "porty", "--port 0")
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", err).group(1))
    token = open(re.search(r"\$\(cat ([^)\s]+)\)", err).group(1)).read().strip()
    doc = {"model": "porty", "prompt": PROMPTS[0], "max_tokens": 8, "temperature": 0}
    status, out = post(http.client.HTTPConnection("127.0.0.1", port), "/v1/completions", doc)
    assert status == 403 and out["code"] == "token_refused"
    conn = http.client.HTTPConnection("127.0.0.1", port)
    bearer = {"Authorization": "Bearer %s" % token}
    status, out = post(conn, "/v1/completions", doc, bearer)
    assert status == 200 and out["choices"] == post(UnixHTTPConnection(sh.socket), "/v1/completions", doc)[1]["choices"]
    conn.request("GET", "/v1/models", headers=bearer)
    assert "porty" in [d["id"] for d in json.loads(conn.getresponse().read())["data"]]
    status, _ = post(conn, "/v1/cli", {}, bearer)  # the daemon's own routes are not on the port
    assert status == 404
    final_row(sh, job)
