"""A stand-in for the Hugging Face Hub, so tests can run the real `huggingface_hub` client offline.

Neither this machine nor CI can reach huggingface.co. `HubStandIn` serves fixture repos from a
folder (`ROOT/<org>/<name>/<files>`) over HTTP on 127.0.0.1, in the URL layout and with the
headers that huggingface_hub 2.4 reads (see tests/fixtures/README.md for how a test uses it):

    HEAD/GET /<org>/<name>/resolve/<rev>/<path>      file bytes, ETag, X-Repo-Commit, Range
    GET /api/models/<org>/<name>[/revision/<rev>]    model_info / repo_info (?blobs=true: sizes)
    GET /api/models/<org>/<name>/tree/<rev>[/<dir>]  list_repo_tree / list_repo_files / snapshots

Only models, only `main` and the repo's current commit. Faults for tests: `truncate`, `delay`,
`bytes_per_second`, and `stop` (the Hub is down) followed by `start` on the same port. Stdlib only.
"""

import hashlib
import importlib
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

# The Hub stores these in LFS (a subset of its default .gitattributes), and so does the stand-in:
# the client names an LFS file's cache blob by its sha256 and any other file's by its git sha1,
# and reads their sizes from different headers, so fixtures exercise both paths.
LFS_SUFFIXES = {".bin", ".safetensors", ".pth", ".pt", ".ckpt", ".h5", ".msgpack", ".onnx",
                ".npy", ".npz", ".pkl", ".gguf"}
LFS_MIN_SIZE = 10 * 1024 * 1024
CHUNK = 16 * 1024  # bytes per write: throttling and truncation act at this grain
_NAME = re.compile(r"[A-Za-z0-9][\w.-]*")


@dataclass(frozen=True)
class RepoFile:
    path: str                 # in the repo, with "/"
    disk: Path
    size: int
    oid: str                  # git blob sha1 of what git holds: the file, or its LFS pointer
    sha256: str | None        # LFS files only
    pointer_size: int | None  # LFS files only

    @property
    def etag(self) -> str:
        return self.sha256 or self.oid


class Request(NamedTuple):
    method: str
    path: str          # unquoted, without the query
    range: str | None  # the Range header: a resumed download sends "bytes=<offset>-"


class _NotFound(Exception):
    """A 404 the way the Hub words it: huggingface_hub picks its exception by X-Error-Code."""

    def __init__(self, code: str, message: str, commit: str | None = None):
        super().__init__(message)
        self.code, self.commit = code, commit


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _describe(disk: Path, path: str) -> RepoFile:
    data = disk.read_bytes()
    if disk.suffix not in LFS_SUFFIXES and len(data) < LFS_MIN_SIZE:
        return RepoFile(path, disk, len(data), _git_oid(data), None, None)
    sha256 = hashlib.sha256(data).hexdigest()
    pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\n"
               f"size {len(data)}\n").encode()
    return RepoFile(path, disk, len(data), _git_oid(pointer), sha256, len(pointer))


