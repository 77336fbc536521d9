"""The app's stages: one page script each, in pipeline order (app.py routes them; the model
map's clicks open them). No Streamlit here."""

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
