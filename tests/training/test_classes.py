"""Any class list end to end: twelve classes from two datasets with different class lists,
through training, the bundle, prediction, evaluation, metrics, the confusion figure and a
classified layer; a chosen list; classes a model never saw."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.crops import class_colours
from thermocrop.core.errors import DatasetError
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.training.evaluate import evaluate_bundle
from thermocrop.training.experiment import check_held_out_classes
from thermocrop.training.train import TrainingConfig, train_model

gpd = pytest.importorskip("geopandas")
pytestmark = pytest.mark.slow  # two short trainings (about 25 s of CPU)

CLASSES_12 = tuple(f"crop_{name}" for name in "abcdefghijkl")


def class_pixel_sets(classes, n=96, t=10, s=6, seed=0, blocks=8) -> PixelSets:
    """Pixel sets whose reflectance depends on the class *name* (so that the same class looks
    the same in datasets with different class lists), labels indexing ``classes``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(classes), n).astype(np.int16)
    level = np.array([CLASSES_12.index(c) if c in CLASSES_12 else 12 for c in classes])[labels]
    base = 800 + 450 * level[:, None, None, None] * np.linspace(0.3, 1.0, 10)[None, None, :, None]
    pixels = (base + rng.normal(0, 60, (n, t, 10, s))).clip(1, 65535).astype(np.uint16)
    pixel_mask = np.ones((n, t, s), dtype=bool)
    dates = np.datetime64("2018-03-01") + np.arange(t) * 15
    dos = (dates - np.datetime64("2018-01-01")).astype(np.float32)
    gdd = np.cumsum(rng.uniform(60, 120, (n, t)), axis=1).astype(np.float32)
    return PixelSets(pixels=pixels, pixel_mask=pixel_mask, date_mask=np.ones((n, t), dtype=bool), gdd=gdd,
                     dates=dates, day_of_season=dos, parcel_ids=np.array([f"p{seed}-{i}" for i in range(n)]),
                     status=np.array(["ok"] * n), labels=labels, blocks=(np.arange(n) % blocks).astype(np.int32),
                     classes=tuple(classes))


@pytest.fixture(scope="module")
def twelve(tmp_path_factory):
    """Two datasets whose class lists differ (eight classes each, listed in different orders)
    and share four; their union is twelve classes. A model trained on them, once."""
    root = tmp_path_factory.mktemp("twelve")
    first = class_pixel_sets(CLASSES_12[:8], seed=1)
    second = class_pixel_sets(CLASSES_12[4:][::-1], seed=2)
    save_dataset(first, root / "A")
    save_dataset(second, root / "B")
    datasets = [open_dataset(root / "A"), open_dataset(root / "B")]
    config = TrainingConfig(variant="tpe_sinusoidal", epochs=3, steps_per_epoch=12, batch_size=32,
                            sample_pixels=4, sample_dates=6, lr=5e-3, device="cpu")
    result = train_model(datasets, root / "model.tcm", config, show_progress=False)
    return {"root": root, "datasets": datasets, "result": result}


def test_twelve_classes_train_into_a_bundle_with_the_union(twelve):
    result = twelve["result"]
    assert tuple(result.metrics["classes"]) == CLASSES_12  # union of both lists, sorted
    bundle = load_bundle(result.bundle_path)
    assert bundle.classes == CLASSES_12
    assert bundle.model.config.num_classes == 12
    assert bundle.config.colours == class_colours(CLASSES_12)
    assert len(set(bundle.config.colours.values())) == 12
    assert np.array(result.metrics["confusion_matrix"]).shape == (12, 12)
    assert set(result.metrics["eval"]["per_class"]) == set(CLASSES_12)
    assert result.files["confusion"].stat().st_size > 0
    metrics = json.loads(result.files["metrics"].read_text())
    assert metrics["config"]["classes"] is None and metrics["classes"] == list(CLASSES_12)


def test_evaluation_matches_labels_by_name_and_predicts_twelve(twelve):
    bundle = load_bundle(twelve["result"].bundle_path)
    second = twelve["datasets"][1]
    scores = evaluate_bundle(bundle, [second], split="all")
    # Support per class counted straight from the dataset's own class list and labels.
    by_name = Counter(second.classes[k] for k in second.labels)
    assert {c: v["support"] for c, v in scores["per_class"].items()} == {c: by_name.get(c, 0) for c in CLASSES_12}
    probs = bundle.predict(second)
    assert probs.shape == (len(second), 12)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    # The classes share nothing but a reflectance level by name: a short run already beats
    # chance (1/12) by far on the eight classes of this dataset.
    assert scores["overall_accuracy"] > 0.3


