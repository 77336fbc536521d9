"""Pure figure functions: tensors and images in, plotly figures out. Never imports streamlit.

One module per kind of figure; every name is drawn as `figures.<name>`:
    parts     what every figure is built from (panels side by side, shapes, titles, axes)
    tokens    token names and the ticks an axis prints
    heatmaps  matrices, strips, grid maps, similarity tiles, masks, head switches
    images    the crop with its patch grid, maps over the crop, labelled patches, QR codes
    bars      top classes, logits, words, units, before and after
    charts    lines, points and histograms
    maps      the model map (overview): a plan (where the boxes go) and its drawer
Pictures (PIL images, ui/drawing/pictures.py) are drawn as figures.<name> too.
"""

from ui.drawing.figures.bars import (
    before_after_bars,
    caption_pair,
    logit_bars,
    similarity_bars,
    top_k_bars,
    top_units_bars,
    word_bars,
)
from ui.drawing.figures.charts import (
    distance_chart,
    gelu_scatter,
    histogram_pair,
    line_chart,
    residual_norms,
    visible_keys_chart,
)
from ui.drawing.figures.heatmaps import (
    grid_heatmap,
    grid_heatmap_pair,
    head_switches,
    mask_figure,
    matrix_heatmap,
    similarity_tiles,
    token_mask,
    vector_strip,
)
from ui.drawing.figures.images import (
    labelled_patches,
    map_over_image,
    patch_grid,
    patch_set_grid,
    qr_png,
)
from ui.drawing.figures.maps import (
    MAP_BOX_H,
    MAP_BOX_W,
    MAP_FILL,
    MAP_ROW_PX,
    MAP_WIDTH,
    MapPlan,
    model_map,
    model_map_layout,
    wide_plan,
)
from ui.drawing.figures.parts import add_shapes, jpeg_data_uri, panels
from ui.drawing.figures.tokens import (
    TURNED_GAP_PX,
    prefix_ticks,
    spaced_ticks,
    tick_gap,
    token_labels,
    token_ticks,
)
from ui.drawing.pictures import (
    array_image,
    class_colours,
    class_map_image,
    class_palette,
    enlarged_patch,
    overlay,
    tile,
    with_legend,
    with_region_names,
    with_scale,
    with_text_px,
)

__all__ = [
    "MAP_BOX_H", "MAP_BOX_W", "MAP_FILL", "MAP_ROW_PX", "MAP_WIDTH", "TURNED_GAP_PX", "MapPlan",
    "add_shapes", "array_image", "before_after_bars", "caption_pair", "class_colours",
    "class_map_image", "class_palette", "distance_chart", "enlarged_patch", "gelu_scatter",
    "grid_heatmap", "grid_heatmap_pair", "head_switches", "histogram_pair", "jpeg_data_uri",
    "labelled_patches", "line_chart", "logit_bars", "map_over_image", "mask_figure",
    "matrix_heatmap", "model_map", "model_map_layout", "overlay", "panels", "patch_grid",
    "patch_set_grid", "prefix_ticks", "qr_png", "residual_norms", "similarity_bars",
    "similarity_tiles", "spaced_ticks", "tick_gap", "tile", "token_labels", "token_mask",
    "token_ticks", "top_k_bars", "top_units_bars", "vector_strip", "visible_keys_chart",
    "with_legend", "with_region_names", "with_scale", "with_text_px", "word_bars", "wide_plan",
]
