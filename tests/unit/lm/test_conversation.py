"""lm/conversation.py: a conversation renders the system message, the turns so far and the new message through
the model's chat template exactly as tokenizer.apply_chat_template does, and a turn appends both sides."""
from types import SimpleNamespace

import pytest

from torchsh.errors import TorchshError
from torchsh.lm import conversation, tiny


@pytest.fixture(scope="module")
def lm():
    tokenizer = tiny.train_tokenizer()
    return SimpleNamespace(tokenizer=tokenizer, name="tiny", chat_template=lambda: tokenizer.chat_template)


def oracle_ids(tokenizer, messages):
    found = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)
    return found["input_ids"]


def test_each_prompt_is_the_whole_conversation_in_the_chat_template(lm):
    chat = conversation.Conversation(lm, "Be brief.")
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
    assert chat.prompt_ids("hello")[0].tolist() == oracle_ids(lm.tokenizer, first)
    chat.append("hello", "hi there")
    later = first + [{"role": "assistant", "content": "hi there"}, {"role": "user", "content": "why?"}]
    assert chat.prompt_ids("why?")[0].tolist() == oracle_ids(lm.tokenizer, later)
    assert chat.all_messages() == later[:3] and chat.census()["messages"] == 2


def test_without_a_system_message_the_turns_come_first(lm):
    chat = conversation.Conversation(lm)
    assert chat.all_messages() == []
    assert chat.prompt_ids("hi")[0].tolist() == oracle_ids(lm.tokenizer, [{"role": "user", "content": "hi"}])


def test_a_model_without_a_chat_template_is_refused_with_what_to_do(lm):
    bare = SimpleNamespace(tokenizer=lm.tokenizer, name="base", chat_template=lambda: None)
    with pytest.raises(TorchshError) as e:
        conversation.Conversation(bare).prompt_ids("hi")
    assert e.value.code == "bad_argument" and "no chat template" in e.value.message and "--raw" in e.value.hint
