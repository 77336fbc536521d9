"""End to end in a real browser: Debian's Chromium driven by Playwright against `streamlit run`.

Uploads a photo through the real file chooser, visits every page, walks presenter mode, and
opens a copied link in a fresh browser context. Every request must stay on localhost.
Screenshots go to screenshots/e2e/ (gitignored). CI installs chromium (.ci/run); elsewhere the
test is skipped when /usr/bin/chromium is missing.
"""

import os
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.slides import KATEX_ERRORS_JS
from tests.support import photo_bytes
from tools.browser import ROOT, serve, wait_idle
from ui.stages import BY_SLUG as ROUTES

LAST = len(ROUTES) - 1  # the numbered stages: 'Stage 1/LAST' … (the overview is not numbered)

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser  # every test here starts Chromium (or a load run's browsers)

SHOTS = ROOT / "screenshots" / "e2e"
STAGES = list(ROUTES)


@pytest.fixture(scope="module")
def served():
    with serve() as srv:
        yield srv


@pytest.fixture(scope="module")
def server(served):
    return served.url


def new_page(browser, requests: list[str], width=1280, height=800):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.on("request", lambda r: requests.append(r.url))
    return ctx, page


def assert_local(requests: list[str]):
    outside = [u for u in requests if urlparse(u).scheme in ("http", "https", "ws", "wss")
               and urlparse(u).hostname not in ("127.0.0.1", "localhost")]
    assert not outside, f"requests left the machine: {outside[:5]}"


def assert_no_exception(page, where: str):
    assert page.locator("[data-testid='stException']").count() == 0, where
    assert page.locator("h1").count() >= 1, where


def wait_download(page, info, seconds: int = 45) -> bool:
    """Whether the download `info` waits for has started within `seconds`."""
    for _ in range(seconds * 2):
        if info.is_done():
            return True
        page.wait_for_timeout(500)
    return info.is_done()


def download_trace(page, tmp_path: Path, served) -> Path:
    """Click 'Download this trace (.npz)' in the sidebar and save what the browser receives."""
    sidebar = page.locator("[data-testid='stSidebar']")
    button = sidebar.get_by_role("button", name="Download this trace (.npz)")
    if not button.is_visible():
        sidebar.get_by_text("Share and export").click()
    button.wait_for(state="visible")
    wait_idle(page)
    try:
        with page.expect_download(timeout=120_000) as info:
            button.click()
            if not wait_download(page, info):  # a click can be lost to a run starting at once
                wait_idle(page)  # (once on a loaded CI machine, on the Why page): as a hand
                button.click()  # would, click again
    except playwright.TimeoutError:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "download-failed.png"), full_page=True)
        pytest.fail("no download after clicking 'Download this trace'; the server said:\n"
                    + served.log()[-3000:])
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


# The trace download on a captioner (its file holds the pass that wrote the caption). Formulas
# are checked where each page is walked: the classifier's pages on an uploaded photo
# (test_upload_visit_every_page_and_stay_offline) and every slide of the bundled classifier, a
# captioner (its text adds formulas to most steps) and the ViT-B/16-size preset
# (tests/test_deck_browser.py); the captioner's own page walk was 78 s of the CI's 15 minutes.
@pytest.mark.parametrize("model", ["shapes-captioner-causal"])
def test_the_trace_downloads_and_is_the_pass_shown(browser, served, tmp_path, model):
    import numpy as np

    from ui.selection import inputs
    from vit_core import load_image, load_model, preprocess, run_trace

    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{served.url}/?page=overview&model={model}")
    # the first run on a new model is the slowest (a captioner writes its caption before the
    # map): wait until it has drawn the map and the sidebar's input line, not only for a pause
    page.locator("[data-testid='stSidebar']").get_by_text("Showing ").first.wait_for(
        timeout=180_000)
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=180_000)
    wait_idle(page)
    assert f"model={model}&" in page.url + "&", page.url
    assert_no_exception(page, "overview")
    assert not page.evaluate(KATEX_ERRORS_JS)
    path = download_trace(page, tmp_path, served)
    assert path.name.startswith("trace-") and path.suffix == ".npz"
    data = np.load(path)
    net = load_model(model)
    seed = inputs.sample_seeds()[0]  # a new session shows the first sample scene
    pixels = preprocess(load_image(inputs.sample_bytes(seed)), net.config)
    ids, extra = None, {"mask"}
    if net.config.has_text:  # a captioner's download is the pass that wrote its caption
        from tests.independent import greedy
        from vit_core import Tokenizer

        words, _ = greedy(net, pixels)
        vocab = list(net.config.vocab)
        ids = [Tokenizer(vocab).sos_id] + [vocab.index(w) for w in words[:-1]]
        ids, extra = ids[:net.config.max_text_len], {"mask", "text_ids"}
        assert data["text_ids"].tolist() == ids
    tr = run_trace(net, pixels, text_ids=ids)
    assert set(data.files) == set(tr.names()) | extra
    np.testing.assert_allclose(data["logits"], tr.logits.numpy(), atol=1e-5)
    assert_local(requests)
    ctx.close()


