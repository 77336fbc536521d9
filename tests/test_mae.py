"""The masked autoencoder (vit_core/mae.py) against transformers' ViTMAEForPreTraining: the
fixture (tools/make_fixtures.py --mae) holds a tiny random ViTMAE and its outputs for fixed noise;
masking, positions, pixel order and the loss are also rebuilt by hand here; the ViTMAE folder
loads as a headless encoder through the Hub stand-in, and our own two-file format round-trips."""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vit_core import CheckpointError, ViT, ViTConfig, load_mae, load_model, run_trace, save_mae
from vit_core.io import hub as vhub
from vit_core.io.mae_files import decoder_path
from vit_core.mae import (
    MAE,
    MAEConfig,
    num_visible,
    pixel_targets,
    pixels_from_targets,
    sincos_positions,
)
from vit_core.patches import patchify

FIXTURES = Path(__file__).parent / "fixtures"
FOLDER = FIXTURES / "hf_vit_mae_tiny"
REPO = "tiny-org/vit-mae-tiny"  # the fixture folder, served by the Hub stand-in
RATIOS = (0.75, 0.7)  # the config's, and one where int() and round() disagree (16 · 0.3 = 4.8)


@pytest.fixture(scope="module")
def expected() -> dict:
    return load_file(FIXTURES / "hf_vit_mae_tiny_expected.safetensors")


@pytest.fixture(scope="module")
def mae() -> MAE:
    return load_mae(FOLDER)


def tiny_mae(seed: int = 0, norm_pix_loss: bool = True) -> MAE:
    torch.manual_seed(seed)
    enc = ViT(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=1, num_heads=2,
                        num_classes=0))
    model = MAE(enc, MAEConfig(decoder_dim=8, decoder_depth=1, decoder_heads=2,
                               norm_pix_loss=norm_pix_loss))
    with torch.no_grad():  # every parameter random and large enough to matter
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in name and "weight" in name
                                                     else 0.0))
    return model.eval()


# ---------------------------------------------------------------- parity with transformers


@pytest.mark.parametrize("ratio", RATIOS)
def test_every_output_equals_transformers_for_the_same_noise(mae, expected, ratio):
    t = f"_r{ratio}"
    with torch.no_grad():
        out = mae(expected["input"], noise=expected["noise" + t], mask_ratio=ratio)
    close = dict(atol=1e-5, rtol=1e-5)
    assert torch.equal(out.mask, expected["mask" + t])
    assert torch.equal(out.ids_restore.float(), expected["ids_restore" + t])
    torch.testing.assert_close(out.encoder_input, expected["encoder_input" + t], **close)
    torch.testing.assert_close(out.encoded, expected["last_hidden_state" + t], **close)
    # the decoder's input: embedded visible tokens and [MASK] tokens in grid order + positions
    torch.testing.assert_close(out.decoder_input, expected["decoder_input" + t], **close)
    torch.testing.assert_close(out.pred, expected["logits" + t], **close)
    torch.testing.assert_close(out.loss, expected["loss" + t], **close)


def test_the_fixed_positions_are_transformers_sine_cosine_tables():
    stored = load_file(FOLDER / "model.safetensors")
    assert torch.equal(sincos_positions(4, 32), stored["vit.embeddings.position_embeddings"])
    assert torch.equal(sincos_positions(4, 16), stored["decoder.decoder_pos_embed"])
    # and the layout by hand: patch (row 1, column 2), channel k of each quarter, D = 32
    table, w = sincos_positions(4, 32)[0].double(), 1.0 / 10000 ** (torch.arange(8) / 8.0)
    row = table[1 + 1 * 4 + 2]
    by_hand = torch.cat([(2 * w).sin(), (2 * w).cos(), (1 * w).sin(), (1 * w).cos()])
    torch.testing.assert_close(row, by_hand.double(), atol=1e-7, rtol=0)
    assert not table[0].any()  # CLS: zeros


@pytest.mark.parametrize("ratio", RATIOS)
def test_the_visible_count_follows_transformers_rule(expected, ratio):
    """transformers keeps int(N (1 − r)) patches: 4 of 16 at r = 0.75 and at r = 0.7 (where
    round() would keep 5)."""
    visible = int((1 - expected[f"mask_r{ratio}"]).sum(dim=1)[0])
    assert visible == num_visible(16, ratio) == 4