class HubStandIn:
    """`with HubStandIn(root) as hub:` serves `root` at `hub.url` until the block ends.

    `hub.log` lists every request in order and `hub.requests` counts them per (method, path), so
    a test can tell that a cached fetch downloaded nothing. The repos are read on each request
    (file hashes are cached by mtime and size), so editing a fixture makes a new commit.
    """

    def __init__(self, root: str | Path, *, bytes_per_second: float | None = None):
        self.root = Path(root)
        self.bytes_per_second = bytes_per_second  # throttles file bodies; None = full speed
        self.sizes = True  # False: model_info lists the files without their sizes
        self.port = 0
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._cuts: dict[str, list] = {}  # path suffix -> [nbytes, responses left or None]
        self._delay = 0.0
        self._described: dict[tuple, RepoFile] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> Counter:
        return Counter((r.method, r.path) for r in self.log)

    def count(self, method: str | None = None, contains: str = "") -> int:
        """Requests so far with this method (any if None) whose path contains `contains`."""
        return sum(1 for r in self.log if method in (None, r.method) and contains in r.path)

    def start(self) -> "HubStandIn":
        """Listen on a free port, or again on the same port after `stop` (the client's endpoint
        was fixed when the test pointed it here)."""
        if self._server is None:
            self._stopping.clear()
            self._server = _Server(("127.0.0.1", self.port), _Handler)
            self._server.hub = self
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            kwargs={"poll_interval": 0.05}, name="hub-stand-in",
                                            daemon=True)  # a forgotten stop must not hang exit
            self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port (clients get "connection refused") and end every thread it started;
        a response still waiting on `delay` or a throttle is cut off."""
        if self._server is not None:
            self._stopping.set()
            self._server.shutdown()
            self._server.server_close()  # joins the request threads
            self._thread.join()
            self._server = self._thread = None

    def __enter__(self) -> "HubStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def truncate(self, path_suffix: str, nbytes: int, times: int | None = None) -> None:
        """GETs of a path ending in `path_suffix` announce the full Content-Length but close the
        connection at byte `nbytes` of the file: an interrupted download. A resumed request
        (Range from `nbytes` on) gets no bytes at all. Only the next `times` responses, or all
        of them until `clear_faults` if None."""
        with self._lock:
            self._cuts[path_suffix] = [nbytes, times]

    def delay(self, seconds: float) -> None:
        """Wait this long before answering any request (a slow or hanging Hub)."""
        self._delay = seconds

    def clear_faults(self) -> None:
        with self._lock:
            self._cuts.clear()
        self._delay = 0.0

    def commit(self, repo_id: str) -> str:
        """The 40-hex commit the stand-in serves for `repo_id` now."""
        return self._snapshot(*repo_id.split("/"), "main")[0]

    def _take_cut(self, path: str) -> int | None:
        with self._lock:
            for suffix, cut in self._cuts.items():
                if path.endswith(suffix) and cut[1] != 0:
                    if cut[1] is not None:
                        cut[1] -= 1
                    return cut[0]
        return None

    def _snapshot(self, org: str, name: str, revision: str) -> tuple[str, dict[str, RepoFile]]:
        """(commit, files by path) of a repo at `revision`, or the Hub's 404."""
        folder = self.root / org / name
        if not (_NAME.fullmatch(org) and _NAME.fullmatch(name) and folder.is_dir()):
            raise _NotFound("RepoNotFound", "Repository not found")
        files = {}
        for disk in sorted(folder.rglob("*")):
            rel = disk.relative_to(folder)
            if disk.is_file() and ".git" not in rel.parts:
                stat = disk.stat()
                key = (disk, stat.st_mtime_ns, stat.st_size)
                if key not in self._described:
                    self._described[key] = _describe(disk, rel.as_posix())
                files[rel.as_posix()] = self._described[key]
        listing = "".join(f"{p} {f.oid}\n" for p, f in files.items())
        commit = hashlib.sha1(f"{org}/{name}\n{listing}".encode()).hexdigest()
        if revision not in ("main", commit):
            raise _NotFound("RevisionNotFound", f"Invalid rev id: {revision}")
        return commit, files


