"""ViTConfig: every number that fixes a model's shapes, with timm's field names, and presets."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace

MASK_KINDS = ("full", "causal", "prefix")


@dataclass(frozen=True)
class ViTConfig:
    img_size: int = 224  # input is img_size x img_size pixels
    patch_size: int = 16  # P: each token is one P x P patch
    in_chans: int = 3  # C
    embed_dim: int = 768  # D, the width of every token
    depth: int = 12  # L, number of blocks
    num_heads: int = 12  # H; each head works in d_k = D / H dimensions
    mlp_ratio: float = 4.0  # d_ff = mlp_ratio * D
    num_classes: int = 1000  # K logits from the CLS token; 0 = no class head
    class_token: bool = True  # prepend a learned [CLS] token to the image tokens
    dist_token: bool = False  # DeiT's distillation token [DIST] after CLS, with its own head
    global_pool: str = "token"  # "token": classify from CLS; "avg": mean of the patch tokens
    fc_norm: bool = False  # timm's extra LayerNorm after average pooling (global_pool="avg")
    norm_eps: float = 1e-6  # LayerNorm epsilon (timm 1e-6; Hugging Face ViT 1e-12)
    qkv_bias: bool = True
    vocab_size: int = 0  # V; > 0 makes this the single-stream image+text model
    max_text_len: int = 0  # most text tokens ([SOS] included) the text positions cover
    tie_text_head: bool = True  # text logits = X_f E^T (tied) or a separate Linear head
    default_mask: str = "full"  # the attention mask the model was trained with
    seg_classes: int = 0  # > 0 adds a per-patch segmentation head with this many outputs
    seg_upsample: int = 1  # each patch token predicts a seg_upsample^2 block of the class map
    # How a photo becomes the img_size x img_size input (the model's own preprocessing config):
    # resize ("shortest": the shorter side to resize_size, keeping the aspect ratio, as timm and
    # torchvision; "square": both sides to resize_size, as Hugging Face's ViT/DeiT processors),
    # then centre-crop img_size x img_size, then (x / 255 - mean) / std per channel.
    resize_mode: str = "shortest"
    resize_size: int = 0  # 0 = img_size (no margin to crop); timm: floor(img_size / crop_pct)
    interpolation: str = "bicubic"  # "bicubic" | "bilinear" | "nearest" (PIL's filters)
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)  # input normalisation per channel
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    class_names: tuple[str, ...] = ()  # K names, or () to show class numbers
    vocab: tuple[str, ...] = ()  # V words (specials first), or () when there is no text

    def __post_init__(self):
        _validate(self)

    # ---- derived sizes, named as in the notes ----
    @property
    def grid(self) -> int:  # patches per side, H / P
        return self.img_size // self.patch_size

    @property
    def num_patches(self) -> int:  # N = (H / P) * (W / P)
        return self.grid**2

    @property
    def num_prefix_tokens(self) -> int:  # tokens before the patches: CLS (and DIST), or none
        return int(self.class_token) + int(self.dist_token)

    @property
    def prefix_names(self) -> tuple[str, ...]:  # what to call them on screen
        return ("CLS",) * self.class_token + ("DIST",) * self.dist_token

    @property
    def resize_to(self) -> int:  # the size before the centre crop
        return self.resize_size or self.img_size

    @property
    def num_image_tokens(self) -> int:  # N (+1 with CLS)
        return self.num_patches + self.num_prefix_tokens

    @property
    def head_dim(self) -> int:  # d_k = D / H
        return self.embed_dim // self.num_heads

    @property
    def mlp_hidden(self) -> int:  # d_ff
        return int(self.embed_dim * self.mlp_ratio)

    @property
    def has_text(self) -> bool:
        return self.vocab_size > 0

    def replace(self, **changes) -> ViTConfig:
        return replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ViTConfig:
        """Rebuild a config from `to_json`; unknown fields are an error, not silently dropped."""
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"The config has fields this version does not know: {extra}.")
        for key in ("mean", "std", "class_names", "vocab"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)


def _validate(c: ViTConfig) -> None:
    """Raise ValueError with a sentence a student can act on for any impossible combination."""
    def need(ok: bool, message: str):
        if not ok:
            raise ValueError(message)

    for name in ("img_size", "patch_size", "in_chans", "embed_dim", "depth", "num_heads"):
        need(isinstance(getattr(c, name), int) and getattr(c, name) > 0,
             f"{name} must be a positive whole number, not {getattr(c, name)!r}.")
    need(c.img_size % c.patch_size == 0,
         f"The patch size {c.patch_size} must divide the image size {c.img_size} exactly, "
         f"otherwise the last row and column of patches would be cut off.")
    need(c.embed_dim % c.num_heads == 0,
         f"The width D={c.embed_dim} must split evenly into {c.num_heads} heads "
         f"(each head gets D/H dimensions).")
    need(c.mlp_ratio > 0, "mlp_ratio must be positive (the MLP widens each token by it).")
    need(c.num_classes >= 0 and c.vocab_size >= 0 and c.seg_classes >= 0,
         "num_classes, vocab_size and seg_classes cannot be negative.")
    need(c.global_pool in ("token", "avg"), "global_pool must be 'token' or 'avg'.")
    need(c.global_pool != "token" or c.class_token or c.num_classes == 0,
         "Classifying from the CLS token (global_pool='token') needs class_token=True.")
    need(c.default_mask in MASK_KINDS, f"default_mask must be one of {MASK_KINDS}.")
    need(not c.has_text or c.max_text_len > 0,
         "A model with a text stream (vocab_size > 0) needs max_text_len > 0.")
    need(not (c.has_text and c.num_classes), "A model has either a class head or a text head.")
    need(len(c.mean) == c.in_chans and len(c.std) == c.in_chans and min(c.std) > 0,
         "mean and std need one value per input channel, and std must be positive.")
    need(not c.class_names or len(c.class_names) == c.num_classes,
         f"class_names has {len(c.class_names)} names but the model has {c.num_classes} classes.")
    need(not c.vocab or len(c.vocab) == c.vocab_size,
         f"vocab has {len(c.vocab)} words but vocab_size is {c.vocab_size}.")
    need(c.seg_upsample >= 1, "seg_upsample must be at least 1.")
    need(not c.dist_token or (c.class_token and c.global_pool == "token"),
         "A distillation token comes after a CLS token, and both are read by their heads "
         "(global_pool='token').")
    need(c.resize_mode in ("shortest", "square"), "resize_mode must be 'shortest' or 'square'.")
    need(c.resize_size == 0 or c.resize_size >= c.img_size,
         f"resize_size {c.resize_size} is smaller than the {c.img_size}-pixel crop taken from it.")
    need(c.interpolation in ("bicubic", "bilinear", "nearest"),
         "interpolation must be 'bicubic', 'bilinear' or 'nearest'.")


# The text preset's vocabulary: the four special tokens, then the scene world's caption words in
# sorted order (vit_core/scenes/world.py captions with exactly these; tests/test_layout.py keeps
# the two equal). Written out so that building the preset needs no scene generator at import.
SCENE_VOCAB = (
    "[PAD]", "[SOS]", "[EOS]", "[UNK]", "a", "arrow", "at", "ball", "black", "blue", "bottom",
    "box", "cross", "diamond", "grass", "green", "heart", "left", "moon", "on", "orange", "pink",
    "purple", "red", "right", "ring", "road", "sand", "sky", "snow", "star", "the", "top",
    "triangle", "water", "white", "yellow",
)
SCENE_TEXT_LEN = 10  # [SOS] + the longest caption, "a red ball on the grass at the bottom"

# Named geometries. Presets build with random weights (see load_model): they show real shapes,
# not a trained model.
PRESETS: dict[str, ViTConfig] = {
    # The notes' reference: 224x224x3 -> 196 patches x 768 -> 12 blocks of 12 heads x 64.
    "vit-b16": ViTConfig(),
    "vit-s16": ViTConfig(embed_dim=384, depth=12, num_heads=6),
    "vit-ti16": ViTConfig(embed_dim=192, depth=12, num_heads=3),
    # The notes' single-stream image -> text model at ViT-B/16 geometry: 196 image tokens, no
    # CLS, then [SOS] + words of the scene vocabulary, with the prefix mask.
    "vit-b16-text": ViTConfig(num_classes=0, class_token=False, global_pool="avg",
                              vocab_size=len(SCENE_VOCAB), vocab=SCENE_VOCAB,
                              max_text_len=SCENE_TEXT_LEN, default_mask="prefix"),
}
