"""A conversation with a language model (`chat://`, `torch lm chat`): the model, a system message and the
messages so far. Each turn renders the whole conversation plus the user's new message through the model's chat
template (tokenizer.apply_chat_template, as transformers' users call it), and appends the user's message and the
model's answer once the answer has ended. The object is plain: the daemon's verbs and jobs read and change it
under the tensor lock, one turn at a time (jobs run one after another)."""
from torchsh.errors import bad_argument


def chat_ids(lm, messages):
    """[1, T] int64 ids of MESSAGES ([{role, content}]) in the model's chat template, the assistant's turn opened."""
    if lm.chat_template() is None:
        raise bad_argument("%s has no chat template (tokenizer_config.json's chat_template)" % lm.name,
                           "--raw sends the text as it is (`torch lm generate --raw`)")
    try:
        rendered = lm.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except Exception as e:  # the template's own refusal (jinja's raise_exception: roles out of order, …)
        raise bad_argument("%s's chat template refused the messages: %s" % (lm.name, str(e).split("\n")[0][:200]),
                           "messages alternate user and assistant, a system message first") from None
    # the template writes the special tokens itself (<|im_start|>, a BOS): the tokenizer adds none of its own
    return lm.tokenizer(rendered, add_special_tokens=False, return_tensors="pt").input_ids


def one_turn(text, system=None):
    """The messages of a single user turn, a system message first when given."""
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]


class Conversation:
    def __init__(self, lm, system=None):
        self.lm = lm              # the LanguageModel it talks to (kept alive while the conversation is)
        self.system = system      # the system message, or None
        self.messages = []        # the turns so far: {"role": "user"|"assistant", "content": text}

    def all_messages(self):
        """The messages as the chat template gets them: the system message first, then the turns."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        return head + [dict(m) for m in self.messages]

    def prompt_ids(self, text):
        """The ids of the conversation so far plus the user's TEXT, the assistant's turn opened."""
        return chat_ids(self.lm, self.all_messages() + [{"role": "user", "content": text}])

    def append(self, text, answer):
        """One turn ended: the user's message and the model's answer join the conversation."""
        self.messages.append({"role": "user", "content": text})
        self.messages.append({"role": "assistant", "content": answer})

    def census(self):
        return dict(type="Conversation", model=self.lm.name, system=self.system is not None,
                    messages=len(self.messages), bytes=0)  # its model's weights are the lm://'s
