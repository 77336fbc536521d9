"""Every session-state key and widget key of the app, defined once.

A widget's `key=` is also its session-state key, so both live here. The values are part of the
app's interface: `AppTest` tests address widgets by them, and the shared-link query parameters
(model, mask, sample, scene, layer, head, patch, presenter, size, train_step) have the same
names. Change a value only together with those. Keys that need a part known only at run time
(a model name, a file name) are built by the small functions at the end, from a prefix defined
here.
"""

from __future__ import annotations

# ---------------------------------------------------------------- shared selections
# Drawn by ui/selection/controls.py on several pages; kept across page changes by
# controls.keep_shared and
# clamped to the model by controls.clamp; layer, head and patch also come from a shared link.
LAYER = "layer"  # int: selected block (controls.layer slider; share.load_once)
HEAD = "head"  # int: selected attention head (controls.head slider; share.load_once)
PATCH = "patch"  # int: selected patch (controls.patch input, a grid click; share.load_once)
KEY_PATCH = "key_patch"  # int: the key token's patch on the Q/K/V page (ui/stages/ln_qkv.py input)

# ---------------------------------------------------------------- sidebar widgets
# Drawn by ui/selection/sidebar.py on every page.
PRESENTER = "presenter"  # bool: presenter mode (sidebar toggle; share.load_once; presenter.leave)
MODEL = "model"  # str: picker name (sidebar selectbox and checkpoint form; share.load_once)
SIZE = "size"  # int: input size in px, the model's own or another (sidebar selectbox; a link)
TRAIN_STEP = "train_step"  # int: the training step whose weights run (sidebar slider; a link)
MASK = "mask"  # str: attention mask, "trained" or one of share.MASKS (sidebar; share.load_once)
SAMPLE = "sample"  # int: seed of the sample scene (sidebar selectbox; share.load_once)
DROP_UPLOAD = "drop_upload"  # button: stop using the uploaded photo
USE_CAMERA = "use_camera"  # bool: camera input shown (toggle)
CAMERA = "camera"  # the camera photo (camera_input)
DOWNLOAD_TRACE = "download_trace"  # button: download the trace as .npz
SHARE_OPEN = "share_open"  # bool: the "Share and export" expander is open (its contents drawn)
CHECKPOINT_PATH = "checkpoint_path"  # str: server path typed in the checkpoint form
CHECKPOINT_HEADS = "checkpoint_heads"  # int: number of heads typed in the checkpoint form
CHECKPOINT_LOAD = "checkpoint_load"  # button: load the checkpoint
CHECKPOINT_CANCEL = "checkpoint_cancel"  # button: close the checkpoint form
FETCH_NAME = "fetch_name"  # str: a Hub name typed in the fetch form
FETCH_BUTTON = "fetch_button"  # button: fetch the model
FETCH_CANCEL = "fetch_cancel"  # button: close the fetch form
UPLOAD_PREFIX = "upload-"  # + upload round: the uploader's key (see upload(); sidebar.upload_key)

# ---------------------------------------------------------------- scene composer
# Drawn by ui/selection/composer.py in the sidebar's Image section; a shared link fills them
# (?scene=).
COMPOSE_OPEN = "compose_open"  # bool: the "Compose a scene" expander is open (its controls drawn)
COMPOSE = "compose"  # bool: the composed scene is the image (toggle; any composer change)
COMPOSE_SHAPE = "compose_shape"  # str: one of world.CLASS_NAMES (selectbox)
COMPOSE_COLOUR = "compose_colour"  # str: a colour the background allows (selectbox)
COMPOSE_BACKGROUND = "compose_background"  # str: one of world.BACKGROUNDS (selectbox)
COMPOSE_POSITION = "compose_position"  # str: one of world.POSITIONS (selectbox)
COMPOSE_SIZE = "compose_size"  # int: diameter in px, within world.size_range (slider)
COMPOSE_ROTATION = "compose_rotation"  # int: degrees clockwise (slider)
COMPOSE_DISTRACTORS = "compose_distractors"  # int: 0-3 small distractors (slider)
COMPOSE_VARIATION = "compose_variation"  # int: texture crop, lighting... (number_input)

