"""Calibrating a model on reference parcels (app.run_calibration, thermocrop calibrate) and the
prediction sets a calibrated model gives classify, checked against the same numbers worked out
from the raw model's probabilities."""

from __future__ import annotations

from dataclasses import replace

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from thermocrop import app
from thermocrop.app import CalibrateRequest, ParcelsSpec, ScenesSpec, WeatherSpec
from thermocrop.core.errors import InputError, OutputError
from thermocrop.core.model.bundle import default_bundle_path, load_bundle, save_bundle
from thermocrop.core.model.calibration import apply_temperature, conformal_threshold, fit_temperature


@pytest.fixture(scope="module")
def raw_model(tmp_path_factory):
    """The shipped model's weights without any calibration."""
    bundle = load_bundle(default_bundle_path())
    path = tmp_path_factory.mktemp("raw") / "raw.tcm"
    save_bundle(path, bundle.model, replace(bundle.config, calibration={}))
    return path


def _request(region, out, model, **kwargs):
    return CalibrateRequest(reference=ParcelsSpec(str(region / "parcels.gpkg"), **kwargs.pop("parcels", {})),
                            label_field="crop", scenes=ScenesSpec(files=(str(region / "scenes"),)),
                            weather=WeatherSpec(path=str(region / "weather.nc")), out=str(out), model=str(model),
                            **kwargs)


def test_calibration_fits_the_raw_probabilities_of_the_reference_parcels(tiny_region, raw_model, tmp_path):
    from thermocrop.core.classify import classify_parcels

    run = app.run_calibration(_request(tiny_region, tmp_path / "cal.tcm", raw_model))
    raw = classify_parcels(str(tiny_region / "parcels.gpkg"), str(tiny_region / "scenes"),
                           str(tiny_region / "weather.nc"), str(raw_model))
    truth = gpd.read_file(tiny_region / "parcels.gpkg")["crop"].to_numpy()
    classes = list(raw.classes)
    ok = raw.status == "ok"
    labels = np.array([classes.index(c) if c in classes else -1 for c in truth])[raw.rows]
    keep = ok & (labels >= 0)
    temperature = fit_temperature(raw.probabilities[keep], labels[keep])
    bundle = load_bundle(run.path)
    assert bundle.calibration.parcels == keep.sum() == sum(run.counts.values())
    assert bundle.calibration.temperature == pytest.approx(temperature, rel=1e-4)
    calibrated = apply_temperature(raw.probabilities[keep], temperature)
    scores = np.sort(1.0 - calibrated[np.arange(keep.sum()), labels[keep]])
    np.testing.assert_allclose(bundle.calibration.scores, scores, atol=2e-6)
    # the weights are the raw model's
    for (name, a), (_, b) in zip(bundle.model.state_dict().items(), load_bundle(raw_model).model.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), name

    # classify with the calibrated model: crop_conf calibrated, sets as the threshold says
    from thermocrop.cli.main import main

    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--model", str(run.path), "--coverage", "0.8",
                 "--out", str(out)]) == 0
    layer = gpd.read_file(out)
    p = apply_temperature(raw.probabilities, temperature)
    q = conformal_threshold(scores, 0.8)
    for i, row in enumerate(raw.rows):
        got = layer.iloc[row]
        if raw.status[i] != "ok":
            assert got["crop_set"] is None
            continue
        expected = [classes[k] for k in np.argsort(-p[i], kind="stable") if p[i, k] >= 1 - q - 1e-9] \
            or [classes[int(p[i].argmax())]]
        assert got["crop_conf"] == pytest.approx(float(p[i].max()), abs=2e-5)
        assert got["crop_set"].split("|") == expected and got["crop_set_size"] == len(expected)
        assert expected[0] == got["crop_pred"]


def test_too_few_reference_parcels_are_refused_and_nothing_is_written(tiny_region, raw_model, tmp_path):
    ids = gpd.read_file(tiny_region / "parcels.gpkg")["parcel_id"].tolist()[:30]
    out = tmp_path / "cal.tcm"
    with pytest.raises(InputError, match=r"30 parcels can calibrate.*at least 50"):
        app.run_calibration(_request(tiny_region, out, raw_model, parcels={"selected_ids": tuple(ids)}))
    assert not out.exists()


