"""Pretrained ViTs from the Hugging Face Hub: fetched once by name, then loaded with no network.

`fetch("facebook/deit-tiny-patch16-224")` downloads a repo's config and weights into the standard
Hugging Face cache (`HF_HOME`, shared with transformers, timm and anything else that uses
`huggingface_hub`; `HF_ENDPOINT` and `HF_TOKEN` are honoured), with huggingface_hub's own
progress bars. `load("hf:ORG/NAME")` reads that cache; the first time, it fetches, as
`from_pretrained` and `timm.create_model(pretrained=True)` do. Once fetched, a model loads with no
network request at all, so a class runs offline after one fetch at home. `local_files_only=True`
(what the app passes) or `HF_HUB_OFFLINE=1` never fetch: a model that is not here is one sentence
naming the fetch command. Nothing here is called at run time unless a user asks for that model.

Both repo formats load: transformers' (`config.json` with `model_type` vit / deit / vit_mae, plus
`preprocessor_config.json`) and timm's (`config.json` with `architecture` and `pretrained_cfg`),
with neither library installed (vit_core/io/external.py maps the weights). A ViTMAE repo loads as
its headless encoder here; `load_mae` (vit_core/io/mae_files.py) reads the same folder whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import CheckpointError

PREFIX = "hf:"
FETCH_COMMAND = ".venv/bin/python -m vit_core.fetch"  # the venv's python: works without activating
CONFIGS = ("config.json", "preprocessor_config.json")
WEIGHTS = ("model.safetensors", "pytorch_model.bin")  # the first one a repo has is fetched
TIMEOUT_S = 10.0  # for the model-info request; each download read has huggingface_hub's own


@dataclass(frozen=True)
class Curated:
    params_m: float  # millions of parameters
    why: str  # one line: why it is worth looking at

    @property
    def size_mb(self) -> float:  # float32 weights, what a fetch downloads (± a few KB of JSON)
        return self.params_m * 4


# A short list worth showing a class, with what each one teaches. Sizes follow from the
# parameter counts (float32), so they are known before anything is downloaded.
CURATED: dict[str, Curated] = {
    "facebook/deit-tiny-patch16-224": Curated(
        5.7, "ViT-Ti/16 trained on ImageNet-1k: 3 heads × 12 layers, fast on a laptop CPU"),
    "facebook/deit-small-patch16-224": Curated(
        22.1, "ViT-S/16 trained on ImageNet-1k: 6 heads × 12 layers"),
    "google/vit-base-patch16-224": Curated(
        86.6, "the original ViT-B/16 of the notes: 197 tokens × 768, 12 heads × 12 layers"),
    "facebook/dino-vits16": Curated(
        21.7, "self-supervised, no classifier: its CLS attention outlines objects without "
              "ever seeing a label"),
    "facebook/deit-tiny-distilled-patch16-224": Curated(
        5.9, "two prefix tokens, CLS and DIST, each with its own head; it predicts their mean"),
    "timm/vit_small_patch16_224.augreg_in21k_ft_in1k": Curated(
        22.1, "timm's ViT-S/16 (AugReg, ImageNet-21k then 1k), stored in timm's own format"),
    "facebook/vit-mae-base": Curated(
        111.9, "a masked autoencoder (MAE): ViT-B/16 learned by filling in 75 % hidden patches, "
               "no labels; the weights hold its 8-block decoder too (26 M parameters)"),
}


class FetchError(CheckpointError):
    """A fetch did not complete; the message is one sentence for the user. Nothing half-fetched
    is ever loaded: a model loads only from a complete snapshot."""


def repo_id(name: str) -> str:
    """'hf:ORG/NAME' or 'ORG/NAME' -> 'ORG/NAME'; anything else is refused in one sentence."""
    rid = name.removeprefix(PREFIX).strip().strip("/")
    parts = rid.split("/")
    if len(parts) != 2 or not all(parts) or any(c.isspace() for c in rid):
        raise FetchError(f"'{name}' is not a Hugging Face model name; names look like "
                         f"'facebook/deit-tiny-patch16-224'.")
    return rid


def local_folder(name: str) -> Path | None:
    """The complete snapshot of this repo in the local cache (config + weights), or None.
    Reads the disk only."""
    from huggingface_hub import try_to_load_from_cache

    rid = repo_id(name)
    config = try_to_load_from_cache(rid, "config.json")
    if not isinstance(config, str):
        return None
    folder = Path(config).parent
    if any(_weights_present(folder, w) for w in WEIGHTS):
        return folder
    return None


def _weights_present(folder: Path, weights: str) -> bool:
    index = folder / f"{weights}.index.json"
    if index.is_file():
        shards = set(json.loads(index.read_text())["weight_map"].values())
        return all((folder / s).is_file() for s in shards)
    return (folder / weights).is_file()


def load(name: str, local_files_only: bool = False, loader: Callable | None = None, **options):
    """Load 'hf:ORG/NAME' from the local cache, fetching it first if it is not there.

    Args:
        name: 'hf:ORG/NAME' or 'ORG/NAME'.
        local_files_only: never fetch (also when `HF_HUB_OFFLINE=1`): a model that is not on this
            machine is a CheckpointError naming the fetch command.
        loader: what reads the folder (default vit_core.io.external.load_external; load_mae
            passes the MAE's); called as loader(folder, name=..., **options).
        options: for vit_core.io.external.load_external (num_heads, img_size, mean, std).
    Raises:
        CheckpointError: not here and not to be fetched, not a ViT; FetchError (a
            CheckpointError): the fetch failed. Each is one sentence.
    """
    from huggingface_hub import constants

    from .external import load_external

    rid = repo_id(name)
    folder = local_folder(rid)
    if folder is None:
        if local_files_only or constants.is_offline_mode():
            raise CheckpointError(f"{rid} is not on this machine; fetch it with "
                                  f"`{FETCH_COMMAND} {rid}`.")
        folder = fetch(rid)
    model = (loader or load_external)(folder, name=PREFIX + rid, **options)
    model.info.source = PREFIX + rid
    curated = CURATED.get(rid)
    model.info.description = curated.why if curated else f"Hugging Face Hub: {rid}"
    return model


@dataclass(frozen=True)
class Progress:
    done: int  # bytes downloaded so far
    total: int | None  # bytes this fetch downloads (None: the Hub did not give every size)
    seconds: float  # since the fetch began

    @property
    def left_s(self) -> float | None:  # at the average speed so far
        if not self.done or self.total is None or self.done >= self.total:
            return None
        return self.seconds * (self.total - self.done) / self.done


def fetch(name: str, progress: Callable[[Progress], None] | None = None) -> Path:
    """Download a ViT repo's config and weights into the Hugging Face cache; return its folder.

    Only what a model needs is fetched: config.json, preprocessor_config.json when there is one,
    and one weights format (safetensors when the repo has it, else pytorch_model.bin; sharded
    weights with their index). A repo that is not a ViT is refused after its config.json
    (a few KB), before any weights. Fetching what is already here downloads nothing.

    Args:
        name: 'hf:ORG/NAME' or 'ORG/NAME'.
        progress: called with the bytes downloaded so far, the total (None when the Hub
            gave no size for some file) and the time taken (the app's progress bar); None:
            huggingface_hub draws its own bars (on a terminal).
    Raises:
        FetchError: one sentence: unknown repo, no network, not a ViT, interrupted, disk full.
    """
    from huggingface_hub import HfApi, hf_hub_download

    rid = repo_id(name)
    try:
        info = HfApi().model_info(rid, files_metadata=True, timeout=TIMEOUT_S)
    except Exception as e:
        raise FetchError(_sentence(e, rid, downloading=False)) from e
    files = {s.rfilename: s.size for s in info.siblings or []}  # size None: not given
    wanted = _choose(rid, files)
    sizes = [files[f] for f in wanted]
    total = sum(sizes) if None not in sizes else None
    start, done = time.monotonic(), [0]

    def report(n: int) -> None:
        done[0] = done[0] + n if total is None else min(total, done[0] + n)
        progress(Progress(done[0], total, time.monotonic() - start))

    bar, folder = (_progress_class(report) if progress is not None else None), None
    try:
        for filename in wanted:
            # by branch, not commit: that records refs/main, which offline loading reads
            path = hf_hub_download(rid, filename, tqdm_class=bar)
            folder = Path(path).parent
            if filename == "config.json":
                _refuse_if_not_a_vit(rid, Path(path))
    except FetchError:
        raise
    except Exception as e:
        raise FetchError(_sentence(e, rid, downloading=True)) from e
    if folder is None or local_folder(rid) is None:
        raise FetchError(f"The download of '{rid}' did not complete; try again.")
    return folder


def _sentence(e: Exception, rid: str, downloading: bool) -> str:
    """What went wrong, in one sentence, for any error huggingface_hub or the network raises."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    if isinstance(e, RepositoryNotFoundError):
        return f"There is no model '{rid}' on the Hugging Face Hub (or it is private)."
    if isinstance(e, GatedRepoError):
        return f"'{rid}' is gated: accept its terms on the Hub and set HF_TOKEN before fetching."
    if isinstance(e, HfHubHTTPError):
        return f"The Hub refused to send '{rid}': {str(e).splitlines()[0][:160]}"
    if isinstance(e, OSError) and e.errno is not None:  # ENOSPC, EACCES, ...
        return f"Could not save '{rid}': {e.strerror or e} (is the disk full?)."
    if downloading:
        return (f"The download of '{rid}' was interrupted or the Hub stopped answering; nothing "
                f"half-fetched will be used. Try again.")
    return (f"Could not reach the Hugging Face Hub to fetch '{rid}' (no network?); models "
            f"already fetched still work.")


def _choose(rid: str, files: dict[str, int]) -> list[str]:
    """The files a ViT needs from this repo, config first (so a non-ViT is refused early)."""
    if "config.json" not in files:
        raise FetchError(f"'{rid}' has no config.json, so it is not a transformers or timm model "
                         f"we can read.")
    wanted = [f for f in CONFIGS if f in files]
    for weights in WEIGHTS:
        index = f"{weights}.index.json"
        if index in files:
            stem = weights.rsplit(".", 1)[0]
            shards = sorted(f for f in files if f.startswith(stem + "-") and
                            f.endswith(weights.rsplit(".", 1)[1]))
            return wanted + [index] + shards
        if weights in files:
            return wanted + [weights]
    raise FetchError(f"'{rid}' has no model.safetensors or pytorch_model.bin to fetch.")


def _refuse_if_not_a_vit(rid: str, config_file: Path) -> None:
    cfg = json.loads(config_file.read_text())
    if "architecture" in cfg:  # timm's format
        arch = str(cfg["architecture"])
        if arch.startswith(("vit_", "deit_")):
            return
        raise FetchError(f"'{rid}' is timm's '{arch}', not a plain Vision Transformer; only ViT "
                         f"and DeiT models can be shown here.")
    kind = cfg.get("model_type")
    if kind not in ("vit", "deit", "vit_mae"):
        raise FetchError(f"'{rid}' is a '{kind}' model, not a Vision Transformer; only ViT, "
                         f"DeiT and ViTMAE models can be shown here.")


def _progress_class(report: Callable[[int], None]):
    """A tqdm class that forwards every update to `report` and draws nothing itself."""
    from tqdm.auto import tqdm

    class Reporting(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            report(int(n or 0))
            return super().update(n)

    return Reporting


def status(name: str) -> str:
    """'on this machine' or 'fetch (≈ NN MB)' for the model picker (reads the disk only)."""
    rid = repo_id(name)
    if local_folder(rid) is not None:
        return "on this machine"
    curated = CURATED.get(rid)
    return f"fetch (≈ {curated.size_mb:.0f} MB)" if curated else "fetch"
