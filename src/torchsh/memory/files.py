"""What reading files costs before it starts: `load` reads its file whole, `data open` the formats it
cannot map or read lazily (.csv, .parquet, .npz). At least the files' sizes (a parsed CSV can take more); a
.parquet file at least its columns decoded, from its footer (a compressed file of zeros is tiny on disk)."""
import os
import stat

READ_WHOLE = (".csv", ".parquet", ".npz")  # `data open` maps .npy; .safetensors and images are read lazily
IMAGES = (".png", ".jpg", ".jpeg")  # `torch load` decodes them whole: their cost is their pixels, not their size


def files_read_whole(op_name, values):
    """The bytes of the files the op reads whole, or None when that cannot be told (the verb then
    reports a missing file itself)."""
    if op_name == "load":
        paths = [values.get("file")]
    elif values.get("stream"):  # `data open --stream` reads footers: its row groups are admitted as it reads them
        return 0
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
    return sum(max(_decoded_image_bytes(p) or 0, _decoded_parquet_bytes(p) or 0, st.st_size)
               for p, st in zip(paths, found))


def whole_read_hint(op_name, values):
    """What to do instead when a whole read does not fit: `data open` of a .parquet file streams with --stream."""
    files = values.get("files") or ()
    if op_name == "data.open" and not values.get("stream") and any(str(f).lower().endswith(".parquet") for f in files):
        return "--stream reads a .parquet file (or a quoted glob of them) by row group on demand: torch data open " \
               "FILE.parquet --stream"
    return None


# Bytes a value of each Parquet physical type takes decoded (numpy, Arrow); BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY
# (text, blobs) take their pages' uncompressed size
_PARQUET_WIDTHS = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}


def _decoded_parquet_bytes(path):
    """A .parquet file's columns decoded, from its footer: rows × width for fixed-width columns (dictionary and
    run-length encodings decode to every row), the uncompressed pages for the others; None for other files, or
    when pyarrow cannot tell (the read then says why)."""
    if os.path.splitext(path)[1].lower() != ".parquet":
        return None
    try:
        import pyarrow.parquet as pq
        meta = pq.read_metadata(path)  # the footer only
        total = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                width = _PARQUET_WIDTHS.get(chunk.physical_type)
                total += group.num_rows * width if width else chunk.total_uncompressed_size
        return total
    except Exception:  # noqa: BLE001 - no pyarrow, or not a Parquet file: the verb itself reports it
        return None


def _decoded_image_bytes(path):
    """A PNG or JPEG's pixels as `torch load` decodes them, from its header (a 1 MB PNG can hold 700 MB of
    pixels); None for other files, or when Pillow cannot tell (the read then says why)."""
    if os.path.splitext(path)[1].lower() not in IMAGES:
        return None
    try:
        from PIL import Image
        with Image.open(path) as image:  # reads the header only
            width, height = image.size
    except Exception:  # noqa: BLE001 - no Pillow, or not an image: the verb itself reports it
        return None
    return width * height * 4 * 2  # up to 4 channels (2 bytes for 16-bit gray), and the conversion's copy
