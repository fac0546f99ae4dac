"""The folded prediction path (channels-first pixel layers, attention keys folded into the query)
against the model it is folded from, on pixel sets written to a dataset folder and read back."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from thermocrop.core.model import bundle as bundle_module  # noqa: E402
from thermocrop.core.model.bundle import default_bundle_path, load_bundle  # noqa: E402
from thermocrop.core.model.networks import (  # noqa: E402
    build_model,
    fast_inference_model,
    masked_mean_std,
    trained_on_means,
    use_pixel_means,
)
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset  # noqa: E402

AGREEMENT = 0.995
"""The share of parcels whose class on the fast path must be the unfolded model's."""

MAX_LOG_PROBABILITY_DIFFERENCE = 1e-3
"""The largest difference of a class's log probability from the unfolded model's allowed on the
fast path: both are fp32 and differ only in the order of the sums (measured: 2e-6)."""


def seasonal_pixel_sets(n: int = 160, t: int = 24, s: int = 64, seed: int = 0) -> PixelSets:
    """Parcels whose bands follow a green-up and senescence of their own timing and strength,
    with parcels of 1 to 64 pixels, cloudy dates (no valid pixel) and missing pixels."""
    rng = np.random.default_rng(seed)
    base = np.array([1650, 1640, 1520, 1830, 2830, 3380, 3330, 3610, 2110, 1360], dtype=np.float64)
    red_edge = np.array([0, -0.3, -0.5, 0, 0.6, 1.2, 1.3, 1.4, 0.2, -0.2])  # how each band greens
    day = np.arange(t) / (t - 1)
    peak = rng.uniform(0.3, 0.7, n)[:, None]
    strength = rng.uniform(0, 900, n)[:, None]
    green = strength * np.exp(-((day[None] - peak) / 0.15) ** 2)  # (n, t)
    level = base[None, None] * (1 + rng.normal(0, 0.1, (n, 1, 10)))
    curve = level + green[:, :, None] * red_edge[None, None]  # (n, t, 10)
    pixels = curve[..., None] + rng.normal(0, 120, (n, t, 10, s))
    size = rng.integers(1, s + 1, n)
    pixel_mask = (np.arange(s)[None, None] < size[:, None, None]) & (rng.random((n, t, s)) > 0.05)
    date_mask = rng.random((n, t)) > 0.15
    date_mask[:, 0] = True
    pixel_mask &= date_mask[:, :, None]
    pixels = np.where(pixel_mask[:, :, None], pixels.clip(1, 10000), 0).astype(np.uint16)
    gdd = np.cumsum(rng.uniform(20, 60, (n, t)), axis=1).astype(np.float32)
    dates = np.datetime64("2024-03-01") + np.arange(t) * 8
    return PixelSets(pixels=pixels, pixel_mask=pixel_mask, date_mask=date_mask, gdd=gdd, dates=dates,
                     day_of_season=(np.arange(t) * 8.0 + 60).astype(np.float32),
                     parcel_ids=np.array([f"p{i}" for i in range(n)]), status=np.full(n, "ok"))


def test_the_fast_path_keeps_the_classes_of_the_unfolded_model(tmp_path, monkeypatch):
    ps = open_dataset(save_dataset(seasonal_pixel_sets(), tmp_path / "dataset"), mmap=False)
    bundle = load_bundle(default_bundle_path())
    bundle.precision = "fp32"
    # The folding alone: the pixels themselves, not each set's mean (test below).
    use_pixel_means(bundle.fast_model(), False)
    fast = bundle.predict(ps, calibrated=False)
    assert type(bundle.fast_model().pse.mlp1[0].linear) is torch.nn.Linear  # the fp32 fast path ran
    assert not bundle.fast_model().pse.pool_std  # its std features carry no weight: left out
    # The reference: the same bundle predicting with its model as trained (BatchNorm in place,
    # pixel rows, masked mean and std pooling, the key map and query apart).
    monkeypatch.setattr(bundle_module, "fast_inference_model", lambda model: model)
    plain_bundle = load_bundle(default_bundle_path())
    plain_bundle.precision = "fp32"
    plain = plain_bundle.predict(ps, calibrated=False)
    assert plain_bundle.fast_model() is plain_bundle.model
    rows = ~np.isnan(plain).any(axis=1)
    assert rows.all() and np.isnan(fast).any(axis=1).sum() == 0
    same = (fast.argmax(1) == plain.argmax(1)).mean()
    worst = np.abs(np.log(fast) - np.log(plain)).max()
    assert same >= AGREEMENT and worst <= MAX_LOG_PROBABILITY_DIFFERENCE
    assert len(set(plain.argmax(1))) > 1  # the parcels are not all of one class


