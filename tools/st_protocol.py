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
  GET `/media/...` (fetched once, as a browser's cache would);
- every `rerun_script` carries the address's query string (the server sets it with
  `page_info_changed`), the current page (the server's `new_session` says which, also after an
  `st.switch_page`) and the state of every widget on the page (tools/st_widgets.py): a click is
  a button's trigger, a choice the widget's value;
- a run the server starts by itself (a page it reruns when a live class moves) is read while
  the tab waits (`wait`, `pushed`), as the browser draws it;
- a fragment with `run_every` (ForwardMsg `auto_rerun`: interval, fragment id) is rerun by the
  browser's timer: a `rerun_script` with that fragment id every interval, until a full run
  starts (its timers are set again by the run) or `stop_auto_rerun`; `tick` sends the due ones.
  A fragment that calls `st.rerun(scope="app")` makes the server run the whole script next: the
  run is read through to the end of that full run (`Run.full`). A widget drawn inside a fragment
  (the delta's `fragment_id`) reruns only that fragment when it changes, as in the browser: a
  `rerun_script` with its fragment id, not an auto rerun.
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
from collections import deque
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.protocol import State

from tools.st_widgets import Widget, Widgets

MEDIA = re.compile(rb"/media/[0-9a-f]+\.[a-z0-9]+")
DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
        ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}  # FINISHED_EARLY_FOR_RERUN: another follows
FRAGMENT_DONE = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
ALERTS = {"alert", "toast"}
HEARD = 12  # the server's last messages a stuck tab names (besides the elements drawn)


class ProtocolError(RuntimeError):
    """The server answered something a browser would not have accepted."""


@dataclass
class Run:
    """One script run as the browser saw it: after a fragment that asked for a full run, or a
    run stopped by st.switch_page, what the last (full) run drew."""

    seconds: float  # from sending the BackMsg to script_finished
    texts: list[str] = field(default_factory=list)  # markdown / caption bodies
    exceptions: list[str] = field(default_factory=list)  # st.exception elements (tracebacks)
    errors: list[str] = field(default_factory=list)  # st.error sentences
    alerts: list[str] = field(default_factory=list)  # st.info / warning / success / toast
    uploaders: list[str] = field(default_factory=list)  # file_uploader widget ids
    widgets: list[Widget] = field(default_factory=list)  # in the order drawn
    downloads: dict[str, str] = field(default_factory=dict)  # download button label -> URL
    media: set[bytes] = field(default_factory=set)
    ended: float = 0.0  # time.perf_counter() at script_finished
    full: bool = False  # the whole script ran (not only a fragment)
    blocks: dict[tuple, str] = field(default_factory=dict)  # path -> popover / expander label
    paths: list[tuple[tuple, str]] = field(default_factory=list)  # (path, text) of each element
    progress: list[str] = field(default_factory=list)  # st.progress bars' texts

    def under(self, label: str) -> list[str]:
        """Texts, alerts and widget labels drawn inside the popovers / expanders `label`."""
        inside = [p for p, name in self.blocks.items() if name == label]
        return [t for p, t in self.paths if any(p[:len(b)] == b for b in inside)]


