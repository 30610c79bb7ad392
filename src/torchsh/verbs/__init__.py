"""Hand-written verbs, one file per domain. Each declares its rows with @verb(schema), then handlers.

A verb's schema uses ATen's syntax (table/spec.py) so parsing, help, `torch ops`, the JSON API and
the shell modules treat verbs and PyTorch ops alike. Handlers take the request Context first.
"""
import importlib
import inspect
import pkgutil

from torchsh.table import docargs
from torchsh.table.signature import WordsOpSpec
from torchsh.table.spec import OpSpec, Overload, parse_schema

_VERB_ATTR = "__torchsh_verbs__"


def verb(*schemas, category="tensors", summary=None, lockfree=False, aliases=(), block=False, repeatable=(),
         examples=(), replies=(), words="", writes=(), form=None, no_form="", read_only=False):
    """Declare a verb: one or more schemas (overloads), e.g. verb('value(Tensor input, *, bool meta=False)').

    block=True marks a block form (`scope -- CMD`): it answers with an exec directive, which only a
    caller that can run commands (the client, the fast bash function, torch.nu) can carry out.
    repeatable names flags that may be given more than once (`load --columns x1,x2 --columns y`): the
    handler then gets a list, one value per occurrence.
    examples are command lines `torch VERB --help` prints, each runnable as it stands in bash (make
    handles with $(torch …)); tests/e2e/test_verb_examples.py runs every one.
    replies names the replies besides output it may answer with (protocol.REPLIES: follow, copy, await…; a
    block form execs): a caller that lacks one is handed the command over before it runs (call/replies.py).
    words names what a positional Argv takes in usage (`bench OP ARGS…`: words="OP ARGS"), instead of a
    command after `--`.
    writes, form and no_form are what `torch history` knows of it (table/spec.py OpSpec): the arguments it
    changes in place, the function from history/ that writes its PyTorch for `--python`, or why there is none.
    read_only=True says it changes no object, file, setting or generator, whatever its flags (a new object may
    come out; an output-path flag is refused under a read-only policy: call/policy.py).
    """
    def deco(fn):
        overloads, name = [], None
        for schema in schemas:
            name, _, args, returns = parse_schema(schema, overload_names=False)
            overloads.append(Overload(args=tuple(args), returns=returns))
        doc = (fn.__doc__ or "").strip()
        first = summary or doc.split("\n")[0]
        row = WordsOpSpec if words else OpSpec
        spec = row(name=name, category=category, summary=first, overloads=overloads, call=fn, verb=True,
                   doc=" ".join(doc.split("\n\n")[0].split()), aliases=tuple(aliases),
                   lockfree=lockfree, block=block, repeatable=tuple(repeatable),
                   replies=tuple(replies) + (("exec",) if block and "exec" not in replies else ()),
                   examples=tuple(examples), words_metavar=words, writes=tuple(writes), form=form, no_form=no_form,
                   read_only=read_only,
                   arg_docs=docargs.parse(inspect.cleandoc(doc)))
        setattr(fn, _VERB_ATTR, getattr(fn, _VERB_ATTR, []) + [spec])
        return fn
    return deco


def all_verbs():
    rows = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module("%s.%s" % (__name__, info.name))
        for value in vars(module).values():
            rows.extend(getattr(value, _VERB_ATTR, ()))
        # rows made from a class table (one per nn layer, optimizer, scheduler): generated_rows() -> [OpSpec]
        rows.extend(getattr(module, "generated_rows", lambda: ())())
    return rows