def test_labels_that_cannot_calibrate_are_refused_before_any_scene_is_read(tiny_region, raw_model, tmp_path):
    """The labels alone decide: too few labelled parcels, or classes the model does not know, are
    refused with the counts while the scenes are not even there; parcels without a label are
    counted in the log."""
    frame = gpd.read_file(tiny_region / "parcels.gpkg")
    no_scenes = {"scenes": ScenesSpec(files=(str(tmp_path / "no_scenes_here"),))}
    reports = []
    unknown = frame.assign(crop="banana")
    unknown.to_file(tmp_path / "banana.gpkg")
    request = replace(_request(tiny_region, tmp_path / "cal.tcm", raw_model),
                      reference=ParcelsSpec(str(tmp_path / "banana.gpkg")), **no_scenes)
    with pytest.raises(InputError, match=rf"0 parcels can calibrate.*{len(frame)} of classes the model does not know"):
        app.run_calibration(request)
    empty = frame.assign(crop=[None if i % 2 else c for i, c in enumerate(frame["crop"])])
    empty.to_file(tmp_path / "half.gpkg")
    unlabelled = int(empty["crop"].isna().sum())
    request = replace(request, reference=ParcelsSpec(str(tmp_path / "half.gpkg")))
    if len(frame) - unlabelled < 50:
        with pytest.raises(InputError, match=rf"{unlabelled} without a label"):
            app.run_calibration(request, app.RunProgress(report=reports.append))
    else:
        with pytest.raises(Exception) as raised:  # past the labels: the missing scenes stop it
            app.run_calibration(request, app.RunProgress(report=reports.append))
        assert "no_scenes_here" in str(raised.value)
    assert any(f"{unlabelled} parcels of" in r and "have no label in 'crop'" in r for r in reports)
    assert not (tmp_path / "cal.tcm").exists()


def test_an_existing_output_is_refused_before_anything_is_read(tiny_region, raw_model, tmp_path):
    out = tmp_path / "cal.tcm"
    out.write_bytes(b"mine")
    with pytest.raises(OutputError, match="exists"):
        app.run_calibration(_request(tiny_region, out, raw_model))
    assert out.read_bytes() == b"mine"


def test_a_model_without_calibration_gives_no_sets_and_says_so(tiny_region, raw_model, tmp_path):
    from thermocrop.cli.main import main

    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--model", str(raw_model), "--out", str(out)]) == 0
    assert "crop_set" not in gpd.read_file(out).columns


def test_vector_scaling_from_the_command_line_is_the_penalised_likelihood_optimum(tiny_region, raw_model, tmp_path):
    from thermocrop.cli.main import main
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.model.calibration import VECTOR_PENALTIES

    cal_path = tmp_path / "vector.tcm"
    inputs = ["--scenes", str(tiny_region / "scenes"), "--weather", str(tiny_region / "weather.nc")]
    assert main(["calibrate", str(raw_model), "--reference", str(tiny_region / "parcels.gpkg"), "--label-field", "crop",
                 *inputs, "--method", "vector", "--out", str(cal_path)]) == 0
    calibration = load_bundle(cal_path).calibration
    raw = classify_parcels(str(tiny_region / "parcels.gpkg"), str(tiny_region / "scenes"),
                           str(tiny_region / "weather.nc"), str(raw_model))
    truth = gpd.read_file(tiny_region / "parcels.gpkg")["crop"].to_numpy()
    classes = list(raw.classes)
    labels = np.array([classes.index(c) if c in classes else -1 for c in truth])[raw.rows]
    keep = (raw.status == "ok") & (labels >= 0)
    assert calibration.method == "vector" and calibration.parcels == keep.sum()
    # At the optimum the gradient of mean NLL + lam * |b|^2 is zero: for the slope 1 / T,
    # mean(sum_k (P - Y) log p) = 0; for each bias, mean(P_k - Y_k) + 2 lam b_k = 0, with one
    # lam of the cross-validated choices.
    log_p = np.log(np.clip(raw.probabilities[keep].astype(np.float64), 1e-12, 1.0))
    bias = np.asarray(calibration.bias)
    z = log_p / calibration.temperature + bias
    prob = np.exp(z - z.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    residual = prob - np.eye(len(classes))[labels[keep]]
    assert abs(np.mean(np.sum(residual * log_p, axis=1))) < 1e-4
    lam = min(VECTOR_PENALTIES, key=lambda lam: np.abs(residual.mean(axis=0) + 2 * lam * bias).max())
    np.testing.assert_allclose(residual.mean(axis=0) + 2 * lam * bias, 0.0, atol=1e-4)
    # The season stages are fitted by the same method: each has its own class biases.
    assert calibration.stages and all(len(s.bias) == len(classes) for s in calibration.stages)

    # classified with it: labels and confidence from the biased, divided log-probabilities
    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), *inputs, "--model", str(cal_path),
                 "--out", str(out)]) == 0
    layer = gpd.read_file(out)
    z = np.log(np.clip(raw.probabilities.astype(np.float64), 1e-12, 1.0)) / calibration.temperature + bias
    for i, row in enumerate(raw.rows):
        if raw.status[i] == "ok":
            p = np.exp(z[i] - z[i].max()) / np.exp(z[i] - z[i].max()).sum()
            assert layer.iloc[row]["crop_pred"] == classes[int(p.argmax())]
            assert layer.iloc[row]["crop_conf"] == pytest.approx(float(p.max()), abs=2e-5)

    # calibrating the calibrated model again starts from its raw probabilities
    again = app.run_calibration(_request(tiny_region, tmp_path / "again.tcm", cal_path))
    assert again.calibration.temperature == pytest.approx(fit_temperature(raw.probabilities[keep], labels[keep]),
                                                          rel=1e-3)
    # The error the model gave as it was (its own calibration), beside that of its raw probabilities:
    # by hand, 10 equal-width bins of the calibrated confidence.
    z = np.log(np.clip(raw.probabilities[keep].astype(np.float64), 1e-12, 1.0)) / calibration.temperature + bias
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    conf, right = p.max(axis=1), p.argmax(axis=1) == labels[keep]
    bins = np.minimum((conf * 10).astype(int), 9)
    ece = sum(abs(conf[bins == b].mean() - right[bins == b].mean()) * (bins == b).sum()
              for b in range(10) if (bins == b).any()) / len(conf)
    assert again.current == pytest.approx(ece, abs=2e-4)
    assert app.run_calibration(_request(tiny_region, tmp_path / "first.tcm", raw_model)).current is None


