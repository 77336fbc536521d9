"""Plain helpers the test modules share (no tests here; fixtures are in conftest.py).

A test module never imports another test module: what two of them need lives here.
"""

from __future__ import annotations

import base64
import io
import json
import os
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest

from tools.browser import free_port
from ui import keys
from ui.stages.why import jobs
from vit_core import ViT, ViTConfig

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
FIXTURES = Path(__file__).parent / "fixtures"
HUB = FIXTURES / "hub"  # the fixture repos, one folder per ORG/NAME (tools/make_fixtures.py)


# ---------------------------------------------------------------- small models
SMALL = ViTConfig(img_size=32, patch_size=8, embed_dim=48, depth=2, num_heads=3, num_classes=5)
TEXT = ViTConfig(img_size=32, patch_size=8, embed_dim=48, depth=2, num_heads=3, num_classes=0,
                 class_token=False, global_pool="avg", vocab_size=11, max_text_len=6,
                 default_mask="prefix")


def randomised(config: ViTConfig, seed: int = 0) -> ViT:
    """A model whose every parameter is random and matters (not the small timm init)."""
    torch.manual_seed(seed)
    model = ViT(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 0.1 if name.endswith("bias") else 0.3
            p.copy_(torch.randn_like(p) * scale + (1.0 if "norm" in name and "weight" in name
                                                   else 0.0))
    return model


def torch_flops(config: ViTConfig, n_text: int = 0) -> int:
    """Count with torch's FlopCounterMode on a real forward pass (meta tensors: no compute)."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = ViT(config)
        x = torch.empty(1, config.in_chans, config.img_size, config.img_size)
        ids = torch.zeros(1, n_text, dtype=torch.long) if n_text else None
    with FlopCounterMode(display=False) as counter:
        model(x, ids)
    return counter.get_total_flops()


def rewrite_info(path, info_json: str) -> None:
    """Replace a saved checkpoint's `vit_explainer.info` metadata (keeps its tensors)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), "pt") as f:
        meta, state = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    save_file(state, str(path), metadata={**meta, "vit_explainer.info": info_json})


# ---------------------------------------------------------------- images
def photo_bytes(w=640, h=480, fmt="JPEG") -> bytes:
    """A smooth colour gradient, w x h, encoded as `fmt`."""
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([xx * 255 // w, yy * 255 // h, np.full_like(xx, 90)], -1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format=fmt)
    return buf.getvalue()


def encode(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def raw_png(w: int, h: int, depth: int, color: int, rows: bytes) -> bytes:
    """A hand-made PNG: IHDR with any claimed size, then one IDAT with ``rows``."""
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(rows))
        + png_chunk(b"IEND", b"")
    )


_GOOD_PNG = encode(Image.new("RGB", (64, 64), (255, 0, 0)), "PNG")
_GOOD_JPEG = encode(Image.effect_noise((128, 128), 60).convert("RGB"), "JPEG")
BAD_INPUTS = {  # bytes no image loader may accept
    "zero_bytes": b"",
    "truncated_png": _GOOD_PNG[: len(_GOOD_PNG) // 2],
    "truncated_jpeg": _GOOD_JPEG[: len(_GOOD_JPEG) // 2],
    "text": b"hello, this is a text file, not a picture\n" * 5,
    "svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    b'<rect width="10" height="10" fill="red"/></svg>',
    "pdf": b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF",
    "bmp_magic_only": b"BM" + b"\x00" * 10,
}


# ---------------------------------------------------------------- the app under AppTest
def open_app(page: str | None = None, model: str | None = None, mask: str | None = None, *,
             params: dict | None = None, state: dict | None = None,
             upload: bytes | tuple | None = None, no_error: bool = False,
             same_model: bool = True, timeout: float = 300) -> AppTest:
    """Run app.py under AppTest: the one way the tests open the app.

    `page` is the `?page=` slug; `params` more query parameters (a shared link; `?model=` there
    opens that model as a link would). `model` is a picker name, a checkpoint or fixture folder
    path (put on the session's loaded list first), or an `hf:` name; `mask` the sidebar mask;
    `state` more session values by key. `upload` is sent through the sidebar's uploader after
    the first run: bytes (as photo.jpg) or (name, bytes, mime type).

    Fails on an exception, on an st.error when `no_error`, and (unless `same_model` is False)
    when the app silently ran another model than `model` or the link's `?model=` (a session
    value the picker does not offer is replaced by the default)."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    if page:
        at.query_params["page"] = page
    if model:
        if "/" in model and not model.startswith("hf:"):
            at.session_state[keys.LOADED_PATHS] = [model]
        at.session_state[keys.MODEL] = model
    if mask:
        at.session_state[keys.MASK] = mask
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    if upload is not None:
        name, data, mime = upload if isinstance(upload, tuple) else ("photo.jpg", upload,
                                                                     "image/jpeg")
        at.sidebar.file_uploader[0].upload(name, data, mime)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    if no_error:
        assert not at.error, [e.value for e in at.error]
    ran = (params or {}).get(keys.MODEL) or model
    if ran and same_model:
        assert at.session_state[keys.MODEL] == ran, "the app ran another model than asked for"
    return at


# ---------------------------------------------------------------- reading what a page shows
def charts(at: AppTest) -> dict[str, dict]:
    """Chart title -> the chart's plotly JSON (data and layout), in page order; not a phone's
    copy of a figure (ui/phone.both: the same figure laid out for a narrow screen)."""
    out = {}
    for el in at.get("plotly_chart"):
        if el.proto.id.endswith(keys.PHONE_SUFFIX):
            continue
        spec = json.loads(el.proto.spec)
        out[spec["layout"].get("title", {}).get("text", f"untitled {len(out)}")] = spec
    return out


def chart_titled(at: AppTest, starts: str) -> dict:
    """The one chart whose title starts with `starts`."""
    found = [s for t, s in charts(at).items() if t.startswith(starts)]
    assert len(found) == 1, (starts, list(charts(at)))
    return found[0]


def page_text(at: AppTest) -> str:
    """Everything the page says in words: markdown, captions, notes, warnings, image captions."""
    parts = [m.value for kind in ("markdown", "caption", "info", "warning", "subheader")
             for m in getattr(at, kind)]
    parts += [im.caption for el in at.get("image") for im in el.proto.imgs]
    return "\n".join(parts)


def note(at: AppTest) -> str:
    """What the page's steps say: their words, one after another."""
    return " ".join(i.value for i in at.info)


def arr(v) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict):
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        return a.reshape([int(n) for n in str(shape).split(",")]) if shape else a
    return np.asarray(v)


def softmax64(z) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reveal(slug: str, model: str, extra: dict | None = None) -> tuple[list[str], AppTest]:
    """The stage's page with every step's answer revealed: (the answers shown, in step order,
    the app)."""
    at = open_app(model=model, params={"page": slug, **(extra or {})})
    toggles = [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
    assert toggles, "no question to reveal"
    before = {i.value for i in at.info}
    for t in toggles:
        t.set_value(True)
    at.run()
    assert not at.exception
    return [i.value for i in at.info if i.value not in before], at


TIMM_384 = "made-here/vit-p32-384-in1k"  # written by write_timm_repo, not a fixture folder


def write_timm_repo(folder: Path) -> None:
    """A timm-format repo at 384 px with patch 32 and a 1000-class head (random weights)."""
    from safetensors.torch import save_file

    config = ViTConfig(img_size=384, patch_size=32, embed_dim=48, depth=2, num_heads=3,
                       num_classes=1000)
    state = {k: v.contiguous() for k, v in randomised(config).state_dict().items()}
    folder.mkdir(parents=True)
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "architecture": "vit_tiny_patch32_384", "num_classes": 1000, "global_pool": "token",
        "model_args": {"num_heads": 3},
        "pretrained_cfg": {"input_size": [3, 384, 384], "interpolation": "bicubic",
                           "crop_pct": 1.0, "mean": [0.5] * 3, "std": [0.5] * 3}}))


# ---------------------------------------------------------------- a big model's background jobs
WAIT_S = 900  # the most a test waits for a background computation (not a speed claim)


def idle() -> None:
    """Wait until no computation of the why stage runs on a background thread."""
    end = time.monotonic() + WAIT_S
    while jobs.busy():
        assert time.monotonic() < end, "a background computation never ended"
        time.sleep(0.1)


def pending(at) -> list[str]:
    """The words of the steps that wait for their numbers (ui/stages/why/waiting.py)."""
    return [i.value for i in at.info if i.value.endswith("as soon as they are ready.")]


def settle(at) -> None:
    """Run the page until no step shows a progress bar, as a student's page does (on a big
    model the why stage computes its numbers behind one, unless this process has them)."""
    end = time.monotonic() + WAIT_S
    while True:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        if not at.get("progress"):
            return
        assert time.monotonic() < end, pending(at)
        idle()


@contextmanager
def served(tmp_path: Path, script: str, env: dict | None = None):
    """`streamlit run` of `script` (its source) on a free port, the repository importable;
    yields (its address, its log file) once it answers, stops it after."""
    path = tmp_path / "page.py"
    path.write_text(script)
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(path), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        yield url, tmp_path / "server.log"
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
