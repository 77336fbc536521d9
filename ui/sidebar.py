"""The shared sidebar: choose the model and the image. Every widget has a key."""

from __future__ import annotations

import functools

import streamlit as st

from . import keys, share, state

UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff"]


def draw(stage: str) -> None:
    """Draw the sidebar and store the chosen input in st.session_state[keys.INPUT]."""
    sb = st.sidebar
    sb.toggle("Presenter mode", key=keys.PRESENTER,
              help="Large type, one stage per screen with Previous / Next, and a short story "
                   "for each stage. Also opens with ?presenter=1.")
    sb.header("Model")
    if st.session_state.get(keys.LOADING_CHECKPOINT):
        load_checkpoint_form(sb)
    sb.selectbox("Model", state.model_choices(), key=keys.MODEL, format_func=state.model_label,
                 on_change=_on_model_change,
                 help="Bundled models were trained by this repo on generated scenes. Presets "
                      "have the real geometry but random weights. 'Load a checkpoint…' reads "
                      "a timm / Hugging Face / ViT Explainer checkpoint from the server.")
    st.session_state[keys.PREVIOUS_MODEL] = st.session_state[keys.MODEL]
    card(sb)
    sb.selectbox("Attention mask", share.MASKS, key=keys.MASK,
                 format_func=lambda m: "as trained" if m == "trained" else m,
                 help="Run the model with another mask than the one it was trained with.")
    sb.header("Image")
    seeds = state.sample_seeds()
    sb.selectbox("Sample scene", seeds, key=keys.SAMPLE, format_func=state.sample_caption,
                 on_change=_drop_upload,
                 help="Generated scenes the bundled models never saw in training.")
    sb.file_uploader("…or upload a photo", type=UPLOAD_TYPES, key=upload_key(),
                     on_change=_take_upload)
    name = st.session_state[keys.MODEL]
    error = None
    upload = st.session_state.get(keys.UPLOAD)  # (name, bytes) of the photo in use, if any
    if upload is not None:
        inp = state.make_input(f"upload: {upload[0]}", upload[1])
        error = state.image_error(inp, name)
        if error:  # not shown, so not "in use": the sidebar and the page show the sample
            _drop_upload()
            upload = None
    if upload is not None:
        sb.button(f"✕ Stop using {upload[0]}", key=keys.DROP_UPLOAD, on_click=_drop_upload)
    photo = None
    if sb.toggle("Use the camera", key=keys.USE_CAMERA):
        photo = sb.camera_input("Take a photo", key=keys.CAMERA)
    if upload is None and photo is not None and not error:
        inp = state.make_input("camera photo", photo.getvalue())
        error = state.image_error(inp, name)
        photo = None if error else photo
    if upload is None and photo is None:
        seed = st.session_state[keys.SAMPLE]
        inp = state.make_input(f"sample: {state.sample_caption(seed)}", state.sample_bytes(seed))
    st.session_state[keys.INPUT] = inp
    st.session_state[keys.INPUT_ERROR] = error  # state.load_current shows it on the page
    sb.caption(f"Showing {inp.label} · image id {inp.key[:8]}")
    with sb.expander("Share and export"):
        st.caption("Link to this view (same stage, model, sample, layer, head and patch):")
        st.code(share.link(stage), language=None)
        # Streamlit calls the data function when the button is clicked, on another thread where
        # st.session_state does not exist: everything it needs is read here, in the script run.
        st.download_button("Download this trace (.npz)", functools.partial(
            state.trace_npz, inp, name, state.chosen_mask()), file_name=f"trace-{inp.key[:8]}.npz",
            mime="application/octet-stream", key=keys.DOWNLOAD_TRACE,
            help="Every traced tensor of this image and model, as NumPy arrays.")


def upload_key() -> str:
    """The uploader's widget key: a new one after each upload, so the uploader is always empty.

    A file left in Streamlit's uploader makes choosing the next one two script runs (removing
    the old file reruns the app on the sample scene, then the new file arrives) and the browser
    renders both: 1.3-1.9 s instead of 0.8-1.2 s for ViT-B/16 here. So the photo is taken out
    of the widget into the session as soon as it arrives.
    """
    return keys.upload(st.session_state.get(keys.UPLOAD_ROUND, 0))