def test_an_unknown_calibration_method_is_refused_before_anything_is_read(tiny_region, raw_model, tmp_path):
    out = tmp_path / "cal.tcm"
    with pytest.raises(InputError, match="method 'platt' is not known.*temperature or vector"):
        app.run_calibration(_request(tiny_region, out, raw_model, method="platt"))
    assert not out.exists()


@pytest.mark.parametrize("level", ["L1C", "L2A"])
def test_without_a_model_neither_shipped_model_can_be_the_output(tiny_region, raw_model, tmp_path, level):
    """The run reads the shipped model of the scenes' level; writing the calibrated model over
    it (by its path or a link to it, with overwrite as the dock and the Toolbox ask) would
    replace the model every later run uses. The reference is cut to 30 parcels so that a run
    that got past the check would stop before writing anything."""
    shipped = default_bundle_path(level)
    before = shipped.read_bytes()
    link = tmp_path / "model.tcm"
    link.symlink_to(shipped)
    ids = tuple(gpd.read_file(tiny_region / "parcels.gpkg")["parcel_id"].tolist()[:30])
    for out in (shipped, link):
        request = replace(_request(tiny_region, out, raw_model, parcels={"selected_ids": ids}, overwrite=True),
                          model=None)
        with pytest.raises(OutputError, match=rf"is the model {shipped.name} shipped with ThermoCrop"):
            app.run_calibration(request)
        assert shipped.read_bytes() == before


