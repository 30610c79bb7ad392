"""`torch load FILE` and `torch save T… FILE`, by file extension: .npy, .npz, .safetensors, .pt/.pth, .csv;
`load` reads .png and .jpg images too.

Paths resolve against the caller's working directory. The readers and writers are formats/' rows, one per
extension (formats/extensions.py): writes are atomic (a failed save leaves neither half a file nor a temp
file), reads open regular files only and check headers before allocating, and nothing is ever unpickled
(.pt files go through torch.load(weights_only=True)).
"""
from torchsh.errors import bad_argument
from torchsh.formats import extensions
from torchsh.formats.flags import table_options
from torchsh.history import files as history_files
from torchsh.verbs import verb


@verb("load(Path file, *, ScalarType? dtype=None, str? columns=None, bool? header=None, bool no_header=False, "
      "str? delimiter=None) -> Tensor[]", category="files", form=history_files.lines, repeatable=("columns",),
      examples=("printf 'x,y\\n1,2\\n3,4\\n' > xy.csv && torch load xy.csv --columns x --columns y",), read_only=True)
def load(ctx, file, dtype=None, columns=None, header=None, no_header=False, delimiter=None):
    """Load tensors from a file; one handle per line (npz/safetensors/pt dicts: --json keeps the names).
    A .png or .jpg is one C×H×W uint8 tensor, as torchvision.io.decode_image gives (Pillow: the `images` extra).
    A .csv gives float32 (or --dtype); its header row is detected (or say --header / --no-header);
    --columns x1,x2 picks columns by name or 0-based index, each further --columns one more tensor.

    `torch load data.csv --columns x1,x2 --columns y` prints two handles. Empty cells read as NaN
    (an error for integer dtypes); a cell that is no number is named by row, line and column.
    """
    fmt = extensions.saved(file, extensions.LOADED)
    options = table_options(fmt.ext, columns, header, no_header, delimiter)
    if fmt.table:
        several = options.pop("several", False)
        tensors = extensions.read(file, fmt.read, dtype=dtype, **options)
        return tensors if several else tensors[0]
    loaded = extensions.read(file, fmt.read)
    if dtype is not None:
        loaded = {k: v.to(dtype) for k, v in loaded.items()}
    if list(loaded) == [""]:
        return loaded[""]
    return loaded


@verb("save(Tensor[] tensors, OutPath file, *, str[]? names=None) -> None", category="files",
      examples=("torch save $(torch tensor '[1,2,3]') t.pt && torch load t.pt",))
def save(ctx, tensors, file, names=None):
    """Save tensors to a file chosen by extension; several tensors need npz, safetensors or pt."""
    fmt = extensions.saved(file)
    names = list(names) if names else [str(i) for i in range(len(tensors))]
    if len(names) != len(tensors):
        raise bad_argument("%d names for %d tensors" % (len(names), len(tensors)))
    if fmt.single and len(tensors) != 1:
        raise bad_argument("%s holds one tensor, got %d" % (fmt.ext, len(tensors)), "use .npz, .safetensors or .pt")
    extensions.write(file, fmt, dict(zip(names, [t.detach().cpu() for t in tensors])))
    return None