def _mean_pixel_sets(ps: PixelSets) -> PixelSets:
    """``ps`` with one pixel per parcel and date, the rounded mean of its valid pixels."""
    mask = np.asarray(ps.pixel_mask) & np.asarray(ps.date_mask)[:, :, None]
    count = mask.sum(axis=2)
    total = (np.asarray(ps.pixels, dtype=np.float64) * mask[:, :, None, :]).sum(axis=3)
    means = np.round(total / np.maximum(count, 1)[:, :, None]).astype(np.uint16)[..., None]
    return PixelSets(pixels=means, pixel_mask=(count > 0)[..., None], date_mask=np.asarray(ps.date_mask),
                     gdd=ps.gdd, dates=ps.dates, day_of_season=ps.day_of_season, parcel_ids=ps.parcel_ids,
                     status=ps.status)


def test_a_model_trained_on_parcel_means_is_given_each_set_s_mean_pixel(tmp_path):
    """The shipped models learned from parcel means alone; the fast path gives them the mean of
    each set's valid pixels, what the same model gives for a table of parcel means (S = 1)."""
    ps = open_dataset(save_dataset(seasonal_pixel_sets(), tmp_path / "dataset"), mmap=False)
    bundle = load_bundle(default_bundle_path())
    bundle.precision = "fp32"
    assert trained_on_means(bundle.config.provenance)
    fast = bundle.predict(ps, calibrated=False)
    assert bundle.fast_model().pse.pixel_means_first
    means = _mean_pixel_sets(ps)
    assert np.asarray(means.pixels).shape[-1] == 1
    expected = bundle.predict(means, calibrated=False)
    # The means here are rounded to whole digital numbers, as a table's are: half a number at most.
    assert (fast.argmax(1) == expected.argmax(1)).mean() >= AGREEMENT
    assert np.abs(np.log(fast) - np.log(expected)).max() <= 0.02
    # Not the pixel path: the per-pixel features of these noisy sets are averaged differently.
    use_pixel_means(bundle.fast_model(), False)
    pixelwise = bundle.predict(ps, calibrated=False)
    assert np.abs(np.log(pixelwise) - np.log(expected)).max() > 0.05
    assert len(set(expected.argmax(1))) > 1


@pytest.mark.parametrize("provenance", [
    {}, {"training": {"mean_pixel_share": 0.5}}, {"training": {"mean_pixel_share": True}},
    {"training": {"mean_pixel_share": "1"}}, {"training": "mean_pixel_share"}, [], None])
def test_models_not_trained_on_means_alone_keep_their_pixels(provenance, tmp_path):
    from dataclasses import replace

    assert not trained_on_means(provenance)
    bundle = load_bundle(default_bundle_path())
    bundle.config = replace(bundle.config, provenance=provenance if isinstance(provenance, dict) else {})
    assert not bundle.fast_model().pse.pixel_means_first
    assert trained_on_means({"training": {"mean_pixel_share": 1.0}})


@pytest.mark.parametrize("variant", ["tpe_sinusoidal", "tpe_concat"])
def test_masked_pixels_do_not_reach_the_fast_path_whatever_they_hold(variant, random_batch):
    torch.manual_seed(5)
    model = build_model(variant, 6)
    model(*random_batch(8, 5, 12, torch.Generator().manual_seed(0)))  # BatchNorm statistics
    model.eval()
    fast = fast_inference_model(model)
    fast.pse.fold_chunk = 7  # several chunks, the last one short
    pixels, pmask, dmask, dos, gdd = random_batch(9, 6, 12, torch.Generator().manual_seed(1))
    pmask[0, 0, 1:] = False  # a set of one pixel
    pmask[1, 1] = False  # and an empty one
    junk = pixels + torch.randn(pixels.shape, generator=torch.Generator().manual_seed(2)) * 100 * ~pmask.unsqueeze(2)
    with torch.inference_mode():
        plain = model(pixels, pmask, dmask, dos, gdd)
        clean = fast(pixels, pmask, dmask, dos, gdd)
        dirty = fast(junk, pmask, dmask, dos, gdd)
    assert torch.isfinite(clean).all()
    assert torch.allclose(clean, plain, atol=1e-5)
    assert torch.equal(clean, dirty)


def test_folded_scores_are_the_key_map_and_query():
    torch.manual_seed(6)
    model = build_model("no_pe", 4).eval()
    ltae = model.ltae
    h = torch.randn(3, 7, model.config.d_model)
    keys = ltae.key(h).view(3, 7, ltae.n_head, ltae.d_k)
    expected = (keys * ltae.query).sum(-1).transpose(1, 2) / ltae.d_k ** 0.5  # (B, heads, T)
    folded = fast_inference_model(model).ltae
    assert ltae.score_map is None and folded.score_map is not None
    with torch.inference_mode():
        assert torch.allclose(folded.scores(h), expected, atol=1e-5)
        assert torch.allclose(ltae.scores(h), expected, atol=1e-5)