def test_a_reference_calibration_fits_season_stages_on_the_parcels_as_of_each_date(tiny_region, raw_model, tmp_path):
    """The stages of a reference calibration, worked out by classifying the reference parcels as
    of each date one at a time (their later dates masked), not in one pass over the prefixes."""
    from thermocrop.core.classify import bundle_thermal_time
    from thermocrop.core.extract import extract_to_dataset
    from thermocrop.core.model.season_stages import MIN_STAGE_ROWS, STAGE_BOUNDS
    from thermocrop.core.parcels import ParcelFields
    from thermocrop.core.pixel_sets import open_dataset
    from thermocrop.core.settings import ExtractionSettings

    reports = []
    run = app.run_calibration(_request(tiny_region, tmp_path / "cal.tcm", raw_model),
                              app.RunProgress(report=reports.append))
    stages = load_bundle(run.path).calibration.stages
    assert stages and any("Season stages fitted on the reference parcels" in r for r in reports)
    # The L1C model on these L2A scenes is said, as a classification says it.
    assert any("The model was trained on L1C scenes but these are L2A" in r for r in reports), reports

    bundle = load_bundle(raw_model)
    ps = open_dataset(extract_to_dataset(str(tiny_region / "parcels.gpkg"), str(tiny_region / "scenes"),
                                         str(tiny_region / "weather.nc"), tmp_path / "ds",
                                         settings=ExtractionSettings(thermal=bundle_thermal_time(bundle)),
                                         fields=ParcelFields(label_field="crop")), mmap=False)
    ok = np.flatnonzero(ps.status == "ok")
    ps = ps.subset(ok)
    names = list(ps.classes)
    labels = np.array([bundle.classes.index(names[v]) if v >= 0 and names[v] in bundle.classes else -1
                       for v in ps.labels])
    rows_p, rows_y, rows_g, rows_n = [], [], [], []
    for t in range(ps.date_mask.shape[1]):
        cut = replace(ps, date_mask=ps.date_mask & (np.arange(ps.date_mask.shape[1]) <= t))
        seen = cut.date_mask.any(axis=1)
        p = bundle.predict(cut.subset(np.flatnonzero(seen)), calibrated=False)
        last = np.array([np.flatnonzero(m)[-1] for m in cut.date_mask[seen]])
        rows_p.append(p)
        rows_y.append(labels[seen])
        rows_g.append(cut.gdd[seen][np.arange(len(last)), last])
        rows_n.append(np.flatnonzero(seen))
    p, y, g, n = (np.concatenate(a) for a in (rows_p, rows_y, rows_g, rows_n))
    expected, low = [], -np.inf
    for bound in STAGE_BOUNDS:
        rows = np.flatnonzero((y >= 0) & (g >= low) & (g < bound))
        low = bound
        if len(rows) >= MIN_STAGE_ROWS:
            expected.append((bound, fit_temperature(p[rows], y[rows]), len(np.unique(n[rows]))))
    assert [(s.below_gdd, s.parcels) for s in stages] == [(b, k) for b, _, k in expected]
    for stage, (_, temperature, _) in zip(stages, expected):
        assert stage.temperature == pytest.approx(temperature, rel=1e-3)


def test_a_reference_selection_calibrates_on_the_selected_parcels_alone(tiny_region, raw_model, tmp_path):
    from thermocrop.core.classify import classify_parcels

    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    chosen = tuple(str(i) for i in layer["parcel_id"].iloc[:80])
    assert len(chosen) < len(layer)
    run = app.run_calibration(_request(tiny_region, tmp_path / "cal.tcm", raw_model,
                                       parcels={"selected_ids": chosen}))
    raw = classify_parcels(str(tiny_region / "parcels.gpkg"), str(tiny_region / "scenes"),
                           str(tiny_region / "weather.nc"), str(raw_model), selected_ids=list(chosen))
    classes = list(raw.classes)
    labels = np.array([classes.index(c) if c in classes else -1 for c in layer["crop"]])[raw.rows]
    keep = (raw.status == "ok") & (labels >= 0) & np.isin(raw.parcel_ids, chosen)
    assert run.calibration.parcels == keep.sum() >= 50
    assert run.calibration.temperature == pytest.approx(fit_temperature(raw.probabilities[keep], labels[keep]),
                                                        rel=1e-4)


def test_the_reference_layers_warnings_are_logged_once(tiny_region, raw_model, tmp_path, caplog):
    """The layer is read for its labels and again by the extraction; its warnings came twice."""
    import logging

    from shapely.geometry import Polygon

    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    broken = layer.iloc[:1].copy()
    broken["geometry"] = [Polygon()]
    broken["parcel_id"] = "empty-field"
    reference = tmp_path / "reference.gpkg"
    gpd.GeoDataFrame(pd.concat([layer, broken], ignore_index=True), crs=layer.crs).to_file(reference)
    request = replace(_request(tiny_region, tmp_path / "cal.tcm", raw_model), reference=ParcelsSpec(str(reference)))
    with caplog.at_level(logging.WARNING, logger="thermocrop"):
        app.run_calibration(request)
    said = [r for r in caplog.records if "unusable geometries" in r.getMessage()]
    assert len(said) == 1 and "1 parcels" in said[0].getMessage()


def test_quietly_leaves_out_the_warnings_of_its_own_thread_alone(caplog):
    import logging
    import threading

    from thermocrop.core.quiet_log import QUIET, quietly

    logger = logging.getLogger("thermocrop.test_quiet")
    logger.addFilter(QUIET)
    inside, outside = threading.Event(), threading.Event()

    def other():
        inside.wait(5)
        logger.warning("from another thread")
        outside.set()

    thread = threading.Thread(target=other)
    thread.start()
    with caplog.at_level(logging.WARNING, logger="thermocrop"), quietly():
        logger.warning("left out")
        logger.error("an error passes")
        inside.set()
        outside.wait(5)
    logger.warning("after")
    thread.join()
    logger.removeFilter(QUIET)
    assert [r.getMessage() for r in caplog.records] == ["an error passes", "from another thread", "after"]


