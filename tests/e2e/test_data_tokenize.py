"""`torch data tokenize` through real bash: a JSONL file's documents packed into windows equal the tiny tokenizer's
ids of the documents joined by eos (the reference packing in plain Python), `data info` counts what was dropped,
and a LoRA adapter fits on them with `fit --loss lm`."""
import json

import pytest

from support import tinylm

DOCS = ["the sky is blue because air scatters blue light", "hello world", "why is the sky blue?"] * 4


def _docs(sh):
    path = sh.tmp("docs.jsonl")
    with open(path, "w") as f:
        f.writelines(json.dumps({"text": d}) + "\n" for d in DOCS)
    return path


@pytest.mark.slow
def test_packed_windows_are_the_tokenizers_stream_cut_and_info_counts_the_dropped_tokens(sh):
    _, tok = tinylm.oracle("llama")
    out = sh("t=$(torch data tokenize %s --tokenizer $(torch lm open %s) --seq_len 8 --pack); "
             "torch data info $t --json; torch data head $t 100" % (_docs(sh), tinylm.folder("llama")))
    info, *rows = out.split("\n")
    stream = tok("".join(d + tok.eos_token for d in DOCS), add_special_tokens=False).input_ids
    windows = [stream[i:i + 8] for i in range(0, len(stream) - 7, 8)]
    assert [json.loads(r) for r in rows] == [[w, w] for w in windows]
    info = json.loads(info)
    assert info["length"] == len(windows) and info["tokens"]["dropped"] == len(stream) - 8 * len(windows)
    assert [f["name"] for f in info["fields"]] == ["input_ids", "labels"]


def test_a_lora_adapter_fits_on_tokenized_text_with_loss_lm(sh):
    out = sh("m=$(torch lm open %s); a=$(torch lm lora $m --r 4 --targets q_proj,v_proj)\n"
             "t=$(torch data tokenize %s --tokenizer $m --seq_len 8 --pack)\n"
             "torch fit $a $(torch optim adamw $a --lr 1e-2) $(torch data loader $t --batch_size 2) --loss lm --json"
             % (tinylm.folder("llama"), _docs(sh)))
    row = json.loads(out.splitlines()[-1])
    assert row["loss"] > 0 and row["epoch"] == 1


def test_a_file_of_another_kind_is_refused_with_the_kinds_it_reads(sh):
    r = sh.run("printf 'a,b\\n' > t.csv; torch data tokenize t.csv --tokenizer $(torch lm open %s) --seq_len 8"
               % tinylm.folder("llama"))
    assert r.code != 0 and "data tokenize reads .jsonl" in r.err, r.err