def test_the_std_is_pooled_in_one_pass_only_where_the_std_features_carry_no_weight(random_batch):
    torch.manual_seed(7)
    model = build_model("no_pe", 5)
    model(*random_batch(8, 5, 12, torch.Generator().manual_seed(0)))  # BatchNorm statistics
    model.eval()
    assert not fast_inference_model(model).pse.one_pass_std  # both halves weigh: centred
    width = model.config.mlp1[-1]
    with torch.no_grad():
        model.pse.mlp2.linear.weight[:, width:] *= 1e-5
    fast = fast_inference_model(model)
    assert fast.pse.one_pass_std
    fast.pse.fold_chunk = 7
    batch = random_batch(9, 6, 12, torch.Generator().manual_seed(1))
    with torch.inference_mode():
        assert torch.allclose(fast(*batch), model(*batch), atol=1e-5)
        # The one-pass std itself, on pixels of some spread around a mean away from 0, against
        # the centred sums of the training path in float64.
        g = torch.Generator().manual_seed(3)
        pmask = torch.rand(40, 12, generator=g) > 0.3
        pmask[0, 1:] = False  # a set of one pixel
        pmask[1] = False  # and an empty one
        pixels = (torch.randn(40, 10, 12, generator=g) * 0.3 + 2) * pmask.unsqueeze(1)
        pooled = fast.pse._pool_channels_first(pixels, pmask)
        x = pixels.double().transpose(1, 2)
        for layer in fast.pse.mlp1:
            x = torch.relu(x @ layer.linear.weight.double().t() + layer.linear.bias.double())
        mean, std = masked_mean_std(x, pmask)
    assert torch.allclose(pooled[:, :width].double(), mean, atol=1e-5)
    assert torch.allclose(pooled[:, width:].double(), std, atol=2e-3 * float(mean.abs().max()))
    assert float(pooled[:2, width:].max()) < 1e-15  # one pixel or none: no spread, no NaN


@pytest.mark.parametrize("variant", ["no_pe", "tpe_concat"])
def test_the_std_is_left_out_only_where_its_weight_is_negligible(variant, random_batch):
    torch.manual_seed(8)
    model = build_model(variant, 5)
    model(*random_batch(8, 5, 12, torch.Generator().manual_seed(0)))  # BatchNorm statistics
    model.eval()
    width = model.config.mlp1[-1]
    with torch.no_grad():
        model.pse.mlp2.linear.weight[:, width:2 * width] *= 1e-5
    assert fast_inference_model(model).pse.pool_std  # small, but not negligible: pooled
    with torch.no_grad():
        model.pse.mlp2.linear.weight[:, width:2 * width] *= 1e-3
    fast = fast_inference_model(model)
    assert not fast.pse.pool_std
    # mlp2 keeps the columns of the means (and of the GDD for TPE-Concat), BatchNorm folded in.
    weight, norm = model.pse.mlp2.linear.weight, model.pse.mlp2.norm
    scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
    kept = torch.cat([weight[:, :width], weight[:, 2 * width:]], 1) * scale[:, None]
    assert fast.pse.mlp2.linear.in_features == width + (variant == "tpe_concat")
    assert torch.allclose(fast.pse.mlp2.linear.weight, kept, atol=1e-6)
    fast.pse.fold_chunk = 7
    batch = random_batch(9, 6, 12, torch.Generator().manual_seed(1))
    with torch.inference_mode():
        assert torch.allclose(fast(*batch), model(*batch), atol=1e-5)
        pixels, pmask = batch[0].flatten(0, 1), batch[1].flatten(0, 1)
        pooled = fast.pse._pool_channels_first(pixels, pmask)
        x = pixels.double().transpose(1, 2)
        for layer in fast.pse.mlp1:
            x = torch.relu(x @ layer.linear.weight.double().t() + layer.linear.bias.double())
        mean, _ = masked_mean_std(x, pmask)
    assert pooled.shape == (pixels.shape[0], width)
    assert torch.allclose(pooled.double(), mean, atol=1e-5)


def test_a_large_batch_runs_in_blocks_of_parcels_with_the_same_output(random_batch):
    torch.manual_seed(9)
    model = build_model("tpe_sinusoidal", 5)
    model(*random_batch(8, 5, 12, torch.Generator().manual_seed(0)))  # BatchNorm statistics
    model.eval()
    fast = fast_inference_model(model)
    assert fast.inference_block_sets is not None and model.inference_block_sets is None
    batch = random_batch(11, 6, 12, torch.Generator().manual_seed(1))  # some dates missing
    calls = []
    fast.pse.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    with torch.inference_mode():
        whole = fast(*batch)
        fast.inference_block_sets = 24  # 4 parcels of 6 dates a block: 4 + 4 + 3
        blocks = fast(*batch)
    assert len(calls) == 4  # one pass for the whole batch, then three blocks
    assert torch.allclose(blocks, whole, atol=1e-6)
    assert torch.allclose(blocks, model(*batch).detach(), atol=1e-5)
