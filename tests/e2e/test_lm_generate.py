"""`torch lm generate` through real bash against tiny model folders, transformers' own `model.generate` in this
process as the oracle: greedy tokens identical (raw and in the chat template), sampling with --seed equal to
`torch.manual_seed(seed); generate(do_sample=True, …)` and the daemon's generator untouched, the --json rows and
finish reasons, the context length and the KV cache refused before a token, Ctrl-C at a token boundary, --detach,
the JSON API, and tokens on stdout while the job still runs."""
import json
import os
import shutil

import pytest
import torch
from support import tinylm
from support.apicall import post
from support.terminal import run_in_pty, screen_lines

from torchsh import protocol

PROMPT = "Why is the sky blue?"


def oracle_tokens(arch, text, chat, max_new_tokens, **sampling):
    """The new tokens transformers' generate gives for TEXT (in the chat template when chat) on folder(arch)."""
    model, tokenizer = tinylm.oracle(arch)
    if chat:
        text = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                             tokenize=False)
    ids = tokenizer(text, add_special_tokens=not chat, return_tensors="pt").input_ids
    seed = sampling.pop("seed", None)
    if seed is not None:
        torch.manual_seed(seed)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                         pad_token_id=tokenizer.pad_token_id, **sampling)
    return out[0, ids.shape[-1]:].tolist()


def rows(out):
    return [json.loads(line) for line in out.splitlines()]


def generate(sh, arch, flags):
    return rows(sh("torch lm generate $(torch lm open %s) '%s' --json %s" % (tinylm.folder(arch), PROMPT, flags)))


@pytest.mark.parametrize("arch", ("llama", "qwen2"))
@pytest.mark.parametrize("raw", (False, True))
def test_greedy_tokens_are_transformers_generate_tokens(sh, arch, raw):
    got = generate(sh, arch, "--max_new_tokens 24 --temperature 0" + (" --raw" if raw else ""))
    expected = oracle_tokens(arch, PROMPT, not raw, 24, do_sample=False)
    assert got[-1]["tokens"] == expected
    assert [r["token"] for r in got[:-1] if r["token"] is not None] == expected  # a line per token, as it came
    _, tokenizer = tinylm.oracle(arch)
    assert got[-1]["text"] == tokenizer.decode(expected, skip_special_tokens=True)
    assert "".join(r["text"] for r in got[:-1]) == got[-1]["text"]


def test_the_json_rows_end_with_tokens_timings_and_the_finish_reason(sh):
    got = rows(sh("torch lm generate $(torch lm open %s) '%s' --json --max_new_tokens 7 --temperature 0"
                  % (tinylm.endless(), PROMPT)))  # no end-of-sequence token: it runs to --max_new_tokens
    last = got[-1]
    assert set(last) == {"text", "tokens", "prompt_tokens", "completion_tokens", "finish_reason", "first_token_s",
                         "seconds", "tokens_per_s"}
    assert last["finish_reason"] == "length" and last["completion_tokens"] == len(last["tokens"]) == 7
    assert 0 < last["first_token_s"] <= last["seconds"] and last["tokens_per_s"] > 0
    _, tokenizer = tinylm.oracle("llama")
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                           return_dict=True)["input_ids"]
    assert last["prompt_tokens"] == len(prompt)
    assert all(set(r) == {"token", "text"} for r in got[:-1])


def eos_at_first_token_folder(sh):
    """The llama folder whose generation config ends a sequence on the token greedy generation gives first."""
    first = oracle_tokens("llama", PROMPT, True, 1, do_sample=False)[0]
    folder = sh.tmp("eos")
    shutil.copytree(tinylm.folder("llama"), folder)
    path = os.path.join(folder, "generation_config.json")
    with open(path) as f:
        config = json.load(f)
    with open(path, "w") as f:
        json.dump(dict(config, eos_token_id=[first]), f)
    return folder, first


def test_an_end_of_sequence_token_finishes_with_stop(sh):
    folder, first = eos_at_first_token_folder(sh)
    got = rows(sh("torch lm generate $(torch lm open %s) '%s' --json --max_new_tokens 20" % (folder, PROMPT)))
    assert got[-1]["tokens"] == [first] and got[-1]["finish_reason"] == "stop"


def test_sampling_with_a_seed_is_reproducible_equals_transformers_and_leaves_the_daemons_generator(sh):
    flags = "--max_new_tokens 16 --temperature 0.9 --seed 11"
    expected = oracle_tokens("llama", PROMPT, True, 16, do_sample=True, temperature=0.9, seed=11)
    assert generate(sh, "llama", flags)[-1]["tokens"] == expected
    assert generate(sh, "llama", flags)[-1]["tokens"] == expected
    assert generate(sh, "llama", "--max_new_tokens 16 --temperature 0.9 --seed 12")[-1]["tokens"] != expected
    m = sh("torch lm open %s" % tinylm.folder("llama"))
    alone = sh("torch manual_seed 5; torch value $(torch rand 4)")
    around = sh("torch manual_seed 5; torch lm generate %s hi --seed 3 --temperature 1 --max_new_tokens 4 >/dev/null; "
                "torch value $(torch rand 4)" % m)
    assert around == alone


