"""The app's stages: one page script each, in pipeline order (app.py routes them; the model
map's clicks open them, through MAP_PAGES). No Streamlit here."""

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
    "training": ("pages/training.py", "11 · Training", ":material/trending_up:"),
    "mae": ("pages/mae.py", "12 · Masked patches (MAE)", ":material/blur_on:"),
}


def walk(lesson: tuple[str, ...], here: str | None = None) -> list[str]:
    """The stages a live class's Next and Previous go through: the lesson's, in the tour's
    order, and the stage the teacher is on (one opened from the menu); the whole tour when the
    lesson names none."""
    return [s for s in STAGES if not lesson or s in lesson or s == here]


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
