"""Image loading and ViT preprocessing.

Everything a student uploads passes through :func:`load_image`, which either returns
a plain RGB picture or raises :class:`ImageError` with one friendly sentence.
"""

from __future__ import annotations

import io
import os
from typing import BinaryIO

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError

from .base import ImageError

# 40 MP covers any phone photo; bigger files are almost certainly mistakes or bombs.
MAX_PIXELS = 40_000_000
# Only raster formats a browser can also show; anything else (SVG, PDF, ...) is refused.
# Phone photos saved as MPO need no entry: PIL's JPEG opener detects and returns them.
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")

_NOT_IMAGE = "This file is not an image we can read (PNG, JPEG, WebP, GIF, BMP or TIFF)."
_DAMAGED = "This image file seems damaged or incomplete, so we cannot open it."
_TOO_BIG = f"This image is too large; please use one under {MAX_PIXELS // 1_000_000} megapixels."


def load_image(src: bytes | str | os.PathLike | BinaryIO) -> Image.Image:
    """Open an image and return it as a fully decoded RGB picture.

    Args:
        src: raw bytes, a file path, or a binary file-like object (e.g. an upload).

    Raises:
        ImageError: if the input is empty, not a supported image, damaged or too large.
    """
    if src is None or (isinstance(src, (bytes, bytearray, memoryview, str)) and not len(src)):
        raise ImageError("No image was given, or the file is empty.")
    fp = io.BytesIO(bytes(src)) if isinstance(src, (bytes, bytearray, memoryview)) else src
    try:
        with Image.open(fp, formats=FORMATS) as img:
            # Image.open only parses the header, so this refuses bombs before any decoding.
            if img.width * img.height > MAX_PIXELS:
                raise ImageError(_TOO_BIG)
            img.seek(0)  # first frame of an animation
            img.load()  # decode now so truncated files fail here, not later
            return _to_rgb(ImageOps.exif_transpose(img))
    except ImageError:
        raise
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        # a path is named, so "cat.jpg" in the wrong folder is found at once; a stream has none
        path = isinstance(src, (str, os.PathLike))
        where = f"the image file {os.fspath(src)}" if path else "that image file"
        raise ImageError(f"We could not find or open {where}.") from e
    except UnidentifiedImageError as e:
        raise ImageError(_NOT_IMAGE) from e
    except (Image.DecompressionBombError, Image.DecompressionBombWarning, MemoryError) as e:
        raise ImageError(_TOO_BIG) from e
    except Exception as e:  # decoders raise OSError, SyntaxError, zlib/struct errors, ...
        raise ImageError(_DAMAGED) from e


def _to_rgb(img: Image.Image) -> Image.Image:
    """Convert any PIL mode to 8-bit RGB, putting transparent areas on white."""
    if img.mode.startswith("I"):  # I;16, I;16B, I;16L, I (16/32-bit integer grey)
        img = _grey_to_l(np.asarray(img, dtype=np.float64), _bit_depth(img))
    elif img.mode == "F":
        img = _grey_to_l(np.asarray(img, dtype=np.float64), None)
    if img.mode in ("RGBA", "RGBa", "LA", "PA") or "transparency" in img.info:
        rgba = img.convert("RGBA")
        out = Image.new("RGB", rgba.size, (255, 255, 255))
        out.paste(rgba, mask=rgba.getchannel("A"))
        return out
    return img.convert("RGB")


def _bit_depth(img: Image.Image) -> int | None:
    """Real bit depth of an integer image, or None if unknown (then we stretch)."""
    bits = getattr(img, "tag_v2", {}).get(258)  # TIFF BitsPerSample (e.g. 12-bit scans)
    if bits:
        return int(bits[0] if isinstance(bits, tuple) else bits)
    if img.mode.startswith("I;16"):
        return 16
    arr = np.asarray(img)
    return 16 if arr.size and arr.min() >= 0 and arr.max() <= 65535 else None


def _grey_to_l(a: np.ndarray, bits: int | None) -> Image.Image:
    """Scale high-depth grey values to 0..255 without clipping away the range.

    Integers are divided by their full scale (65535 -> 255, 32768 -> 128). Floats
    (mode F) already inside [0, 1] are read as intensities; any other float range
    (or integers of unknown depth) is min/max stretched so the picture stays visible.
    """
    a = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 1.0)
    if bits:
        a = a / (2**bits - 1)
    elif not (lo >= 0.0 and hi <= 1.0) and hi > lo:
        a = (a - lo) / (hi - lo)
    return Image.fromarray(np.rint(np.clip(a, 0.0, 1.0) * 255).astype(np.uint8))


