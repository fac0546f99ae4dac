"""Reference-shaped PSE+LTAE state dicts imported as bundles: the bundle's probabilities equal
those of the reference computation written out here in numpy from the architecture's
description (LinearLayer = Linear without bias, BatchNorm, ReLU; masked mean and std pooling;
frozen sinusoid tables indexed by whole days or whole degree days; one master query per
head; inputs divided by 65535; bands in TimeMatch order)."""

import logging
import os

import numpy as np
import pytest
import torch
from scipy.special import erf

from thermocrop.cli.main import main
from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import BundleError, InputError
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.pixel_sets import PixelSets
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.training.importers.weights import import_weights

TM_BANDS = ("B02", "B03", "B04", "B08", "B05", "B06", "B07", "B8A", "B11", "B12")
K = 9


def table(rows, width, tau):
    pos = np.arange(rows)[:, None]
    angle = pos / tau ** (np.arange(0, width, 2) / width)
    out = np.zeros((rows, width))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out


def reference_state(variant, seed=0):
    g = np.random.default_rng(seed)
    sd = {}

    def t(a):
        return torch.tensor(np.asarray(a), dtype=torch.float32)

    def layer(prefix, n_in, n_out):
        sd[f"{prefix}.linear.weight"] = t(g.normal(0, 1.0 / np.sqrt(n_in), (n_out, n_in)))
        sd[f"{prefix}.norm.weight"] = t(1 + 0.1 * g.normal(size=n_out))
        sd[f"{prefix}.norm.bias"] = t(0.1 * g.normal(size=n_out))
        sd[f"{prefix}.norm.running_mean"] = t(0.2 * g.normal(size=n_out))
        sd[f"{prefix}.norm.running_var"] = t(0.5 + g.random(n_out))
        sd[f"{prefix}.norm.num_batches_tracked"] = torch.tensor(7)

    layer("spatial_encoder.mlp1.0", 10, 32)
    layer("spatial_encoder.mlp1.1", 32, 64)
    layer("spatial_encoder.mlp2.0", 129 if variant == "tpe_concat" else 128, 128)
    layer("temporal_encoder.inconv", 128, 256)
    if variant in ("calendar", "shiftaug"):
        sd["temporal_encoder.position_enc.weight"] = t(np.tile(table(485, 16, 1000.0), (1, 16)))
    if variant == "tpe_sinusoidal":
        sd["temporal_encoder.position_enc.weight"] = t(np.tile(table(10000, 16, 10000.0), (1, 16)))
    if variant == "tpe_fourier":
        sd["temporal_encoder.position_enc.wr.weight"] = t(g.normal(0, 20.0, (8, 1)))
        sd["temporal_encoder.position_enc.mlp.0.weight"] = t(g.normal(0, 0.25, (32, 16)))
        sd["temporal_encoder.position_enc.mlp.0.bias"] = t(g.normal(0, 0.1, 32))
        sd["temporal_encoder.position_enc.mlp.2.weight"] = t(g.normal(0, 0.2, (16, 32)))
        sd["temporal_encoder.position_enc.mlp.2.bias"] = t(g.normal(0, 0.1, 16))
    if variant == "tpe_recurrent":
        sd["temporal_encoder.position_enc.position_enc.weight"] = t(table(10000, 16, 10000.0))
        for name, shape in (("weight_ih_l0", (48, 16)), ("weight_hh_l0", (48, 16)), ("bias_ih_l0", (48,)),
                            ("bias_hh_l0", (48,))):
            sd[f"temporal_encoder.position_enc.rnn.{name}"] = t(g.normal(0, 0.25, shape))
        sd["temporal_encoder.position_enc.mlp.weight"] = t(g.normal(0, 0.25, (16, 16)))
        sd["temporal_encoder.position_enc.mlp.bias"] = t(g.normal(0, 0.1, 16))
    sd["temporal_encoder.attention_heads.key.weight"] = t(g.normal(0, 1 / 16, (128, 256)))
    sd["temporal_encoder.attention_heads.key.bias"] = t(g.normal(0, 0.1, 128))
    sd["temporal_encoder.attention_heads.query"] = t(g.normal(0, 0.5, (16, 8)))
    layer("temporal_encoder.mlp.0", 256, 128)
    layer("decoder.0", 128, 64)
    layer("decoder.1", 64, 32)
    sd["decoder.2.weight"] = t(g.normal(0, 0.2, (K, 32)))
    sd["decoder.2.bias"] = t(g.normal(0, 0.1, K))
    return sd


