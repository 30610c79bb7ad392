"""The caller's world for one request: cwd, TORCHSH_* environment, stdin, and the daemon's state.

Handlers take a Context instead of reaching for globals, so unit tests can build one by hand.
"""
import os
from dataclasses import dataclass

from torchsh.call import replies
from torchsh.errors import TorchshError
from torchsh.registry import names
from torchsh.remote import staging
from torchsh.results import NeedUpload
from torchsh.table.kinds import creates

_TRUE = ("1", "true", "yes", "on")
# The replies a caller's file on a remote context needs, by how the op uses it (Context.path's modes)
_FILE_REPLIES = {"in": ("upload",), "out": ("download",), "dir_out": ("download",), "dir_inout": ("upload", "download")}


@dataclass(slots=True)  # built for every request: slots make that cheaper
class Context:
    app: object                 # daemon.app.App: registry, table, locks, lifecycle
    cwd: str = "/"
    env: dict = None            # the caller's TORCHSH_* variables
    stdin_is_tty: bool = True
    stdin: list = None          # stdin lines, once the client has sent them
    peer_pid: int = None        # the client process (SO_PEERCRED on the Unix socket); None on the fast path
    stderr_is_tty: bool = False  # the caller's stderr is a terminal: a job's progress may be a live \r line
    replies: frozenset = replies.NONE  # the replies the caller carries out (protocol.REPLIES, call/replies.py)
    hold: object = None         # hold(end): end() runs when the caller's connection drops (daemon/conn.Conn.hold)
    downloads: list = None      # (stage id, the caller's path) of files the op wrote for a remote caller
    uploads: list = None        # staged copies of the caller's files the op read (removed after it, mostly)
    name: str = None            # --name: the first object this request makes gets it (Context.naming)
    made: list = None           # the handles this request put, in order (the history log's outputs)
    name_ttl: float = None      # --ttl with --name: that name's TTL in seconds
    warned: list = None         # the lines of the warnings this request prints (call/invoke.py fills it)
    said: list = None           # lines the command says on stderr besides its output (`serve --detach`: where)
    policy: object = None       # the caller's policy (call/policy.Policy: torch mcp --read_only…), None: all runs
    noted: dict = None          # what the verb decided that its arguments do not say (fit's target view), for
                                # the history log (history/log.py: the entry's `made`; the script writes the same)

    def __post_init__(self):
        self.env = self.env or {}
        self.downloads, self.uploads, self.made, self.said = [], [], [], []

    @property
    def registry(self):
        return self.app.registry

    @property
    def table(self):
        return self.app.table

    @property
    def scope(self):
        return self.env.get("TORCHSH_SCOPE") or None

    @property
    def no_grad(self):
        return bool(self.env) and self.env.get("TORCHSH_NO_GRAD", "").lower() in _TRUE  # no env: every op's case

    @property
    def inference_mode(self):
        return bool(self.env) and self.env.get("TORCHSH_INFERENCE_MODE", "").lower() in _TRUE

    @property
    def device(self):
        """TORCHSH_DEVICE, checked (a CUDA device on a CPU build is a device_error here, not deep in an op)."""
        text = self.env.get("TORCHSH_DEVICE") or None
        if text is not None:
            from torchsh.vocab import device_from_text  # vocab imports torch; Context stays light
            device_from_text(text)
        return text

    @property
    def context_name(self):
        """The context this command runs on, as the caller named it ("default": the local daemon)."""
        return self.env.get("TORCHSH_CONTEXT") or "default"

    def path(self, text, mode="in"):
        """A path word as this daemon opens it. mode: "in" (a file or folder the op reads), "out" (a file it
        writes), "dir_out" (a folder it writes), "dir_inout" (a folder it reads and writes: it may be missing).
        On the local daemon: relative to the caller's cwd. On a named context (a remote daemon) a path is the
        caller's: `NAME:/path` names one on the daemon's own host instead. A caller that carries the upload and
        download replies (the `torch` client) streams the caller's (remote/staging.py): an input is read from its
        staged copy (or asked for: NeedUpload), an output written to a staged path the client fetches once the op
        succeeded. Any other caller hands the command over to the client, or is refused by name, never
        resolved silently on the wrong host."""
        text = os.path.expanduser(str(text))
        name = self.context_name
        if name == "default":
            return os.path.normpath(os.path.join(self.cwd, text))
        host_path = text[len(name) + 1:] if text.startswith(name + ":") else None
        if host_path is not None:
            if host_path.startswith("/"):
                return os.path.normpath(host_path)
            raise TorchshError("remote_path", "%s: a path on %s's host must be absolute (its cwd is not yours)"
                               % (text, name), "write %s:/absolute/path" % name)
        caller_path = os.path.normpath(os.path.join(self.cwd, text))
        what = "a folder on this machine" if mode.startswith("dir") else "a path on this machine"
        refusal = TorchshError("remote_path", "%s is %s, but context %s's daemon runs elsewhere" % (text, what, name),
                               "for one on %s's host write %s:/absolute/path; files and folders here stream through "
                               "the `torch` client" % (name, name))
        if all([replies.needed(self, r, refusal=refusal) for r in _FILE_REPLIES[mode]]):
            return self._staged(caller_path, mode)
        raise refusal  # a row with a fallback of its own would come here; upload's and download's refuse

    def _staged(self, caller_path, mode):
        if mode == "out":
            stage_id, staged = self.app.staging.new(caller_path)
        elif mode == "dir_out":
            stage_id, staged = self.app.staging.new_folder(caller_path)
            stage_id = staging.FOLDER_MARK + stage_id
        else:
            stage_id = staging.staged_map(self.env).get(caller_path)
            staged = self.app.staging.path_of(stage_id)
            if staged is None:
                raise NeedUpload(caller_path, may_be_missing=mode == "dir_inout")
            self.app.staging.taken(stage_id)
            if mode != "dir_inout":
                self.uploads.append(staged)
                return staged
            stage_id = staging.FOLDER_MARK + stage_id
        self.downloads.append((stage_id, caller_path))
        return staged

    def put(self, obj, kind="tensor"):
        handle = self.app.registry.put(obj, kind, self.scope)
        self.made.append(handle)
        if self.name is not None:  # the one place a result becomes a handle: where --name takes effect
            name, self.name = self.name, None
            self.app.registry.name(handle, name, ttl=self.name_ttl)
        return handle

    def naming(self, op, text, ttl=None):
        """Take `--name TEXT` (and `--ttl TTL`) for this request, checked before anything runs: a valid name,
        free, and an op that makes an object (else bad_argument, name_in_use)."""
        if text is None:
            if ttl is not None:
                raise TorchshError("bad_argument", "--ttl goes with --name (the name expires, then its object)",
                                   "add --name NAME, or `torch name HANDLE @NAME --ttl %s`" % str(ttl)[:30])
            return
        name = names.check_name(text)
        self.name_ttl = names.parse_ttl(ttl) if ttl is not None else None
        if not creates(op):
            raise TorchshError("bad_argument", "--name names the object a command makes; %s makes none" %
                               op.display_name, "`torch name HANDLE @%s` names one already held" % name)
        holder = self.app.registry.names.holder(name)
        if holder is not None and self.app.registry.holds(holder):
            raise names.in_use(name, holder)
        self.name = name