# ---------------------------------------------------------------- presenter header
# Drawn by ui/lesson/presenter.py when presenter mode is on.
PRESENTER_EXIT = "presenter_exit"  # button: leave presenter mode
PRESENTER_PREV = "presenter_prev"  # button: previous stage
PRESENTER_NEXT = "presenter_next"  # button: next step (after a stage's last: the next stage)
PRESENTER_KEYS = "presenter_keys"  # container: the clicker's key listener (an empty iframe)
DECK_FIGURE = "deck_figure"  # container: a step's key figure (in presenter mode, the slide's rest)
PRESENTER_BAR = "presenter_bar"  # container: the header row (one row, never wrapped)
PRESENTER_WHERE = "presenter_where"  # container: "Stage 4/10 · step 2/5 · …" in the header
PRESENTER_NOTES = "_presenter_notes"  # the hidden box of this run's speaker notes (deck.py)
PRESENTER_NOTES_BOX = "presenter_notes_box"  # container: the speaker notes, copied to their window
PRESENTER_NOTES_OPEN = "presenter_notes_open"  # button: open the speaker notes' own window
PRESENTER_STEP = "step"  # int: current step of the stage in PRESENTER_AT, from 0
#                          (ui/lesson/steps.py; the link's ?step= counts from 1: share.load_once /
#                          current_params)
PRESENTER_AT = "_presenter_at"  # str: the stage PRESENTER_STEP belongs to (ui/lesson/steps.py)
PRESENTER_GOTO = "_presenter_goto"  # str: the stage Next / Previous switches to (presenter.py)
PRESENTER_PLAYING = "_playing"  # str | None: what Play is playing ("layers", "caption")
PRESENTER_PLAY_FULL = "_play_full_run"  # bool: the player's fragment runs inside a full run
PLAY_LAYERS = "play_layers"  # button: Play / Pause the layers (ui/lesson/deck.py)

# ---------------------------------------------------------------- a live class (ui/live/)
# URL parameters (the teacher's: class + teach; a student's: join + me) and session state.
LIVE_CODE = "class"  # str: the class the session is in; the teacher's ?class=
LIVE_SECRET = "teach"  # str: the teacher's secret, ?teach= in the teacher's address only
LIVE_JOIN = "join"  # str: a student's ?join= (the class they follow)
LIVE_ME = "me"  # str: a student's anonymous id, ?me= (a reconnect keeps it: one answer a step)
LIVE_FOLLOW = "_live_follow"  # bool: the student follows the teacher (else explores alone)
LIVE_VERSION = "_live_version"  # int: the class's version this session last showed
LIVE_APPLIED = "_live_applied"  # dict: key -> the followed setting last taken from the teacher
LIVE_OWN = "_live_own"  # set: the settings the student changed (the teacher's no longer apply;
#                         ui/live/follow.py names them)
LIVE_LOADED = "_live_loaded"  # bool: the address's class was read (ui/live/session.load_once)
LIVE_WATCH = "_live_watch"  # (version, revealed): what this page shows of the class (student)
LIVE_NOTICE = "_live_notice"  # str: one sentence about the class (ended, refused, store down)
LIVE_SAVED = "_live_saved"  # str: Send's toast, shown by the answer box's next run
LIVE_CODE_INPUT = "live_code_input"  # text input: the code a student types
LIVE_NICK = "live_nick"  # text input: an optional nickname
LIVE_START = "live_start"  # button: the teacher starts a class
LIVE_LESSON = "live_lesson"  # multiselect: the stages of today's lesson (before the start)
LIVE_END = "live_end"  # button: the teacher ends it
LIVE_CSV = "live_csv"  # download button: the class's answers
LIVE_BANNER = "live_banner"  # container: "Following class ABC-DEF …" atop a student's page
LIVE_HEADER = "live_header"  # container: "Class ABC-DEF · 12 following" in the teacher's header

# ---------------------------------------------------------------- a phone (ui/drawing/phone.py)
PHONE_JS = "phone_js"  # container: the touch script's invisible frame
A11Y_JS = "a11y_js"  # container: the accessibility script's invisible frame (ui/drawing/a11y.py)
PHONE_IMAGE = "phone_image"  # popover: "Your image" atop the page, on a phone (its widgets drawn
#                              only while it is open)
PHONE_UPLOAD_PREFIX = "phone-upload-"  # + upload round: its uploader (as UPLOAD_PREFIX)
PHONE_CAMERA = "phone_camera"  # its camera photo (camera_input)
PHONE_SUFFIX = "_phone"  # a chart's key + this: its copy laid out for a phone (see phone())

