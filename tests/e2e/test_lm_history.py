"""`torch history --python --for` a LoRA adapter: a plain transformers + peft script (from_pretrained of the
folder, add_adapter(LoraConfig) from the same generator state, the chat data, AdamW and fit's loop with
--loss lm written out) whose `--check` finds the adapter's weights and grads and the optimizer's state equal
to the daemon's bit for bit, with LoRA dropout on and a shuffled loader; an adapter never trained replays too."""
import pytest
from support import tinylm, tinylora
from support.history_replay import check as _check, script as _script


@pytest.mark.slow
def test_a_lora_fit_with_dropout_and_shuffling_replays_as_transformers_and_peft_bit_for_bit(sh):
    a = sh("m=$(torch lm open %s); torch manual_seed 11\n"
           "a=$(torch lm lora $m --r 4 --alpha 8 --targets q_proj,v_proj --dropout 0.1)\n"
           "L=$(torch data open %s --format chat --tokenizer $m --seq_len 32 --train_on completions | "
           "torch data loader - --batch_size 2 --shuffle)\n"
           "torch fit $a $(torch optim adamw $a --lr 1e-2) $L --loss lm --epochs 2 >/dev/null; echo $a"
           % (tinylm.folder("llama"), tinylora.chat_file(sh.folder)))
    path, text = _script(sh, a)
    assert "transformers.AutoModelForCausalLM.from_pretrained(" in text and ".add_adapter(peft.LoraConfig(" in text
    assert "torch.nn.functional.cross_entropy(" in text and "import torchsh" not in text
    assert "2 of 2 object(s) match" in _check(path)


@pytest.mark.slow
def test_an_untrained_adapter_made_after_another_replays_its_init(sh):
    a = sh("m=$(torch lm open %s --dtype bf16); torch manual_seed 2; torch lm lora $m --targets q_proj >/dev/null\n"
           "torch lm lora $m --r 2 --name second" % tinylm.folder("qwen2"))
    path, text = _script(sh, a)
    assert "dtype=torch.bfloat16" in text
    assert "2 of 2 object(s) match" in _check(path)  # both adapters: the first one changed the model it reads
