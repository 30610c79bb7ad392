"""An image folder in torchvision's ImageFolder layout: ROOT/CLASS/…/IMAGE, one sub-folder per class.

Classes are the sub-folders' names, sorted (class index = position); images are found as
torchvision's make_dataset finds them (os.walk following links, sorted, by extension). Item i is
(image, class index): the image as RGB, a float32 tensor C×H×W in [0, 1] (what ToTensor() gives
after ImageFolder's default loader), the index int64. Images are read with Pillow (the `images`
extra) when an item is asked for; the dataset holds only the paths.
"""
import os

import numpy as np
import torch

from torchsh.data.datasets import TensorField
from torchsh.errors import TorchshError
from torchsh.formats.imagefile import pillow

# torchvision.datasets.folder.IMG_EXTENSIONS
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def open_folder(root):
    """([ImageField, class field], classes) of an ImageFolder layout."""
    pillow()  # a missing extra is named now, not in the middle of an epoch
    try:
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    except OSError as e:
        raise TorchshError("file_error", "cannot read the folder %s: %s" % (root, e.strerror or e)) from None
    if not classes:
        raise TorchshError("file_error", "%s has no class sub-folders" % root,
                           "an image folder holds one sub-folder per class: ROOT/cat/1.png, ROOT/dog/2.png")
    paths, targets = [], []
    for index, name in enumerate(classes):
        found = _images_under(os.path.join(root, name))
        if not found:
            raise TorchshError("file_error", "class folder %s holds no images" % os.path.join(root, name),
                               "image files end in %s" % " ".join(IMG_EXTENSIONS))
        paths += found
        targets += [index] * len(found)
    return [ImageField("image", paths), TensorField("class", torch.tensor(targets, dtype=torch.int64))], classes


def _images_under(folder):
    out = []
    for where, _, names in sorted(os.walk(folder, followlinks=True)):
        found = [os.path.join(where, n) for n in sorted(names) if n.lower().endswith(IMG_EXTENSIONS)]
        out += [p for p in found if os.path.isfile(p)]  # a FIFO named x.png would block its reader forever
    return out


class ImageField:
    """The images, read one per item: RGB, float32 C×H×W in [0, 1]."""

    mapped_bytes = 0

    def __init__(self, name, paths):
        self.name, self.paths = name, paths

    def __len__(self):
        return len(self.paths)

    def item(self, i):
        path = self.paths[i]
        try:
            with open(path, "rb") as f:
                image = pillow().open(f).convert("RGB")
        except OSError as e:  # PIL.UnidentifiedImageError is an OSError
            raise TorchshError("file_error", "cannot read the image %s: %s" % (path, e)) from None
        pixels = torch.from_numpy(np.array(image, dtype=np.uint8))  # H×W×C
        return pixels.permute(2, 0, 1).contiguous().to(torch.float32).div(255)

    def held_tensors(self):
        return []
