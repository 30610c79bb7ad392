"""What reading files costs before it starts: `load` reads its file whole, `data open` the formats it
cannot map or read lazily (.csv, .parquet, .npz). At least the files' sizes (a parsed CSV can take more)."""
import os
import stat

READ_WHOLE = (".csv", ".parquet", ".npz")  # `data open` maps .npy; .safetensors and images are read lazily


def files_read_whole(op_name, values):
    """The bytes of the files the op reads whole, or None when that cannot be told (the verb then
    reports a missing file itself)."""
    if op_name == "load":
        paths = [values.get("file")]
    else:
        paths = [f for f in values.get("files") or () if os.path.splitext(str(f))[1].lower() in READ_WHOLE]
    if not all(isinstance(p, str) for p in paths):
        return None
    try:
        found = [os.stat(p) for p in paths]
    except OSError:
        return None
    if not all(stat.S_ISREG(st.st_mode) for st in found):
        return None
    return sum(st.st_size for st in found)
