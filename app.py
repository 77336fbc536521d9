"""ViT Explainer: routes to one page per stage and draws the shared sidebar. No math here."""

from ui import process

process.tune()  # before torch loads: the server's own allocator and OpenMP settings (once)

import streamlit as st  # noqa: E402

from ui import controls, icon, keys, presenter, share, sidebar, state, steps  # noqa: E402

# slug -> (script, title, icon), in pipeline order. `?page=<slug>` opens the app on that stage.
STAGES = {
    "overview": ("pages/overview.py", "The whole pass", ":material/route:"),
    "patches": ("pages/input_patches.py", "1 · Input and patches", ":material/grid_on:"),
    "embeddings": ("pages/embeddings.py", "2 · Embeddings", ":material/scatter_plot:"),
    "qkv": ("pages/ln_qkv.py", "3 · LayerNorm and Q/K/V", ":material/key:"),
    "attention": ("pages/attention.py", "4 · Attention heads", ":material/visibility:"),
    "masks": ("pages/masks.py", "5 · Masks", ":material/grid_goldenratio:"),
    "mlp": ("pages/mlp.py", "6 · MLP", ":material/hub:"),
    "logits": ("pages/logits.py", "7 · Logits", ":material/bar_chart:"),
    "shapes": ("pages/shape_trace.py", "8 · Shape trace", ":material/table_chart:"),
    "segmentation": ("pages/segmentation.py", "9 · Segmentation", ":material/texture:"),
    "experiments": ("pages/experiments.py", "10 · Experiments", ":material/science:"),
}
share.load_once()  # a shared link restores its view before any widget exists
presenting = bool(st.session_state.get(keys.PRESENTER))
st.set_page_config(page_title="ViT Explainer", page_icon=icon.favicon(), layout="wide",
                   initial_sidebar_state="collapsed" if presenting else "auto")
start = st.query_params.get("page", "overview")
pages = {slug: st.Page(path, title=title, icon=icon, url_path=slug, default=slug == start)
         for slug, (path, title, icon) in STAGES.items()}
pg = st.navigation(list(pages.values()))
stage = next(slug for slug, page in pages.items() if page.url_path == pg.url_path)
controls.keep_shared()  # layer / head / patch survive moving between pages
head = None
if st.session_state.get(keys.PRESENTER):  # (kept across st.switch_page by keep_shared) the
    # header row first, with the sidebar's widgets in its popover
    steps.sync(stage, presenter.model_config())  # before share.write: the link holds the step
    head = presenter.header(STAGES, stage)
sidebar.draw(stage, where=head)  # after st.navigation and before pg.run(): uploads reach the
controls.remember_sidebar()  # session reliably
config = state.get_model(st.session_state[keys.MODEL]).config
controls.clamp(config)
share.write(stage)
pg.run()
if head is not None:
    presenter.ask(stage, config)
sidebar.fingerprint()