class Tab:
    """One browser tab on the app, with its own cookies and session."""

    def __init__(self, url: str, timeout: float = 120.0):
        self.url = url.rstrip("/")
        self.timeout = timeout  # the longest any single wait may take
        self.cookies: dict[str, str] = {}
        self.session_id = ""
        self.pages: dict[str, str] = {}  # url path ("" for the default page) -> script hash
        self.page_hash = ""  # the page shown ("": the app's default)
        self.query = ""  # the address's query string, as the server last set it
        self.widgets = Widgets()
        self.timers: dict[str, list[float]] = {}  # fragment id -> [interval, next tick] (s)
        self.ws = None
        self.fetched: set[bytes] = set()
        self.asked = ""  # what the tab last asked the server for (said when a wait times out)
        self.reading: Run | None = None  # the run being read, as far as it came
        self.heard: deque[str] = deque(maxlen=HEARD)  # the last messages' kinds, in order

    @property
    def page(self) -> str:
        """The url path of the page shown."""
        return next((p for p, h in self.pages.items() if h == self.page_hash), "")

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
        """Load the page, connect, run the app: the first view of a new student. Again on an
        open tab: reload it (a new session on the address `query`; cookies kept)."""
        await self.close()
        self.session_id, self.page_hash, self.query = "", "", query
        self.widgets, self.timers = Widgets(), {}
        await self.http("GET", "/")
        await self.http("GET", "/_stcore/health")
        xsrf = self.cookies.get("_streamlit_xsrf", "")
        self.ws = await asyncio.wait_for(connect(
            self.url.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit", xsrf] if xsrf else ["streamlit"],
            additional_headers={"Cookie": self._cookie()}, origin=self.url,
            max_size=None, open_timeout=self.timeout,
            ping_interval=None), self.timeout)  # as a browser: it answers the server's pings only
        return await self.rerun()

    @property
    def connected(self) -> bool:
        """The websocket is open (False once the server or the balancer closed it)."""
        return self.ws is not None and self.ws.state is State.OPEN

    async def close(self) -> None:
        if self.ws is not None:
            ws, self.ws = self.ws, None
            await ws.close()

    async def send(self, msg: BackMsg) -> None:
        await self.ws.send(msg.SerializeToString())

    async def receive(self) -> tuple[ForwardMsg, bytes]:
        try:
            data = await asyncio.wait_for(self.ws.recv(), self.timeout)
        except TimeoutError:
            raise TimeoutError(self.stuck()) from None
        msg = ForwardMsg()
        msg.ParseFromString(data)
        self.hear(msg)
        return msg, data

    def hear(self, msg: ForwardMsg) -> None:
        """Note a message's kind (a run's start and end, with which fragments; a timer), not
        the elements drawn: what a stuck tab last heard."""
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            ids = msg.new_session.fragment_ids_this_run
            which = "fragments " + ",".join(i[:8] for i in ids) if ids else "full"
            self.heard.append(f"start({which})")
        elif kind == "script_finished":
            self.heard.append(ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished))
        elif kind == "auto_rerun":
            self.heard.append(f"auto_rerun({msg.auto_rerun.fragment_id[:8]})")
        elif kind in ("stop_auto_rerun", "session_status_changed"):
            self.heard.append(kind)

    def stuck(self) -> str:
        """What the tab was waiting for when the server went quiet: what it asked for and
        how far the run being read came (a load test's failed session says it)."""
        run = self.reading
        came = ("nothing of a run read yet" if run is None or not (run.texts or run.widgets)
                else f"a {'full' if run.full else 'fragment'} run drew {len(run.texts)} texts"
                     f" (last: {run.texts[-1][:80] if run.texts else ''!r}), progress "
                     f"{run.progress[-1:]!r}")
        return (f"nothing from the server for {self.timeout:g} s after {self.asked}: {came}; "
                f"the last messages heard: {' '.join(self.heard)}")

    async def rerun(self, page: str | None = None, query: str | None = None,
                    widgets: list[WidgetState] | None = None, fragment: str = "",
                    auto: bool = False, why: str = "") -> Run:
        """Ask for a script run (on `page`, a url path, or the current one; with the address's
        query string unless `query` is given; with every widget's state unless `widgets` are
        given; of one fragment if `fragment`, by its timer if `auto`) and read it to its end;
        the images it shows are fetched afterwards."""
        if page is not None:
            if page not in self.pages:
                raise ProtocolError(f"no page {page!r} in the app's navigation")
            self.page_hash = self.pages[page]
        msg = BackMsg()
        msg.rerun_script.query_string = self.query if query is None else query
        msg.rerun_script.page_script_hash = self.page_hash
        msg.rerun_script.widget_states.widgets.extend(
            self.widgets.current() if widgets is None else widgets)
        if fragment:
            msg.rerun_script.fragment_id, msg.rerun_script.is_auto_rerun = fragment, auto
        self.asked = why or (f"fragment {fragment[:8]}'s {'tick' if auto else 'rerun'}"
                             if fragment else "a full run")
        t0 = time.perf_counter()
        await self.send(msg)
        return await self._fetched(await self._read_run(t0))

    async def _fetched(self, run: Run) -> Run:
        """The run, its new images fetched (once per tab, as a browser's cache)."""
        for path in run.media - self.fetched:
            await self.http("GET", path.decode())
            self.fetched.add(path)
        return run

    async def _read_run(self, t0: float, first: tuple[ForwardMsg, bytes] | None = None) -> Run:
        run = self.reading = Run(0.0)
        for _ in range(100_000):  # a page is a few hundred messages
            msg, data = first or await self.receive()
            first = None
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.session_id = msg.new_session.initialize.session_id
                if not msg.new_session.fragment_ids_this_run:  # a full run starts: the page is
                    run = self.reading = Run(0.0, media=run.media, full=True)  # drawn anew,
                    #                                                          timers cleared
                    self.page_hash = msg.new_session.page_script_hash
                    self.timers.clear()
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            elif kind == "page_info_changed":
                self.query = msg.page_info_changed.query_string
            elif kind == "auto_rerun":
                every, fragment = msg.auto_rerun.interval, msg.auto_rerun.fragment_id
                if self.timers.get(fragment, [None])[0] != every:  # the same timer goes on
                    self.timers[fragment] = [every, time.monotonic() + every]
            elif kind == "stop_auto_rerun":
                for fragment in msg.stop_auto_rerun.fragment_ids:
                    self.timers.pop(fragment, None)
            elif kind == "delta":
                self._read_delta(msg, data, run)
            elif kind == "script_finished" and msg.script_finished in DONE:
                if run.full and msg.script_finished == FRAGMENT_DONE:
                    continue  # a fragment run amid a full one (the server runs them side by
                    #           side): the full run goes on
                run.ended = time.perf_counter()
                run.seconds = run.ended - t0
                if run.full:
                    self.widgets.full_run({w.id for w in run.widgets})
                return run
        raise ProtocolError("a script run sent 100,000 messages without finishing")

    def _read_delta(self, msg: ForwardMsg, data: bytes, run: Run) -> None:
        path = tuple(msg.metadata.delta_path)
        if msg.delta.WhichOneof("type") == "add_block":
            block = msg.delta.add_block
            kind = block.WhichOneof("type")
            if kind in ("popover", "expandable"):
                run.blocks[path] = getattr(block, kind).label
            return
        el = msg.delta.new_element
        kind = el.WhichOneof("type")
        text = ""
        if kind == "markdown":
            run.texts.append(text := el.markdown.body)
        elif kind == "exception":
            run.exceptions.append(text := f"{el.exception.type}: {el.exception.message}")
        elif kind == "alert" and el.alert.format == el.alert.ERROR:
            run.errors.append(text := el.alert.body)
        elif kind in ALERTS:
            run.alerts.append(text := getattr(el, kind).body)
        elif kind == "progress":
            run.progress.append(text := el.progress.text)
        elif kind == "file_uploader":
            run.uploaders.append(el.file_uploader.id)
        elif kind == "download_button":  # fetched when clicked, not with the page
            run.downloads[el.download_button.label] = el.download_button.url
            return
        widget = self.widgets.saw(el, msg.delta.fragment_id)
        if widget is not None:
            run.widgets.append(widget)
            text = widget.label
        if text:
            run.paths.append((path, text))
        run.media.update(MEDIA.findall(data))

    # what a user does on the page
    async def click(self, name: str) -> Run:
        """Click the button whose key (or else label) is `name`."""
        fragment = self.widgets.find(name, "button").fragment
        return await self.rerun(widgets=self.widgets.click(name), fragment=fragment,
                                why=f"a click on {name}")

    async def set(self, name: str, value) -> Run:
        """Give the widget `name` a value (an option, a number, a text; a chart: the patches
        clicked), as a browser does when the user changes it: a rerun."""
        fragment = self.widgets.find(name).fragment
        return await self.rerun(widgets=self.widgets.set(name, value), fragment=fragment,
                                why=f"{name} set")

    # what the browser's timers do
    def next_tick(self) -> float:
        """Seconds until the next fragment tick is due (inf: no fragment reruns itself)."""
        if not self.timers:
            return float("inf")
        return max(0.0, min(at for _, at in self.timers.values()) - time.monotonic())

    async def tick(self) -> list[Run]:
        """Send the fragment reruns that are due, each read to its end: the runs (a fragment
        that asked for a full run gives a Run with .full)."""
        runs = []
        now = time.monotonic()
        for fragment in [f for f, (_, at) in self.timers.items() if at <= now]:
            if fragment not in self.timers:  # a full run since cleared or set it again
                continue
            timer = self.timers[fragment]
            while timer[1] <= now:  # a timer that fired while the tab was busy fires once
                timer[1] += timer[0]
            runs.append(await self.rerun(fragment=fragment, auto=True))
        return runs

    async def wait(self, seconds: float) -> list[Run]:
        """Stay on the page for `seconds` as an open tab does: its fragment ticks when due, and
        a run the server starts on its own (a pushed rerun) is drawn. The full runs seen."""
        end = time.monotonic() + seconds
        full = []
        while (left := end - time.monotonic()) > 0:
            pushed = await self.pushed(min(left, self.next_tick()))
            if pushed is not None:
                full += [pushed] if pushed.full else []
                continue
            full += [r for r in await self.tick() if r.full]
        return full

    async def pushed(self, seconds: float) -> Run | None:
        """The run the server starts within `seconds` without being asked (ui/live/push.py),
        read to its end (its images fetched); None if none starts. Other messages between runs
        (`session_status_changed`) are passed over. Run.seconds counts from its first message."""
        end = time.monotonic() + max(seconds, 0.0)
        while True:
            try:  # (a cancelled recv loses no message: websockets' asyncio client)
                data = await asyncio.wait_for(self.ws.recv(), max(end - time.monotonic(), 0.0))
            except TimeoutError:
                return None
            msg = ForwardMsg()
            msg.ParseFromString(data)
            self.hear(msg)
            if msg.WhichOneof("type") == "new_session":
                self.asked = "nothing (a run the server started itself: a push)"
                run = await self._read_run(time.perf_counter(), (msg, data))
                return await self._fetched(run)

    async def upload(self, uploader_id: str, name: str, data: bytes, mime: str) -> Run:
        """Choose a file in the uploader: its URL, the PUT, the run that takes it. Run.seconds
        counts from the first message to the run's end."""
        t0 = time.perf_counter()
        msg = BackMsg()
        msg.file_urls_request.request_id = request = uuid.uuid4().hex
        msg.file_urls_request.session_id = self.session_id
        msg.file_urls_request.file_names.append(name)
        self.asked = "an upload's URL"
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
        self.widgets.states[uploader_id] = state  # sent with every later run, as a browser does
        sent = time.perf_counter()
        run = await self.rerun()
        run.seconds += sent - t0
        return run