# ---------------------------------------------------------------- internal session state
# Never a widget; written by code only.
INPUT = "_input"  # inputs.Input: the image in use (sidebar.draw; session.load_current on bad files)
INPUT_ERROR = "_input_error"  # str | None: why the chosen image is not shown (sidebar.draw)
READ_AHEAD = "_read_ahead"  # readahead._Interest: image, model, mask, class stage queued
URL_LOADED = "_url_loaded"  # bool: the URL's view was read into the session (share.load_once)
PREVIOUS_MODEL = "_previous_model"  # str: model before the picker changed (sidebar.draw)
UPLOAD = "_upload"  # (name, bytes) of the uploaded photo in use (sidebar._take_upload)
UPLOAD_ROUND = "_upload_round"  # int: uploads so far, part of the uploader's key (sidebar)
LOADING_CHECKPOINT = "_loading_checkpoint"  # bool: checkpoint form open (sidebar)
CHECKPOINT_ERROR = "_checkpoint_error"  # str | None: why the last load failed (sidebar)
FETCHING = "_fetching"  # str | None: the model the fetch form is for (sidebar._on_model_change)
FETCH_ERROR = "_fetch_error"  # str | None: why the last fetch failed (sidebar.fetch_form)
LINK_NOTICE = "_link_notice"  # str: a shared link's model is not here (share.load_once)
SIZE_ASKED = "_size_asked"  # str: a link's ?size=, checked by the sidebar against the model
TRAIN_STEP_ASKED = "_train_step_asked"  # str: a link's ?train_step=, checked by the sidebar
# the code of the composed scene in use, the link's ?scene= (ui/selection/composer.py)
SCENE = "scene"  # str
SCENE_NOTICE = "_scene_notice"  # str: a link's scene cannot be drawn (composer.load_link)
LOADED_PATHS = "_loaded_paths"  # list[str]: checkpoints loaded in this session (sidebar.try_load)
LOADED_NAME = "_loaded_name"  # str: picker name of the checkpoint just loaded (sidebar.try_load)
KEPT_PREFIX = "_kept_"  # + sidebar key: its value kept across st.switch_page (see kept())
MAP_OPEN = "_map_open"  # str: the stage a click on the model map opens next (ui/lesson/navigate.py)

# -------------------------------------------------------- stages' widget keys read elsewhere
# A stage's own widget keys are declared in the stage (ui/stages/<stage>/keys.py, or atop its
# module); these are read outside it too (the live class follows them: ui/live/follow.py; the
# read-ahead; other stages).
# ui/drawing/show.py: the PNG download under every composed image
PNG_PREFIX = "png_"  # + image slug (see png())
PICTURE_TEXT_PREFIX = "picture_text_"  # box: a picture with text drawn in (its px next)
# ui/lesson/presenter.py: the questions to ask the class, under a stage's last step
STEP_PREFIX = "step_"  # + stage and step: a step's figure on the normal page (see step_box())
ASK_PREFIX = "ask_"  # + stage and step: a step's question (see ask())
TALLY_PREFIX = "tally_"  # + stage and step: the teacher's chart of the answers (tally())
ANSWER_PREFIX = "answer_"  # + stage and step: a student's answer in a live class (answer())
REVEAL_PREFIX = "reveal_"  # + stage and step: the answer's toggle (see reveal())
# ui/stages/ln_qkv
QUERY_IS_CLS = "query_is_cls"  # bool: the CLS token is the query (toggle)
QKV_PREFIX = "qkv_"  # + "Q" / "K" / "V": that matrix's chart (see qkv())
# ui/stages/attention
ATTN_VIEW = "attn_view"  # str: scores or pattern shown (radio)
# ui/stages/masks
MASK_CAPTION = "mask_caption"  # str: caption fed to the text stream (text_input)
MASK_LAYER = "mask_layer"  # int: layer of the live attention (slider)
MASK_HEAD = "mask_head"  # int: head of the live attention (slider)
MASK_WINDOW = "mask_window"  # int: side M of the attention windows, in patches (select_slider)
# ui/stages/mlp
MLP_CLS = "mlp_cls"  # bool: the CLS token is shown (toggle)
# ui/stages/logits
CLASS_TEMPERATURE = "class_temperature"  # float: classifier softmax temperature (slider)
TEMPERATURE = "temperature"  # float: sampling temperature of the captioner (slider)
TOP_K = "top_k"  # int: top-k sampling (number_input)
GEN_SEED = "gen_seed"  # int: sampling seed (number_input)
CAPTION = "caption"  # str: the caption to score (text_input)
# ui/stages/experiments
EXP_KIND = "exp_kind"  # str: the intervention (radio)
EXP_HEADS = "exp_heads"  # list[int]: heads of the chosen block to switch off (multiselect)
EXP_OCCLUDED = "_exp_occluded"  # list[int]: patches to grey out (toggled by clicks on EXP_GRID)
EXP_SEED = "exp_seed"  # int: shuffle seed (number_input)
EXP_MASK = "exp_mask"  # str: the other mask (selectbox)