def reference_logits(sd, variant, pixels, mask, positions, gdd):
    """The reference forward pass in float64 numpy: pixels (B, T, C, S) DN in TimeMatch order."""
    p = {k: v.double().numpy() for k, v in sd.items()}

    def layer(prefix, h):
        y = h @ p[f"{prefix}.linear.weight"].T
        y = (y - p[f"{prefix}.norm.running_mean"]) / np.sqrt(p[f"{prefix}.norm.running_var"] + 1e-5)
        return np.maximum(y * p[f"{prefix}.norm.weight"] + p[f"{prefix}.norm.bias"], 0.0)

    gdd = np.floor(gdd).astype(np.int64)  # the reference's ToTensor casts GDD to long
    x = np.clip(pixels, 0, 65535).astype(np.float64) / 65535.0
    h = layer("spatial_encoder.mlp1.1", layer("spatial_encoder.mlp1.0", x.transpose(0, 1, 3, 2)))
    m = mask[..., None].astype(np.float64)
    n = m.sum(axis=2)
    mean = (h * m).sum(axis=2) / n
    d = np.where(n == 1, 2, n)
    std = np.sqrt((((h - mean[:, :, None]) * m) ** 2).sum(axis=2) / (d - 1) + 1e-31)
    parts = [mean, std] + ([gdd[..., None].astype(np.float64)] if variant == "tpe_concat" else [])
    e = layer("temporal_encoder.inconv", layer("spatial_encoder.mlp2.0", np.concatenate(parts, axis=-1)))
    if variant in ("calendar", "shiftaug"):
        e = e + p["temporal_encoder.position_enc.weight"][positions + 60]
    elif variant == "tpe_sinusoidal":
        e = e + p["temporal_encoder.position_enc.weight"][gdd]
    elif variant == "tpe_fourier":
        wp = (gdd / 10000.0)[..., None] * p["temporal_encoder.position_enc.wr.weight"][:, 0]
        r = np.concatenate([np.cos(wp), np.sin(wp)], axis=-1) * 16 ** -0.5
        a = r @ p["temporal_encoder.position_enc.mlp.0.weight"].T + p["temporal_encoder.position_enc.mlp.0.bias"]
        a = 0.5 * a * (1.0 + erf(a / np.sqrt(2.0)))
        o = a @ p["temporal_encoder.position_enc.mlp.2.weight"].T + p["temporal_encoder.position_enc.mlp.2.bias"]
        e = e + np.tile(o, (1, 1, 16))
    elif variant == "tpe_recurrent":
        s = p["temporal_encoder.position_enc.position_enc.weight"][gdd]
        w_ih, w_hh = p["temporal_encoder.position_enc.rnn.weight_ih_l0"], p["temporal_encoder.position_enc.rnn.weight_hh_l0"]
        b_ih, b_hh = p["temporal_encoder.position_enc.rnn.bias_ih_l0"], p["temporal_encoder.position_enc.rnn.bias_hh_l0"]
        state = np.zeros((s.shape[0], 16))
        outs = []
        for step in range(s.shape[1]):
            gi, gh = s[:, step] @ w_ih.T + b_ih, state @ w_hh.T + b_hh
            r = 1 / (1 + np.exp(-(gi[:, :16] + gh[:, :16])))
            z = 1 / (1 + np.exp(-(gi[:, 16:32] + gh[:, 16:32])))
            cand = np.tanh(gi[:, 32:] + r * gh[:, 32:])
            state = (1 - z) * cand + z * state
            outs.append(state)
        o = np.stack(outs, axis=1) @ p["temporal_encoder.position_enc.mlp.weight"].T \
            + p["temporal_encoder.position_enc.mlp.bias"]
        e = e + np.tile(o, (1, 1, 16))
    b, t, _ = e.shape
    keys = (e @ p["temporal_encoder.attention_heads.key.weight"].T
            + p["temporal_encoder.attention_heads.key.bias"]).reshape(b, t, 16, 8)
    scores = np.einsum("bthd,hd->bht", keys, p["temporal_encoder.attention_heads.query"]) / np.sqrt(8.0)
    att = np.exp(scores - scores.max(axis=-1, keepdims=True))
    att /= att.sum(axis=-1, keepdims=True)
    y = np.einsum("bht,bthd->bhd", att, e.reshape(b, t, 16, 16)).reshape(b, 256)
    y = layer("decoder.1", layer("decoder.0", layer("temporal_encoder.mlp.0", y)))
    return y @ p["decoder.2.weight"].T + p["decoder.2.bias"]


