"""`torch lm` in every face: the bash and zsh functions (`eval "$(torch init bash|zsh)"`) open, describe and
generate with no client on PATH (the fast path carries the generation's follow replies itself), Nushell gets
`torch lm generate` as a stream of records (one per token, the summary last) and `torch lm info` as a record,
and the help's overview lists the lm group among the common commands. Greedy tokens are compared with
transformers' own generate on the same folder (tests/support/tinylm.py)."""
import json
import subprocess

import pytest
import torch
from support import tinylm
from support.required import require_tool

PROMPT = "the sky is"
NEW = 6
GENERATE = "torch lm generate $m '%s' --raw --max_new_tokens %d --temperature 0" % (PROMPT, NEW)


@pytest.fixture(scope="module")
def greedy():
    """transformers' greedy tokens after PROMPT (as it is, with the tokenizer's special tokens)."""
    model, tokenizer = tinylm.oracle("llama")
    ids = tokenizer(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=NEW, do_sample=False)
    return out[0, ids.shape[1]:].tolist()


def _summary(lines):
    rows = [json.loads(line) for line in lines.strip().split("\n")]
    return rows[:-1], rows[-1]


def _check_generation(out, greedy):
    """--json's lines, then the text run's line: the tokens are transformers', the text the summary's."""
    json_part, text = out.rsplit("\n", 1)
    per_token, summary = _summary(json_part)
    assert summary["tokens"] == greedy and summary["completion_tokens"] == len(greedy)
    assert [r["token"] for r in per_token if r.get("token") is not None] == greedy
    assert text == summary["text"]


def test_the_bash_function_opens_describes_and_generates_with_no_client_on_path(sh, greedy):
    out = sh('eval "$(torch init bash)"\nm=$(torch lm open %s)\n' % tinylm.folder("llama")
             + "[[ $(type -t torch) == function ]]\n"
             + "PATH=/nonexistent torch lm info $m\n"
             + "PATH=/nonexistent %s --json\nPATH=/nonexistent %s\n" % (GENERATE, GENERATE))
    info, generated = out.split("\n", 1)
    assert json.loads(info)["architecture"] == "LlamaForCausalLM"
    _check_generation(generated, greedy)


def test_the_zsh_function_opens_describes_and_generates_with_no_client_on_path(sh, greedy):
    zsh = require_tool("zsh")
    script = ('eval "$(torch init zsh)"\nm=$(torch lm open %s)\n' % tinylm.folder("llama")
              + "[[ $(whence -w torch) == 'torch: function' ]]\n"
              + "PATH=/nonexistent torch lm info $m\n"
              + "PATH=/nonexistent %s --json\nPATH=/nonexistent %s\n" % (GENERATE, GENERATE))
    p = subprocess.run([zsh, "-f", "-e", "-c", script], env=sh.env, cwd=sh.folder, capture_output=True, text=True,
                       timeout=180, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    info, generated = p.stdout.rstrip("\n").split("\n", 1)
    assert json.loads(info)["model_type"] == "llama"
    _check_generation(generated, greedy)


def test_nushell_generate_is_a_stream_of_records_one_per_token_and_the_summary_last(nu, greedy):
    folder = tinylm.folder("llama")
    gen = GENERATE.replace("'", '"')  # `let` would collect the stream: describe it in the pipeline
    out = nu.json("let m = (torch lm open %s)\n{kind: (%s | describe), rows: (%s)}" % (json.dumps(folder), gen, gen))
    assert out["kind"].endswith("(stream)"), out["kind"]
    rows = out["rows"]
    summary = rows[-1]
    assert summary["tokens"] == greedy and summary["finish_reason"] == "length"
    assert [r["token"] for r in rows[:-1] if r.get("token") is not None] == greedy
    assert "".join(r["text"] for r in rows[:-1]) == summary["text"]


def test_nushell_each_sees_the_tokens_as_a_pipeline_and_json_gives_the_same_rows(nu, greedy):
    folder = tinylm.folder("llama")
    gen = GENERATE.replace("'", '"')
    got = nu.json("let m = (torch lm open %s)\n{each: (%s | each {|r| $r.token? } | compact), "
                  "json: (%s --json | last | get tokens)}" % (json.dumps(folder), gen, gen))
    assert got == {"each": greedy, "json": greedy}


def test_nushell_info_is_a_record_and_tokenize_pipes_into_decode(nu):
    folder = tinylm.folder("llama")
    got = nu.json("let m = (torch lm open %s)\n{info: (torch lm info $m), kind: (torch lm info $m | describe), "
                  "text: (torch lm tokenize $m \"hello world\" | torch lm decode $m --skip_special_tokens)}"
                  % json.dumps(folder))
    assert got["kind"].startswith("record<") and got["info"]["architecture"] == "LlamaForCausalLM"
    assert got["text"] == "hello world"


def test_the_overview_lists_lm_among_the_common_commands_and_torch_lm_lists_its_verbs(sh):
    common = sh("torch").split("common commands:")[1].split("\n\n")[0]
    assert "\n  lm " in common and "language models" in common
    group = sh("torch lm")
    assert group.startswith("usage: torch lm COMMAND")
    for verb in ("open", "info", "tokenize", "decode", "generate"):
        assert "\n  %s " % verb in group
