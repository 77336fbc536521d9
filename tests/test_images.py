"""Tests for vit_core.io.images and vit_core.patches; every bad or odd file is built here, none
are committed."""

from __future__ import annotations

import io
import struct
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageFile

from tests.support import BAD_INPUTS, encode, raw_png
from vit_core.io.images import (
    MAX_PIXELS,
    ImageError,
    denormalize,
    display_crop,
    load_image,
    preprocess,
    to_tensor,
)
from vit_core.patches import patchify, unpatchify

CFG = SimpleNamespace(img_size=224, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
RED, BLUE, WHITE = (255, 0, 0), (0, 0, 255), (255, 255, 255)


# ---------------------------------------------------------------- helpers
def assert_friendly(excinfo: pytest.ExceptionInfo) -> str:
    msg = str(excinfo.value)
    assert msg and "\n" not in msg and msg.endswith(".")
    for bad in ("Traceback", "Error", 'File "', "errno", "PIL"):
        assert bad not in msg
    return msg


def close(px, want, tol=3) -> bool:
    return all(abs(int(a) - int(b)) <= tol for a, b in zip(px, want, strict=True))


def split_image(w=40, h=20, top=RED, bottom=BLUE) -> Image.Image:
    img = Image.new("RGB", (w, h), bottom)
    img.paste(top, (0, 0, w, h // 2))
    return img


# ---------------------------------------------------------------- bad inputs
GOOD_JPEG = encode(Image.effect_noise((128, 128), 60).convert("RGB"), "JPEG")


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_bytes_refused(name):
    with pytest.raises(ImageError) as ei:
        load_image(BAD_INPUTS[name])
    assert_friendly(ei)


@pytest.mark.parametrize("name", ["text", "svg", "pdf", "truncated_png"])
def test_bad_files_on_disk_refused(tmp_path, name):
    path = tmp_path / "upload.png"  # wrong extension on purpose: content decides
    path.write_bytes(BAD_INPUTS[name])
    with pytest.raises(ImageError) as ei:
        load_image(path)
    assert_friendly(ei)
    with pytest.raises(ImageError):
        load_image(str(path))


@pytest.mark.parametrize("src", [None, "", bytearray()])
def test_empty_inputs(src):
    with pytest.raises(ImageError) as ei:
        load_image(src)
    assert_friendly(ei)


def test_missing_file(tmp_path):
    with pytest.raises(ImageError) as ei:
        load_image(tmp_path / "nope.png")
    assert_friendly(ei)


def test_not_an_image_message_names_formats():
    with pytest.raises(ImageError) as ei:
        load_image(BAD_INPUTS["svg"])
    assert "PNG" in assert_friendly(ei)


def test_error_is_chained_and_a_value_error():
    with pytest.raises(ValueError) as ei:
        load_image(BAD_INPUTS["truncated_jpeg"])
    assert isinstance(ei.value, ImageError) and ei.value.__cause__ is not None


# ---------------------------------------------------------------- bombs
@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
@pytest.mark.parametrize("side", [(40_000, 40_000), (12_000, 8_000), (10_000, 5_000)])
def test_decompression_bomb_refused_before_decoding(side, monkeypatch):
    # 40000^2 trips PIL's bomb error, 12000x8000 only its warning, 10000x5000 only our cap.
    bomb = raw_png(*side, 8, 0, b"\x00" * 100)
    resource = pytest.importorskip("resource")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    decoded = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: decoded.append(self.size))
    with pytest.raises(ImageError) as ei:
        load_image(bomb)
    assert decoded == []  # refused from the header, before any pixel is decoded
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mib < 30  # decoding would need 50 MB .. 1.6 GB
    assert "too large" in assert_friendly(ei)
    assert side[0] * side[1] > MAX_PIXELS


# ---------------------------------------------------------------- colour modes
def test_cmyk_jpeg_cyan():
    data = encode(Image.new("CMYK", (16, 16), (255, 0, 0, 0)), "JPEG", quality=95)
    img = load_image(data)
    assert img.mode == "RGB"
    assert close(img.getpixel((8, 8)), (0, 255, 255), tol=6)


def test_16bit_grey_png_scaled_not_clipped():
    rows = b"\x00" + struct.pack(">3H", 0, 32768, 65535)
    img = load_image(raw_png(3, 1, 16, 0, rows))
    assert img.mode == "RGB"
    assert [img.getpixel((x, 0))[0] for x in range(3)] == [0, 128, 255]


def test_16bit_rgb_png():
    rows = b"\x00" + b"".join(struct.pack(">3H", v, v, v) for v in (0, 32768, 65535))
    img = load_image(raw_png(3, 1, 16, 2, rows))
    assert [img.getpixel((x, 0)) for x in range(3)] == [(0,) * 3, (128,) * 3, (255,) * 3]


def test_16bit_and_float_tiff():
    grey16 = Image.fromarray(np.array([[0, 32768, 65535]], dtype=np.uint16))
    img = load_image(encode(grey16, "TIFF"))
    assert [img.getpixel((x, 0))[0] for x in range(3)] == [0, 128, 255]
    # Mode F in [0, 1] is read as intensity; any other range is min/max stretched.
    unit = Image.fromarray(np.array([[0.0, 0.5, 1.0]], dtype=np.float32))
    assert [load_image(encode(unit, "TIFF")).getpixel((x, 0))[0] for x in range(3)] == [
        0,
        128,
        255,
    ]
    wide = Image.fromarray(np.array([[-10.0, 0.0, 10.0]], dtype=np.float32))
    assert [load_image(encode(wide, "TIFF")).getpixel((x, 0))[0] for x in range(3)] == [
        0,
        128,
        255,
    ]


def test_rgba_transparent_becomes_white():
    img = Image.new("RGBA", (20, 10), (0, 255, 0, 0))  # invisible green
    img.paste((255, 0, 0, 255), (10, 0, 20, 10))
    out = load_image(encode(img, "PNG"))
    assert out.mode == "RGB"
    assert out.getpixel((2, 5)) == WHITE and out.getpixel((15, 5)) == RED


def test_la_png_half_transparent():
    out = load_image(encode(Image.new("LA", (4, 4), (0, 128)), "PNG"))
    assert close(out.getpixel((1, 1)), (127, 127, 127), tol=2)


def test_palette_png_with_transparency_index():
    img = Image.new("P", (10, 10), 0)
    img.putpalette([0, 255, 0, 255, 0, 0] + [0] * 762)  # index 0 green, 1 red
    img.paste(1, (5, 0, 10, 10))
    out = load_image(encode(img, "PNG", transparency=0))
    assert out.getpixel((1, 1)) == WHITE and out.getpixel((8, 8)) == RED


def test_animated_gif_takes_first_frame():
    frames = [Image.new("RGB", (8, 8), c) for c in (RED, BLUE)]
    data = encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100)
    assert Image.open(io.BytesIO(data)).n_frames == 2
    assert load_image(data).getpixel((4, 4)) == RED


@pytest.mark.parametrize("mode", ["1", "L", "P", "LAB", "CMYK", "I", "I;16", "F"])
def test_tiff_modes_become_rgb(mode):
    out = load_image(encode(Image.new(mode, (5, 3)), "TIFF"))
    assert out.mode == "RGB" and out.size == (5, 3)


@pytest.mark.parametrize(
    "mode", ["1", "L", "P", "PA", "LA", "RGBa", "YCbCr", "HSV", "LAB", "I;16B", "RGBX"]
)
def test_in_memory_modes_become_rgb(mode):
    # Modes PIL cannot round-trip through a file still reach display_crop directly.
    crop = display_crop(Image.new(mode, (5, 3)), SimpleNamespace(img_size=4))
    assert crop.mode == "RGB" and crop.size == (4, 4)


# ---------------------------------------------------------------- geometry
@pytest.mark.parametrize("orientation, red_side", [(6, "right"), (8, "left")])
def test_exif_rotation_applied(orientation, red_side):
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = encode(split_image(40, 20), "JPEG", exif=exif.tobytes(), quality=95)
    img = load_image(data)
    assert img.size == (20, 40)  # swapped
    left, right = img.getpixel((2, 20)), img.getpixel((17, 20))
    red, blue = (right, left) if red_side == "right" else (left, right)
    assert close(red, RED, tol=40) and close(blue, BLUE, tol=40)


@pytest.mark.parametrize("size", [(1, 1), (4000, 6), (6, 4000)])
def test_tiny_and_extreme_aspect(size):
    img = load_image(encode(Image.new("RGB", size, RED), "PNG"))
    assert img.size == size
    x = preprocess(img, CFG)
    assert x.shape == (1, 3, 224, 224) and torch.isfinite(x).all()
    assert close(display_crop(img, CFG).getpixel((100, 100)), RED, tol=1)


def test_huge_but_legal_jpeg():
    big = Image.new("RGB", (6000, 4000), (30, 60, 90))
    img = load_image(encode(big, "JPEG", quality=80))
    assert img.size == (6000, 4000)
    x = preprocess(img, CFG)
    assert x.shape == (1, 3, 224, 224) and x.dtype == torch.float32


@pytest.mark.parametrize("fmt", ["BMP", "TIFF", "WEBP", "PNG", "GIF"])
def test_lossless_round_trips(fmt):
    src = Image.new("RGB", (12, 7), RED)
    src.paste(BLUE, (0, 0, 6, 7))
    kw = {"lossless": True} if fmt == "WEBP" else {}
    out = load_image(io.BytesIO(encode(src, fmt, **kw)))  # file-like input
    assert out.mode == "RGB" and out.size == (12, 7)
    assert out.getpixel((1, 1)) == BLUE and out.getpixel((10, 5)) == RED


def test_mpo_phone_photo_first_frame():
    frames = [Image.new("RGB", (8, 8), c) for c in (RED, BLUE)]
    data = encode(frames[0], "MPO", save_all=True, append_images=frames[1:])
    assert close(load_image(data).getpixel((4, 4)), RED)


def test_jpeg_from_path(tmp_path):
    path = tmp_path / "photo.jpg"
    path.write_bytes(GOOD_JPEG)
    assert load_image(path).size == (128, 128)


# ---------------------------------------------------------------- preprocessing
def test_preprocess_uniform_grey_matches_hand_math():
    cfg = SimpleNamespace(img_size=16, mean=(0.5, 0.4, 0.3), std=(0.25, 0.2, 0.1))
    x = preprocess(Image.new("RGB", (10, 7), (128, 128, 128)), cfg)
    assert x.shape == (1, 3, 16, 16) and x.dtype == torch.float32
    for c in range(3):
        want = (128 / 255 - cfg.mean[c]) / cfg.std[c]
        assert torch.allclose(x[0, c], torch.full((16, 16), want), atol=1e-5)
    back = denormalize(x[0], cfg)
    assert torch.allclose(back, torch.full_like(back, 128 / 255), atol=1e-6)


def test_preprocess_is_to_tensor_of_display_crop():
    img = Image.effect_noise((300, 200), 50).convert("RGB")
    x = preprocess(img, CFG)[0]
    t = to_tensor(display_crop(img, CFG))
    assert t.min() >= 0 and t.max() <= 1
    assert torch.allclose(denormalize(x, CFG), t, atol=1e-6)


def test_display_crop_is_centre_crop():
    rng = np.random.default_rng(0)
    img = Image.fromarray(rng.integers(0, 256, (200, 300, 3), dtype=np.uint8))
    crop = display_crop(img, CFG)
    assert crop.size == (224, 224) and crop.mode == "RGB"
    # Reference: resize shorter side to 224 (300x200 -> 336x224), crop the middle.
    ref = img.resize((336, 224), Image.Resampling.BICUBIC, reducing_gap=None)
    ref = ref.crop((56, 0, 280, 224))
    diff = np.abs(np.asarray(crop, dtype=int) - np.asarray(ref, dtype=int))
    assert diff.max() <= 1
    # Already the right size: untouched.
    same = img.crop((0, 0, 224, 224))
    assert np.array_equal(np.asarray(display_crop(same, CFG)), np.asarray(same))


def test_display_crop_centre_of_marked_image():
    img = Image.new("RGB", (300, 100), BLUE)
    img.paste(RED, (100, 0, 200, 100))  # the centre third is red
    crop = display_crop(img, SimpleNamespace(img_size=100))
    assert crop.getpixel((2, 50)) == RED and crop.getpixel((97, 50)) == RED


# ---------------------------------------------------------------- patches
def test_patchify_round_trip_and_order():
    x = torch.arange(2 * 8 * 12, dtype=torch.float32).reshape(2, 8, 12)
    p = patchify(x, 4)
    assert p.shape == (6, 2 * 16)
    # Patch 1 is the second patch of the first row; its first entry is channel 0, (0, 4).
    assert p[1, 0] == x[0, 0, 4] and p[3, 0] == x[0, 4, 0] and p[0, 16] == x[1, 0, 0]
    assert torch.equal(unpatchify(p, 4, grid=(2, 3)), x)
    sq = torch.randn(3, 8, 8)
    assert torch.equal(unpatchify(patchify(sq, 4), 4), sq)  # default square grid
    batch = torch.randn(5, 3, 8, 12)
    pb = patchify(batch, 4)
    assert pb.shape == (5, 6, 48) and torch.equal(unpatchify(pb, 4, grid=(2, 3)), batch)


def test_patchify_matches_conv2d():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 32, 48, dtype=torch.float64, generator=g)
    w = torch.randn(7, 3, 16, 16, dtype=torch.float64, generator=g)
    b = torch.randn(7, dtype=torch.float64, generator=g)
    conv = F.conv2d(x, w, b, stride=16).flatten(2).transpose(1, 2)
    assert torch.allclose(patchify(x, 16) @ w.reshape(7, -1).T + b, conv, atol=1e-10)
    assert torch.allclose(patchify(x[0], 16) @ w.reshape(7, -1).T + b, conv[0], atol=1e-10)


def test_patchify_rejects_bad_sizes():
    with pytest.raises(ValueError, match="divisible"):
        patchify(torch.zeros(3, 30, 32), 16)
    with pytest.raises(ValueError):
        unpatchify(torch.zeros(5, 12), 2)  # 5 patches are not a square grid


# ---------------------------------------------------------------- fuzzing
def _seed_files() -> list[bytes]:
    img = Image.new("RGB", (6, 5), RED)
    return [encode(img, f) for f in ("PNG", "GIF", "BMP", "TIFF", "JPEG", "WEBP")]


SEEDS = _seed_files()


@st.composite
def fuzzed_bytes(draw) -> bytes:
    """Random bytes, or a real small image with some bytes flipped and a random cut."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=2000))
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 6))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data[: draw(st.integers(0, len(data)))])


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
@settings(max_examples=200, deadline=None)
@given(fuzzed_bytes())
def test_fuzz_only_rgb_or_image_error(data):
    try:
        img = load_image(data)
    except ImageError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert isinstance(img, Image.Image) and img.mode == "RGB"