def test_a_chosen_class_list_and_unseen_classes(twelve, tmp_path, capsys):
    root = twelve["root"]
    model = tmp_path / "three.tcm"
    assert main(["train", "--data", str(root / "A"), str(root / "B"), "--variant", "no_pe", "--out", str(model),
                 "--classes", "crop_h, crop_a,crop_e", "--epochs", "1", "--steps-per-epoch", "2",
                 "--batch-size", "8", "--sample-pixels", "4", "--sample-dates", "5", "--device", "cpu"]) == 0
    assert "3 classes: crop_h, crop_a, crop_e" in capsys.readouterr().out
    bundle = load_bundle(model)
    assert bundle.classes == ("crop_h", "crop_a", "crop_e")  # the order given
    metrics = json.loads(model.with_suffix(".metrics.json").read_text())
    support = {c: v["support"] for c, v in metrics["eval"]["per_class"].items()}
    assert set(support) == {"crop_h", "crop_a", "crop_e"}
    # Dataset B holds crop_e .. crop_l: scoring it with the three-class model refuses the
    # classes the model never saw, naming them, unless asked to leave them out.
    assert main(["evaluate", "--model", str(model), "--data", str(root / "B")]) == EXIT_INPUT
    err = capsys.readouterr().err
    named = err.split("never seen: ")[1].split(". The model knows")[0]
    assert sorted(part.split(" (")[0] for part in named.split(", ")) == [f"crop_{c}" for c in "fgijkl"]
    second = twelve["datasets"][1]
    counts = Counter(second.classes[k] for k in second.labels)
    assert main(["evaluate", "--model", str(model), "--data", str(root / "B"), "--drop-unseen-classes",
                 "--json", str(tmp_path / "s.json")]) == 0
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["n"] == counts["crop_e"] + counts["crop_h"]
    assert scores["left_out"] == {c: n for c, n in sorted(counts.items()) if c not in ("crop_e", "crop_h")}


def test_held_out_region_with_classes_no_other_region_has(twelve, tmp_path):
    root = twelve["root"]
    save_dataset(class_pixel_sets(CLASSES_12[:6] + ("soy",), n=40, seed=3), tmp_path / "C")
    regions = [root / "A", root / "B", tmp_path / "C"]
    # Held out, B's crop_i .. crop_l are in neither A nor C, and C's soy is nowhere else.
    with pytest.raises(DatasetError, match=r"B has crop_i \(\d+ parcels\), crop_j .*C has soy \(\d+ parcels\)"):
        check_held_out_classes(regions)
    # With a chosen list nothing is refused: held-out parcels of other classes are left out.
    check_held_out_classes(regions, classes=("crop_a", "crop_b"))


def test_a_layer_classified_with_the_twelve_class_model(twelve, tmp_path):
    crs = "EPSG:32633"
    x0, y0 = 400000.0, 5500000.0
    rng = np.random.default_rng(5)
    for day in ("20180412", "20180602", "20180720"):
        path = tmp_path / "scenes" / f"S2A_MSIL2A_{day}T100031_N0206_R122_T33UVP_{day}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=20, height=20, count=10, dtype="uint16", crs=crs,
                           transform=from_origin(x0, y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1500, 5000, size=(10, 20, 20), dtype=np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    days = np.arange(np.datetime64("2018-01-01"), np.datetime64("2018-12-31"))
    (tmp_path / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},3.0,13.0\n" for d in days))
    parcels = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"]},
                     geometry=[box(x0 + 10, y0 - 60, x0 + 60, y0 - 10), box(x0 + 100, y0 - 150, x0 + 150, y0 - 100),
                               box(x0 + 900, y0 - 950, x0 + 950, y0 - 900)], crs=crs).to_file(parcels)
    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(parcels), "--scenes", str(tmp_path / "scenes"),
                 "--weather", str(tmp_path / "weather.csv"), "--model", str(twelve["result"].bundle_path),
                 "--missing-scl", "warn", "--out", str(out)]) == 0
    back = gpd.read_file(out)
    assert back["crop_status"].tolist() == ["ok", "ok", "outside_scenes"]
    assert set(back["crop_pred"][:2]) <= set(CLASSES_12) and back["crop_pred"].isna()[2]  # NULL where not classified
