"""tests/hub_server.py: the real huggingface_hub client downloads from the local Hub stand-in,
and its faults (a cut connection, a slow or stopped Hub) reach the client as they would online.
Expected bytes, sizes and hashes are read from the fixture files here, not from the server."""

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

hh = pytest.importorskip("huggingface_hub")
import httpx2  # noqa: E402  (installed with huggingface_hub)
from huggingface_hub import constants  # noqa: E402
from huggingface_hub.errors import (  # noqa: E402
    LocalEntryNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from tqdm.auto import tqdm  # noqa: E402

REPO = "acme/tiny-vit"
WEIGHTS = "model.safetensors"  # 300 KB: an LFS file on the Hub


@pytest.fixture
def root(tmp_path) -> Path:
    """One repo: two small git files, one in a subfolder, and a binary LFS file."""
    repo = tmp_path / "hub-root" / REPO
    (repo / "sub").mkdir(parents=True)
    (repo / "config.json").write_text(json.dumps({"image_size": 32, "patch_size": 8}))
    (repo / "README.md").write_text("# tiny-vit\n")
    (repo / "sub" / "preprocessor_config.json").write_text("{}")
    (repo / WEIGHTS).write_bytes(random.Random(0).randbytes(300_000))
    return tmp_path / "hub-root"


@pytest.fixture
def hub_root(root) -> Path:
    """What conftest.py's `hub` fixture serves here: this module's one repo. (`hub` also checks
    that no thread of the stand-in outlives its stop.)"""
    return root


@pytest.fixture
def sleeps(monkeypatch) -> list:
    """The client's retry waits, recorded instead of slept (file_download retries a cut
    download 5 times, 1 s apart; its HTTP backoff waits 1, 2, 4, 8, 8 s). The stand-in never
    sleeps on `time.sleep`, so it keeps its own timing."""
    asked = []
    monkeypatch.setattr(time, "sleep", asked.append)
    return asked


def files_of(root: Path) -> dict[str, bytes]:
    repo = root / REPO
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def recorder() -> type:
    """A tqdm subclass that keeps every update with its time; a fresh class (and list) per use."""

    class Recorder(tqdm):
        bars: list = []

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "file": io.StringIO()})
            self.steps = []  # (monotonic seconds, n)
            Recorder.bars.append(self)

        def update(self, n=1):
            self.steps.append((time.monotonic(), n))
            return super().update(n)

    return Recorder


@pytest.mark.parametrize("name", ["config.json", WEIGHTS])
def test_hf_hub_download_gets_the_fixture_bytes_under_the_hubs_etag(hub, root, name):
    data = (root / REPO / name).read_bytes()
    path = Path(hh.hf_hub_download(REPO, name))
    assert path.read_bytes() == data
    # The cache names a blob by its ETag: sha256 for LFS files, the git blob sha1 otherwise.
    etag = hashlib.sha256(data).hexdigest() if name == WEIGHTS else git_oid(data)
    assert path.resolve().name == etag
    assert path.parent.name == hub.commit(REPO)
    assert hub.requests[("GET", f"/{REPO}/resolve/main/{name}")] == 1


def test_resolve_sends_the_hubs_headers_and_serves_ranges(hub, root):
    """Over plain HTTP: the client would cope without some of these (it falls back from
    X-Linked-Etag to ETag, and restarts when a Range is ignored), so check them here."""
    data = (root / REPO / WEIGHTS).read_bytes()
    url = f"{hub.url}/{REPO}/resolve/main/{WEIGHTS}"
    head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD")).headers
    assert head["X-Linked-Etag"] == head["ETag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert head["X-Linked-Size"] == head["Content-Length"] == str(len(data))
    assert head["X-Repo-Commit"] == hub.commit(REPO)
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Range": "bytes=1000-"})) as r:
        assert r.status == 206 and r.headers["Content-Range"] == f"bytes 1000-299999/{len(data)}"
        assert r.read() == data[1000:]
    with pytest.raises(urllib.error.HTTPError) as beyond:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Range": "bytes=300000-"}))
    assert beyond.value.code == 416

    config = (root / REPO / "config.json").read_bytes()
    small = urllib.request.Request(f"{hub.url}/{REPO}/resolve/main/config.json", method="HEAD")
    head = urllib.request.urlopen(small).headers
    assert head["ETag"] == f'"{git_oid(config)}"' and "X-Linked-Etag" not in head


def test_snapshot_download_gets_every_file_and_a_second_one_downloads_nothing(hub, root):
    folder = Path(hh.snapshot_download(REPO))
    got = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
           if p.is_file()}
    assert got == files_of(root)
    assert folder.name == hub.commit(REPO)
    assert hub.count("GET", "/resolve/") == len(got)

    hub.log.clear()
    assert hh.snapshot_download(REPO) == str(folder)
    # Only the revision lookup: the file list comes from the cached tree, files from the cache.
    assert hub.log == [("GET", f"/api/models/{REPO}/revision/main", None)]


