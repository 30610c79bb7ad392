"""`torch lm chat`, `say` and `messages` through real bash: a conversation is a chat:// object holding the model,
the system message and the messages so far; each turn's answer equals transformers' generate on the whole
conversation in the chat template (apply_chat_template in this process), and both sides of the turn join it.
The terminal chat runs in the caller's bash (an exec reply): a pty types lines, Ctrl-C and Ctrl-D into it."""
import json
import os
import pty
import select
import time

import torch
from support import tinylm

from torchsh import protocol

SYSTEM = "Answer briefly."


def oracle_answer(messages, max_new_tokens):
    """The greedy answer transformers gives to MESSAGES in the chat template, as text."""
    model, tokenizer = tinylm.oracle("llama")
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(rendered, add_special_tokens=False, return_tensors="pt").input_ids
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False,
                         pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[-1]:], skip_special_tokens=True)


def test_each_turn_answers_the_whole_conversation_and_joins_it(sh):
    out = sh("c=$(torch lm chat $(torch lm open %s) --system '%s' --new); echo $c; "
             "torch lm say $c hello --max_new_tokens 6 --temperature 0; "
             "torch lm say $c 'why is the sky blue?' --max_new_tokens 5 --temperature 0 --json | tail -1; "
             "torch lm messages $c" % (tinylm.folder("llama"), SYSTEM))
    handle, first, second, messages = out.split("\n")
    assert handle.startswith("chat://")
    said = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}]
    assert first == oracle_answer(said, 6)
    said += [{"role": "assistant", "content": first}, {"role": "user", "content": "why is the sky blue?"}]
    row = json.loads(second)
    assert row["text"] == oracle_answer(said, 5) and row["finish_reason"] in ("stop", "length")
    assert json.loads(messages) == said + [{"role": "assistant", "content": row["text"]}]


def test_a_conversation_is_a_chat_handle_in_the_census_and_not_a_model(sh):
    out = sh("m=$(torch lm open %s); c=$(torch lm chat $m --new); torch lm say $c hi --max_new_tokens 2 >/dev/null; "
             "torch tensors | grep ^$c" % tinylm.folder("llama"))
    assert out.split()[1:3] == ["chat", "Conversation"]
    r = sh.run("torch lm say $(torch lm open %s) hi" % tinylm.folder("llama"))
    assert r.code == protocol.exit_status("wrong_kind") and "a conversation is needed" in r.err, r.err
    r = sh.run("torch lm info $(torch lm chat $(torch lm open %s) --new)" % tinylm.folder("llama"))
    assert r.code == protocol.exit_status("wrong_kind") and "a language model is needed" in r.err, r.err


def test_turns_queued_on_one_conversation_each_answer_after_the_one_before(sh):
    out = sh("c=$(torch lm chat $(torch lm open %s) --new); "
             "a=$(torch lm say $c one --max_new_tokens 3 --temperature 0 --detach); "
             "b=$(torch lm say $c two --max_new_tokens 3 --temperature 0 --detach); "
             "torch job wait $a >/dev/null; torch job wait $b >/dev/null; torch lm messages $c"
             % tinylm.folder("llama"))
    messages = json.loads(out)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["one", "two"]
    assert messages[3]["content"] == oracle_answer(messages[:3], 3)


def test_a_turn_past_the_context_is_refused_and_the_conversation_is_unchanged(sh):
    long = " ".join(["sky"] * 300)
    r = sh.run("c=$(torch lm chat $(torch lm open %s) --new); torch lm say $c '%s'; echo \"rc=$?\"; "
               "torch lm messages $c" % (tinylm.folder("llama"), long))
    assert "context length of 256" in r.err and "rc=%d" % protocol.exit_status("bad_argument") in r.out, r.err
    assert r.out.splitlines()[-1] == "[]"


def test_lines_piped_into_chat_are_turns_of_one_conversation(sh):
    r = sh.run("printf 'hello\\n\\nwhy?\\n' | torch lm chat $(torch lm open %s) --system '%s' --max_new_tokens 4 "
               "--temperature 0" % (tinylm.folder("llama"), SYSTEM))
    assert r.code == 0, r.err
    handle = r.err.split()[0]
    assert handle.startswith("chat://")
    messages = json.loads(sh("torch lm messages %s" % handle))
    assert [m["content"] for m in messages if m["role"] == "user"] == ["hello", "why?"]  # the blank line is no turn
    assert r.out.splitlines() == [m["content"] for m in messages if m["role"] == "assistant"]
    assert messages[2]["content"] == oracle_answer(messages[:2], 4)


def converse(sh, script, steps, timeout=120):
    """Run bash -c SCRIPT on a terminal (a pty); steps: (when(output so far), bytes typed then), in order.
    Returns (output bytes, exit status)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(sh.folder)
        os.execve("/bin/bash", ["bash", "-c", script], sh.env)
    out, deadline, steps = bytearray(), time.monotonic() + timeout, list(steps)
    try:
        while time.monotonic() < deadline:
            while steps and steps[0][0](bytes(out)):
                os.write(fd, steps.pop(0)[1])
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's last process has exited
                break
            if not chunk:
                break
            out += chunk
    finally:
        if steps or time.monotonic() >= deadline:
            os.killpg(pid, 9)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert not steps, "the chat never showed what step %d waits for: %r" % (len(steps), bytes(out[-600:]))
    return bytes(out), os.waitstatus_to_exitcode(status)


def prompts(n):
    return lambda out: out.count(b"> ") >= n


def test_the_terminal_chat_reads_lines_streams_answers_and_ends_on_ctrl_d(sh):
    m = sh("torch lm open %s" % tinylm.folder("llama"))
    out, code = converse(sh, "torch lm chat %s --system '%s' --max_new_tokens 5 --temperature 0; echo rc=$?"
                         % (m, SYSTEM), [(prompts(1), b"hello\r"), (prompts(2), b"why?\r"), (prompts(3), b"\x04")])
    text = out.decode(errors="replace")
    assert code == 0 and "rc=0" in text, text
    handle = text[text.index("chat://"):].split()[0]
    messages = json.loads(sh("torch lm messages %s" % handle))
    assert [m["content"] for m in messages] == [
        SYSTEM, "hello", oracle_answer(messages[:2], 5), "why?", oracle_answer(messages[:4], 5)]
    assert messages[2]["content"] in text.replace("\r\n", "\n")


def test_ctrl_c_in_the_terminal_chat_stops_the_answer_and_the_chat_goes_on(sh):
    m = sh("torch lm open %s" % tinylm.endless())
    answering = lambda out: len(out.partition(b"hello\r\n")[2]) > 60  # noqa: E731 (the answer's first bytes)
    out, code = converse(sh, "torch lm chat %s --max_new_tokens 500000; echo rc=$?" % m,
                         [(prompts(1), b"hello\r"), (answering, b"\x03"), (prompts(2), b"\x04")])
    text = out.decode(errors="replace")
    assert code == 0 and "rc=0" in text and "torch: lm say: stopped" in text, text
    handle = text[text.index("chat://"):].split()[0]
    messages = json.loads(sh("torch lm messages %s; torch job list | grep -c running || true" % handle)
                          .split("\n")[0])
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[1]["content"]
    assert sh("torch job list | grep -c running || true") == "0"
