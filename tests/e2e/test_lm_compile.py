"""`torch fit $a $o $L --loss lm --compile` of LoRA adapters on one base: fitting adapter A, then B (same r and
targets), then A again compiles A's forward+loss and step once and B's once, and never recompiles (the compile
cache's own counters, `torch daemon status`: frames dynamo converted after an entry's first call); A's compiled
losses are the eager peft + plain PyTorch loop's within --compile's tolerance (the in-process oracle)."""
import json

import pytest
import torch
from support import tinylm, tinylora

pytestmark = pytest.mark.slow

SEQ, BATCH, SEED = 40, 2, 5
TOLERANCE = 1e-5  # docs/training.md#compile: compiled within this of eager (float32)


def test_fitting_adapter_a_then_b_then_a_again_under_compile_never_recompiles(sh):
    a, oa, b, ob, L = sh("m=$(torch lm open %s); torch manual_seed %d; a=$(torch lm lora $m --r 8 --alpha 16 --targets "
                         "q_proj,v_proj); b=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj); echo $a "
                         "$(torch optim adamw $a --lr 1e-2) $b $(torch optim adamw $b --lr 1e-2) $(torch data open %s "
                         "--format chat --tokenizer $m --seq_len %d | torch data loader - --batch_size %d) 2>/dev/null"
                         % (tinylm.folder("llama"), SEED, tinylora.chat_file(sh.folder), SEQ, BATCH)).split()
    fits = [[json.loads(r)["loss"] for r in sh("torch fit %s %s %s --loss lm --epochs 1 --compile --json"
                                               % (model, opt, L)).splitlines()]
            for model, opt in ((a, oa), (b, ob), (a, oa))]
    compiled = {}
    for row in json.loads(sh("torch daemon status --json"))["compiled"]:
        compiled.setdefault(row["handle"], []).append(row)
    for handle in (a, oa, b, ob):
        assert [r["recompiles"] for r in compiled[handle]] == [0], compiled[handle]
    batches = -(-len(tinylora.CONVERSATIONS) // BATCH)
    assert compiled[a][0]["calls"] == 2 * batches and compiled[b][0]["calls"] == batches  # A's entry ran again
    assert fits[0] + fits[2] == pytest.approx(tinylora.peft_fit(SEED, epochs=2, seq_len=SEQ, batch_size=BATCH)[0], rel=TOLERANCE)
    assert fits[1] != fits[0]  # B is its own adapter (its own init), trained from the same data