@pytest.mark.parametrize("n", [16, 49, 196])
def test_on_every_shape_shown_the_count_is_the_exact_floor_and_round_at_three_quarters(n):
    """Every ratio the stage offers (0.05 … 0.95): int(N (1 − r)) in floats is the exact
    ⌊N (1 − r)⌋; at MAE's 0.75 it is also round(N (1 − r)): 4 of 16, 12 of 49, 49 of 196."""
    from ui.stages.mae import RATIO_CHOICES

    for r in RATIO_CHOICES:
        exact = Fraction(n) * (1 - Fraction(r).limit_denominator(100))
        assert num_visible(n, r) == exact.numerator // exact.denominator, (n, r)
    assert num_visible(n, 0.75) == round(n * 0.25) == {16: 4, 49: 12, 196: 49}[n]


# ---------------------------------------------------------------- the pass by hand


def test_masking_by_hand():
    """noise [.5 .1 .9 .3 | .8 .2 .7 .6 | …]: the N_vis smallest stay visible, in that order."""
    model = tiny_mae()
    pixels = torch.randn(1, 3, 16, 16)
    noise = torch.tensor([[.5, .1, .9, .3, .8, .2, .7, .6, .95, .05, .4, .85, .65, .15, .75, .55]])
    with torch.no_grad():
        out = model(pixels, noise=noise, n_visible=5)
    order = sorted(range(16), key=lambda i: noise[0, i].item())
    assert out.ids_keep[0].tolist() == order[:5] == [9, 1, 13, 5, 3]
    assert out.mask[0].tolist() == [0.0 if i in order[:5] else 1.0 for i in range(16)]
    assert [order.index(i) for i in range(16)] == out.ids_restore[0].tolist()
    # the encoder reads CLS + those 5 patches, each x_p E + b + E_pos of its own place
    E, b = model.encoder.patch_embed.proj.weight.flatten(1), model.encoder.patch_embed.proj.bias
    p = patchify(pixels, 4)[0]
    tokens = torch.stack([p[i] @ E.T + b + model.encoder.pos_embed[0, 1 + i] for i in order[:5]])
    torch.testing.assert_close(out.encoder_input[0, 1:], tokens, atol=1e-5, rtol=1e-5)
    # the decoder gets [MASK] at every hidden place (before its positions), in grid order
    for i in range(16):
        if i not in order[:5]:
            assert torch.equal(out.decoder_tokens[0, 1 + i], model.decoder.mask_token[0, 0])


def test_the_encoder_never_sees_the_hidden_patches():
    model = tiny_mae()
    pixels = torch.randn(1, 3, 16, 16)
    noise = torch.rand(1, 16)
    with torch.no_grad():
        out = model(pixels, noise=noise)
        hidden = [i for i in range(16) if out.mask[0, i]]
        changed = pixels.clone()
        for i in hidden:  # scribble over every hidden patch
            r, c = divmod(i, 4)
            changed[..., 4 * r:4 * r + 4, 4 * c:4 * c + 4] = torch.randn(3, 4, 4) * 5
        again = model(changed, noise=noise)
    assert torch.equal(out.encoded, again.encoded) and torch.equal(out.pred, again.pred)
    assert not torch.equal(out.loss, again.loss)  # the loss reads exactly those patches


@pytest.mark.parametrize("norm_pix_loss", [True, False])
def test_the_loss_is_the_mean_squared_error_on_hidden_patches_only(norm_pix_loss):
    model = tiny_mae(norm_pix_loss=norm_pix_loss)
    pixels = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        out = model(pixels, noise=torch.rand(2, 16))
    x = pixels.double()
    total, count = 0.0, 0
    for bi in range(2):
        for i in range(16):
            r, c = divmod(i, 4)
            patch = x[bi, :, 4 * r:4 * r + 4, 4 * c:4 * c + 4].permute(1, 2, 0).flatten()  # (p q c)
            if norm_pix_loss:
                patch = (patch - patch.mean()) / (patch.var(unbiased=True) + 1e-6).sqrt()
            err = ((out.pred[bi, i].double() - patch) ** 2).mean()
            assert abs(err.item() - out.error[bi, i].item()) < 1e-5
            if out.mask[bi, i]:
                total, count = total + err.item(), count + 1
    assert count == 2 * 12
    assert abs(out.loss.item() - total / count) < 1e-5


