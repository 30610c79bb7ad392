"""lm/batchgen.embed: the decoder's last hidden state (no logits over the vocabulary are made), and its
activations admitted by the memory budget before the forward."""
import pytest
import torch
from support import tinylm

from torchsh.errors import TorchshError
from torchsh.lm import batchgen, opening
from torchsh.memory.budget import Budget, rss_bytes


def test_an_embedding_is_the_mean_of_the_causal_lms_last_hidden_state():
    lm = opening.open_folder(tinylm.folder("llama"))
    ids = lm.tokenizer("hello world", return_tensors="pt").input_ids
    with torch.no_grad():
        hidden = lm.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0]
    torch.testing.assert_close(batchgen.embed(lm, [ids[0].tolist()])[0],
                               torch.nn.functional.normalize(hidden.mean(0), dim=0))


def test_activations_over_the_budget_are_refused_before_the_forward():
    lm = opening.open_folder(tinylm.folder("llama"))
    many = [[5] * 256] * 100000  # 100k inputs of the whole context: ~6 GiB of activations
    with pytest.raises(TorchshError) as e:
        batchgen.embed(lm, many, Budget(rss_bytes() + (256 << 20), "a test's"))
    assert e.value.code == "out_of_memory" and "activations" in e.value.message
