"""The shared sidebar: choose the model and the image. Every widget has a key."""

from __future__ import annotations

import streamlit as st

from . import share, state

UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff"]


def draw(stage: str) -> None:
    """Draw the sidebar and store the chosen input in st.session_state['_input']."""
    sb = st.sidebar
    sb.toggle("Presenter mode", key="presenter",
              help="Large type, one stage per screen with Previous / Next, and a short story "
                   "for each stage. Also opens with ?presenter=1.")
    sb.header("Model")
    choices = state.model_choices()
    sb.selectbox("Model", choices, key="model", format_func=state.model_label,
                 help="Bundled models were trained by this repo on generated scenes. Presets "
                      "have the real geometry but random weights.")
    sb.selectbox("Attention mask", share.MASKS, key="mask",
                 format_func=lambda m: "as trained" if m == "trained" else m,
                 help="Run the model with another mask than the one it was trained with.")
    sb.header("Image")
    seeds = state.sample_seeds()
    sb.selectbox("Sample scene", seeds, key="sample", format_func=state.sample_caption,
                 help="Generated scenes the bundled models never saw in training.")
    upload = sb.file_uploader("…or upload a photo", type=UPLOAD_TYPES, key="upload")
    photo = None
    if sb.toggle("Use the camera", key="use_camera"):
        photo = sb.camera_input("Take a photo", key="camera")
    if upload is not None:
        inp = state.make_input(f"upload: {upload.name}", upload.getvalue())
    elif photo is not None:
        inp = state.make_input("camera photo", photo.getvalue())
    else:
        seed = st.session_state["sample"]
        inp = state.make_input(f"sample: {state.sample_caption(seed)}", state.sample_bytes(seed))
    st.session_state["_input"] = inp
    sb.caption(f"Showing {inp.label} · image id {inp.key[:8]}")
    with sb.expander("Share and export"):
        st.caption("Link to this view (same stage, model, sample, layer, head and patch):")
        st.code(share.link(stage), language=None)
        st.download_button("Download this trace (.npz)", lambda: state.trace_npz(
            inp, st.session_state["model"]), file_name=f"trace-{inp.key[:8]}.npz",
            mime="application/octet-stream", key="download_trace",
            help="Every traced tensor of this image and model, as NumPy arrays.")