def test_a_cancel_after_the_extraction_writes_no_model(tiny_region, raw_model, tmp_path, monkeypatch):
    """The fit and the season stages ran after the extraction without a cancel check, and the
    model was written while the dock said that none was."""
    from thermocrop.app import calibration_run
    from thermocrop.core.errors import CancelledError
    from thermocrop.core.progress import Progress

    extracted = []

    def opened_then_cancelled(*args, **kwargs):  # the user clicks Cancel as the extraction ends
        dataset = calibration_run.open_dataset.__wrapped__(*args, **kwargs)
        extracted.append(True)
        return dataset

    opened_then_cancelled.__wrapped__ = calibration_run.open_dataset
    monkeypatch.setattr(calibration_run, "open_dataset", opened_then_cancelled)
    out = tmp_path / "cal.tcm"
    with pytest.raises(CancelledError):
        app.run_calibration(_request(tiny_region, out, raw_model), app.RunProgress(Progress(cancelled=lambda: any(extracted))))
    assert extracted and not out.exists() and list(tmp_path.iterdir()) == []


def _moved(region, tmp_path, count):
    """The region's parcels with the first ``count`` moved 50 km east, out of the scenes."""
    from shapely import affinity

    layer = gpd.read_file(region / "parcels.gpkg")
    layer.loc[:count - 1, "geometry"] = [affinity.translate(g, 50_000, 0) for g in layer.geometry[:count]]
    path = tmp_path / f"moved{count}.gpkg"
    layer.to_file(path)
    return path, len(layer)


def test_reference_parcels_without_a_result_are_counted_once_and_said(tiny_region, raw_model, tmp_path):
    path, total = _moved(tiny_region, tmp_path, 20)
    reports = []
    request = replace(_request(tiny_region, tmp_path / "cal.tcm", raw_model), reference=ParcelsSpec(str(path)))
    run = app.run_calibration(request, app.RunProgress(report=reports.append))
    assert any("20 reference parcels of" in r and "have no result and are left out (outside_scenes 20)" in r
               for r in reports), reports
    assert run.calibration.parcels <= total - 20

    path, total = _moved(tiny_region, tmp_path, total - 40)
    request = replace(request, reference=ParcelsSpec(str(path)), out=str(tmp_path / "cal2.tcm"))
    with pytest.raises(InputError) as err:
        app.run_calibration(request)
    message = str(err.value)
    assert f"({total} given, 0 without a label the model knows, {total - 40} without a result)" in message, message
    assert "Check that the scenes cover the reference parcels" in message
    assert not (tmp_path / "cal2.tcm").exists()


def test_reference_parcels_of_one_class_are_refused(tiny_region, raw_model, tmp_path):
    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    layer["crop"] = "meadow"
    path = tmp_path / "meadow.gpkg"
    layer.to_file(path)
    request = replace(_request(tiny_region, tmp_path / "cal.tcm", raw_model), reference=ParcelsSpec(str(path)))
    with pytest.raises(InputError, match=r"labelled meadow; a calibration needs parcels of at least two classes"):
        app.run_calibration(request)
    assert not (tmp_path / "cal.tcm").exists()


def test_a_table_a_door_read_is_named_in_the_cores_messages():
    frame = gpd.GeoDataFrame({"parcel_id": ["a"]}, geometry=gpd.points_from_xy([0], [0]), crs=4326)
    ParcelsSpec(frame, name="my reference")
    assert frame.attrs["name"] == "my reference"
    named = gpd.GeoDataFrame(frame.copy())
    named.attrs["name"] = "kept"
    ParcelsSpec(named, name="other")
    assert named.attrs["name"] == "kept"


@pytest.mark.parametrize("selected, said", [((), "the selection holds no parcel"),
                                            (("nope", "gone"), r"none of the 2 selected parcel ids \(nope, gone\)")])
def test_a_selection_of_no_parcel_of_the_layer_is_refused_naming_it(tiny_region, raw_model, tmp_path, selected,
                                                                     said):
    request = _request(tiny_region, tmp_path / "cal.tcm", raw_model, parcels={"selected_ids": selected})
    with pytest.raises(InputError, match=said):
        app.run_calibration(request)
    assert not (tmp_path / "cal.tcm").exists()


