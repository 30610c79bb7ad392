"""What reading files costs before it starts: `load` reads its file whole, `data open` the formats it
cannot map or read lazily (.csv, .parquet, .npz). At least the files' sizes (a parsed CSV can take more)."""
import os
import stat

READ_WHOLE = (".csv", ".parquet", ".npz")  # `data open` maps .npy; .safetensors and images are read lazily
IMAGES = (".png", ".jpg", ".jpeg")  # `torch load` decodes them whole: their cost is their pixels, not their size


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
    return sum(_decoded_image_bytes(p) or st.st_size for p, st in zip(paths, found))


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
