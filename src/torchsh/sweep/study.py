"""The Optuna study behind `torch sweep`: where it is kept (--storage), its sampler and pruner, and the
sweep's definition stored in it, so `torch sweep --join STUDY` on another daemon runs the same trials.

Storage, in the words of --storage:
- none given, with --log DIR: a journal file DIR/study.journal (Optuna's JournalFileBackend): every trial's
  state is appended as it changes, so `--resume` after a `kill -9` finds the finished trials;
- none given, without --log: in memory (nothing to resume or join);
- sqlite:///PATH, postgresql://…, mysql://…: Optuna's RDBStorage (a relative sqlite path is the caller's);
- any other word: a journal file at that path (the caller's).

Optuna is an optional extra (`pip install 'torchsh[sweep]'`), imported only when a sweep starts.
"""
import os
import re
import urllib.parse

from torchsh.errors import TorchshError, bad_argument
from torchsh.sweep import space as spaces

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("none", "median", "asha", "hyperband")
DEFINITION_ATTR = "torchsh.sweep"   # the study's user attribute holding the sweep's definition
_RDB = re.compile(r"(sqlite|postgresql|postgres|mysql)(\+\w+)?://")
# USER:PASSWORD@ after a scheme, also where a path has kept the URL with one slash (`redis:/user:pw@host`)
_CREDENTIALS = re.compile(r"([A-Za-z][\w+.-]*:/{1,2}[^/\s:@'\"]*:)[^@\s]*@")


def optuna():
    """The optuna module, or missing_extra with the command that installs it."""
    try:
        import optuna as module
    except ImportError:
        raise TorchshError("missing_extra", "torch sweep needs Optuna", "pip install 'torchsh[sweep]'") from None
    module.logging.set_verbosity(module.logging.WARNING)  # its per-trial INFO lines would fill the daemon's log
    return module


def storage(ctx, url, log_folder):
    """--storage as Optuna storage (None: in memory); one that cannot be opened is the caller's bad_argument."""
    try:
        return _storage(ctx, url, log_folder)
    except TorchshError as e:  # a path refused, naming it: the URL's password is in it
        raise TorchshError(e.code, shown(e.message, url), shown(e.hint, url) if e.hint else e.hint) from None
    except Exception as e:  # noqa: BLE001 (SQLAlchemy and the DB drivers raise their own kinds: a missing
        # driver is ImportError, a refused connection OperationalError; each is the URL's trouble, said so)
        raise bad_argument("--storage %s: cannot open it: %s" % (shown(url), shown(str(e).split("\n")[0], url)[:200]),
                           _STORAGE_HINT) from None  # masked first, then cut: a cut password would show its start


_STORAGE_HINT = "sqlite:///FILE.db, postgresql://USER@HOST/DB (pip install psycopg2), or a journal file path"


def _storage(ctx, url, log_folder):
    o = optuna()
    if url is None:
        if log_folder is None:
            return None
        os.makedirs(log_folder, exist_ok=True)
        url = os.path.join(log_folder, "study.journal")
    elif _RDB.match(url):
        return o.storages.RDBStorage(_callers_sqlite(ctx, url))
    elif "://" in url:  # redis://, http://…: not a file name anyone means
        raise bad_argument("--storage %s: torch sweep keeps a study in SQLite, PostgreSQL, MySQL or a journal file"
                           % shown(url), _STORAGE_HINT)
    else:
        url = ctx.path(url, "out")
    from optuna.storages.journal import JournalFileBackend
    return o.storages.JournalStorage(JournalFileBackend(url))


def _callers_sqlite(ctx, url):
    """sqlite:///relative.db is relative to the caller's cwd, as every other path a command takes."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url[len(prefix):].startswith("/") and url[len(prefix):] != ":memory:":
        return prefix + ctx.path(url[len(prefix):], "out")
    return url


def shown(text, url=None):
    """text as a message, a log or sweep.json may show it: the password of every URL in it masked
    (`postgresql://user:***@host/db`, and `redis:/user:***@host` where a path kept it), and the password of
    `url` (the --storage given) wherever else text quotes it. The one place a storage URL is masked."""
    if not text:
        return text
    try:
        password = urllib.parse.urlsplit(url or text).password
    except ValueError:
        password = None
    for secret in {password, urllib.parse.unquote(password or "")} - {None, ""}:
        if len(secret) > 2:  # a one- or two-letter password would mask every such letter: the pattern has those
            text = text.replace(secret, "***")
    return _CREDENTIALS.sub(r"\1***@", text)


def sampler(name, seed, space):
    o = optuna()
    if name == "tpe":
        return o.samplers.TPESampler(seed=seed)  # constant_liar: trials running together draw apart
    if name == "random":
        return o.samplers.RandomSampler(seed=seed)
    if name == "grid":
        return o.samplers.GridSampler(spaces.grid(space), seed=seed)
    raise bad_argument("--sampler %s: not a sampler" % name, "valid: %s" % ", ".join(SAMPLERS))


def pruner(name, epochs):
    """Optuna's pruners with their own defaults; each reads the epoch rows' monitored value (step = epoch)."""
    o = optuna()
    if name == "none":
        return o.pruners.NopPruner()
    if name == "median":
        return o.pruners.MedianPruner()  # prunes below the median of earlier trials at the same epoch (after 5)
    if name == "asha":
        return o.pruners.SuccessiveHalvingPruner()  # asynchronous successive halving: rungs of epochs, eta 4
    if name == "hyperband":
        return o.pruners.HyperbandPruner(min_resource=1, max_resource=epochs)
    raise bad_argument("--pruner %s: not a pruner" % name, "valid: %s" % ", ".join(PRUNERS))


def open_study(kept, name, definition, sampler_, pruner_, mode):
    """The study, by mode: "new" (refused when the storage holds one of that name), "resume" (the same
    sweep's, continued) or "join" (any torch sweep's: one more worker)."""
    o = optuna()
    if mode == "new":
        try:
            study = o.create_study(storage=kept, study_name=name, sampler=sampler_, pruner=pruner_,
                                   direction=definition["direction"])
        except o.exceptions.DuplicatedStudyError:
            raise TorchshError("run_exists", "the storage holds a study %r already" % name,
                               "continue it with --resume, add a worker with --join %s, or name another with "
                               "--study NAME" % name) from None
        study.set_user_attr(DEFINITION_ATTR, definition)
        return study
    try:
        study = o.load_study(study_name=name, storage=kept, sampler=sampler_, pruner=pruner_)
    except KeyError:
        raise TorchshError("not_found", "no study %r in that storage" % name,
                           "start one: torch sweep … --study %s --storage URL" % name) from None
    held = definition_of(study)
    if mode == "resume":
        changed = sorted(k for k in set(held) | set(definition) if k != "trials" and held.get(k) != definition.get(k))
        if changed:
            raise TorchshError("state_mismatch", "--resume: this sweep's --%s differs from the study's (%r)"
                               % (changed[0], held.get(changed[0])),
                               "give the same options as the first run (only --trials may change)")
    return study


def definition_of(study):
    """The sweep a joined study runs: what its first worker stored."""
    held = study.user_attrs.get(DEFINITION_ATTR)
    if not isinstance(held, dict):
        raise TorchshError("state_mismatch", "the study %r was not made by torch sweep" % study.study_name,
                           "join a study that `torch sweep --storage URL --study NAME` started")
    return held
