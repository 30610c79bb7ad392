"""`torch lm …`: language models from local Hugging Face folders (the `lm` extra; src/torchsh/lm/ has the
object and its machinery). open makes an lm:// of the model, its tokenizer and its adapters; info describes
it; tokenize and decode turn text into ids (a tensor handle) and back; generate streams tokens as a job
(Ctrl-C stops at a token boundary, --detach leaves it running, --json gives a row per token and one at the end).
docs/lm.md is the user's view.
"""
import functools

from torchsh import jobs
from torchsh.call import replies
from torchsh.errors import bad_argument
from torchsh.history import lmforms
from torchsh.jobs import follow
from torchsh.lm import conversation, generation, library, opening
from torchsh.results import Exec
from torchsh.verbs import verb

TINY = "python -m torchsh.lm.tiny tiny >/dev/null && "  # the examples' model: made from a config, nothing downloaded
DEFAULT_ANSWER_TOKENS = 512  # a chat answer's limit when none is given (less where the context has less room)


@verb("lm.open(DirPath folder, *, str? dtype=None, Device? device=None) -> LanguageModel", category="lm",
      form=lmforms.opened,
      examples=(TINY + "torch lm open tiny", TINY + "torch lm open tiny --dtype bf16 | torch lm info"))
def lm_open(ctx, folder, dtype=None, device=None):
    """Open a local Hugging Face model folder: config.json, *.safetensors weights and the tokenizer's files.
    Only safetensors are read (a folder of pickled *.bin weights is refused), the config's own code
    (trust_remote_code) never runs, nothing is fetched; the memory budget admits the weights first.

    Args:
        folder: the model folder (as save_pretrained writes it)
        dtype: the weights' dtype: auto (as stored), bf16, fp16, fp32
        device: where the model lives (cpu, cuda, cuda:1)
    """
    return opening.open_folder(folder, dtype, device, getattr(ctx.app, "memory", None))


@verb("lm.info(LanguageModel model) -> Json", category="lm", lockfree=True,
      examples=(TINY + "torch lm info $(torch lm open tiny)",), read_only=True)
def lm_info(ctx, model):
    """Describe a language model: architecture, parameters, dtype, device, context length, chat template,
    memory, adapters."""
    lm = model
    base = lm.base_parameters()
    return dict(folder=lm.folder, architecture=type(lm.model).__name__, model_type=lm.config.get("model_type"),
                parameters=sum(p.numel() for p in base), dtype=str(lm.dtype).replace("torch.", ""),
                stored_dtype=lm.stored_dtype, device=str(lm.device), context_length=lm.context_length(),
                vocab_size=len(lm.tokenizer), chat_template=lm.chat_template() is not None,
                memory=sum(p.numel() * p.element_size() for p in base),
                kv_cache_per_token=generation.kv_cache_bytes(lm, 1, 1),
                adapters=sorted(lm.adapters), active_adapter=lm.active,
                torchvision_hidden=library.torchvision_hidden())


@verb("lm.tokenize(LanguageModel model, str text, *, bool chat=False, bool special=True) -> Tensor", category="lm",
      no_form="token ids are data the tokenizer gives; `history --python` writes the tokenizer call where they are used",
      examples=(TINY + "torch lm tokenize $(torch lm open tiny) 'hello world' | torch value",), read_only=True)
def lm_tokenize(ctx, model, text, chat=False, special=True):
    """The token ids of TEXT as a 1-D int64 tensor (the tokenizer's own: add_special_tokens as it says).

    Args:
        chat: TEXT as one user message in the model's chat template, with the assistant's turn opened
        special: add the tokenizer's special tokens (BOS…) as tokenizer(text) does
    """
    return prompt_ids(model, text, chat=chat, special=special)[0]


@verb("lm.decode(LanguageModel model, Tensor ids, *, bool skip_special_tokens=False) -> str", category="lm",
      lockfree=True, examples=(TINY + "m=$(torch lm open tiny); torch lm decode $m $(torch lm tokenize $m 'hello world')",),
      read_only=True)
def lm_decode(ctx, model, ids, skip_special_tokens=False):
    """The text of token ids (a 1-D integer tensor), as tokenizer.decode gives it."""
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dim() > 1:
        raise bad_argument("token ids are a 1-D integer tensor, not %s %s" % (list(ids.shape), ids.dtype),
                           "`torch lm tokenize` makes one")
    vocab = len(model.tokenizer)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise bad_argument("token ids must be in [0, %d): the tokenizer's vocabulary" % vocab)
    return model.tokenizer.decode(ids.tolist(), skip_special_tokens=skip_special_tokens)


