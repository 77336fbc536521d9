"""The shared sidebar: choose the model and the image. Every widget has a key."""

from __future__ import annotations

import functools

import streamlit as st

import vit_core
from ui import keys
from ui.drawing import numbers
from ui.lesson import share
from ui.selection import composer, controls, export, inputs, model_card, models, session
from ui.serving import state
from vit_core.io import hub
from vit_core.io.ref import ModelRef

UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff"]


def draw(stage: str, where=None) -> None:
    """Draw the sidebar and store the chosen input in st.session_state[keys.INPUT].

    `where`: another container to draw the same widgets in (presenter mode's popover, while the
    sidebar is hidden); the widgets and their keys are the same, so nothing is drawn twice."""
    sb = st.sidebar if where is None else where
    if where is not None:
        controls.resend_sidebar()
    sb.toggle("Presenter mode", key=keys.PRESENTER,
              help="Large type, one stage per screen with Previous / Next, and a short story "
                   "for each stage. Also opens with ?presenter=1.")
    model_part(sb)
    sb.header("Image")
    seeds = inputs.sample_seeds()
    sb.selectbox("Sample scene", seeds, key=keys.SAMPLE, format_func=inputs.sample_caption,
                 on_change=_drop_upload,
                 help="Generated scenes the bundled models never saw in training.")
    composed = composer.draw(sb)  # "Compose a scene": its Input while it is the image
    sb.file_uploader("…or upload a photo", type=UPLOAD_TYPES, key=upload_key(),
                     on_change=_take_upload)
    name = session.model_name()  # at the chosen input size
    inp, error = photo_part(sb, name)
    if inp is None and composed is not None:
        inp = composed
    elif inp is None:
        seed = st.session_state[keys.SAMPLE]
        inp = inputs.make_input(f"sample: {inputs.sample_caption(seed)}", inputs.sample_bytes(seed))
    st.session_state[keys.INPUT] = inp
    st.session_state[keys.INPUT_ERROR] = error  # session.load_current shows it on the page
    sb.caption(f"Showing {inp.label} · image id {inp.key[:8]}")
    share_part(sb, stage, inp, name)


def model_part(sb) -> None:
    """The model, its training step and input size, its card and the attention mask."""
    sb.header("Model")
    allowed = models.teacher_actions_allowed()
    if st.session_state.get(keys.LOADING_CHECKPOINT) and allowed:
        load_checkpoint_form(sb)
    if st.session_state.get(keys.FETCHING) and allowed:
        fetch_form(sb)
    sb.selectbox("Model", models.choices(), key=keys.MODEL, format_func=models.label,
                 on_change=_on_model_change,
                 help="Bundled models were trained by this repo on generated scenes. Presets "
                      "have the real geometry but random weights. hf:ORG/NAME are real ViTs "
                      "from the Hugging Face Hub, fetched once and then used offline.")
    sb.caption(reach_line(), help="Who can open this app decides who may fetch models and load "
               "checkpoints from paths on the server. On the network: start it with "
               "`-- --allow-fetch` to allow it anyway.")
    if st.session_state.get(keys.LINK_NOTICE):
        sb.warning(st.session_state.pop(keys.LINK_NOTICE))
    _check_model_loads(sb)
    st.session_state[keys.PREVIOUS_MODEL] = st.session_state[keys.MODEL]
    train_step_picker(sb)
    size_picker(sb)
    model_card.card(sb)
    own_line = own_mask_line(state.get_model(st.session_state[keys.MODEL]))
    # The first choice is worded the same for every model: the browser keeps a keyed
    # selectbox's shown text across a model switch, so a model's mask there would go stale.
    sb.selectbox("Attention mask", share.MASKS, key=keys.MASK,
                 format_func=lambda m: OWN_MASK if m == "trained" else m, help=MASK_HELP)
    sb.caption(own_line)


