"""WebDataset shards (`torch data open 'train-{000..127}.tar'`): tar files whose members are grouped into
samples by key, one field per extension, read one item at a time.

At open each shard's headers are indexed with the stdlib tarfile (member name, where its data starts, its size;
no data is read). As webdataset does, a member's key is its path up to the first dot of its basename and the
rest is its extension, the field's name (`000017.png`, `000017.cls` -> one sample, fields png and cls). Fields
come in a fixed order: the extensions sorted, the target last (--target EXT; by default cls, else label, when
the samples have it); --columns picks extensions. Each shard is a piece (datasets.py's piece-backed fields:
`piece_starts`), so a piece-aware sampler reads a shard through before the next.

Item i reads each of its members with one pread and decodes it by extension:
cls cls2 label index idx   an integer (text) -> int64 scalar
json                       numbers (a number or nested lists of them) -> a tensor (ints int64, else float32)
npy                        np.load without pickles -> a tensor
safetensors                the file's single tensor
png jpg jpeg webp          Pillow (the `images` extra), RGB, float32 C×H×W in [0, 1], as images.py reads images
Text (txt, text) is not a tensor: refused unless --columns leaves it out. Pickles (pth pyd pickle pkl) are
never read: refused by name. A sample missing a field, a damaged tar and a missing shard are file_error naming
the shard and the member or key.
"""
import io
import json
import os
import re
import tarfile

import numpy as np
import torch

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats.flags import column_group
from torchsh.formats.imagefile import pillow

INTEGERS = ("cls", "cls2", "label", "index", "idx")
IMAGES = ("png", "jpg", "jpeg", "webp")
TEXT = ("txt", "text")
PICKLES = ("pth", "pyd", "pickle", "pkl")
DECODED = INTEGERS + IMAGES + ("json", "npy", "safetensors")
_KEY = re.compile(r"^((?:.*/|)[^./]+)\.([^/]*)$")  # webdataset's base_plus_ext: key up to the basename's first dot


def tar_fields(path, options):
    """The fields of one shard, or of a list of shards read one after another (a pattern's expansion)."""
    paths = [path] if isinstance(path, str) else list(path)
    _refuse_flags(options)
    shards = [_index(p) for p in paths]
    names = sorted({ext for shard in shards for sample in shard[1].values() for ext in sample})
    chosen = _chosen(names, options, paths[0])
    starts = torch.tensor([0] + [len(s[1]) for s in shards], dtype=torch.int64).cumsum(0)
    index = _TarIndex([s[0] for s in shards], starts)
    for ext in chosen:
        index.add(ext, [_member(shard, key, sample, ext) for shard in shards for key, sample in shard[1].items()])
    return [TarField(ext, index) for ext in chosen]


def _refuse_flags(options):
    for name in ("dtype", "target_dtype", "onehot", "header", "no_header", "delimiter"):
        if getattr(options, name, None) not in (None, False):
            raise bad_argument("--%s does not apply to .tar shards (each field is decoded by its extension)" % name,
                               "`torch data transform D --dtype …` converts any field")


def _index(path):
    """(path, {key: {ext: (offset, size)}}) of one shard, keys in the order the tar holds them."""
    fileio.regular_file(path)
    samples = {}
    try:
        with tarfile.open(path, mode="r:") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                found = _KEY.match(member.name)
                if found is None:  # no extension: no field of any sample (webdataset skips it too)
                    continue
                key, ext = found.group(1), found.group(2).lower()
                samples.setdefault(key, {})[ext] = (member.offset_data, member.size)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise TorchshError("file_error", "%s is not a readable tar shard: %s" % (path, fileio.first_line(e)),
                           "a WebDataset shard is an uncompressed tar (tar cf, webdataset.TarWriter)") from None
    if not samples:
        raise TorchshError("file_error", "%s holds no samples (members named KEY.EXT)" % path)
    return path, samples


def _chosen(names, options, where):
    """The extensions read as fields, in order: --columns (or all, sorted), the target last; refused kinds named."""
    target = options.target or next((t for t in ("cls", "label") if t in names), None)
    if options.columns is not None:
        groups = options.columns if isinstance(options.columns, list) else [options.columns]
        chosen = [c.lower() for g in groups for c in column_group(g)]
    else:
        chosen = list(names)
    chosen = [c for c in chosen if c != target] + ([target] if target is not None else [])
    for ext in chosen:
        if ext not in names:
            raise bad_argument("%s has no field %r" % (where, ext), "its samples hold: %s" % " ".join(names))
        _check_decodable(ext, names)
    return chosen


def _check_decodable(ext, names):
    if ext in PICKLES:
        raise bad_argument("field %r is a pickle, which is never unpickled" % ext,
                           "store tensors as .npy or .safetensors members; --columns leaves %s out" % ext)
    if ext in TEXT:
        raise bad_argument("field %r is text, which is not a tensor" % ext,
                           "--columns leaves it out: --columns %s" % ",".join(n for n in names if n not in TEXT))
    if ext not in DECODED:
        raise bad_argument("field %r: no decoder for .%s members" % (ext, ext),
                           "the fields decoded are %s; --columns leaves the others out" % " ".join(DECODED))
    if ext in IMAGES:
        pillow()  # a missing extra is named now, not in the middle of an epoch