def parcels(fraction=0.0):
    g = np.random.default_rng(42)
    b, t, s = 4, 6, 5
    pixels_tm = g.integers(0, 12000, (b, t, 10, s))
    pixels_tm[0, 0, :, 0] = 0  # a valid pixel of value 0
    mask = np.zeros((b, t, s), bool)
    for i, n in enumerate([5, 1, 3, 5]):
        mask[i, :, :n] = True
    pixels_tm *= mask[:, :, None, :]  # masked slots hold 0, as in a dataset
    positions = np.array([10, 40, 75, 120, 160, 200])
    gdd = np.array([50, 210, 480, 900, 1500, 2300])[None, :] + 7 * np.arange(b)[:, None] + fraction
    ps = PixelSets(
        pixels=pixels_tm[:, :, [TM_BANDS.index(x) for x in S2_BANDS]].astype(np.uint16), pixel_mask=mask,
        date_mask=np.ones((b, t), bool), gdd=gdd.astype(np.float32),
        dates=np.datetime64("2017-01-01") + positions, day_of_season=positions.astype(np.float32),
        parcel_ids=np.array([f"p{i}" for i in range(b)]), status=np.array(["ok"] * b), classes=CROP_CLASSES)
    return ps, pixels_tm, mask, positions, gdd


@pytest.mark.parametrize("variant", ["calendar", "no_pe", "tpe_sinusoidal", "tpe_concat", "tpe_fourier",
                                     "tpe_recurrent"])
def test_bundle_probabilities_equal_the_reference_computation(tmp_path, variant):
    sd = reference_state(variant)
    ckpt = tmp_path / "model.pt"
    torch.save({"epoch": 12, "state_dict": sd}, ckpt)
    config = import_weights(ckpt, tmp_path / "m.tcm", variant=variant)
    assert config.variant == variant and config.classes == CROP_CLASSES
    assert config.scaling.quantification == 65535.0 and set(config.scaling.mean) == {0.0}
    assert set(config.scaling.std) == {1.0}
    bundle = load_bundle(tmp_path / "m.tcm")
    ps, pixels_tm, mask, positions, gdd = parcels()
    expect = reference_logits(sd, variant, pixels_tm, mask, np.tile(positions, (4, 1)), gdd)
    expect = np.exp(expect - expect.max(axis=1, keepdims=True))
    expect /= expect.sum(axis=1, keepdims=True)
    got = bundle.predict(ps)
    np.testing.assert_allclose(got, expect, atol=2e-5)
    assert np.abs(expect - 1.0 / K).max() > 0.02  # the weights do move the outputs


def test_fractional_gdd_warning_and_cli(tmp_path, caplog, capsys):
    sd = reference_state("tpe_recurrent", seed=1)
    ckpt = tmp_path / "rnn.pt"
    torch.save(sd, ckpt)
    names = [f"c{i}" for i in range(K)]
    with caplog.at_level(logging.WARNING):
        rc = main(["import-weights", str(ckpt), "--classes", ",".join(names), "--out", str(tmp_path / "r.tcm")])
    assert rc == 0 and "tpe_recurrent, 9 classes" in capsys.readouterr().out
    assert "whole degree days" in caplog.text
    bundle = load_bundle(tmp_path / "r.tcm")
    assert bundle.classes == tuple(names) and bundle.config.provenance["scene_levels"] == ["L1C"]
    ps, pixels_tm, mask, positions, gdd = parcels(fraction=0.75)
    ref = reference_logits(sd, "tpe_recurrent", pixels_tm, mask, np.tile(positions, (4, 1)), gdd)
    ours = bundle.model(*(torch.from_numpy(a) for a in (
        bundle.config.scaling.apply(ps.pixels, ps.pixel_mask), ps.pixel_mask, ps.date_mask,
        np.tile(ps.day_of_season, (4, 1)), ps.gdd))).detach().double().numpy()
    # The reference encodes floor(GDD); ThermoCrop the exact value: close, not equal.
    assert 1e-7 < np.abs(ours - ref).max() < 5e-2


class Hostile:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_bad_checkpoints_are_refused(tmp_path):
    sd = reference_state("tpe_sinusoidal")
    ckpt = tmp_path / "m.pt"
    torch.save({**sd, "temporal_encoder.inlayernorm.weight": torch.ones(128)}, ckpt)
    with pytest.raises(BundleError, match="inlayernorm"):
        import_weights(ckpt, tmp_path / "a.tcm", variant="tpe_sinusoidal")
    torch.save(sd, ckpt)
    with pytest.raises(BundleError, match="those of tpe_sinusoidal, not calendar"):
        import_weights(ckpt, tmp_path / "a.tcm", variant="calendar")
    with pytest.raises(InputError, match="9 outputs but 3 class names"):
        import_weights(ckpt, tmp_path / "a.tcm", classes=["a", "b", "c"])
    torch.save({**sd, "temporal_encoder.position_enc.weight": torch.zeros(10000, 256)}, ckpt)
    with pytest.raises(BundleError, match="not the sinusoid"):
        import_weights(ckpt, tmp_path / "a.tcm")
    Hostile.marker = tmp_path / "ran"
    torch.save({"state_dict": sd, "extra": Hostile()}, ckpt)
    with pytest.raises(InputError, match="weights only"):
        import_weights(ckpt, tmp_path / "a.tcm")
    assert not Hostile.marker.exists() and not (tmp_path / "a.tcm").exists()