def photo_part(sb, name: str):
    """(the uploaded or camera photo in use as an Input, or None; the error sentence of one
    that model `name` cannot read, or None). The upload comes first; the camera's toggle and
    the stop button are drawn here."""
    error = None
    upload = st.session_state.get(keys.UPLOAD)  # (name, bytes) of the photo in use, if any
    if upload is not None:
        inp = inputs.make_input(f"upload: {upload[0]}", upload[1])
        error = session.image_error(inp, name)
        if error:  # not shown, so not "in use": the sidebar and the page show the sample
            st.session_state.pop(keys.UPLOAD, None)  # (the composer's toggle is drawn already)
            upload = None
    if upload is not None:
        sb.button(f"✕ Stop using {upload[0]}", key=keys.DROP_UPLOAD, on_click=_drop_upload)
    photo = None
    if sb.toggle("Use the camera", key=keys.USE_CAMERA):
        photo = sb.camera_input("Take a photo", key=keys.CAMERA)
    if upload is not None:
        return inp, error
    if photo is not None and not error:
        inp = inputs.make_input("camera photo", photo.getvalue())
        error = session.image_error(inp, name)
        if not error:
            return inp, None
    return None, error


def share_part(sb, stage: str, inp, name: str) -> None:
    """"Share and export": the link to this view, its QR code and the trace's download."""
    box = sb.expander("Share and export", key=keys.SHARE_OPEN, on_change="rerun")
    if not box.open:  # drawn only while open, as the composer (ui/selection/composer.py says why)
        return
    with box:
        st.caption(share.link_caption(stage))
        st.code(link := share.link(stage), language=None)
        share.draw_qr(link)
        # Streamlit calls the data function when the button is clicked, on another thread where
        # st.session_state does not exist: everything it needs is read here, in the script run.
        st.download_button("Download this trace (.npz)", functools.partial(
            export.trace_npz, inp, name, session.chosen_mask()),
            file_name=f"trace-{inp.key[:8]}.npz",
            mime="application/octet-stream", key=keys.DOWNLOAD_TRACE,
            help="Every traced tensor of this image and model, as NumPy arrays (a captioner's: "
                 "the pass that wrote its caption, with `text_ids`).")


def reach_line() -> str:
    """Who can open the app, and whether this browser may fetch models (models decides)."""
    if models.this_computer_only():
        where = "Listening on this computer only"
    elif models.through_proxy():
        where = "Reached through a proxy (anyone it serves can open this app)"
    else:
        where = "Listening on the network (anyone on the LAN can open this app)"
    if not models.teacher_actions_allowed():
        return f"{where}: fetching models is the teacher's, with `{hub.FETCH_COMMAND} ORG/NAME`."
    started = "" if models.this_computer_only() else " (started with --allow-fetch)"
    return f"{where}: fetching models from the browser is on{started}."


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
    composer.stop()


def _on_model_change() -> None:
    """'Load a checkpoint…', 'Fetch another model…' and a model not fetched yet open their form
    and keep the previous model meanwhile."""
    ss = st.session_state
    chosen = ss[keys.MODEL]
    if chosen == models.LOAD_OTHER:
        ss[keys.LOADING_CHECKPOINT] = True
    elif chosen == models.FETCH_OTHER:
        ss[keys.FETCHING] = models.FETCH_OTHER
    elif models.needs_fetch(chosen):
        ss[keys.FETCHING] = chosen
    else:
        return
    ss[keys.FETCH_ERROR] = None
    ss[keys.MODEL] = ss.get(keys.PREVIOUS_MODEL, models.choices()[0])


