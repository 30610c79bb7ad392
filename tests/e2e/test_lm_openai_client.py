"""The official `openai` Python client, unchanged, against `torch serve LM --openai --port 0` (base_url
http://127.0.0.1:PORT/v1, api_key: the daemon's serve token): models.list, chat.completions.create and
completions.create (streamed and not: the streamed text is the whole one), embeddings.create (the client asks
for base64 by default: the vectors are transformers' mean last hidden state, unit length), and a refusal
raised as the client's own BadRequestError / NotFoundError carrying torchsh's code."""
import re

import pytest
import torch
from support import tinylm

openai = pytest.importorskip("openai")

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "why is the sky blue?"}]


@pytest.fixture
def client(sh):
    m = sh("torch lm open %s" % tinylm.folder("llama"))
    r = sh.run("torch serve %s --openai --name tinyc --port 0 --detach" % m)
    assert r.code == 0, r.err
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", r.err).group(1))
    token = open(re.search(r"\$\(cat ([^)\s]+)\)", r.err).group(1)).read().strip()
    yield openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=token, max_retries=0, timeout=60)
    sh("torch job stop %s" % r.out.strip())


def test_models_and_chat_completions_streamed_and_not(client):
    assert "tinyc" in [m.id for m in client.models.list()]
    whole = client.chat.completions.create(model="tinyc", messages=MESSAGES, max_tokens=12, temperature=0)
    (choice,) = whole.choices
    assert whole.object == "chat.completion" and choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length") and whole.usage.completion_tokens <= 12
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
    model, tokenizer = tinylm.oracle("llama")
    ids = tokenizer(tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False),
                    add_special_tokens=False, return_tensors="pt").input_ids
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False)
    assert choice.message.content == tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    assert whole.usage.prompt_tokens == ids.shape[1]
    stream = client.chat.completions.create(model="tinyc", messages=MESSAGES, max_tokens=12, temperature=0,
                                            stream=True)
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == choice.message.content
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason


def test_completions_streamed_and_not(client):
    whole = client.completions.create(model="tinyc", prompt="hello world", max_tokens=10, temperature=0, seed=3)
    assert whole.object == "text_completion" and whole.usage.completion_tokens <= 10
    streamed = list(client.completions.create(model="tinyc", prompt="hello world", max_tokens=10, temperature=0,
                                              stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in streamed if c.choices) == whole.choices[0].text
    assert streamed[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_embeddings_as_the_client_asks_for_them(client):
    got = client.embeddings.create(model="tinyc", input=["hello world", "the sky is blue"])
    model, tokenizer = tinylm.oracle("llama")
    for text, item in zip(["hello world", "the sky is blue"], got.data):
        with torch.no_grad():
            hidden = model(input_ids=tokenizer(text, return_tensors="pt").input_ids,
                           output_hidden_states=True).hidden_states[-1][0]
        torch.testing.assert_close(torch.tensor(item.embedding), torch.nn.functional.normalize(hidden.mean(0), dim=0),
                                   rtol=1e-4, atol=1e-5)
    floats = client.embeddings.create(model="tinyc", input="hello world", encoding_format="float")
    torch.testing.assert_close(torch.tensor(floats.data[0].embedding), torch.tensor(got.data[0].embedding))


def test_refusals_raise_the_clients_own_errors(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tinyc", messages=MESSAGES, n=2)
    assert raised.value.code == "bad_argument" and raised.value.param == "n"
    with pytest.raises(openai.NotFoundError) as raised:
        client.completions.create(model="absent", prompt="hi")
    assert raised.value.code == "unknown_model"
    with pytest.raises(openai.APIStatusError) as raised:
        openai.OpenAI(base_url=str(client.base_url), api_key="wrong", max_retries=0).models.list()
    assert raised.value.status_code == 403