FILTERS = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR,
           "nearest": Image.Resampling.NEAREST}


def display_crop(img: Image.Image, config) -> Image.Image:
    """The exact RGB square the model sees: resized as the model's preprocessing says, then
    centre-cropped to img_size x img_size.

    Args:
        img: any PIL image (converted to RGB).
        config: a ViTConfig (img_size, resize_mode, resize_to, interpolation); an object with
            only ``img_size`` gets the shorter side resized to img_size, bicubic.
    """
    s = int(config.img_size)
    r = int(getattr(config, "resize_to", s))
    img = img if img.mode == "RGB" else _to_rgb(img)
    w, h = img.size
    if getattr(config, "resize_mode", "shortest") == "square":
        # Hugging Face's processors: both sides to `size` (the aspect ratio is not kept), then a
        # centre crop whose offset is rounded down
        new_w, new_h = r, r
        left, top = (new_w - s) // 2, (new_h - s) // 2
    else:  # timm / torchvision: shorter side = r, the long side truncated; crop offset rounded
        new_w, new_h = (r, int(r * h / w)) if w <= h else (int(r * w / h), r)
        left, top = round((new_w - s) / 2), round((new_h - s) / 2)  # half to even, as theirs
    sx, sy = w / new_w, h / new_h
    # Resizing only the source box that maps to the centre crop gives the same pixels as
    # resize-then-crop (PIL still reads neighbours outside the box for the filter), but
    # never builds the huge intermediate (6 -> 224 would turn 4000 px into ~149,000).
    box = (left * sx, top * sy, (left + s) * sx, (top + s) * sy)
    resample = FILTERS[getattr(config, "interpolation", "bicubic")]
    return img.resize((s, s), resample, box=box, reducing_gap=None)


def describe_preprocessing(config) -> str:
    """One line saying what this model does to a photo, e.g. "resize the shorter side to 248,
    centre-crop 224×224, bicubic, ImageNet mean/std"."""
    s, r = config.img_size, config.resize_to
    if config.resize_mode == "square":
        size = f"resize to {r}×{r} (the aspect ratio is not kept)"
    else:
        size = f"resize the shorter side to {r}"
    crop = f", centre-crop {s}×{s}" if r != s or config.resize_mode == "shortest" else ""
    stats = {(0.5, 0.5, 0.5): "mean 0.5 / std 0.5 per channel",
             (0.485, 0.456, 0.406): "ImageNet mean/std"}
    norm = stats.get(tuple(round(m, 3) for m in config.mean), f"mean {config.mean}")
    if norm == "ImageNet mean/std" and tuple(round(v, 3) for v in config.std) != (
            0.229, 0.224, 0.225):
        norm = f"mean {config.mean}, std {config.std}"
    return f"{size}{crop}, {config.interpolation}, {norm}"


def to_tensor(img: Image.Image) -> torch.Tensor:
    """RGB PIL image -> float32 tensor [3, H, W] with values in [0, 1]."""
    arr = np.asarray(img.convert("RGB"), dtype=np.float32) / 255.0
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


def _stats(x: torch.Tensor, config) -> tuple[torch.Tensor, torch.Tensor]:
    mean = torch.tensor(config.mean, dtype=x.dtype, device=x.device).view(3, 1, 1)
    std = torch.tensor(config.std, dtype=x.dtype, device=x.device).view(3, 1, 1)
    return mean, std


def normalize(x: torch.Tensor, config) -> torch.Tensor:
    """(x - mean) / std per channel; x is [3, H, W] or [B, 3, H, W] in [0, 1]."""
    mean, std = _stats(x, config)
    return (x - mean) / std


def denormalize(x: torch.Tensor, config) -> torch.Tensor:
    """Inverse of :func:`normalize`, clamped to [0, 1] for drawing."""
    mean, std = _stats(x, config)
    return (x * std + mean).clamp(0.0, 1.0)


def preprocess(img: Image.Image, config) -> torch.Tensor:
    """Model input [1, 3, S, S] float32: :func:`display_crop`, to [0, 1], normalised.

    Args:
        img: a PIL image, usually from :func:`load_image`.
        config: object with ``img_size`` (int), ``mean`` and ``std`` (3 floats each).
    """
    return normalize(to_tensor(display_crop(img, config)), config).unsqueeze(0)
