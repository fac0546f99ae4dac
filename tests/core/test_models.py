"""Tests of the PSE+LTAE models: parameter counts, masks, padding, folding, training."""

import math

import pytest
import torch

from thermocrop.core.model.networks import (
    VARIANTS,
    build_model,
    fast_inference_model,
    masked_mean_std,
    shift_positions,
)

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


@pytest.mark.parametrize("variant", VARIANTS)
def test_parameters_per_part(variant):
    model = build_model(variant, 9)
    count = lambda module: sum(p.numel() for p in module.parameters())
    # mlp1 10*32+64 + 32*64+128, mlp2 128*128+256 (+128 for the GDD input of TPE-Concat)
    assert count(model.pse) == 384 + 2_176 + 16_640 + (128 if variant == "tpe_concat" else 0)
    # in-projection 128*256+512, keys 256*128+128, master queries 16*8, mlp3 256*128+256
    assert count(model.ltae) == 33_280 + 32_896 + 128 + 33_024 == 99_328
    # 128*64+128, 64*32+64, 32*9+9
    assert count(model.decoder) == 8_320 + 2_112 + 297 == 10_729
    # Fourier: W 8, 16*32+32, 32*16+16; Recurrent: GRU 3*(16*16*2+2*16), linear 16*16+16
    extra = {"tpe_fourier": 8 + 544 + 528, "tpe_recurrent": 1_632 + 272}.get(variant, 0)
    positional = 0 if model.positional is None else count(model.positional)
    assert positional == extra


def test_master_queries_start_from_normal_with_std_sqrt_2_over_dk():
    torch.manual_seed(6)
    queries = torch.cat([build_model("no_pe", 9).ltae.query.flatten() for _ in range(40)])
    assert queries.mean().abs() < 0.05
    assert queries.std().item() == pytest.approx((2 / 8) ** 0.5, rel=0.05)


def _randomise_batch_norms(model, seed):
    g = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=g) * 0.3)
            module.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            with torch.no_grad():
                module.weight.copy_(torch.rand(n, generator=g) + 0.5)
                module.bias.copy_(torch.randn(n, generator=g) * 0.2)


def _linear_layer_by_hand(layer, x):
    w = layer.linear.weight.double()
    bn = layer.norm
    y = x @ w.T
    y = (y - bn.running_mean.double()) / torch.sqrt(bn.running_var.double() + bn.eps)
    return torch.relu(y * bn.weight.double() + bn.bias.double())


def _sinusoid_by_hand(p, tau):
    values = []
    for i in range(8):
        angle = p / tau ** (2 * i / 16)
        values += [math.sin(angle), math.cos(angle)]
    return torch.tensor(values, dtype=torch.float64)


def _gru_by_hand(gru, inputs):
    w_ih, w_hh = gru.weight_ih_l0.double(), gru.weight_hh_l0.double()
    b_ih, b_hh = gru.bias_ih_l0.double(), gru.bias_hh_l0.double()
    h, out = torch.zeros(16, dtype=torch.float64), []
    for x in inputs:
        gi, gh = w_ih @ x + b_ih, w_hh @ h + b_hh
        r = torch.sigmoid(gi[:16] + gh[:16])
        z = torch.sigmoid(gi[16:32] + gh[16:32])
        n = torch.tanh(gi[32:] + r * gh[32:])
        h = (1 - z) * n + z * h
        out.append(h)
    return out