def train_step_picker(sb) -> None:
    """For a model kept at several training steps (vit_core.training_log): which step's weights
    every page runs, the last by default. A link's ?train_step= is checked here; a step the model
    was not kept at is said in one sentence. Another model without snapshots hides the picker."""
    ss = st.session_state
    name = ss[keys.MODEL]
    log = state.training_log(name)
    asked = ss.pop(keys.TRAIN_STEP_ASKED, None)
    if log is None:
        if asked is not None:
            sb.warning(f"This link asks for training step {asked!r}, but {name} was not kept at "
                       f"earlier training steps; showing its final weights.")
        ss.pop(keys.TRAIN_STEP, None)
        return
    steps = log.steps
    if asked is not None:
        if asked.isdigit() and int(asked) in steps:
            ss[keys.TRAIN_STEP] = int(asked)
        else:
            sb.warning(f"This link asks for training step {asked!r}; {name} was kept at steps "
                       f"{', '.join(map(str, steps))}. Showing its final weights.")
            ss[keys.TRAIN_STEP] = log.final_step
    if ss.get(keys.TRAIN_STEP) not in steps:
        ss[keys.TRAIN_STEP] = log.final_step
    sb.select_slider("Training step", steps, key=keys.TRAIN_STEP,
                     format_func=lambda s: train_step_label(s, log.final_step),
                     help="Run every page with the weights this model had after that many "
                          "training steps (kept while it trained; the Training stage draws "
                          "its curves).")
    step = ss[keys.TRAIN_STEP]
    snap = log.snapshot(step)
    if step != log.final_step and snap is not None and "top1" in snap:
        sb.caption(f"After {step:,} of {log.final_step:,} steps: held-out top-1 "
                   f"{100 * snap['top1']:.0f} % on {log.snapshot_eval['n']} scenes.")


def train_step_label(step: int, final: int) -> str:
    """'0 (random start)', '250', '10000 (final)'."""
    return (f"{step} (random start)" if step == 0 else
            f"{step} (final)" if step == final else str(step))


def size_picker(sb) -> None:
    """The input size the model runs at: its own first, then the multiples of its patch size
    from half to twice its own (vit_core.input_sizes). A link's ?size= is checked here, against
    the sizes of the model the link opened; one it cannot read is said in one sentence. Another
    model keeps the size if it reads it, else runs at its own."""
    ss = st.session_state
    c = state.get_model(ss[keys.MODEL]).config  # every training step has the same config
    sizes = vit_core.input_sizes(c)
    asked = ss.pop(keys.SIZE_ASKED, None)
    if asked is not None:
        size = int(asked) if asked.isdigit() else None
        if size in sizes:
            ss[keys.SIZE] = size
        else:
            sb.warning(f"This link asks for the input size {asked!r}, which {ss[keys.MODEL]} "
                       f"cannot run at (it runs at multiples of its patch size {c.patch_size} "
                       f"from {min(sizes)} to {max(sizes)} px); showing its own {c.img_size} px.")
            ss[keys.SIZE] = c.img_size
    if ss.get(keys.SIZE) not in sizes:  # a size only the previous model reads
        ss[keys.SIZE] = c.img_size
    sb.selectbox("Input size", sizes, key=keys.SIZE, format_func=lambda s: size_label(s, c),
                 help="Run every page at another image size. The weights stay the same; the "
                      "position embeddings, one per patch of the grid the model was trained "
                      "on, are resampled bicubically to the new grid, as timm does.")
    size = ss[keys.SIZE]
    if size != c.img_size:
        g = size // c.patch_size
        sb.caption(f"Trained at {c.img_size} px ({c.grid}×{c.grid} patches); at {size} px it "
                   f"reads {g}×{g} = {g * g} patches, positions resampled (Embeddings stage).")


def size_label(size: int, c) -> str:
    """'224 px (its own)', '288 px (9×9 patches)'."""
    g = size // c.patch_size
    return f"{size} px (its own)" if size == c.img_size else f"{size} px ({g}×{g} patches)"


def _check_model_loads(sb) -> None:
    """A model that cannot be loaded (its files were removed, a broken cache) is said in one
    sentence, and the session goes back to the default model."""
    name = st.session_state[keys.MODEL]
    try:
        state.get_model(name)
    except (vit_core.CheckpointError, ValueError, OSError) as e:
        default = vit_core.default_model_name()
        sb.error(f"{name} could not be loaded ({str(e).splitlines()[0]}); showing {default}.")
        st.session_state[keys.MODEL] = default


