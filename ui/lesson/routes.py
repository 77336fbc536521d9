"""The pages app.py built from the stages (ui/stages.STAGES), by slug, for whoever switches page
(st.switch_page takes the page object), and the stage a box of the model map opens. No stage is
imported here: a stage's map click reads this module."""

# slug -> the st.Page app.py built for it (set by app.py at the start of every run, before any
# page switches: st.switch_page finds a page by its url_path, the slug)
PAGES: dict[str, object] = {}


def register(pages: dict[str, object]) -> None:
    """Keep the pages app.py built this run (the same slugs every run: replaced one by one, so
    another session's run never finds a slug missing)."""
    PAGES.update(pages)


# The model map's boxes name the stage of the pass they belong to (vit_core.explain.stages.STAGES);
# a click opens the page that explains that stage.
MAP_PAGES = {
    "patches": "patches",
    "embed": "embeddings",
    "qkv": "qkv",
    "attention": "attention",
    "mask": "masks",
    "mlp": "mlp",
    "generation": "logits",  # the Logits page steps through the caption, word by word
    "readout": "logits",
    "segmentation": "segmentation",
}