def test_upload_visit_every_page_and_stay_offline(browser, server, axe, tmp_path):
    """An uploaded photo on every page at 1280×720: no exception, every formula parsed, axe-core's
    WCAG 2.1 A/AA rules (tools/axe.py; every step is on its page), no request off the machine."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    ctx, page = new_page(browser, requests, 1280, 720)
    page.goto(server)
    wait_idle(page)
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(photo_bytes())
    t0 = time.time()
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(photo)
    page.get_by_text("Showing upload: photo.jpg").wait_for(timeout=120_000)
    wait_idle(page)
    print(f"upload -> first view rendered: {time.time() - t0:.2f} s")
    problems = []
    for slug in STAGES:
        page.locator(f"[data-testid='stSidebarNav'] a[href$='/{slug}']").first.click() \
            if slug != "overview" else page.locator("[data-testid='stSidebarNav'] a").first.click()
        wait_idle(page)
        assert_no_exception(page, slug)
        assert page.get_by_text("Showing upload: photo.jpg").count() == 1, slug
        found = [f"{slug}: {p}" for p in dict.fromkeys(page.evaluate(KATEX_ERRORS_JS))]
        found += axe(page, slug)
        if found:  # (a whole page's picture is a second of the browser's work: when needed)
            page.screenshot(path=str(SHOTS / f"{slug}.png"), full_page=True)
        problems += found
    assert not problems, "\n".join(problems)  # every formula parsed, no WCAG violation
    assert_local(requests)
    ctx.close()


def at_step(page, header: str) -> None:
    page.get_by_text(header, exact=False).first.wait_for(timeout=60_000)


def test_the_clicker_keys_leave_typing_alone(browser, server):
    requests: list[str] = []
    ctx, page = new_page(browser, requests, 1280, 720)
    from ui import stages
    from vit_core import default_model_name, load_model

    n = len(stages.get("masks").steps_for(load_model(default_model_name()).config))
    page.goto(f"{server}/?page=masks&presenter=1")
    wait_idle(page)
    at_step(page, f"Stage 5/{LAST} · step 1/{n}")
    box = page.get_by_label("Caption fed to the text stream")
    box.click()
    box.press("End")
    box.press("ArrowLeft")  # moves the caret in the text box, not the slides
    page.wait_for_timeout(1500)
    assert page.get_by_text(f"Stage 5/{LAST} · step 1/{n}").count() == 1, "← moved the deck"
    caret = box.evaluate("e => [e.selectionStart, e.value.length]")
    assert caret[0] == caret[1] - 1, f"← did not move the caret: {caret}"
    # the clicker's PageDown moves the deck whatever has the focus (ui/presenter.DECK_JS):
    # a single-line box has no use for it, and a clicker must never be trapped
    box.press("PageDown")
    wait_idle(page)
    at_step(page, f"Stage 5/{LAST} · step 2/{n}")
    page.mouse.click(5, 700)  # out of any box
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    at_step(page, f"Stage 5/{LAST} · step 3/{n}")
    ctx.close()


def slider_value(page, label: str) -> int:
    return int(page.locator(f"[data-testid='stSlider'] input[aria-label='{label}']").first
               .input_value())


def test_play_walks_the_layers_and_stops_at_the_last(browser, server):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{server}/?page=attention")  # shapes-classifier: 6 blocks, the last shown
    wait_idle(page)
    assert slider_value(page, "Layer") == 5
    page.get_by_role("button", name="Play").click()
    page.get_by_role("button", name="Pause").wait_for(timeout=30_000)
    seen = set()
    deadline = time.time() + 240  # ends when Play stops at the last layer; a busy machine is slow
    while time.time() < deadline:
        seen.add(slider_value(page, "Layer"))
        title = page.get_by_text("attention pattern A (rows sum to 1)").first.text_content()
        seen.add(f"title {title.split(':')[0]}")
        if page.get_by_role("button", name="Play").count() and 5 in seen:
            break
        page.wait_for_timeout(300)
    layers = sorted(v for v in seen if isinstance(v, int))
    assert layers[0] == 0 and 5 in layers and len(layers) >= 4, seen  # it moved, block by block
    assert any(s == "title Layer 2, head 0" for s in seen if isinstance(s, str)), seen
    wait_idle(page)
    page.wait_for_timeout(2000)  # stopped at the end: nothing moves any more
    assert slider_value(page, "Layer") == 5
    assert page.get_by_role("button", name="Play").count() == 1
    assert_no_exception(page, "after playing the layers")
    ctx.close()


def test_play_writes_the_caption_word_by_word(browser, server):
    from tests.independent import greedy
    from ui.selection import inputs
    from vit_core import load_image, load_model, preprocess

    net = load_model("shapes-captioner-causal")
    seed = inputs.sample_seeds()[0]
    words, _ = greedy(net, preprocess(load_image(inputs.sample_bytes(seed)), net.config))
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{server}/?page=logits&model=shapes-captioner-causal")
    wait_idle(page)
    page.get_by_role("button", name="Play").click()
    page.get_by_role("button", name="Pause").wait_for(timeout=30_000)
    prefixes = set()
    deadline = time.time() + 240  # ends when the caption is finished
    while time.time() < deadline:
        head = page.locator("h3").filter(has_text="[SOS]").first.text_content() or ""
        prefixes.add(tuple(head.replace("…", "").split()))
        if page.get_by_text("Finished:").count():
            break
        page.wait_for_timeout(300)
    shown = sorted(prefixes, key=len)
    assert shown[0] == ("[SOS]",)
    for p in shown:  # every caption shown is the first k words of the greedy caption
        assert list(p[1:]) == words[:len(p) - 1], (p, words)
    assert len(shown) >= len(words) - 1, shown  # one word at a time, not all at once
    assert page.get_by_role("button", name="Play").count() == 1  # stopped at the end
    assert_no_exception(page, "after playing the caption")
    ctx.close()


def test_presenter_mode_keeps_a_composed_scene(browser, server):
    """st.switch_page drops sidebar widgets' values; the composer's are kept like the others."""
    requests: list[str] = []
    ctx, page = new_page(browser, requests, 1600, 900)
    from ui import stages
    from vit_core import default_model_name, load_model

    last = len(stages.get("overview").steps_for(load_model(default_model_name()).config))
    page.goto(f"{server}/?page=overview&presenter=1&step={last}"  # Next switches the page
              "&scene=star_blue_sand_right_100_30_2_5")
    wait_idle(page)
    words = "composed: a blue star on the sand on the right"
    page.get_by_role("button", name="Model and image").click()
    assert page.get_by_text(words).count() >= 1
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Next").click()
    wait_idle(page)
    page.get_by_text(f"Stage 1/{LAST} · step 1/5").wait_for()
    page.get_by_role("button", name="Model and image").click()  # the sidebar's widgets
    assert page.get_by_text(words).count() >= 1
    assert "scene=star_blue_sand_right_100_30_2_5" in page.url
    assert_local(requests)
    ctx.close()


def test_a_copied_link_opens_the_same_view(browser, server):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{server}/?page=attention")
    wait_idle(page)
    patch = page.get_by_role("spinbutton", name="Selected patch")
    patch.fill("23")
    patch.press("Enter")
    wait_idle(page)
    layer_thumb = page.locator("[data-testid='stSlider'] input[aria-label='Layer']")
    head_thumb = page.locator("[data-testid='stSlider'] input[aria-label='Head']")
    layer_thumb.focus()
    layer_thumb.press("Home")  # layer 0
    wait_idle(page)
    head_thumb.focus()
    head_thumb.press("ArrowRight")  # head 1
    wait_idle(page)
    shown = (layer_thumb.input_value(), head_thumb.input_value())
    assert shown == ("0", "1")
    link = page.url
    assert "patch=23" in link and "head=1" in link and "layer=0" in link
    ctx2, page2 = new_page(browser, requests)
    page2.goto(link)
    wait_idle(page2)
    slider2 = "[data-testid='stSlider'] input[aria-label='{}']"  # by name: the sidebar has sliders
    assert (page2.locator(slider2.format("Layer")).input_value(),
            page2.locator(slider2.format("Head")).input_value()) == shown
    # the value must become 23; under a loaded CI machine it was once read while still drawing
    playwright.expect(page2.get_by_role("spinbutton", name="Selected patch")).to_have_value(
        "23", timeout=60_000)
    assert_local(requests)
    ctx.close()
    ctx2.close()


def test_clicking_a_cell_of_the_patch_grid_selects_that_patch(browser, server):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{server}/?page=patches")  # the bundled classifier: a 7 x 7 grid
    wait_idle(page)
    page.get_by_text("Patch 24: row 3, column 3").wait_for()  # the centre patch by default
    plot = page.locator(".js-plotly-plot").first
    shown(page, plot, "patch-grid-hidden.png")
    plot.scroll_into_view_if_needed()
    plot.locator(".scatterlayer .point").nth(48).wait_for(state="attached")  # 49 cell markers
    g, row, col = 7, 2, 5
    cell = plot.locator(".scatterlayer .point").nth(row * g + col)  # the invisible marker
    hover_and_click(page, plot, cell, f"patch {row * g + col}", "patch-click-failed.png")
    page.get_by_text(f"Patch {row * g + col}: row {row}, column {col}").wait_for(timeout=30_000)
    assert page.get_by_role("spinbutton", name="Selected patch").input_value() == "19"
    assert_no_exception(page, "after clicking the grid")
    ctx.close()


def test_uploads_over_the_limit_are_refused_with_a_message(browser, server, tmp_path):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(server)
    wait_idle(page)
    big = tmp_path / "huge.png"
    big.write_bytes(b"\x89PNG" + os.urandom(21 * 2**20))  # over the 20 MB in config.toml
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(big)
    page.get_by_text("20.0MB").first.wait_for(timeout=30_000)
    assert page.get_by_text("Showing upload: huge.png").count() == 0
    page.locator("[data-testid='stSidebarNav'] a[href$='/patches']").first.click()
    wait_idle(page)
    assert_no_exception(page, "after a refused upload")
    ctx.close()


def test_a_refused_file_type_is_stopped_by_the_uploader(browser, server, tmp_path):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(server)
    wait_idle(page)
    svg = tmp_path / "drawing.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>')
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(svg)
    page.get_by_text("not allowed", exact=False).first.wait_for(timeout=30_000)
    wait_idle(page)
    assert_no_exception(page, "after a refused file type")
    assert page.get_by_text("Showing upload: drawing.svg").count() == 0
    ctx.close()


def click_map_marker(page, plot, trace: int, index: int, hover_text: str) -> None:
    """Hover an invisible marker of the model map until plotly shows its label, then click."""
    marker = plot.locator(".scatterlayer .trace").nth(trace).locator(".point").nth(index)
    marker.wait_for(state="attached")
    hover_and_click(page, plot, marker, hover_text, "map-click-failed.png")


# Streamlit keeps a plotly chart `visibility: hidden` until a ResizeObserver has measured its
# frame's width (PlotlyChart: width -1 until then); once in CI, under load, that took > 30 s
PLOT_FRAME_JS = """e => { const f = e.closest('[data-testid="stFullScreenFrame"]');
  return {plot: getComputedStyle(e).visibility, frame: f && f.getBoundingClientRect().width}; }"""


def shown(page, plot, shot: str) -> None:
    """Wait up to 90 s for a plotly chart to be shown; failing, leave a screenshot named `shot`
    and say what hid it (its visibility, the measured width of its frame)."""
    try:
        plot.wait_for(state="visible", timeout=90_000)
    except playwright.TimeoutError:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
        pytest.fail(f"the chart was never shown: {plot.evaluate(PLOT_FRAME_JS)}")


def hover_and_click(page, plot, marker, hover_text: str, shot: str) -> None:
    """Click an invisible plotly marker as a hand would: plotly takes the clicked point from its
    hover state, so hover until its label shows. The chart may still resize or move while the
    page settles (CI failed twice on a busy machine) or scroll away, so each try scrolls the
    plot into view and measures the marker where it is now, and a failure leaves a screenshot
    named `shot`."""
    for _ in range(10):
        plot.scroll_into_view_if_needed()  # the page may have scrolled since (CI: marker at y<0)
        box = marker.bounding_box()
        view = page.viewport_size
        if not (0 <= box["y"] and box["y"] + box["height"] <= view["height"]):
            marker.scroll_into_view_if_needed()
            box = marker.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x - 4, y - 4)
        page.mouse.move(x, y)
        try:
            plot.locator(".hoverlayer").get_by_text(hover_text).first.wait_for(timeout=3_000)
            break
        except playwright.TimeoutError:
            page.mouse.move(1, 1)
            page.wait_for_timeout(500)
    else:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
        hover = plot.locator(".hoverlayer").text_content()
        pytest.fail(f"no hover label {hover_text!r} after 10 tries: marker box {box}, hover "
                    f"layer says {hover!r}")
    page.mouse.click(x, y)
    wait_idle(page)


def test_clicking_the_model_map_picks_a_block_and_opens_a_stage(browser, server):
    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(f"{server}/?page=overview")  # the bundled classifier: 6 blocks
    wait_idle(page)
    plot = page.locator(".st-key-overview_map .js-plotly-plot")
    shown(page, plot, "map-hidden.png")
    plot.scroll_into_view_if_needed()
    # a cell of the block strip: the map now draws block 2, on the same page
    click_map_marker(page, plot, 1, 2, "block 2")
    # (in the map the user clicked: a phone's copy of the map, hidden here, names it too)
    plot.get_by_text("Block 2", exact=True).wait_for(timeout=30_000)
    assert "layer=2" in page.url and "page=overview" in page.url
    # the attention-pattern box: opens the attention stage on block 2
    ids = plot.evaluate("p => p.data[0].customdata.map(d => d[2])")
    click_map_marker(page, plot, 0, ids.index("pattern"), "Attention pattern")
    page.wait_for_url("**page=attention**", timeout=60_000)
    wait_idle(page)
    assert page.locator("h1").first.inner_text().startswith("4 · Attention heads")
    assert "layer=2" in page.url
    slider = page.locator("[data-testid='stSlider']").filter(has_text="Layer").first
    assert slider.locator("[data-testid='stSliderThumbValue']").inner_text() == "2"
    assert_no_exception(page, "after clicking the map")
    assert_local(requests)
    ctx.close()


def test_presenter_mode_shows_the_whole_model_map(browser, server):
    """Presenter mode zooms the page 1.3x; the map must still fit the page, uncut."""
    requests: list[str] = []
    ctx, page = new_page(browser, requests, height=720)
    page.goto(f"{server}/?page=overview&presenter=1")
    wait_idle(page)
    page.locator(".st-key-overview_map .js-plotly-plot .main-svg").first.wait_for(
        state="attached", timeout=60_000)
    page.wait_for_timeout(1500)  # plotly re-measures after the first draw
    sizes = page.evaluate("""() => {
        const el = document.querySelector('.st-key-overview_map');
        const plot = el.querySelector('.js-plotly-plot');
        const main = document.querySelector('[data-testid="stMainBlockContainer"]');
        const r = plot.getBoundingClientRect(), m = main.getBoundingClientRect();
        const svg = plot.querySelector('.main-svg').getBoundingClientRect();
        const box = el.getBoundingClientRect();
        return {right: r.right, main_right: m.right, main_width: m.width, width: r.width,
                svg_h: svg.height, box_h: box.height, svg_w: svg.width, box_w: box.width};
    }""")
    assert sizes["right"] <= sizes["main_right"] + 1, sizes  # not cut at the right
    assert sizes["svg_h"] <= sizes["box_h"] + 1 and sizes["svg_w"] <= sizes["box_w"] + 1, sizes
    assert sizes["width"] >= 0.8 * sizes["main_width"], sizes  # drawn large, not shrunk
    ctx.close()


def test_the_mask_picker_follows_a_model_switch(browser, server):
    """The browser keeps a keyed selectbox's shown text across reruns: after switching from the
    classifier (full mask) to the causal captioner, the picker and the line under it must say
    what is true of the captioner, with no reload."""
    from vit_core import load_model

    requests: list[str] = []
    ctx, page = new_page(browser, requests)
    page.goto(server)
    wait_idle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    own = load_model("shapes-captioner-causal").config.default_mask
    assert own != load_model("shapes-classifier").config.default_mask
    sidebar.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name="shapes-captioner-causal").first.click()
    wait_idle(page)
    sidebar.get_by_text(f"This model's own mask: {own} (as trained).").wait_for(timeout=60_000)
    shown = sidebar.get_by_role("combobox", name="Attention mask").input_value()
    assert shown == "the model's own", shown  # no model's mask named in the box itself
    ctx.close()