def _take_upload() -> None:
    """on_change of the uploader: keep the photo in the session, give the uploader a fresh key."""
    file = st.session_state.get(upload_key())
    if file is not None:
        st.session_state[keys.UPLOAD] = (file.name, file.getvalue())
        st.session_state[keys.UPLOAD_ROUND] = st.session_state.get(keys.UPLOAD_ROUND, 0) + 1


def _drop_upload() -> None:
    """Back to the sample scene (its picker changed, or the stop button was pressed)."""
    st.session_state.pop(keys.UPLOAD, None)


def _on_model_change() -> None:
    """Choosing 'Load a checkpoint…' opens the form and keeps the previous model meanwhile."""
    if st.session_state[keys.MODEL] == state.LOAD_OTHER:
        st.session_state[keys.LOADING_CHECKPOINT] = True
        st.session_state[keys.MODEL] = st.session_state.get(keys.PREVIOUS_MODEL,
                                                            state.model_choices()[0])


def load_checkpoint_form(sb) -> None:
    """A path on the server; on success the picker switches to it, on failure it says why."""
    path = sb.text_input("Checkpoint path on the server", key=keys.CHECKPOINT_PATH,
                         placeholder="/models/vit.safetensors or a Hugging Face folder")
    heads = sb.number_input("Attention heads (0 = from the file, or width / 64)", 0, 64, 0,
                            key=keys.CHECKPOINT_HEADS,
                            help="timm state dicts don't record the number of heads.")
    ok, cancel = sb.columns(2)
    if ok.button("Load", key=keys.CHECKPOINT_LOAD, disabled=not path):
        with st.spinner("Loading the checkpoint…"):
            error = state.try_load(path, int(heads))
        st.session_state[keys.CHECKPOINT_ERROR] = error
        if error is None:
            st.session_state[keys.MODEL] = st.session_state[keys.LOADED_NAME]
            st.session_state[keys.LOADING_CHECKPOINT] = False
            st.rerun()
    if cancel.button("Cancel", key=keys.CHECKPOINT_CANCEL):
        st.session_state[keys.LOADING_CHECKPOINT] = False
        st.session_state[keys.CHECKPOINT_ERROR] = None
        st.rerun()
    if st.session_state.get(keys.CHECKPOINT_ERROR):
        sb.error(st.session_state[keys.CHECKPOINT_ERROR])


def card(sb) -> None:
    """A short model card: where the model comes from, its geometry and classes."""
    model = state.get_model(st.session_state[keys.MODEL])
    c, info = model.config, model.info
    n = sum(p.numel() for p in model.parameters())
    with sb.expander("Model card"):
        st.markdown(
            f"**{info.name}** · {'trained' if info.trained else 'untrained (random weights)'}  \n"
            f"source: {info.source}  \n"
            f"{c.img_size}×{c.img_size} input, patch {c.patch_size} ({c.grid}×{c.grid}), D = "
            f"{c.embed_dim}, {c.depth} layers × {c.num_heads} heads, {n / 1e6:.2f} M parameters"
            + (f"  \n{c.num_classes} classes: {', '.join(c.class_names[:10])}"
               + (" …" if len(c.class_names) > 10 else "") if c.num_classes else "")
            + (f"  \ntext: {c.vocab_size} words, up to {c.max_text_len} tokens, trained "
               f"with the {c.default_mask} mask" if c.has_text else ""))
        if info.metrics:
            st.json(info.metrics, expanded=False)


def fingerprint() -> None:
    """Image id + top prediction, at the foot of the sidebar (what the load test checks)."""
    inp, name = state.current()  # an unreadable upload was already replaced by a sample
    tr = state.trace(inp, name, mask=state.chosen_mask())
    model = state.get_model(name)
    c = model.config
    top = ""
    if c.num_classes:
        k = int(tr.logits.argmax())
        label = c.class_names[k] if c.class_names else f"class {k}"
        top = f" · top: {label} {float(tr.logits.softmax(-1)[k]):.0%}"
    st.sidebar.caption(f"fingerprint {inp.key[:8]}{top}")
