"""Which models the picker offers, and who may add more.

Anyone who can reach the server can open the app, so the actions that touch the server's disk
or network are the teacher's: fetching a model from the Hugging Face Hub and loading a
checkpoint from a path on the server. The browser offers them only when nobody else can open the
app: the server listens on this machine alone (`server.address = "localhost"`, the default in
.streamlit/config.toml) and the browser did not come through a proxy; or when the server was
started with `streamlit run app.py -- --allow-fetch`. A classroom start
(`--server.address 0.0.0.0`) leaves fetching to the teacher's terminal. Models already on the
machine are always offered: the bundled ones, the presets, every fetched `hf:ORG/NAME`,
`--weights PATH` and the checkpoints in `--models-dir DIR`.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

import vit_core
from ui import keys
from ui.drawing import numbers
from ui.serving import options
from vit_core.io import hub
from vit_core.io.external import PICKLE_SUFFIXES
from vit_core.io.ref import ModelRef

LOAD_OTHER = "Load a checkpoint from the server…"
FETCH_OTHER = "Fetch another model by name…"
LOOPBACK = ("localhost", "127.0.0.1", "::1")
CHECKPOINT_SUFFIXES = (".safetensors", *PICKLE_SUFFIXES)

server_args = options.current  # the app's own arguments, after `--` (ui/serving/options.py)


def listen_address() -> str:
    """The address the server listens on: "localhost" as .streamlit/config.toml starts it,
    "0.0.0.0" for the class ("" when unset: every interface)."""
    return str(st.get_option("server.address") or "")


def through_proxy() -> bool:
    """Did this browser come through a proxy? HAProxy adds X-Forwarded-For (deploy/haproxy.cfg
    sets `option forwardfor`): replicas listen on localhost, the balancer on the network."""
    return st.context.headers.get("X-Forwarded-For") is not None


def this_computer_only() -> bool:
    """Can only browsers on this computer open the app?"""
    return listen_address() in LOOPBACK and not through_proxy()


def teacher_actions_allowed() -> bool:
    """May this browser fetch models and load checkpoints from server paths? (The one decision:
    the sidebar's reach line words it, ui/sidebar.reach_line.)"""
    return server_args().allow_fetch or this_computer_only()


def models_dir_entries() -> list[str]:
    """Checkpoint files and model folders in --models-dir (read when the picker is drawn)."""
    folder = server_args().models_dir
    if not folder or not Path(folder).is_dir():
        return []
    found = [p for p in sorted(Path(folder).iterdir())
             if (p.is_file() and p.suffix in CHECKPOINT_SUFFIXES)
             or (p.is_dir() and (p / "config.json").is_file())]
    return [str(p) for p in found]


def fetched() -> list[str]:
    """Every ViT in the local Hugging Face cache, as 'hf:ORG/NAME' (curated ones first)."""
    from huggingface_hub import constants

    names = [rid for rid in hub.CURATED if hub.local_folder(rid) is not None]
    cache = Path(constants.HF_HUB_CACHE)
    for repo in sorted(cache.glob("models--*--*")) if cache.is_dir() else []:
        rid = repo.name.removeprefix("models--").replace("--", "/", 1)
        if rid not in names and _is_vit(rid):
            names.append(rid)
    return [hub.PREFIX + rid for rid in names]


def _is_vit(rid: str) -> bool:
    try:
        folder = hub.local_folder(rid)
        cfg = json.loads((folder / "config.json").read_text()) if folder else {}
    except (OSError, ValueError, hub.FetchError):
        return False
    return cfg.get("model_type") in ("vit", "deit") or str(cfg.get("architecture", "")).startswith(
        ("vit_", "deit_"))


def choices() -> list[str]:
    """The picker's names; the first is what a new session opens on."""
    ss = st.session_state
    extra = [p for p in [server_args().weights] + ss.get(keys.LOADED_PATHS, []) if p]
    local = fetched()
    out = (extra + [vit_core.default_model_name()] + vit_core.bundled_models() + local
           + models_dir_entries() + list(vit_core.PRESETS))
    if teacher_actions_allowed():
        out += [hub.PREFIX + rid for rid in hub.CURATED if hub.PREFIX + rid not in local]
        out += [FETCH_OTHER, LOAD_OTHER]
    return list(dict.fromkeys(out))


def label(name: str) -> str:
    """How the picker shows a name; a picker model at another training step or input size (the
    pages' 'NAME@step250', 'NAME@288px') as its model's label, then which step and size."""
    if name in (LOAD_OTHER, FETCH_OTHER):
        return name
    try:
        ref = ModelRef.parse(name)
    except ValueError:  # a file whose name reads as a bad option: loading it says why
        ref = ModelRef(name)
    step, size = ref.step, ref.size
    if size is not None or step is not None:
        return (plain_label(str(ref.picked))
                + (f" after {step:,} training steps" if step is not None else "")
                + (f" at {size}×{size} px" if size is not None else ""))
    if name in vit_core.PRESETS:
        return f"{name} (untrained: random weights)"
    if name in vit_core.bundled_models():
        return name
    if ref.source == "hub":
        return f"{name} · {hub.status(name)}"
    if name in models_dir_entries():
        return f"{Path(ref.name).name} (from the models folder)"
    return f"file: {Path(ref.name).name}" + (f" ({ref.heads} heads)" if ref.heads else "")


def needs_fetch(name: str) -> bool:
    """An 'hf:ORG/NAME' that is not on this machine (a malformed name is not fetchable)."""
    if not name.startswith(hub.PREFIX):
        return False
    try:
        return hub.local_folder(name) is None
    except hub.FetchError:
        return False


def fetch_into_session(name: str, bar) -> str | None:
    """Fetch `name` (the teacher's action), drawing progress on `bar` (an st.progress);
    returns an error sentence, or None when the model is on this machine and loads."""
    if not teacher_actions_allowed():
        return ("Fetching models is the teacher's action: start the app with "
                f"`-- --allow-fetch`, or fetch before class with `{hub.FETCH_COMMAND}`.")

    def show(p: hub.Progress) -> None:
        bar.progress(*fetch_progress(p))

    try:
        hub.fetch(name, progress=show)
        # a fetched file that cannot load; local only: a fetch that did not complete stays so
        vit_core.load_model(hub.PREFIX + hub.repo_id(name), local_files_only=True)
    except vit_core.CheckpointError as e:  # FetchError too: one sentence each
        return str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001  anything else still ends in one sentence
        return f"Could not fetch '{name}': {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return None


def fetch_progress(p: hub.Progress) -> tuple[float, str]:
    """The bar's fill and words for a fetch: '3.1 of 22.9 MB, about 4 s left'; when the Hub
    gave no sizes, what has arrived (an empty bar: how much is left is not known)."""
    if p.total is None:
        return 0.0, f"{p.done / 1e6:.1f} MB so far (the Hub did not give the size)"
    left = f", about {p.left_s:.0f} s left" if p.left_s is not None else ""
    return (min(1.0, p.done / p.total) if p.total else 1.0,
            f"{p.done / 1e6:.1f} of {p.total / 1e6:.1f} MB{left}")


def honesty_note(model, input_label: str) -> str | None:
    """One line when a photo meets a bundled shapes model: what it knows, and what to use."""
    if model.info.source != "bundled" or input_label.startswith(("sample", "composed")):
        return None
    local = fetched()
    offer = (f"For a photo, pick a real ViT on this machine: {', '.join(local[:3])}." if local
             else "For a photo, use a real ViT: fetch one with "
                  f"`{hub.FETCH_COMMAND} facebook/deit-tiny-patch16-224` (≈ 23 MB).")
    return (f"{model.info.name} only knows generated scenes: 10 shapes in 9 colours on 6 "
            f"backgrounds. On a photo its answer only says which of its shapes the photo looks "
            f"most like to it, however sure it is. {offer}")




def sureness_note(model, sure_here: float, input_label: str,
                  mask: str | None = None) -> str | None:
    """How sure a bundled model is on this image, next to how sure it was on held-out scenes
    of its own world (vit_core.scenes.evaluate.confidence, stored with the model).

    `mask`: the attention mask `sure_here` was measured under (None: the model's own). That
    record was measured under the mask the model was trained with, so under another one the
    two are not compared."""
    ref = model.info.metrics.get("confidence_on_scenes")
    if not ref:
        return None
    q = ref["quantiles"]
    what = "its words" if model.config.has_text else "its top class"
    where = "this scene" if input_label.startswith(("sample", "composed")) else "this photo"
    own = model.config.default_mask
    if mask not in (None, own):
        return (f"How sure: on {where} {model.info.name} gives {what} {numbers.percent(sure_here)} "
                f"under the {mask} mask. Its record on held-out scenes of its world was "
                f"measured with the {own} mask it was trained with, so the two are not "
                f"compared here.")
    verdict = ("less sure than on 19 in 20 of those scenes" if sure_here < q["0.05"] else
               "about as sure as on its own scenes" if sure_here >= q["0.25"] else
               "less sure than on most of its own scenes")
    if where == "this photo" and sure_here >= q["0.05"]:
        verdict += ", which on a photo from outside its world does not make it right"
    return (f"How sure: on {where} {model.info.name} gives {what} {numbers.percent(sure_here)}; on "
            f"{ref['n']} held-out scenes of its world the median was {q['0.5']:.0%} and 19 in "
            f"20 were above {q['0.05']:.0%}: {verdict}.")


def card_top1(model) -> str | None:
    """A model's held-out top-1 as its model card gives it (measured once, on the scenes the card
    names: the file's metadata), in the words every page, the README and docs/teaching.md use:
    '98.2% on its model card's 1000 held-out scenes'; None when the card has none. A page that
    measured another set says so and quotes this beside its own."""
    m = model.info.metrics
    if m.get("top1") is None or not m.get("n"):
        return None
    return f"{numbers.pct(m['top1'], 1)} on its model card's {m['n']} held-out scenes"


def plain_label(name: str) -> str:
    """The picker's label without the fetch status, for sentences on the pages."""
    return label(name).split(" · ")[0]