def fetch_form(sb) -> None:
    """The teacher's fetch: a curated model chosen in the picker, or any Hub name typed here."""
    ss = st.session_state
    target = ss[keys.FETCHING]
    if target == models.FETCH_OTHER:
        target = sb.text_input("Hugging Face model name", key=keys.FETCH_NAME,
                               placeholder="facebook/deit-small-patch16-224").strip()
    else:
        curated = hub.CURATED.get(hub.repo_id(target))
        if curated:
            sb.caption(f"{target}: {curated.why}. {curated.params_m:.1f} M parameters, "
                       f"≈ {curated.size_mb:.0f} MB to download once; afterwards it works "
                       f"offline.")
    ok, cancel = sb.columns(2)
    if ok.button("Fetch", key=keys.FETCH_BUTTON, disabled=not target, type="primary"):
        bar = sb.progress(0.0, text="Asking the Hub…")
        error = models.fetch_into_session(target, bar)
        ss[keys.FETCH_ERROR] = error
        if error is None:
            ss[keys.MODEL] = hub.PREFIX + hub.repo_id(target)
            ss[keys.FETCHING] = None
            st.rerun()
    if cancel.button("Cancel", key=keys.FETCH_CANCEL):
        ss[keys.FETCHING] = None
        ss[keys.FETCH_ERROR] = None
        st.rerun()
    if ss.get(keys.FETCH_ERROR):
        sb.error(ss[keys.FETCH_ERROR])


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
            error = try_load(path, int(heads))
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


def try_load(path: str, heads: int = 0) -> str | None:
    """Load a checkpoint from a server path (the teacher's action); returns an error sentence,
    or None on success.

    On success the picker name (the path, with '?heads=H' when heads were given) is added to
    this session's models and stored in st.session_state[keys.LOADED_NAME].
    """
    if not models.teacher_actions_allowed():
        return ("Loading from a server path is the teacher's action: start the app with "
                "`-- --allow-fetch`, or put the file in the folder of `-- --models-dir DIR`, "
                "whose checkpoints the picker offers to everyone.")
    path = str(ModelRef(path.strip(), heads=heads or None))
    try:
        state.get_model(path)
    except (vit_core.CheckpointError, ValueError, OSError) as e:
        return f"Could not load that checkpoint: {str(e).splitlines()[0]}"
    loaded = st.session_state.setdefault(keys.LOADED_PATHS, [])
    if path not in loaded:
        loaded.append(path)
    st.session_state[keys.LOADED_NAME] = path
    return None


OWN_MASK = "the model's own"  # the mask picker's first choice, for every model
MASK_HELP = (f"The attention mask the model runs with. “{OWN_MASK}” keeps the mask it was trained "
             f"with (or, for a model from elsewhere, runs with by default), named under this "
             f"list; choosing that mask by name gives the same pass; the others replace it.")


def own_mask_line(model) -> str:
    """The line under the mask picker that names the model's own mask (the list offers it
    under its name too: the same pass, state.same_mask)."""
    own = model.config.default_mask
    return f"This model's own mask: {own}" + (
        " (as trained)." if model.info.source == "bundled" else ".")


def fingerprint() -> None:
    """Image id + top prediction, at the foot of the sidebar (what the load test checks)."""
    inp, name = session.current()  # an unreadable upload was already replaced by a sample
    tr = state.trace(inp, name, mask=session.chosen_mask())
    model = state.get_model(name)
    c = model.config
    top = ""
    if c.num_classes:
        k = int(tr.logits.argmax())
        label = c.class_names[k] if c.class_names else f"class {k}"
        top = f" · top: {label} {numbers.percent(float(tr.logits.softmax(-1)[k]))}"
    st.sidebar.caption(f"fingerprint {inp.key[:8]}{top}")