class _Server(ThreadingHTTPServer):
    request_queue_size = 64  # snapshot_download opens 8 connections at once
    daemon_threads = False  # only non-daemon request threads are joined by server_close
    hub: HubStandIn


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.0: one request per connection, so `stop` leaves no kept-alive connection that
    would still be answered after the port closed."""

    server: _Server
    timeout = 10  # seconds a socket read or write may block: no request thread outlives it

    def log_message(self, *args) -> None:
        pass  # hub.log is the record; stderr would only clutter pytest's output

    def do_GET(self) -> None:
        hub = self.server.hub
        url = urlsplit(self.path)
        with hub._lock:
            hub.log.append(Request(self.command, unquote(url.path), self.headers.get("Range")))
        if hub._delay and hub._stopping.wait(hub._delay):
            return
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        query = {k: v[0].lower() for k, v in parse_qs(url.query).items()}
        try:
            if parts[:2] == ["api", "models"] and len(parts) >= 4:
                self._api(hub, parts[2], parts[3], parts[4:], query)
            elif len(parts) >= 5 and parts[2] == "resolve":
                commit, files = hub._snapshot(parts[0], parts[1], parts[3])
                self._resolve(hub, commit, files, "/".join(parts[4:]), unquote(url.path))
            else:
                self._send(404, {}, b"Not Found")
        except _NotFound as e:
            headers = {"X-Error-Code": e.code, "X-Error-Message": str(e)}
            if e.commit:
                headers["X-Repo-Commit"] = e.commit  # the client caches a missing file by commit
            self._json({"error": str(e)}, headers, 404)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    do_HEAD = do_GET

    def _api(self, hub: HubStandIn, org: str, name: str, rest: list[str], query: dict) -> None:
        if not rest or (rest[0] == "revision" and len(rest) == 2):
            commit, files = hub._snapshot(org, name, rest[1] if rest else "main")
            blobs = query.get("blobs") == "true" and hub.sizes
            siblings = [self._sibling(f, blobs) for f in files.values()]
            self._json({"id": f"{org}/{name}", "modelId": f"{org}/{name}", "sha": commit,
                        "private": False, "gated": False, "disabled": False, "tags": [],
                        "siblings": siblings})
        elif rest[0] == "tree" and len(rest) >= 2:
            commit, files = hub._snapshot(org, name, rest[1])
            self._json(_tree(commit, files, "/".join(rest[2:]), query.get("recursive") == "true"))
        else:
            self._send(404, {}, b"Not Found")

    @staticmethod
    def _sibling(f: RepoFile, blobs: bool) -> dict:
        if not blobs:
            return {"rfilename": f.path}
        sibling = {"rfilename": f.path, "size": f.size, "blobId": f.oid}
        if f.sha256:
            sibling["lfs"] = {"size": f.size, "sha256": f.sha256, "pointerSize": f.pointer_size}
        return sibling

    def _resolve(self, hub: HubStandIn, commit: str, files: dict, path: str,
                 url_path: str) -> None:
        f = files.get(path)
        if f is None:
            raise _NotFound("EntryNotFound", f"{path} does not exist at {commit}", commit)
        headers = {"ETag": f'"{f.etag}"', "X-Repo-Commit": commit, "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if f.sha256:  # what the Hub's redirect to its CDN carries, and the client prefers
            headers |= {"X-Linked-Etag": f'"{f.sha256}"', "X-Linked-Size": str(f.size)}
        start, end, status = 0, f.size, 200
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "").strip())
        if wanted:
            start, end, status = int(wanted[1]), f.size, 206
            if wanted[2]:
                end = min(end, int(wanted[2]) + 1)
            if start >= f.size:
                return self._send(416, {**headers, "Content-Range": f"bytes */{f.size}"})
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{f.size}"
        self._head(status, {**headers, "Content-Length": str(end - start)})
        if self.command == "GET":
            cut = hub._take_cut(url_path)
            self._send_file(hub, f.disk, start, end if cut is None else max(start, min(end, cut)))

    def _send_file(self, hub: HubStandIn, disk: Path, start: int, stop: int) -> None:
        with disk.open("rb") as fh:
            fh.seek(start)
            while start < stop and not hub._stopping.is_set():
                block = fh.read(min(CHUNK, stop - start))
                self.wfile.write(block)
                start += len(block)
                if hub.bytes_per_second:
                    hub._stopping.wait(len(block) / hub.bytes_per_second)

    def _head(self, status: int, headers: dict) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _send(self, status: int, headers: dict, body: bytes = b"") -> None:
        self._head(status, {**headers, "Content-Length": str(len(body))})
        if self.command == "GET":
            self.wfile.write(body)

    def _json(self, obj, headers: dict | None = None, status: int = 200) -> None:
        body = json.dumps(obj).encode()
        self._send(status, {"Content-Type": "application/json", **(headers or {})}, body)


def _tree(commit: str, files: dict[str, RepoFile], folder: str, recursive: bool) -> list[dict]:
    """The Hub's tree listing of `folder` ("" = the root): its files and folders, or everything
    below it if `recursive`. A folder's oid is a stable stand-in, not git's tree hash."""
    dirs = {p.rsplit("/", i)[0] for p in files for i in range(1, p.count("/") + 1)}
    if folder and folder not in dirs:
        raise _NotFound("EntryNotFound", f"{folder} does not exist at {commit}", commit)
    base = folder + "/" if folder else ""
    inside = lambda p: p.startswith(base) and (recursive or "/" not in p[len(base):])
    out = [{"type": "directory", "oid": hashlib.sha1(f"{commit}/{d}".encode()).hexdigest(),
            "size": 0, "path": d} for d in sorted(dirs) if inside(d)]
    for f in files.values():
        if inside(f.path):
            entry = {"type": "file", "oid": f.oid, "size": f.size, "path": f.path}
            if f.sha256:
                entry["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": f.pointer_size}
            out.append(entry)
    return out


def point_hf_at(monkeypatch, url: str, home: str | Path) -> None:
    """Send huggingface_hub to `url`, with its cache and token under `home`, for one test: in
    this process and in any subprocess it starts.

    huggingface_hub copies its environment into `huggingface_hub.constants` once, at import, so
    setting HF_ENDPOINT / HF_HOME after the import (pytest imports every test module first)
    reaches only subprocesses. The client reads the constants at call time, so this also patches
    them: ENDPOINT (HfApi and the API routes), HUGGINGFACE_CO_URL_TEMPLATE (hf_hub_url builds
    each file's /resolve/ URL from it, not from ENDPOINT), HF_HUB_CACHE (the default cache_dir),
    HF_HOME, HF_TOKEN_PATH and HF_XET_CACHE (nothing outside `home` is read or written),
    HF_HUB_DISABLE_TELEMETRY (else the first request's user agent fetches
    `<endpoint>/api/agent-harnesses`) and HF_HUB_OFFLINE (off, whatever the shell says).
    The module-level `model_info`, `list_repo_files`, ... are methods of one `HfApi` made at
    import, whose endpoint is frozen then: `huggingface_hub.hf_api.api.endpoint` is patched too.
    `huggingface_hub.scan_cache_dir()` keeps its import-time default: pass it `cache_dir`.
    """
    home = Path(home)
    env = {"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_XET_CACHE", "HF_TOKEN",
                "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                "HUGGINGFACE_CO_STAGING"):
        monkeypatch.delenv(key, raising=False)
    constants = importlib.import_module("huggingface_hub.constants")
    patches = {
        "ENDPOINT": url,
        "HUGGINGFACE_CO_URL_TEMPLATE": url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_OFFLINE": False,
    }
    for key, value in patches.items():
        monkeypatch.setattr(constants, key, value)
    monkeypatch.setattr(importlib.import_module("huggingface_hub.hf_api").api, "endpoint", url)