def prompt_ids(lm, text, chat=True, system=None, special=True):
    """[1, T] int64 ids of TEXT: in the chat template (a system message first) when chat, else as it is."""
    if chat:
        return conversation.chat_ids(lm, conversation.one_turn(text, system))
    return lm.tokenizer(text, add_special_tokens=special, return_tensors="pt").input_ids


@verb("lm.generate(LanguageModel model, str prompt, *, int max_new_tokens=64, float? temperature=None, "
      "float? top_p=None, int? top_k=None, int? seed=None, bool raw=False, str? system=None, bool detach=False, "
      "bool json=False) -> Json", category="lm", replies=("follow",),
      no_form="generated text is output, not state",
      examples=(TINY + "torch lm generate $(torch lm open tiny) 'Why is the sky blue?' --max_new_tokens 16 --temperature 0",
                TINY + "torch lm generate $(torch lm open tiny) 'hello' --max_new_tokens 8 --raw --json"))
def lm_generate(ctx, model, prompt, max_new_tokens=64, temperature=None, top_p=None, top_k=None, seed=None, raw=False,
                system=None, detach=False, json=False):
    """Generate text from PROMPT, streamed to stdout token by token as a job: Ctrl-C stops it at a token boundary.
    The prompt goes through the model's chat template as one user message, as a chat would (--raw: as it is).

    Args:
        max_new_tokens: the most tokens generated (fewer when the model ends the sequence)
        temperature: 0 is greedy; above 0 samples (default: the folder's generation_config.json)
        top_p: sample from the smallest set of tokens whose probability reaches top_p
        top_k: sample from the k most likely tokens
        seed: the sampling's random seed (the daemon's own generator is left as it was)
        raw: the prompt as it is, no chat template (a base model's continuation)
        system: a system message before the prompt in the chat template
        detach: run as a job and print its job:// at once (`torch job logs|wait|stop`)
        json: one JSON line per token ({token, text}) and a last one: text, tokens, prompt_tokens,
            completion_tokens, finish_reason (stop, length, stopped), first_token_s, seconds, tokens_per_s
    """
    sampling = generation.Sampling(max_new_tokens, temperature, top_p, top_k, seed)
    sampling.check()
    ids = prompt_ids(model, prompt, chat=not raw, system=system)
    generation.admit(model, getattr(ctx.app, "memory", None), 1, ids.shape[-1], max_new_tokens)
    work = functools.partial(_streamed, model, ids, sampling)
    job = jobs.start(ctx, "lm generate", work, uses=(model,))
    return job.handle if detach else follow.reply(ctx, job, "run", as_json=json)


def _streamed(lm, ids, sampling, report, should_stop):
    """Generate, each token's text reported as it comes and the closing row at the end; the Generated."""
    def on_token(token, piece):
        report({"event": "text", "token": token, "text": piece})
    done = generation.generate(lm, ids, sampling, on_token, should_stop)
    report({"event": "end", **done.row()})
    return done


# The terminal's chat: a loop in the caller's own bash (an exec reply, as `scope -- CMD` runs CMD there), since
# only the caller reads its terminal. readline edits each line; every line is one `torch lm say` turn. Ctrl-C
# stops that answer at a token boundary and the chat goes on (its INT trap keeps this bash alive, at the prompt
# too, and when a client dies of the signal); Ctrl-D ends the chat. Without a terminal it reads stdin's lines:
# a scripted chat. $1 the conversation, $2 the banner, the rest `lm say`'s flags.
REPL = r"""c=$1; printf '%s\n' "$2" >&2; shift 2; set -o history; trap : INT
while :; do
    IFS= read -r -e -p '> ' line; st=$?
    if (( st > 128 )); then printf '\n' >&2; continue; elif (( st )); then break; fi
    [[ -n ${line//[[:space:]]/} ]] || continue
    history -s -- "$line"
    torch lm say "$c" "$line" "$@"
done
if [[ -t 0 ]]; then printf '\n' >&2; fi"""


@verb("lm.chat(LanguageModel model, *, str? system=None, bool new=False, int? max_new_tokens=None, "
      "float? temperature=None, float? top_p=None, int? top_k=None) -> Conversation", category="lm",
      no_form="a conversation is text a model answered: `torch lm messages` writes it out",
      examples=(TINY + "printf 'hello\\nwhy?\\n' | torch lm chat $(torch lm open tiny) --max_new_tokens 8",
                TINY + "c=$(torch lm chat $(torch lm open tiny) --system 'Answer briefly.' --new); "
                "torch lm say $c hello --max_new_tokens 8; torch lm messages $c"))
