"""Class shares through every door: the command line, the Toolbox and the dock's form, on the
tiny synthetic region; the expectation is computed from a plain run's probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from thermocrop import app
from thermocrop.app import ClassifyRequest, ParcelsSpec
from thermocrop.cli.main import main
from thermocrop.core.class_shares import match_class_shares

gpd = pytest.importorskip("geopandas")

SHARES = {"meadow": 20, "corn": 30, "winter_wheat": 25, "unknown": 5, "winter_barley": 10, "spring_barley": 10}


def _shares_file(folder: Path) -> Path:
    path = folder / "shares.csv"
    path.write_text("class,share\n" + "".join(f"{k},{v}\n" for k, v in SHARES.items()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def plain(tiny_region):
    """The region classified without shares: its probabilities and classes by parcel id."""
    request = ClassifyRequest(parcels=ParcelsSpec(str(tiny_region / "parcels.gpkg")),
                              scenes=app.ScenesSpec(files=(str(tiny_region / "scenes"),)),
                              weather=app.WeatherSpec(path=str(tiny_region / "weather.nc")))
    return app.run_classification(request).result


def _expected(plain, shares_path: Path):
    """Labels and confidences by parcel id, from the plain run's probabilities and the shares as
    the file gives them (each at least the floor, summing to 1)."""
    from thermocrop.core.class_shares import read_class_shares

    shares = read_class_shares(shares_path, plain.classes)
    raw = np.array([SHARES.get(c, 0) for c in plain.classes], dtype=float)
    raw = np.maximum(raw / raw.sum(), 1e-3)
    np.testing.assert_allclose(shares, raw / raw.sum())
    q = match_class_shares(plain.probabilities, shares)
    ok = plain.status == "ok"
    best = np.nan_to_num(q, nan=-1).argmax(axis=1)
    labels = {pid: plain.classes[b] for pid, b, o in zip(plain.parcel_ids, best, ok) if o}
    conf = {pid: float(q[i, best[i]]) for i, pid in enumerate(plain.parcel_ids) if ok[i]}
    return labels, conf


def test_the_command_line_brings_the_labels_to_the_class_shares(tiny_region, plain, tmp_path, capsys):
    shares = _shares_file(tmp_path)
    out = tmp_path / "shared.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--out", str(out), "--class-shares", str(shares)]) == 0
    assert f"Probabilities brought to the class shares of {shares}." in capsys.readouterr().out
    written = gpd.read_file(out)
    labels, conf = _expected(plain, shares)
    ok = written[written["crop_status"] == "ok"]
    assert dict(zip(ok["parcel_id"].astype(str), ok["crop_pred"])) == labels
    np.testing.assert_allclose(ok["crop_conf"], [conf[str(p)] for p in ok["parcel_id"]], rtol=1e-5)
    before = dict(zip(plain.parcel_ids, plain.labels))
    assert sum(labels[p] != before[p] for p in labels) > 0  # the shares changed some labels
    # Every set holds its parcel's label.
    assert all(label in s.split("|") for label, s in zip(ok["crop_pred"], ok["crop_set"]))


def test_a_bad_file_or_a_partitioned_run_is_refused_before_any_pixel_is_read(tiny_region, tmp_path, capsys):
    shares = _shares_file(tmp_path)
    base = ["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
            "--weather", str(tiny_region / "weather.nc"), "--out", str(tmp_path / "x.gpkg")]
    bad = tmp_path / "bad.csv"
    bad.write_text("class,share\nmaize,3\n", encoding="utf-8")
    assert main([*base, "--class-shares", str(bad)]) != 0
    assert f"Class shares file {bad}, line 2: the model has no class 'maize'" in capsys.readouterr().err
    assert main([*base, "--class-shares", str(shares), "--run-folder", str(tmp_path / "run")]) != 0
    assert "partitioned run" in capsys.readouterr().err
    assert not (tmp_path / "x.gpkg").exists()


def test_decisions_with_class_shares_follow_each_dates_map_brought_to_the_shares(tiny_region, tmp_path):
    """Each date's map is brought to the shares over the parcels seen then, and a label is decided
    from the first date after which the adjusted label holds with the adjusted confidence."""
    from thermocrop.core.class_shares import read_class_shares
    from thermocrop.core.classify import bundle_thermal_time
    from thermocrop.core.extract import extract_pixel_sets
    from thermocrop.core.inseason import decided_index
    from thermocrop.core.model.bundle import default_bundle_path, load_bundle
    from thermocrop.core.settings import ExtractionSettings

    shares_path = _shares_file(tmp_path)
    out = tmp_path / "decided.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--out", str(out), "--class-shares", str(shares_path),
                 "--decided", "--decided-threshold", "0.6"]) == 0
    written = gpd.read_file(out)
    bundle = load_bundle(default_bundle_path("L2A"))
    parcels = gpd.read_file(tiny_region / "parcels.gpkg")
    ps = extract_pixel_sets(parcels, tiny_region / "scenes", tiny_region / "weather.nc",
                            settings=ExtractionSettings(thermal=bundle_thermal_time(bundle)))
    ok = np.flatnonzero(ps.status == "ok")
    prefixes = bundle.predict_prefixes(ps.subset(ok))
    shares = read_class_shares(shares_path, bundle.classes)
    adjusted = np.stack([match_class_shares(prefixes[:, t], shares) for t in range(prefixes.shape[1])], axis=1)
    index = decided_index(adjusted, 0.6)
    dates = np.asarray(ps.dates, dtype="datetime64[D]")
    expected = {str(ps.parcel_ids[i]): (bundle.classes[int(np.nanargmax(adjusted[j, -1]))],
                                        str(dates[index[j]]) if index[j] >= 0 else None)
                for j, i in enumerate(ok)}
    got = {str(r.parcel_id): (r.crop_pred, r.crop_decided if isinstance(r.crop_decided, str) else None)
           for r in written.itertuples() if r.crop_status == "ok"}
    assert got == expected
    assert sum(d is not None for _, d in got.values()) > 10
@pytest.mark.qgis
def test_the_toolbox_takes_class_shares(provider, tiny_region, plain, tmp_path):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    shares = _shares_file(tmp_path)
    out = tmp_path / "toolbox.gpkg"
    processing.run("thermocrop:classifyparcels",
                   {"INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
                    "WEATHER": str(tiny_region / "weather.nc"), "CLASS_SHARES": str(shares), "OUTPUT": str(out)},
                   context=QgsProcessingContext(), feedback=QgsProcessingFeedback())
    written = gpd.read_file(out)
    labels, _ = _expected(plain, shares)
    ok = written[written["crop_status"] == "ok"]
    assert dict(zip(ok["parcel_id"].astype(str), ok["crop_pred"])) == labels


@pytest.mark.qgis
def test_the_dock_form_carries_class_shares_to_the_request(qgis_app, tmp_path):
    from qgis.core import QgsSettings

    from thermocrop.plugin.dock.form import read_form
    from thermocrop.plugin.dock.input_widgets import ClassifyInputs
    from thermocrop.plugin.task import ClassificationParameters, classification_request

    QgsSettings().remove("thermocrop/dock")
    shares = _shares_file(tmp_path)
    inputs = ClassifyInputs(lambda text, level=None: None)
    try:
        inputs.class_shares.setFilePath(str(shares))
        form = read_form(inputs)
        assert form.class_shares == str(shares)
        request = classification_request(ClassificationParameters(None, [], [], "w.nc", class_shares=form.class_shares))
        assert request.class_shares == str(shares)
    finally:
        inputs.catalog.shutdown()
        inputs.deleteLater()
        QgsSettings().remove("thermocrop/dock")