def _member(shard, key, sample, ext):
    if ext not in sample:
        raise TorchshError("file_error", "%s: sample %r has no .%s member (its members: %s)"
                           % (shard[0], key, ext, " ".join(sorted(sample))),
                           "every sample needs every field read; --columns picks the fields")
    return sample[ext] + (key,)


class _TarIndex:
    """Where each field's members lie: shard paths, the first item of each shard (and the end), per field each item's
    (offset, size) and key. Open files are per process (dropped when pickled: a worker opens its own)."""

    def __init__(self, paths, starts):
        self.paths, self.starts, self.fields, self.keys, self._files = paths, starts, {}, None, {}

    def add(self, ext, members):
        self.fields[ext] = np.array([(offset, size) for offset, size, _ in members], dtype=np.int64).reshape(-1, 2)
        if self.keys is None:
            self.keys = [key for _, _, key in members]

    def read(self, ext, i):
        """(bytes of item i's .ext member, the member's name for messages)."""
        shard = int(torch.searchsorted(self.starts, i, right=True)) - 1
        offset, size = (int(v) for v in self.fields[ext][i])
        path, member = self.paths[shard], "%s.%s" % (self.keys[i], ext)
        try:
            data = os.pread(self._file(shard), size, offset)
        except OSError as e:
            raise TorchshError("file_error", "cannot read %s member %s: %s" % (path, member, e.strerror or e)) from None
        if len(data) != size:
            raise TorchshError("file_error", "%s was cut short: member %s ends past the file's end" % (path, member),
                               "write the shard again and open it again")
        return data, "%s member %s" % (path, member)

    def _file(self, shard):
        fd = self._files.get(shard)
        if fd is None:
            try:
                fd = os.open(self.paths[shard], os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            except OSError as e:
                raise fileio.file_error(self.paths[shard], "read", e) from None
            self._files[shard] = fd
        return fd

    def __getstate__(self):
        return dict(self.__dict__, _files={})

    def __del__(self):
        for fd in getattr(self, "_files", {}).values():
            os.close(fd)


class TarField:
    """One extension of the shards' samples: item i is sample i's member, decoded."""

    mapped_bytes = 0

    def __init__(self, name, index):
        self.name, self.index = name, index

    @property
    def piece_starts(self):
        return self.index.starts[:-1]

    def __len__(self):
        return int(self.index.starts[-1])

    def item(self, i):
        data, where = self.index.read(self.name, i)
        return decode(self.name, data, where)

    def items(self, indices):
        return [self.item(int(i)) for i in indices]

    def rows(self, index):
        """The items at index (a slice, or an int64 tensor of indices) stacked, as collate stacks them."""
        indices = range(len(self))[index] if isinstance(index, slice) else index.tolist()
        return torch.stack(self.items(indices))

    def held_tensors(self):
        return []


def decode(ext, data, where):
    """A member's bytes as a tensor, by its extension; file_error naming WHERE when they are not that."""
    try:
        if ext in INTEGERS:
            return torch.tensor(int(data.decode("utf-8").strip()), dtype=torch.int64)
        if ext == "json":
            return _numbers(json.loads(data), where)
        if ext == "npy":
            array = fileio.npy_from_bytes(data, where, "file_error")
            return torch.from_numpy(array.astype(array.dtype.newbyteorder("="), copy=True))
        if ext == "safetensors":
            return _single_tensor(data, where)
        return _image(data)
    except TorchshError:
        raise
    except (ValueError, OSError, TypeError, OverflowError) as e:  # PIL.UnidentifiedImageError is an OSError
        raise TorchshError("file_error", "%s is not a readable .%s: %s" % (where, ext, fileio.first_line(e))) from None


def _numbers(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        raise TorchshError("file_error", "%s holds %s, not numbers" % (where, type(value).__name__),
                           "a .json field holds a number or lists of numbers")
    tensor = torch.tensor(value)
    return tensor if tensor.dtype in (torch.int64, torch.float32) else tensor.to(torch.float32)


def _single_tensor(data, where):
    from safetensors.torch import load
    try:
        tensors = load(bytes(data))
    except Exception as e:  # SafetensorError: not a safetensors file
        raise TorchshError("file_error", "%s is not a readable .safetensors: %s"
                           % (where, fileio.first_line(e))) from None
    if len(tensors) != 1:
        raise TorchshError("file_error", "%s holds %d tensors, not one (%s)" % (where, len(tensors),
                           " ".join(sorted(tensors)[:8])), "store one tensor per .safetensors member")
    return next(iter(tensors.values()))


def _image(data):
    image = pillow().open(io.BytesIO(data)).convert("RGB")
    pixels = torch.from_numpy(np.array(image, dtype=np.uint8))  # H×W×C
    return pixels.permute(2, 0, 1).contiguous().to(torch.float32).div(255)
