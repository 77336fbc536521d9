"""A Streamlit tab without a browser: the app's own protocol, spoken from Python.

What Streamlit's frontend does, and this client does the same way (streamlit 1.65):
- GET `/` (the page; a load balancer sets its sticky cookie here) and `/_stcore/health`, which
  sets the `_streamlit_xsrf` cookie;
- open the websocket `/_stcore/stream` with subprotocols `streamlit, <xsrf token>` and the
  cookies; send a BackMsg `rerun_script` (query string, page); the server answers with
  ForwardMsgs (`new_session` with the session id, `navigation` with each page's script hash,
  `delta`s with the elements, ... `script_finished`);
- an upload: BackMsg `file_urls_request` -> ForwardMsg `file_urls_response` with an upload URL,
  a multipart PUT to it (header `X-Xsrftoken`), then a `rerun_script` whose widget states give
  the uploader its file;
- a page in the sidebar: a `rerun_script` with that page's script hash; images on the page are
  GET `/media/...` (fetched once, as a browser's cache would).
No rendering: the time from a BackMsg to `script_finished` is the server's. Every wait has a
limit. Protobufs come from `streamlit.proto`; the websocket from `websockets` (a dependency of
streamlit), HTTP from the standard library.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

MEDIA = re.compile(rb"/media/[0-9a-f]+\.[a-z0-9]+")
DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}


class ProtocolError(RuntimeError):
    """The server answered something a browser would not have accepted."""


@dataclass
class Run:
    """One script run as the browser saw it."""

    seconds: float  # from sending the BackMsg to script_finished
    texts: list[str] = field(default_factory=list)  # markdown / caption bodies
    exceptions: list[str] = field(default_factory=list)  # st.exception elements (tracebacks)
    errors: list[str] = field(default_factory=list)  # st.error sentences
    uploaders: list[str] = field(default_factory=list)  # file_uploader widget ids
    media: set[bytes] = field(default_factory=set)


class Tab:
    """One browser tab on the app, with its own cookies and session."""

    def __init__(self, url: str, timeout: float = 120.0):
        self.url = url.rstrip("/")
        self.timeout = timeout  # the longest any single wait may take
        self.cookies: dict[str, str] = {}
        self.session_id = ""
        self.pages: dict[str, str] = {}  # url path ("" for the default page) -> script hash
        self.page = ""
        self.ws = None
        self.fetched: set[bytes] = set()

    # HTTP, with this tab's cookies (urllib in a thread: a few requests per page)
    def _http(self, method: str, path: str, body: bytes | None = None,
              headers: dict | None = None) -> bytes:
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers={**(headers or {}), "Cookie": self._cookie()})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                for c in r.headers.get_all("Set-Cookie") or []:
                    name, _, value = c.split(";", 1)[0].partition("=")
                    self.cookies[name.strip()] = value.strip()
                return r.read()
        except urllib.error.HTTPError as e:
            raise ProtocolError(f"{method} {path}: HTTP {e.code} {e.read()[:200]!r}") from None

    async def http(self, method: str, path: str, body: bytes | None = None,
                   headers: dict | None = None) -> bytes:
        return await asyncio.to_thread(self._http, method, path, body, headers)

    def _cookie(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    # the websocket
    async def open(self, query: str = "") -> Run:
        """Load the page, connect, run the app: the first view of a new student."""
        await self.http("GET", "/")
        await self.http("GET", "/_stcore/health")
        xsrf = self.cookies.get("_streamlit_xsrf", "")
        self.ws = await asyncio.wait_for(connect(
            self.url.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit", xsrf] if xsrf else ["streamlit"],
            additional_headers={"Cookie": self._cookie()}, origin=self.url,
            max_size=None, open_timeout=self.timeout,
            ping_interval=None), self.timeout)  # as a browser: it answers the server's pings only
        return await self.rerun(query=query)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def send(self, msg: BackMsg) -> None:
        await self.ws.send(msg.SerializeToString())

    async def receive(self) -> tuple[ForwardMsg, bytes]:
        data = await asyncio.wait_for(self.ws.recv(), self.timeout)
        msg = ForwardMsg()
        msg.ParseFromString(data)
        return msg, data

    async def rerun(self, page: str | None = None, query: str = "",
                    widgets: list[WidgetState] = ()) -> Run:
        """Ask for a script run (on `page`, a url path, or the current one) and read it to its
        end; the images it shows are fetched afterwards."""
        if page is not None:
            if page not in self.pages:
                raise ProtocolError(f"no page {page!r} in the app's navigation")
            self.page = page
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_script_hash = self.pages.get(self.page, "")
        msg.rerun_script.widget_states.widgets.extend(widgets)
        t0 = time.perf_counter()
        await self.send(msg)
        run = await self._read_run(t0)
        for path in run.media - self.fetched:
            await self.http("GET", path.decode())
            self.fetched.add(path)
        return run

    async def _read_run(self, t0: float) -> Run:
        run = Run(0.0)
        for _ in range(100_000):  # a page is a few hundred messages
            msg, data = await self.receive()
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.session_id = msg.new_session.initialize.session_id
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            elif kind == "delta":
                self._read_delta(msg, data, run)
            elif kind == "script_finished" and msg.script_finished in DONE:
                run.seconds = time.perf_counter() - t0
                return run
        raise ProtocolError("a script run sent 100,000 messages without finishing")

    @staticmethod
    def _read_delta(msg: ForwardMsg, data: bytes, run: Run) -> None:
        el = msg.delta.new_element
        kind = el.WhichOneof("type")
        if kind == "markdown":
            run.texts.append(el.markdown.body)
        elif kind == "exception":
            run.exceptions.append(f"{el.exception.type}: {el.exception.message}")
        elif kind == "alert" and el.alert.format == el.alert.ERROR:
            run.errors.append(el.alert.body)
        elif kind == "file_uploader":
            run.uploaders.append(el.file_uploader.id)
        run.media.update(MEDIA.findall(data))

    async def upload(self, uploader_id: str, name: str, data: bytes, mime: str) -> Run:
        """Choose a file in the uploader: its URL, the PUT, the run that takes it. Run.seconds
        counts from the first message to the run's end."""
        t0 = time.perf_counter()
        msg = BackMsg()
        msg.file_urls_request.request_id = request = uuid.uuid4().hex
        msg.file_urls_request.session_id = self.session_id
        msg.file_urls_request.file_names.append(name)
        await self.send(msg)
        for _ in range(1000):
            answer, _ = await self.receive()
            if answer.WhichOneof("type") == "file_urls_response":
                break
        else:
            raise ProtocolError("no file_urls_response")
        urls = answer.file_urls_response
        if urls.response_id != request or urls.error_msg or not urls.file_urls:
            raise ProtocolError(f"upload refused: {urls.error_msg or 'no URL'}")
        target = urls.file_urls[0]
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n").encode() + data + \
            f"\r\n--{boundary}--\r\n".encode()
        await self.http("PUT", target.upload_url, body, {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "X-Xsrftoken": self.cookies.get("_streamlit_xsrf", "")})
        state = WidgetState(id=uploader_id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = name, len(data), target.file_id
        info.file_urls.CopyFrom(target)
        sent = time.perf_counter()
        run = await self.rerun(widgets=[state])
        run.seconds += sent - t0
        return run
