"""Scores on real parcels: the small-class-safe macro F1, block folds, cross-validation by
blocks, the model card section and its replacement in a card; the shipped model on the real
Bavarian parcels."""

import json

import numpy as np
import pytest

from thermocrop.core.pixel_sets import PixelSets, save_dataset
from thermocrop.training.realdata import (
    SECTION_END,
    SECTION_START,
    block_folds,
    cross_validate,
    find_realdata,
    macro_f1_min_support,
    model_card_section,
    score_bundle,
    score_confusion,
    update_model_card,
)
from thermocrop.training.train import TrainingConfig


def test_macro_f1_over_classes_with_enough_parcels():
    cm = np.array([[8, 2, 0],    # 10 parcels: P 8/9, R 8/10
                   [1, 2, 0],    # 3 parcels: left out of the average
                   [0, 0, 6]])   # 6 parcels: P 1, R 1
    f1, kept = macro_f1_min_support(cm, 5)
    p0, r0 = 8 / 9, 8 / 10
    assert kept == [0, 2]
    assert f1 == pytest.approx(((2 * p0 * r0 / (p0 + r0)) + 1.0) / 2)
    s = score_confusion(cm, ["a", "b", "c"])
    assert s["classes_min_support"] == ["a", "c"] and s["overall_accuracy"] == pytest.approx(16 / 19)


def small_dataset(n=48, blocks=8, seed=0):
    """S = 1 parcels of two classes with different spectra over 6 dates."""
    g = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    t = 6
    pixels = np.zeros((n, t, 10, 1), np.uint16)
    for i in range(n):
        base = 1500 if labels[i] == 0 else 3500
        pixels[i, :, :, 0] = base + 300 * np.arange(10)[None, :] * (1 + labels[i]) + g.integers(0, 200, (t, 10))
    dates = np.arange("2021-03-01", "2021-09-01", 30, dtype="datetime64[D]")[:t]
    return PixelSets(pixels=pixels, pixel_mask=np.ones((n, t, 1), bool), date_mask=np.ones((n, t), bool),
                     gdd=np.tile(np.linspace(200, 2000, t), (n, 1)).astype(np.float32), dates=dates,
                     day_of_season=(dates - np.datetime64("2021-01-01")).astype(np.float32),
                     parcel_ids=np.array([str(i) for i in range(n)]), status=np.array(["ok"] * n),
                     labels=labels.astype(np.int16), blocks=(np.arange(n) // (n // blocks)).astype(np.int32),
                     classes=("a", "b"), meta={"season_start": "01-01"})


def test_block_folds_deal_every_block_once_and_balance_parcels():
    ps = small_dataset()
    ps.blocks[:12] = 0  # one big block of 12 parcels, the rest 6 each
    folds = block_folds(ps, 3, seed=4)
    dealt = np.concatenate(folds)
    assert sorted(dealt.tolist()) == sorted(np.unique(ps.blocks).tolist())
    sizes = [int(np.isin(ps.blocks, f).sum()) for f in folds]
    assert max(sizes) - min(sizes) <= 12
    assert [f.tolist() for f in block_folds(ps, 3, seed=4)] == [f.tolist() for f in folds]


@pytest.mark.slow
def test_cross_validation_tests_every_parcel_once(tmp_path):
    path = save_dataset(small_dataset(), tmp_path / "ds")
    cfg = TrainingConfig(epochs=2, steps_per_epoch=3, batch_size=8, sample_pixels=1, sample_dates=6, device="cpu")
    data = cross_validate(path, ["calendar"], tmp_path / "cv", cfg, n_folds=4, seeds=[0])
    run = data["runs"][0]
    assert np.array(run["confusion_matrix"]).sum(axis=1).tolist() == [24, 24]
    tested = sorted(b for f in range(4) for b in json.loads(
        (tmp_path / "cv" / "calendar" / "seed0" / f"fold{f}" / "result.json").read_text())["test_blocks"])
    assert tested == list(range(8))
    assert "| Calendar PE |" in (tmp_path / "cv" / "table.md").read_text()


def test_model_card_section_replaces_its_earlier_self(tmp_path):
    cm = np.array([[5, 1], [2, 7]])
    section = model_card_section(score_confusion(cm, ["corn", "winter_wheat"]), ["thermocrop evaluate ..."])
    assert "| corn | 6 | 0.71 | 0.83 | 0.77 |" in section and "| w.wheat | 2 | 7 |" in section
    card = tmp_path / "MODEL_CARD.md"
    card.write_text("# Model\n\nintro\n")
    update_model_card(card, section)
    update_model_card(card, section.replace("thermocrop evaluate ...", "second"))
    text = card.read_text()
    assert text.startswith("# Model\n\nintro\n") and text.count(SECTION_START) == 1 and "second" in text
    assert text.rstrip().endswith(SECTION_END)
    card.write_text("# Model\n\n" + section + "\n## After\n")
    update_model_card(card, section.replace("thermocrop evaluate ...", "third"))
    assert card.read_text().endswith("third\n```\n" + SECTION_END + "\n\n## After\n")


@pytest.mark.slow
def test_shipped_model_on_the_bavarian_parcels(tmp_path):
    from thermocrop.core.model.bundle import default_bundle_path
    from thermocrop.training.realdata import bavaria_dataset

    realdata = find_realdata()
    if realdata is None:
        pytest.skip("the shared real data are not next to this checkout")
    ds = bavaria_dataset(tmp_path / "bavaria", realdata)
    result = score_bundle(default_bundle_path(), ds)
    cm = np.array(result["confusion_matrix"])
    assert dict(zip(result["classes"], cm.sum(axis=1).tolist())) == {
        "corn": 49, "horsebeans": 1, "meadow": 116, "spring_barley": 10, "unknown": 38, "winter_barley": 17,
        "winter_rapeseed": 10, "winter_triticale": 4, "winter_wheat": 56}
    assert result["overall_accuracy"] == pytest.approx(np.trace(cm) / 301)
    assert len(result["classes_min_support"]) == 7