def lm_chat(ctx, model, system=None, new=False, max_new_tokens=None, temperature=None, top_p=None, top_k=None):
    """Chat with a language model on a terminal: each line you type is a turn, the answer streams as it comes;
    Ctrl-C stops an answer, Ctrl-D ends the chat. The conversation is an object (chat://) that holds the
    model, the system message and the messages so far; --new prints it instead, for `torch lm say` and
    `torch lm messages` in scripts.

    Args:
        system: the system message every turn starts with
        new: print the conversation's chat:// and return, no terminal loop
        max_new_tokens: the most tokens an answer takes (default: 512, or what the context has left)
        temperature: 0 is greedy; above 0 samples (default: the folder's generation_config.json)
        top_p: sample from the smallest set of tokens whose probability reaches top_p
        top_k: sample from the k most likely tokens
    """
    conversation.chat_ids(model, conversation.one_turn("", system))  # no chat template: refused before anything
    generation.Sampling(1 if max_new_tokens is None else max_new_tokens, temperature, top_p, top_k).check()
    if new:
        return conversation.Conversation(model, system)
    replies.needed(ctx, "exec", "lm chat")  # a caller that cannot run the loop: handed over or refused, none made
    handle = ctx.put(conversation.Conversation(model, system), "chat")
    flags = [w for key, value in (("max_new_tokens", max_new_tokens), ("temperature", temperature),
                                  ("top_p", top_p), ("top_k", top_k)) if value is not None
             for w in ("--" + key, repr(value))]
    banner = "%s with %s: type a message; Ctrl-C stops an answer, Ctrl-D ends (`torch lm messages %s`)" % (
        handle, model.name, handle)
    return Exec(["bash", "-c", REPL, "torch lm chat", handle, banner] + flags, {})


@verb("lm.say(Conversation chat, str message, *, int? max_new_tokens=None, float? temperature=None, "
      "float? top_p=None, int? top_k=None, int? seed=None, bool detach=False, bool json=False) -> Json",
      category="lm", replies=("follow",), writes=("chat",),
      no_form="a conversation is text a model answered: `torch lm messages` writes it out",
      examples=(TINY + "c=$(torch lm chat $(torch lm open tiny) --new); torch lm say $c 'Why is the sky blue?' "
                "--max_new_tokens 16 --temperature 0",))
def lm_say(ctx, chat, message, max_new_tokens=None, temperature=None, top_p=None, top_k=None, seed=None,
           detach=False, json=False):
    """Say MESSAGE in a conversation: the model's answer streams to stdout as a job (Ctrl-C stops it at a token
    boundary), and once it has ended the message and the answer (as far as it got) join the conversation.

    Args:
        max_new_tokens: the most tokens the answer takes (default: 512, or what the context has left)
        temperature: 0 is greedy; above 0 samples (default: the folder's generation_config.json)
        top_p: sample from the smallest set of tokens whose probability reaches top_p
        top_k: sample from the k most likely tokens
        seed: the sampling's random seed (the daemon's own generator is left as it was)
        detach: run as a job and print its job:// at once (`torch job wait` prints the answer)
        json: one JSON line per token ({token, text}) and a last one, as `torch lm generate --json`
    """
    sampling = generation.Sampling(1 if max_new_tokens is None else max_new_tokens, temperature, top_p, top_k, seed)
    sampling.check()
    budget = getattr(ctx.app, "memory", None)
    _admit_turn(chat, message, max_new_tokens, budget)  # refused now, before the job, when it cannot fit
    work = functools.partial(_say_work, chat, message, sampling, max_new_tokens, budget)
    job = jobs.start(ctx, "lm say", work, uses=(chat.lm, chat))
    return job.handle if detach else follow.reply(ctx, job, "run", as_json=json)


def _admit_turn(chat, message, asked, budget):
    """The ids of the conversation plus MESSAGE, and the answer's token limit, admitted (context, KV cache)."""
    ids = chat.prompt_ids(message)
    prompt = int(ids.shape[-1])
    room = (chat.lm.context_length() or prompt + DEFAULT_ANSWER_TOKENS) - prompt
    limit = asked if asked is not None else max(1, min(DEFAULT_ANSWER_TOKENS, room))
    generation.admit(chat.lm, budget, 1, prompt, limit)
    return ids, limit


def _say_work(chat, message, sampling, asked, budget, report, should_stop):
    # the conversation now, not when it was asked: a turn queued behind another on it answers after that one
    ids, sampling.max_new_tokens = _admit_turn(chat, message, asked, budget)
    done = _streamed(chat.lm, ids, sampling, report, should_stop)
    chat.append(message, done.text)


@verb("lm.messages(Conversation chat) -> Json", category="lm", lockfree=True,
      examples=(TINY + "c=$(torch lm chat $(torch lm open tiny) --system 'Answer briefly.' --new); "
                "torch lm messages $c",), read_only=True)
def lm_messages(ctx, chat):
    """A conversation's messages as JSON ([{role, content}], the system message first), as a chat template and
    OpenAI's chat API take them."""
    return chat.all_messages()
