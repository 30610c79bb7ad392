"""PNG and JPEG files as tensors (`torch load x.png`): C×H×W uint8, as torchvision.io.decode_image gives them
(ImageReadMode.UNCHANGED, no EXIF rotation): gray is 1 channel, gray with alpha 2, RGB 3, RGBA 4; a palette
image expands to RGB (RGBA when it has transparency); a 16-bit gray PNG is uint16. Read with Pillow (the
`images` extra); `torch value T --format png` writes the other way.
"""
import numpy as np
import torch

from torchsh.errors import TorchshError

EXTENSIONS = (".png", ".jpg", ".jpeg")
# Pillow's mode -> the mode whose pixels are the tensor's channels (as decode_image keeps them)
_KEPT = {"L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA", "1": "L", "PA": "RGBA", "I;16": "I;16"}


def pillow():
    """PIL.Image, or missing_extra naming the extra that brings it."""
    try:
        from PIL import Image
    except ImportError:
        raise TorchshError("missing_extra", "reading images needs Pillow", "pip install 'torchsh[images]'") from None
    return Image


def read(path):
    """{"": the image as a C×H×W tensor}."""
    image_module = pillow()
    try:
        with open(path, "rb") as f, image_module.open(f) as image:
            image.load()
            mode = _KEPT.get(image.mode)
            if image.mode == "P":
                mode = "RGBA" if "transparency" in image.info else "RGB"
            pixels = np.array(image.convert(mode or "RGB") if mode != image.mode else image)
    except image_module.DecompressionBombError as e:  # a small file claiming billions of pixels
        raise TorchshError("file_error", "cannot read %s: %s" % (path, e)) from None
    if pixels.dtype != np.uint8 and image.mode == "I;16":
        pixels = pixels.astype(np.uint16)
    pixels = pixels[:, :, None] if pixels.ndim == 2 else pixels
    return {"": torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1)))}
