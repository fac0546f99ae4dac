"""Tests of the PSE+LTAE models: parameter counts, masks, padding, folding, training."""

import pytest
import torch

from thermocrop.core.models import (VARIANTS, build_model, fast_inference_model,
                                    masked_mean_std, shift_positions)

EXPECTED_PARAMS = {
    "calendar": 129_257, "no_pe": 129_257, "shiftaug": 129_257, "tpe_sinusoidal": 129_257,
    "tpe_concat": 129_385, "tpe_fourier": 130_337, "tpe_recurrent": 131_161,
}


def _batch(b=5, t=6, s=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    pixels = torch.randn(b, t, 10, s, generator=g)
    pmask = torch.rand(b, t, s, generator=g) > 0.3
    pmask[:, :, 0] = True
    dmask = torch.ones(b, t, dtype=torch.bool)
    dos = torch.cumsum(torch.rand(b, t, generator=g) * 30 + 1, dim=1)
    gdd = torch.cumsum(torch.rand(b, t, generator=g) * 400 + 10, dim=1)
    return pixels * pmask.unsqueeze(2), pmask, dmask, dos, gdd


@pytest.mark.parametrize("variant", VARIANTS)
def test_parameter_count_and_shape(variant):
    model = build_model(variant, 9)
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert n == EXPECTED_PARAMS[variant]
    assert model.variant == variant and model.config.num_classes == 9
    out = model(*_batch())
    assert out.shape == (5, 9)
    assert model.config.shift_augment == (variant == "shiftaug")


def test_unknown_variant_and_setting_are_rejected():
    with pytest.raises(ValueError, match="variant"):
        build_model("lstm", 9)
    with pytest.raises(ValueError, match="Unknown model settings"):
        build_model("calendar", 9, widht=3)


def test_masked_mean_std_by_hand():
    x = torch.tensor([[[1.0], [3.0], [100.0]], [[5.0], [0.0], [0.0]], [[0.0], [0.0], [0.0]]])
    mask = torch.tensor([[True, True, False], [True, False, False], [False, False, False]])
    mean, std = masked_mean_std(x, mask)
    assert torch.allclose(mean[:, 0], torch.tensor([2.0, 5.0, 0.0]))
    # unbiased std of (1, 3) is sqrt(2); a single pixel gives 0 (n=1 treated as 2)
    assert torch.allclose(std[:, 0], torch.tensor([2.0 ** 0.5, 0.0, 0.0]), atol=1e-6)
    assert torch.isfinite(std).all()


@pytest.mark.parametrize("variant", ["tpe_recurrent", "tpe_concat"])
def test_pixel_order_does_not_matter(variant):
    torch.manual_seed(1)
    model = build_model(variant, 9).eval()
    pixels, pmask, dmask, dos, gdd = _batch()
    perm = torch.randperm(pixels.shape[-1])
    with torch.no_grad():
        a = model(pixels, pmask, dmask, dos, gdd)
        b = model(pixels[..., perm], pmask[..., perm], dmask, dos, gdd)
    assert torch.allclose(a, b, atol=1e-5)


def test_all_masked_date_gives_no_nan():
    model = build_model("tpe_sinusoidal", 9).eval()
    pixels, pmask, dmask, dos, gdd = _batch()
    pmask[0, 2] = False
    pixels[0, 2] = 0
    with torch.no_grad():
        out = model(pixels, pmask, dmask, dos, gdd)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_padding_and_missing_middle_dates_do_not_change_output(variant):
    torch.manual_seed(2)
    model = build_model(variant, 9).eval()
    pixels, pmask, dmask, dos, gdd = _batch(b=3, t=5)
    with torch.no_grad():
        reference = model(pixels, pmask, dmask, dos, gdd)
        # Insert two junk dates: one in the middle, one at the end, both masked.
        cat = lambda x, junk: torch.cat((x[:, :2], junk, x[:, 2:], junk), dim=1)
        junk_px = torch.randn(3, 1, 10, 12) * 50
        padded = model(cat(pixels, junk_px), cat(pmask, torch.ones(3, 1, 12, dtype=torch.bool)),
                       cat(dmask, torch.zeros(3, 1, dtype=torch.bool)),
                       cat(dos, torch.full((3, 1), 77.0)), cat(gdd, torch.full((3, 1), 9e3)))
        # The first parcel alone, unbatched with the others of different length.
        alone = model(pixels[:1, :3], pmask[:1, :3], dmask[:1, :3], dos[:1, :3], gdd[:1, :3])
        dm = dmask.clone()
        dm[0, 3:] = False
        mixed = model(pixels, pmask, dm, dos, gdd)
    assert torch.allclose(reference, padded, atol=1e-5)
    assert torch.allclose(alone[0], mixed[0], atol=1e-5)
    assert torch.allclose(reference[1:], mixed[1:], atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_folded_equals_plain(variant):
    torch.manual_seed(3)
    model = build_model(variant, 9)
    # train a moment so BatchNorm running statistics are not the identity
    for _ in range(3):
        model(*_batch(seed=_))
    model.eval()
    fast = fast_inference_model(model)
    batch = _batch(b=7, t=9, seed=9)
    batch[2][0, 4:] = False
    with torch.inference_mode():
        a, b = model(*batch), fast(*batch)
    assert torch.allclose(a, b, atol=1e-5)
    fast.pse.fold_chunk = 5  # the chunked encoder path gives the same answer
    with torch.inference_mode():
        assert torch.allclose(a, fast(*batch), atol=1e-5)
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in fast.modules())
    assert any(isinstance(m, torch.nn.BatchNorm1d) for m in model.modules())


def test_masked_pixels_stay_out_of_batch_statistics():
    torch.manual_seed(4)
    model = build_model("no_pe", 3)
    pixels, pmask, dmask, dos, gdd = _batch(b=4, t=3)
    layer = model.pse.mlp1[0]
    model(pixels, pmask, dmask, dos, gdd)
    first = layer.norm.running_mean.clone()
    model2 = build_model("no_pe", 3)
    model2.load_state_dict({k: v for k, v in model.state_dict().items()} | {
        "pse.mlp1.0.norm.running_mean": torch.zeros(32),
        "pse.mlp1.0.norm.running_var": torch.ones(32),
        "pse.mlp1.0.norm.num_batches_tracked": torch.tensor(0)})
    # putting garbage in masked slots must not change the statistics
    garbage = pixels.clone()
    garbage[~pmask.unsqueeze(2).expand_as(garbage)] = 1e3
    model2.pse.mlp1[0].linear.load_state_dict(layer.linear.state_dict())
    model2(garbage, pmask, dmask, dos, gdd)
    assert torch.allclose(model2.pse.mlp1[0].norm.running_mean, first, atol=1e-5)


def test_shift_positions_one_integer_per_sample():
    g = torch.Generator().manual_seed(0)
    dos = torch.arange(12.0).reshape(3, 4)
    shifted = shift_positions(dos, 60, generator=g)
    diff = shifted - dos
    assert torch.equal(diff, diff[:, :1].expand_as(diff))
    assert diff.abs().max() <= 60 and torch.equal(diff, diff.round())


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_learns_random_data(variant):
    torch.manual_seed(5)
    model = build_model(variant, 4, dropout=0.0, attn_dropout=0.0)
    pixels, pmask, dmask, dos, gdd = _batch(b=16, t=5, s=8, seed=5)
    labels = torch.arange(16) % 4
    pixels = pixels + labels.view(16, 1, 1, 1).float()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(12):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(pixels, pmask, dmask, dos, gdd), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


@pytest.mark.parametrize("variant", ["tpe_recurrent", "calendar"])
def test_parcel_without_valid_dates_is_finite(variant):
    model = build_model(variant, 9)
    pixels, pmask, dmask, dos, gdd = _batch(b=3, t=4)
    dmask[1] = False
    out = model(pixels, pmask, dmask, dos, gdd)
    assert torch.isfinite(out).all()
    model.eval()
    with torch.no_grad():
        alone = model(pixels[1:2], pmask[1:2], dmask[1:2], dos[1:2], gdd[1:2])
        assert torch.isfinite(alone).all()
        assert torch.allclose(alone, fast_inference_model(model)(
            pixels[1:2], pmask[1:2], dmask[1:2], dos[1:2], gdd[1:2]), atol=1e-5)
    before = model.pse.mlp1[0].norm.running_mean.clone()
    model.train()
    model.pse.mlp1[0](torch.zeros(0, 6, 10), torch.zeros(0, 6, dtype=torch.bool))
    assert torch.equal(model.pse.mlp1[0].norm.running_mean, before)