def test_past_the_context_length_is_refused_before_a_token(sh):
    r = sh.run("torch lm generate $(torch lm open %s) hi --max_new_tokens 300" % tinylm.folder("llama"))
    assert r.code == protocol.exit_status("bad_argument") and r.out == ""
    assert "exceed llama's context length of 256" in r.err and "--max_new_tokens 2" in r.err, r.err


@pytest.mark.slow  # a daemon of its own, which imports transformers
def test_a_kv_cache_over_the_budget_is_refused_while_the_model_fits(fresh_sh):
    s = fresh_sh(start=False)
    s.env.update(TORCHSH_MAX_MEMORY="800M")  # the daemon with transformers holds ~500 MB
    s("torch daemon start")
    m = s("torch lm open %s" % tinylm.endless())
    r = s.run("torch lm generate %s hi --raw --max_new_tokens 1000000" % m)  # 512 bytes a token: 488 MiB
    assert r.code == protocol.exit_status("out_of_memory") and r.out == "", r.err
    assert "[out_of_memory]" in r.err and "the KV cache" in r.err, r.err
    assert len(rows(s("torch lm generate %s hi --raw --max_new_tokens 3 --json" % m))[-1]["tokens"]) == 3


def test_ctrl_c_stops_at_a_token_boundary_with_130_and_the_daemon_serves_on(sh):
    script = ("m=$(torch lm open %s); torch lm generate $m hi --raw --json --max_new_tokens 500000; echo rc=$?; "
              "torch lm info $m >/dev/null && echo served; torch job list | grep -c running" % tinylm.endless())
    out, code = run_in_pty(sh, script, send_when=lambda out: b'{"token"' in out)
    lines = screen_lines(out)
    assert code == 1  # grep counted no running job
    at = lines.index("rc=130")
    last = json.loads(next(line for line in reversed(lines[:at]) if line.startswith('{"text"')))
    assert lines[at - 1].startswith("torch: lm generate: stopped after %d tokens" % last["completion_tokens"]), \
        lines[at - 3:at]
    assert last["finish_reason"] == "stopped" and 0 < last["completion_tokens"] < 500000
    assert lines[at + 1:at + 3] == ["served", "0"]


def test_detach_prints_a_job_and_job_wait_prints_the_text(sh):
    out = sh("m=$(torch lm open %s); j=$(torch lm generate $m '%s' --max_new_tokens 12 --temperature 0 --detach); "
             "echo $j; torch job wait $j" % (tinylm.folder("llama"), PROMPT))
    job, text = out.split("\n", 1)
    _, tokenizer = tinylm.oracle("llama")
    assert job.startswith("job://")
    want = oracle_tokens("llama", PROMPT, True, 12, do_sample=False)
    assert text == tokenizer.decode(want, skip_special_tokens=True)
    # its rows in `job list` and the census: the verb as one word (a column has no space), tokens as progress
    listed = next(r for r in json.loads(sh("torch job list --json")) if r["handle"] == job)
    assert listed["verb"] == "lm.generate" and listed["progress"] == "%d tokens" % len(want), listed
    row = next(line for line in sh("torch tensors").split("\n") if line.startswith(job))
    assert row.split()[:3] == [job, "job", "lm.generate"], row
    sh("torch free %s" % job)


def test_the_json_api_answers_the_closing_row(sh):
    m = sh("torch lm open %s" % tinylm.folder("gpt2"))
    status, reply = post(sh, "lm.generate", {"args": [m, PROMPT], "kwargs": {"max_new_tokens": 9, "temperature": 0}})
    assert status == 200, reply
    (row,) = reply["result"]
    assert row["tokens"] == oracle_tokens("gpt2", PROMPT, True, 9, do_sample=False)
    assert row["finish_reason"] == "length" and row["completion_tokens"] == 9


def test_tokens_reach_stdout_through_a_pipe_while_the_job_still_runs(sh):
    out = sh("m=$(torch lm open %s); torch lm generate $m hi --raw --json --max_new_tokens 500000 | "
             "{ read -r first; echo \"$first\"; j=$(torch job list | grep -F lm.generate | grep running); echo \"$j\"; "
             # bounded whatever happens: should the stop fail, the closed pipe ends the client, and its job
             "torch job stop ${j%%%% *} >/dev/null; timeout 60 cat >/dev/null; }" % tinylm.endless())
    first, running = out.split("\n")
    assert set(json.loads(first)) == {"token", "text"}
    assert running.startswith("job://") and running.split()[1:3] == ["lm.generate", "running"], running