def test_a_reference_season_that_ends_early_and_the_stages_it_leaves_out_are_reported(tiny_region, raw_model,
                                                                                       tmp_path):
    """Scenes up to spring only: the calibration written as the whole season's is fitted on spring
    predictions, and the later stages have no predictions. Both are said."""
    from thermocrop.core.model.season_stages import STAGE_BOUNDS

    scenes = sorted(p for p in (tiny_region / "scenes").iterdir() if p.suffix == ".tif")
    early = tmp_path / "early"
    early.mkdir()
    for path in scenes[:10]:
        (early / path.name).symlink_to(path)
    reports = []
    request = replace(_request(tiny_region, tmp_path / "cal.tcm", raw_model), scenes=ScenesSpec(files=(str(early),)))
    run = app.run_calibration(request, app.RunProgress(report=reports.append))
    stages = load_bundle(run.path).calibration.stages
    left_out = [b for b in STAGE_BOUNDS if b not in {s.below_gdd for s in stages}]
    assert left_out, "the scenes reach too far into the season for this test"
    said = " ".join(reports)
    assert "reaches only" in said and "whole-season runs will use it" in said, reports
    assert "were left out" in said and f"{left_out[-1]:,.0f}" in said, reports


def test_a_calibration_can_give_the_model_another_gdd_floor_and_fits_with_it(tiny_region, raw_model, tmp_path):
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.model.bundle import with_gdd_floor

    base = load_bundle(raw_model)
    assert base.config.gdd.get("floor", 0) > 0  # the shipped L1C model's
    args = [str(tiny_region / "parcels.gpkg"), str(tiny_region / "scenes"), str(tiny_region / "weather.nc")]
    kept = classify_parcels(*args, base)
    none = classify_parcels(*args, with_gdd_floor(base, 0))
    assert not np.allclose(none.probabilities, kept.probabilities, equal_nan=True)  # the floor matters here
    run = app.run_calibration(_request(tiny_region, tmp_path / "nofloor.tcm", raw_model, gdd_floor=0.0))
    written = load_bundle(run.path)
    assert "floor" not in written.config.gdd
    truth = gpd.read_file(tiny_region / "parcels.gpkg")["crop"].to_numpy()
    labels = np.array([list(none.classes).index(c) if c in none.classes else -1 for c in truth])[none.rows]
    keep = (none.status == "ok") & (labels >= 0)
    assert written.calibration.temperature == pytest.approx(fit_temperature(none.probabilities[keep], labels[keep]),
                                                            rel=1e-4)
    with pytest.raises(InputError, match="GDD floor -5 is outside"):
        app.run_calibration(_request(tiny_region, tmp_path / "bad.tcm", raw_model, gdd_floor=-5.0))
    assert not (tmp_path / "bad.tcm").exists()


def test_codes_the_class_map_leaves_out_are_left_out_not_counted_as_unknown(tiny_region, raw_model, tmp_path):
    """A class map that missed some of the layer's codes made their parcels true 'unknown', a class
    the model predicts: the calibration was fitted on wrong labels."""
    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    classes = sorted(set(layer["crop"]))
    missed = [c for c in classes if c not in ("meadow", "winter_wheat", "corn")]
    assert missed and layer["crop"].isin(missed).any()
    # Codes in place of names; the map names only three of them.
    layer["code"] = [f"C{classes.index(c)}" for c in layer["crop"]]
    path = tmp_path / "codes.gpkg"
    layer.to_file(path, driver="GPKG")
    class_map = tmp_path / "map.csv"
    class_map.write_text("code,class\n" + "".join(f"C{classes.index(c)},{c}\n"
                                                  for c in ("meadow", "winter_wheat", "corn")), encoding="utf-8")
    lines: list = []
    request = CalibrateRequest(reference=ParcelsSpec(str(path)), label_field="code", class_map=str(class_map),
                               scenes=ScenesSpec(files=(str(tiny_region / "scenes"),)),
                               weather=WeatherSpec(path=str(tiny_region / "weather.nc")), out=str(tmp_path / "c.tcm"),
                               model=str(raw_model))
    run = app.run_calibration(request, app.RunProgress(report=lines.append))
    left = int(layer["crop"].isin(missed).sum())
    assert "unknown" not in run.counts
    assert set(run.counts) <= {"meadow", "winter_wheat", "corn"}
    assert any(line.startswith(f"{left} parcels of ") and "or a code the class map does not map" in line
               for line in lines), lines
