"""TAB after `torch lm open `: the local model folders (a folder holding config.json) at or under the word typed.

The daemon answers every shell's completion (complete.py), in the caller's cwd: the folders in the typed word's
folder whose names start with what is typed, and, one level down, those holding model folders (`models/` with
`models/qwen` in it). A folder's description is its config's model_type and architecture. Nothing found, or a
caller whose files this daemon cannot see (a remote context): the shell lists file names itself.

The listing is bounded (MAX_ENTRIES names read per folder) so a TAB in a huge folder answers at once, and a
config.json is read only when it is a regular file of at most MAX_CONFIG_BYTES, opened without blocking: a
FIFO planted under that name cannot hold the daemon.
"""
import json
import os
import stat

FILES = ":files"  # complete.FILES: the shell lists file names
MAX_ENTRIES = 2000
MAX_CONFIG_BYTES = 1 << 20


def model_folders(cur, cwd):
    """[(word, description)] of the model folders the word `cur` can become, or [(FILES, "")]."""
    if cwd is None:
        return [(FILES, "")]
    typed_dir, partial = os.path.split(cur)
    base = os.path.join(cwd, os.path.expanduser(typed_dir)) if typed_dir else cwd
    found = []
    for name in _subfolders(base, partial):
        word, path = os.path.join(typed_dir, name), os.path.join(base, name)
        about = model_about(path)
        found += [(word, about)] if about is not None else _models_in(path, word)
    return found or [(FILES, "")]


def _models_in(folder, word):
    """The model folders right inside FOLDER (typed as WORD), as (word, description)."""
    found = []
    for name in _subfolders(folder, ""):
        about = model_about(os.path.join(folder, name))
        if about is not None:
            found.append((os.path.join(word, name), about))
    return found


def model_about(folder):
    """`model folder: llama (LlamaForCausalLM)` when FOLDER holds a config.json, else None."""
    config = os.path.join(folder, "config.json")
    try:
        st = os.stat(config)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    fields = _config_fields(config) if st.st_size <= MAX_CONFIG_BYTES else {}
    kind = fields.get("model_type")
    arch = fields.get("architectures")
    arch = arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else None
    words = ["model folder"] + ([": %s" % kind] if isinstance(kind, str) else []) + (
        [" (%s)" % arch] if arch else [])
    return "".join(words)


def _config_fields(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as f:
            data = json.loads(f.read(MAX_CONFIG_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _subfolders(base, partial):
    """Names of the folders in BASE that start with PARTIAL (hidden ones only when PARTIAL starts with a dot)."""
    try:
        with os.scandir(base) as entries:
            names = []
            for n, entry in enumerate(entries):
                if n >= MAX_ENTRIES:
                    break
                hidden = entry.name.startswith(".") and not partial.startswith(".")
                if entry.name.startswith(partial) and not hidden and _is_folder(entry):
                    names.append(entry.name)
    except OSError:
        return []
    return sorted(names)


def _is_folder(entry):
    try:
        return entry.is_dir()
    except OSError:
        return False