def _classify_one_parcel_by_hand(model, pixels, pmask, dos, gdd):
    """The paper's architecture written out date by date, in float64, for one parcel."""
    variant = model.variant
    embeddings = []
    for t in range(pixels.shape[0]):
        x = pixels[t].double().T[pmask[t]]  # valid pixels only, (n, C)
        for layer in model.pse.mlp1:
            x = _linear_layer_by_hand(layer, x)
        n = x.shape[0]
        mean = x.mean(dim=0)
        std = torch.sqrt(((x - mean) ** 2).sum(dim=0) / (max(n, 2) - 1) + 1e-31)
        feature = torch.cat([mean, std] + ([gdd[t:t + 1].double()] if variant == "tpe_concat"
                                           else []))
        embeddings.append(_linear_layer_by_hand(model.ltae.in_projection,
                                                _linear_layer_by_hand(model.pse.mlp2, feature)))
    if variant in ("calendar", "shiftaug"):
        pes = [_sinusoid_by_hand(float(d) + 60.0, 1000.0) for d in dos]
    elif variant == "tpe_sinusoidal":
        pes = [_sinusoid_by_hand(float(g), 10000.0) for g in gdd]
    elif variant == "tpe_fourier":
        enc = model.positional
        w = enc.frequencies.weight.double()[:, 0]
        pes = []
        for g in gdd:
            wp = w * float(g) / 10000.0
            r = torch.cat([torch.cos(wp), torch.sin(wp)]) / 4.0
            hidden = torch.nn.functional.gelu(enc.mlp[0].weight.double() @ r
                                              + enc.mlp[0].bias.double())
            pes.append(enc.mlp[2].weight.double() @ hidden + enc.mlp[2].bias.double())
    elif variant == "tpe_recurrent":
        enc = model.positional
        states = _gru_by_hand(enc.gru, [_sinusoid_by_hand(float(g), 10000.0) for g in gdd])
        pes = [enc.out.weight.double() @ s + enc.out.bias.double() for s in states]
    else:
        pes = [torch.zeros(16, dtype=torch.float64)] * len(embeddings)
    h = torch.stack([e + pe.repeat(16) for e, pe in zip(embeddings, pes)])  # (T, 256)
    keys = (h @ model.ltae.key.weight.double().T + model.ltae.key.bias.double()).view(-1, 16, 8)
    query = model.ltae.query.double()
    heads = []
    for head in range(16):
        scores = torch.stack([keys[t, head] @ query[head] for t in range(len(h))]) / math.sqrt(8)
        weights = torch.softmax(scores, dim=0)
        heads.append((weights[:, None] * h[:, 16 * head:16 * (head + 1)]).sum(dim=0))
    x = _linear_layer_by_hand(model.ltae.mlp3, torch.cat(heads))
    for layer in model.decoder.hidden:
        x = _linear_layer_by_hand(layer, x)
    return model.decoder.out.weight.double() @ x + model.decoder.out.bias.double()


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_matches_the_architecture_written_by_hand(variant):
    torch.manual_seed(7)
    model = build_model(variant, 9).eval()
    _randomise_batch_norms(model, seed=8)
    pixels, pmask, dmask, dos, gdd = _batch(b=2, t=4, s=7, seed=10)
    pmask[0, 1, 1:] = False  # a date with a single valid pixel: std 0, not NaN
    gdd[1, -1] = 12_345.6
    with torch.no_grad():
        logits = model(pixels, pmask, dmask, dos, gdd)
    for i in range(2):
        expected = _classify_one_parcel_by_hand(model, pixels[i], pmask[i], dos[i], gdd[i])
        assert torch.allclose(logits[i].double(), expected, atol=1e-5), (i, logits[i], expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_real_valued_positions_beyond_lookup_limits(variant):
    torch.manual_seed(8)
    model = build_model(variant, 9).eval()
    pixels, pmask, dmask, dos, gdd = _batch(b=2, t=4, seed=11)
    gdd = torch.tensor([[500.25, 9_999.5, 12_345.6, 31_000.75]] * 2)
    dos = torch.tensor([[-55.5, 120.25, 700.5, 5_000.0]] * 2)  # offset +60 goes past 424
    with torch.no_grad():
        out = model(pixels, pmask, dmask, dos, gdd)
        gdd_int = model(pixels, pmask, dmask, dos, gdd.floor())
        dos_int = model(pixels, pmask, dmask, dos.floor(), gdd)
    assert torch.isfinite(out).all()
    # no integer cast: the fractional part of whichever position the variant uses matters
    uses_gdd = variant.startswith("tpe_")
    uses_calendar = variant in ("calendar", "shiftaug")
    assert torch.equal(out, gdd_int) != uses_gdd
    assert torch.equal(out, dos_int) != uses_calendar


@pytest.mark.parametrize("variant", VARIANTS)
def test_parcel_with_fewer_pixels_than_s_equals_its_unpadded_set(variant):
    torch.manual_seed(9)
    model = build_model(variant, 9)
    for seed in range(2):  # move the BatchNorm statistics away from the identity
        model(*_batch(seed=20 + seed))
    model.eval()
    pixels, pmask, dmask, dos, gdd = _batch(b=3, t=4, s=5, seed=12)
    pmask[:] = True
    pixels = torch.randn(pixels.shape)
    # pad to S = 12 with masked slots full of large junk, interleaved with the real pixels
    s = 12
    slots = torch.tensor([0, 2, 3, 7, 11])
    padded = torch.randn(3, 4, 10, s) * 1e3
    padded[..., slots] = pixels
    padded_mask = torch.zeros(3, 4, s, dtype=torch.bool)
    padded_mask[..., slots] = True
    fast = fast_inference_model(model)
    with torch.inference_mode():
        for net in (model, fast):
            a = net(pixels, pmask, dmask, dos, gdd)
            b = net(padded, padded_mask, dmask, dos, gdd)
            assert torch.allclose(a, b, atol=1e-5)