def test_model_info_with_files_metadata_and_repo_listings(hub, root):
    files = files_of(root)
    info = hh.HfApi().model_info(REPO, files_metadata=True)
    assert info.id == REPO and info.sha == hub.commit(REPO)
    siblings = {s.rfilename: s for s in info.siblings}
    assert {k: s.size for k, s in siblings.items()} == {k: len(v) for k, v in files.items()}
    assert siblings[WEIGHTS].lfs.sha256 == hashlib.sha256(files[WEIGHTS]).hexdigest()
    assert siblings[WEIGHTS].lfs.size == len(files[WEIGHTS])
    assert siblings["config.json"].lfs is None
    assert siblings["config.json"].blob_id == git_oid(files["config.json"])

    plain = hh.model_info(REPO, revision=info.sha)  # /revision/<sha>, without sizes
    assert plain.sha == info.sha and {s.size for s in plain.siblings} == {None}
    assert sorted(hh.list_repo_files(REPO)) == sorted(files)
    top = {(type(e).__name__, e.path) for e in hh.HfApi().list_repo_tree(REPO)}
    assert top == {("RepoFolder", "sub")} | {("RepoFile", p) for p in files if "/" not in p}


def test_unknown_repo_file_and_revision_raise_the_hubs_errors(hub):
    with pytest.raises(RepositoryNotFoundError):
        hh.hf_hub_download("acme/no-such-vit", "config.json")
    with pytest.raises(RepositoryNotFoundError):
        hh.snapshot_download("acme/no-such-vit")
    with pytest.raises(RepositoryNotFoundError):
        hh.model_info("acme/no-such-vit")
    with pytest.raises(RemoteEntryNotFoundError):
        hh.hf_hub_download(REPO, "pytorch_model.bin")
    with pytest.raises(RevisionNotFoundError):
        hh.hf_hub_download(REPO, "config.json", revision="v2")


def test_an_edited_fixture_is_a_new_commit_and_the_client_fetches_it(hub, root):
    old = hub.commit(REPO)
    hh.hf_hub_download(REPO, "config.json")
    (root / REPO / "config.json").write_text('{"image_size": 64}')
    path = Path(hh.hf_hub_download(REPO, "config.json"))
    assert path.read_text() == '{"image_size": 64}'
    assert path.parent.name == hub.commit(REPO) != old


def test_offline_mode_in_a_fresh_process_resolves_from_the_cache(hub, tmp_path):
    """HF_ENDPOINT and HF_HOME alone (no patching) steer a process that imports huggingface_hub
    after they are set; with HF_HUB_OFFLINE=1 it then makes no request at all."""
    code = (f"import huggingface_hub as hh; print(hh.snapshot_download({REPO!r})); "
            f"print(hh.hf_hub_download({REPO!r}, {WEIGHTS!r}))")

    def run(**env):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    online = run()
    assert online[0].startswith(str(tmp_path / "hf-home" / "hub"))
    assert hub.count("GET", "/resolve/") == 4
    hub.log.clear()
    assert run(HF_HUB_OFFLINE="1") == online
    assert hub.log == []