def test_the_pixel_order_is_row_column_channel_and_round_trips():
    pixels = torch.randn(2, 3, 16, 16)
    t = pixel_targets(pixels, 4)
    # transformers' patchify: reshape (n c h p w q) -> (n h w p q c)
    hf = pixels.reshape(2, 3, 4, 4, 4, 4).permute(0, 2, 4, 3, 5, 1).reshape(2, 16, 48)
    assert torch.equal(t, hf)
    assert torch.equal(pixels_from_targets(t, 4), pixels)


def test_the_reconstruction_puts_each_patch_back_in_place():
    model = tiny_mae(norm_pix_loss=False)
    pixels = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        out = model(pixels, noise=torch.rand(1, 16))
        pasted = model.reconstruction(out, pixels, paste_visible=True)
        full = model.reconstruction(out, pixels)
    for i in range(16):
        r, c = divmod(i, 4)
        cell = (..., slice(4 * r, 4 * r + 4), slice(4 * c, 4 * c + 4))
        predicted = out.pred[0, i].view(4, 4, 3).permute(2, 0, 1)
        assert torch.equal(full[0][cell], predicted)
        assert torch.equal(pasted[0][cell], predicted if out.mask[0, i] else pixels[0][cell])


# ---------------------------------------------------------------- loading


def test_load_model_gives_the_headless_encoder(expected):
    model = load_model(str(FOLDER))
    c = model.config
    assert isinstance(model, ViT) and c.num_classes == 0 and c.class_token and c.depth == 2
    assert torch.equal(model.pos_embed, sincos_positions(4, 32))  # its sine-cosine table
    with torch.no_grad():
        out = model(expected["input"])
    # transformers with nothing hidden and the noise in grid order: the same 17 tokens
    torch.testing.assert_close(out, expected["last_hidden_state_r0.0"], atol=1e-5, rtol=1e-5)
    trace = run_trace(model, expected["input"][:1])
    assert trace["blocks.1.attn.pattern"].shape == (2, 17, 17)


def test_the_classic_decoder_key_names_load_the_same(tmp_path, mae, expected):
    """Real repos (facebook/vit-mae-*) store decoder.decoder_layers.{i}.…; transformers 5's
    save_pretrained writes decoder.decoder_encoder.layer.{i}.…: both read alike."""
    from safetensors.torch import save_file

    folder = tmp_path / "classic"
    shutil.copytree(FOLDER, folder)
    state = load_file(FOLDER / "model.safetensors")
    renamed = {k.replace("decoder.decoder_encoder.layer.", "decoder.decoder_layers."): v
               for k, v in state.items()}
    assert renamed != state
    save_file(renamed, str(folder / "model.safetensors"), metadata={"format": "pt"})
    again = load_mae(folder)
    noise = expected["noise_r0.75"]
    with torch.no_grad():
        assert torch.equal(again(expected["input"], noise=noise).pred,
                           mae(expected["input"], noise=noise).pred)


def test_our_format_round_trips_and_its_encoder_is_a_plain_checkpoint(tmp_path, expected):
    model = tiny_mae()
    path = save_mae(model, tmp_path / "tiny-mae.safetensors")
    assert decoder_path(path).is_file()
    again = load_mae(path)
    assert again.config == model.config
    pixels, noise = torch.randn(2, 3, 16, 16), torch.rand(2, 16)
    with torch.no_grad():
        assert torch.equal(again(pixels, noise=noise).pred, model(pixels, noise=noise).pred)
        headless = load_model(path)
        assert torch.equal(headless(pixels), model.encoder(pixels))
    decoder_path(path).unlink()
    with pytest.raises(CheckpointError, match="no MAE decoder"):
        load_mae(path)
    with pytest.raises(CheckpointError, match="No masked autoencoder named 'nope'"):
        load_mae("nope")


def test_a_plain_vit_folder_is_not_a_masked_autoencoder():
    with pytest.raises(CheckpointError, match="not a masked autoencoder"):
        load_mae(FIXTURES / "hf_vit_tiny")


