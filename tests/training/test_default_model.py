"""The shipped default bundle loads and classifies an unseen synthetic region above chance."""

from __future__ import annotations

import numpy as np
import pytest

from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.model.bundle import default_bundle_path, ensemble_bundle_path, load_bundle
from thermocrop.core.parcels import ParcelFields
from thermocrop.core.settings import ExtractionSettings, PixelSampling

pytestmark = pytest.mark.skipif(not default_bundle_path().exists(),
                                reason="resources/models/default.tcm has not been built yet "
                                       "(make default-model)")


def test_default_bundle_is_small_and_names_the_crop_classes():
    path = default_bundle_path()
    assert path.stat().st_size < 4_000_000  # five members of about 0.53 MB
    bundle = load_bundle(path)
    assert bundle.classes == CROP_CLASSES
    assert bundle.config.provenance.get("data") == "synthetic"


@pytest.mark.parametrize("level, name", [("L1C", "default_fast.tcm"), ("L2A", "default_fast_l2a.tcm")])
def test_the_fast_model_is_one_model_distilled_from_the_shipped_ensemble(level, name):
    import hashlib

    path = default_bundle_path().parent / name
    fast, ensemble = load_bundle(path), load_bundle(ensemble_bundle_path(level))
    assert fast.config.hyperparameters.get("members", 1) == 1 and ensemble.config.hyperparameters["members"] == 5
    digest = hashlib.sha256(ensemble_bundle_path(level).read_bytes()).hexdigest()
    assert fast.config.provenance["teacher"] == {"file": ensemble_bundle_path(level).name, "sha256": digest}
    # The thermal time is the teacher's; a GDD floor is the distilled model's own (docs/in-season.md).
    thermal = [{k: v for k, v in b.config.gdd.items() if k != "floor"} for b in (fast, ensemble)]
    assert (fast.classes, fast.config.bands, fast.config.scaling, thermal[0], fast.config.variant) == \
        (ensemble.classes, ensemble.config.bands, ensemble.config.scaling, thermal[1], ensemble.config.variant)
    assert fast.config.scene_level == ensemble.config.scene_level == level
    assert fast.calibration is not None and len(fast.calibration.scores) == fast.calibration.parcels > 0
    assert sum(p.numel() for p in fast.model.parameters()) * 5 == sum(p.numel() for p in ensemble.model.parameters())


@pytest.mark.slow
def test_default_bundle_classifies_an_unseen_region_above_chance(tmp_path):
    from thermocrop.core.extract import extract_to_dataset
    from thermocrop.core.pixel_sets import open_dataset
    from thermocrop.synth import generate_region

    # A seed the default model never saw (it was trained on seed 0).
    region = tmp_path / "FR1"
    generate_region("FR1", region, parcels=80, seed=11)
    extract_to_dataset(region / "parcels.gpkg", region / "scenes", region / "weather.nc", tmp_path / "ds",
                       settings=ExtractionSettings(sampling=PixelSampling(max_pixels=32)),
                       fields=ParcelFields(label_field="crop"))
    bundle = load_bundle(default_bundle_path())
    ps = open_dataset(tmp_path / "ds").relabel(bundle.classes)  # the labels as indices of the model's classes
    ok = (ps.status == "ok") & (ps.labels >= 0)
    probs = bundle.predict(ps.subset(np.flatnonzero(ok)))
    truth = ps.labels[ok].astype(int)
    accuracy = float((probs.argmax(axis=1) == truth).mean())
    majority = np.bincount(truth).max() / len(truth)
    assert accuracy > majority + 0.1, (accuracy, majority)