def test_a_stopped_hub_is_a_connection_error_and_a_restarted_one_serves_again(hub, sleeps):
    cached = hh.hf_hub_download(REPO, "config.json")
    hub.stop()
    with pytest.raises(httpx2.ConnectError):
        hh.model_info(REPO)  # one request, no retry
    # A cached file is returned after one refused HEAD, without waiting.
    assert hh.hf_hub_download(REPO, "config.json") == cached
    assert sleeps == []
    # A file not in the cache: the client retries with backoff, then gives up.
    with pytest.raises(LocalEntryNotFoundError) as lost:
        hh.hf_hub_download(REPO, "README.md")
    assert isinstance(lost.value.__cause__, httpx2.ConnectError)
    assert sum(sleeps) > 10  # seconds it would have waited; no timeout setting shortens them

    hub.start()  # same port: the client's endpoint still points here
    assert Path(hh.hf_hub_download(REPO, "README.md")).read_text() == "# tiny-vit\n"


def test_a_slow_hub_falls_back_to_the_cache_after_the_etag_timeout(hub, monkeypatch):
    cached = hh.hf_hub_download(REPO, "config.json")
    asked = hub.count("HEAD", "config.json")
    hub.delay(60)  # answers nothing for a minute; stopping the stand-in cuts the wait short
    monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 0.5)  # env HF_HUB_ETAG_TIMEOUT
    assert hh.hf_hub_download(REPO, "config.json") == cached
    assert hub.count("HEAD", "config.json") == asked + 1  # it did ask the Hub ...
    waiting = [t for t in threading.enumerate() if "process_request" in t.name]
    assert waiting, "... and gave up before the Hub answered"


def test_a_cut_download_raises_leaves_nothing_in_the_cache_and_a_retry_succeeds(
        hub, root, tmp_path, sleeps):
    hub.truncate(WEIGHTS, 100_000)
    with pytest.raises(httpx2.RemoteProtocolError):
        hh.hf_hub_download(REPO, WEIGHTS)
    assert len(sleeps) == 5  # it retried, and every try was cut again
    cache = tmp_path / "hf-home" / "hub"
    assert [p.name for p in cache.rglob("*") if p.is_file() and "blobs" in p.parts] == []
    assert not list(cache.rglob(WEIGHTS))

    hub.clear_faults()
    hub.log.clear()
    path = Path(hh.hf_hub_download(REPO, WEIGHTS))
    assert path.read_bytes() == (root / REPO / WEIGHTS).read_bytes()
    assert hub.count("GET", WEIGHTS) == 1  # a new call starts over: the partial file is gone


def test_a_download_cut_once_resumes_with_a_range_request(hub, root, monkeypatch, sleeps):
    # The client writes (and so can resume from) whole chunks only: 10 MB unless patched.
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 32 * 1024)
    hub.truncate(WEIGHTS, 100_000, times=1)
    path = Path(hh.hf_hub_download(REPO, WEIGHTS))
    assert path.read_bytes() == (root / REPO / WEIGHTS).read_bytes()
    gets = [r.range for r in hub.log if r.method == "GET"]
    assert gets == [None, f"bytes={3 * 32 * 1024}-"]  # resumed after the last whole chunk


def test_a_custom_tqdm_sees_a_throttled_download_rise(hub, root, monkeypatch):
    size = len((root / REPO / WEIGHTS).read_bytes())
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 32 * 1024)
    hub.bytes_per_second = 1_000_000
    bars = recorder()
    hh.hf_hub_download(REPO, WEIGHTS, tqdm_class=bars)
    (bar,) = bars.bars
    assert bar.total == size and sum(n for _, n in bar.steps) == size
    times = [t for t, _ in bar.steps]
    assert len(times) >= 8 and times[-1] - times[0] > 0.15  # in steps over time, not one jump


def test_snapshot_download_reports_all_its_bytes_to_a_custom_tqdm(hub, root, tmp_path):
    files = files_of(root)
    total = sum(map(len, files.values()))
    bars = recorder()
    hh.snapshot_download(REPO, tqdm_class=bars)
    byte_bars = [b for b in bars.bars if sum(n for _, n in b.steps) == total]
    assert byte_bars and all(b.total == total for b in byte_bars)
    assert any(b.total == len(files) for b in bars.bars)  # the per-file bar


def test_without_a_smaller_chunk_size_a_small_file_is_one_progress_step(hub, root):
    bars = recorder()
    hh.hf_hub_download(REPO, WEIGHTS, tqdm_class=bars)
    assert [n for _, n in bars.bars[0].steps] == [len((root / REPO / WEIGHTS).read_bytes())]