def test_vit_mae_base_is_on_the_curated_list_with_its_size():
    entry = vhub.CURATED["facebook/vit-mae-base"]
    assert entry.params_m == pytest.approx(111.9, abs=0.05)  # 85.8 M encoder + 26.1 M decoder
    torch.manual_seed(0)
    with torch.device("meta"):
        base = MAE(ViT(ViTConfig(num_classes=0)), MAEConfig())
    assert sum(p.numel() for p in base.parameters()) / 1e6 == pytest.approx(entry.params_m,
                                                                               abs=0.05)


@pytest.fixture
def hub_root(tmp_path) -> Path:
    """The stand-in serves the fixture folder as tiny-org/vit-mae-tiny."""
    root = tmp_path / "hub-root"
    shutil.copytree(FOLDER, root / REPO)
    return root


def test_the_hub_serves_a_vit_mae_repo_as_a_headless_encoder_and_as_the_mae(hub, expected):
    with pytest.raises(CheckpointError, match="not on this machine"):
        load_mae(f"hf:{REPO}", local_files_only=True)
    model = load_model(f"hf:{REPO}")  # fetched on first use
    assert hub.count("GET", "/resolve/") == 2  # config.json and model.safetensors
    hub.stop()  # offline from here on
    assert model.info.source == f"hf:{REPO}" and model.config.num_classes == 0
    trace = run_trace(model, expected["input"][:1])
    torch.testing.assert_close(trace["ln_final"], expected["last_hidden_state_r0.0"][0],
                               atol=1e-5, rtol=1e-5)
    mae = load_mae(f"hf:{REPO}", local_files_only=True)
    assert mae.info.source == f"hf:{REPO}"
    with torch.no_grad():
        out = mae(expected["input"], noise=expected["noise_r0.75"])
    torch.testing.assert_close(out.pred, expected["logits_r0.75"], atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- the bundled MAE


@pytest.mark.slow
def test_the_bundled_mae_fills_hidden_patches_a_third_better_than_a_flat_colour():
    """On 200 held-out scenes, 75 % of patches hidden: the bundled MAE's loss on the hidden
    patches, computed here from its predictions, is at most 2/3 of filling each hidden patch with
    the mean colour of the visible patches (the flat guess from what the encoder sees). Its
    encoder is also what load_model gives."""
    from torch.utils.data import DataLoader

    from vit_core import bundled_models
    from vit_core.scenes.world import SceneDataset, heldout_seeds

    if "shapes-mae" not in bundled_models():
        pytest.skip("vit_core/bundled/shapes-mae.safetensors is not trained yet "
                    "(bash tools/train_bundled.sh)")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    mae = load_mae("shapes-mae")
    c = mae.encoder.config
    assert (c.grid, mae.config.mask_ratio, mae.config.norm_pix_loss) == (7, 0.75, False)
    gen = torch.Generator().manual_seed(5)
    ours = flat = 0.0
    hidden = 0
    with torch.inference_mode():
        for b in DataLoader(SceneDataset(heldout_seeds(200, 3)), batch_size=50):
            x = b["pixels"]
            out = mae(x, noise=torch.rand(x.shape[0], 49, generator=gen))
            B, P = x.shape[0], c.patch_size
            # the patches by hand, (row, col, channel) order, in float64
            t = x.double().reshape(B, 3, 7, P, 7, P).permute(0, 2, 4, 3, 5, 1).reshape(B, 49, -1)
            m = out.mask.double()
            ours += (((out.pred.double() - t) ** 2).mean(-1) * m).sum().item()
            seen = (1 - m)[:, :, None, None]
            tc = t.view(B, 49, P * P, 3)
            colour = (tc * seen).sum(dim=(1, 2)) / (seen.sum(dim=(1, 2)) * P * P)  # (B, 3)
            flat += (((tc - colour[:, None, None]) ** 2).mean(dim=(2, 3)) * m).sum().item()
            hidden += int(m.sum().item())
    assert hidden == 200 * (49 - 12)
    assert ours / hidden <= 2 / 3 * (flat / hidden), (ours / hidden, flat / hidden)
    headless = load_model("shapes-mae")
    assert headless.config == c and headless.config.num_classes == 0