# ---------------------------------------------------------------- keys built at run time
def kept(key: str) -> str:
    """Where controls.remember_sidebar keeps a sidebar value: '_kept_model', …"""
    return f"{KEPT_PREFIX}{key}"


def reveal(stage: str, step: str) -> str:
    """The 'Reveal' toggle of a step's question: 'reveal_attention_pattern'."""
    return f"{REVEAL_PREFIX}{stage}_{step}"


def reveal_class(stage: str, step: str) -> str:
    """The teacher's 'Reveal to the class' button: 'reveal_class_attention_pattern'."""
    return f"{REVEAL_PREFIX}class_{stage}_{step}"


def step_box(stage: str, step: str) -> str:
    """The container of a step's figure on the normal page: 'step_attention_pattern'."""
    return f"{STEP_PREFIX}{stage}_{step}"


def answer(stage: str, step: str) -> str:
    """A student's answer input (and its form) for a step's question: 'answer_attention_where'."""
    return f"{ANSWER_PREFIX}{stage}_{step}"


def answer_send(stage: str, step: str) -> str:
    """A student's Send button for a step's answer: 'answer_attention_where_send'."""
    return f"{answer(stage, step)}_send"


def answer_grid(stage: str, step: str) -> str:
    """The patch grid a student clicks to answer: 'answer_attention_where_grid'."""
    return f"{answer(stage, step)}_grid"


def answer_typed(stage: str, step: str) -> str:
    """The patch's number typed instead (the keyboard's way): 'answer_attention_where_typed'."""
    return f"{answer(stage, step)}_typed"


def tally(stage: str, step: str) -> str:
    """The teacher's chart of a step's answers: 'tally_attention_where'."""
    return f"{TALLY_PREFIX}{stage}_{step}"


def ask(stage: str, step: str) -> str:
    """The container of a step's question: 'ask_attention_distance'."""
    return f"{ASK_PREFIX}{stage}_{step}"


def upload(round_: int) -> str:
    """The uploader's key in upload round `round_`: 'upload-0', 'upload-1', …"""
    return f"{UPLOAD_PREFIX}{round_}"


def phone_upload(round_: int) -> str:
    """The phone picker's uploader key in upload round `round_`: 'phone-upload-0', …"""
    return f"{PHONE_UPLOAD_PREFIX}{round_}"


def phone(key: str) -> str:
    """The key of a chart's copy for a phone: 'masks_three_phone' (ui/phone.both)."""
    return f"{key}{PHONE_SUFFIX}"


def png(slug: str) -> str:
    """The PNG download button under the image named `slug`: 'png_rollout', …"""
    return f"{PNG_PREFIX}{slug}"


def picture_text(px: int, slug: str) -> str:
    """The box of a picture named `slug` with `px`-px text drawn into it: 'picture_text_20_…'
    (tests/slides.small_text reads the size from it)."""
    return f"{PICTURE_TEXT_PREFIX}{px}_{slug}"


def qkv(matrix: str) -> str:
    """The chart of Q, K or V on the Q/K/V page: 'qkv_Q', 'qkv_K', 'qkv_V'."""
    return f"{QKV_PREFIX}{matrix}"


# ---- ui/stages/why (followed by a live class: ui/live/follow.FOLLOWED)
WHY_PATCH_KIND = "why_patch_kind"  # str: the corrupted copy patched against (radio)

# ---- ui/stages/mae
MAE_MODE = "mae_mode"  # str: how patches are hidden, at random or by clicks (radio)
MAE_RATIO = "mae_ratio"  # float: share of patches hidden at random (select_slider)
MAE_SEED = "_mae_seed"  # int: which random masking (MAE_NEW draws the next)
MAE_HIDDEN = "_mae_hidden"  # list[int]: patches hidden by hand (toggled by clicks on MAE_GRID)
