"""Classification end to end on a tiny synthetic region, and the atomic OGR writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shapely.geometry import box

import thermocrop
from thermocrop.core.classify import ClassificationResult, write_classification
from thermocrop.core.errors import InputError, OutputError
from thermocrop.core.parcels import ParcelFields
from thermocrop.core.settings import PixelSampling

gpd = pytest.importorskip("geopandas")


@pytest.fixture
def layer(tmp_path) -> Path:
    gdf = gpd.GeoDataFrame(
        {"parcel_id": ["a", "b", "c"], "farmer": ["x", "y", "z"], "area_ha": [1.5, 2.0, 0.1]},
        geometry=[box(0, 0, 10, 10), box(20, 0, 30, 10), box(40, 0, 41, 1)],
        crs="EPSG:32632",
    )
    path = tmp_path / "parcels.gpkg"
    gdf.to_file(path, driver="GPKG")
    return path


def _result(rows=(0, 1, 2)) -> ClassificationResult:
    rows = np.asarray(rows)
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [np.nan] * 3], dtype=np.float32)[: len(rows)]
    return ClassificationResult(
        parcel_ids=np.array(["a", "b", "c"])[rows],
        labels=np.array(["corn", "meadow_x", ""])[: len(rows)],
        confidence=np.array([0.7, 0.6, np.nan], dtype=np.float32)[: len(rows)],
        probabilities=probs,
        status=np.array(["ok", "ok", "too_small"])[: len(rows)],
        classes=("corn", "meadow", "meadow_x"),
        rows=rows,
    )


@pytest.mark.parametrize("suffix", [".gpkg", ".shp", ".geojson"])
def test_writes_input_features_plus_fields_in_any_format(layer, tmp_path, suffix):
    (tmp_path / "out").mkdir()
    out = write_classification(layer, _result(), tmp_path / "out" / f"classified{suffix}")
    back = gpd.read_file(out)
    assert back["parcel_id"].tolist() == ["a", "b", "c"]
    assert back["farmer"].tolist() == ["x", "y", "z"]
    # Shapefile field names are cut to 10 characters.
    status_field = "crop_statu" if suffix == ".shp" else "crop_status"
    assert back["crop_pred"].tolist()[:2] == ["corn", "meadow_x"] and back["crop_pred"].isna().tolist()[2]
    assert back[status_field].tolist() == ["ok", "ok", "too_small"]
    np.testing.assert_allclose(back["crop_conf"].to_numpy()[:2], [0.7, 0.6], rtol=1e-6)
    assert np.isnan(back["crop_conf"].to_numpy()[2]) or back["crop_conf"].to_numpy()[2] is None
    assert back.geometry.iloc[1].equals(box(20, 0, 30, 10))
    assert back.crs.to_epsg() == 32632
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_unselected_features_are_marked(layer, tmp_path):
    result = _result(rows=(1,))
    out = write_classification(layer, result, tmp_path / "sel.gpkg", label_field="pred", conf_field="conf",
                               status_field="state")
    back = gpd.read_file(out)
    assert back["state"].tolist() == ["not_selected", "ok", "not_selected"]
    assert back["pred"].fillna("").tolist() == ["", "corn", ""]


def test_never_overwrites_input_or_existing_output_unless_asked(layer, tmp_path):
    before = layer.read_bytes()
    with pytest.raises(OutputError, match="is the input .* itself"):
        write_classification(layer, _result(), layer)
    assert layer.read_bytes() == before
    out = write_classification(layer, _result(), tmp_path / "x.gpkg")
    with pytest.raises(OutputError, match="already exists"):
        write_classification(layer, _result(), out)
    write_classification(layer, _result(), layer, overwrite=True)
    assert gpd.read_file(layer)["crop_pred"].fillna("").tolist() == ["corn", "meadow_x", ""]


def test_unknown_format_and_failed_write_leave_nothing(layer, tmp_path):
    with pytest.raises(OutputError, match="format"):
        write_classification(layer, _result(), tmp_path / "x.xyz")
    bad = _result()
    bad.rows = np.array([0, 1, 7])
    with pytest.raises(InputError, match="beyond"):
        write_classification(layer, bad, tmp_path / "y.gpkg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parcels.gpkg"]


def test_csv_output_keeps_the_geometry_as_wkt(layer, tmp_path):
    from shapely import wkt

    out = write_classification(layer, _result(), tmp_path / "classified.csv")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].split(",")[:2] == ["WKT", "parcel_id"]
    rows = [line for line in lines[1:] if line]
    assert len(rows) == 3
    geometry = wkt.loads(rows[1].split('"')[1])
    assert geometry.equals(box(20, 0, 30, 10)) and "meadow_x" in rows[1]


def _small_scene_region(root: Path, levels: tuple = ("L1C", "L1C")) -> tuple[Path, object]:
    """Two 40 x 40 px dates, five parcels (one outside), in UTM; parcels handed over in EPSG:3035.
    ``levels``: the processing level of each date's product (in its name, ``MSIL1C``/``MSIL2A``)."""
    import rasterio
    from rasterio.transform import from_origin

    from thermocrop.core.scenes.bands import S2_BANDS

    x0, y0 = 500000.0, 5300000.0
    rng = np.random.default_rng(2)
    for date, level in zip(("20230510", "20230712"), levels):
        path = root / "scenes" / f"S2A_MSI{level}_{date}T103031_N0509_R108_T32TMT_{date}T120000.tif"
        path.parent.mkdir(parents=True, exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=40, height=40, count=10, dtype="uint16",
                           crs="EPSG:32632", transform=from_origin(x0, y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1100, 6000, size=(10, 40, 40), dtype=np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    cells = [(2, 2), (2, 20), (20, 2), (20, 20), (200, 200)]
    parcels = gpd.GeoDataFrame(
        {"parcel_id": [f"p{i}" for i in range(len(cells))]},
        geometry=[box(x0 + 10 * c + 3, y0 - 10 * (r + 12) + 3, x0 + 10 * (c + 12) - 3, y0 - 10 * r - 3)
                  for r, c in cells],
        crs="EPSG:32632",
    ).to_crs("EPSG:3035")
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2024-01-01"))
    weather = root / "station.csv"
    weather.write_text("date,tmin,tmax\n" + "".join(f"{d},3.0,13.0\n" for d in days), encoding="utf-8")
    return weather, parcels


def test_classification_streams_in_chunks_reports_progress_and_stops_when_asked(tmp_path):
    pytest.importorskip("torch")
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.errors import CancelledError
    from thermocrop.core.extract import extract_pixel_sets
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, ModelBundle
    from thermocrop.core.model.networks import build_model
    from thermocrop.core.progress import Progress

    weather, parcels = _small_scene_region(tmp_path)
    scenes = tmp_path / "scenes"
    ps = extract_pixel_sets(parcels, scenes, weather)
    model = build_model("tpe_sinusoidal", len(CROP_CLASSES)).eval()
    bundle = ModelBundle(model, BundleConfig(classes=CROP_CLASSES, scaling=InputScaling.from_pixel_sets(ps)))

    reports: list[float] = []
    whole = classify_parcels(parcels, scenes, weather, bundle, chunk_size=100,
                             progress=Progress(report=reports.append))
    assert whole.status.tolist() == ["ok"] * 4 + ["outside_scenes"]
    assert reports == sorted(reports) and reports[-1] == 1.0 and len(reports) > 3
    np.testing.assert_allclose(whole.probabilities[:4].sum(axis=1), 1.0, rtol=1e-5)
    assert np.isnan(whole.probabilities[4]).all() and np.isnan(whole.confidence[4]) and whole.labels[4] == ""
    assert whole.labels[:4].tolist() == [CROP_CLASSES[k] for k in whole.probabilities[:4].argmax(axis=1)]
    # Two parcels per chunk: the same answers as all at once.
    chunked = classify_parcels(parcels, scenes, weather, bundle, chunk_size=2)
    np.testing.assert_allclose(chunked.probabilities, whole.probabilities, rtol=1e-5, equal_nan=True)
    assert chunked.status.tolist() == whole.status.tolist()
    # Each parcel covers 12 x 12 pixel centres: asking for more marks them too small.
    assert ps.pixel_mask[:4, 0].sum(axis=1).tolist() == [64] * 4
    strict = classify_parcels(parcels, scenes, weather, bundle, sampling=PixelSampling(min_pixels=145))
    assert strict.status.tolist() == ["too_small"] * 4 + ["outside_scenes"] and (strict.labels == "").all()
    loose = classify_parcels(parcels, scenes, weather, bundle, sampling=PixelSampling(min_pixels=144))
    assert loose.status.tolist()[:4] == ["ok"] * 4

    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 5

    with pytest.raises(CancelledError):
        classify_parcels(parcels, scenes, weather, bundle, chunk_size=2, progress=Progress(cancelled=cancelled))
    assert len(asked) == 6


def test_scenes_of_another_level_than_the_model_trained_on_are_warned_about(tmp_path):
    pytest.importorskip("torch")
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, ModelBundle
    from thermocrop.core.model.networks import build_model

    weather, parcels = _small_scene_region(tmp_path)  # L1C products (MSIL1C in their names)
    model = build_model("no_pe", len(CROP_CLASSES)).eval()
    warnings = {}
    for trained in (("L2A",), ("L1C",), ("L1C", "L2A"), ()):
        config = BundleConfig(variant="no_pe", classes=CROP_CLASSES, scaling=InputScaling(),
                              provenance={"scene_levels": list(trained)})
        said = classify_parcels(parcels, tmp_path / "scenes", weather, ModelBundle(model, config)).warnings
        # Two dates are also too few (few_dates); only the level warnings are compared here.
        assert any(w.startswith("Only 2 acquisition dates") for w in said)
        warnings[trained] = tuple(w for w in said if "reflectance differ" in w)
    assert len(warnings[("L2A",)]) == 1 and "trained on L2A scenes but these are L1C" in warnings[("L2A",)][0]
    assert warnings[("L1C",)] == warnings[("L1C", "L2A")] == warnings[()] == ()


def _train_in_test(ps, steps: int = 150, seed: int = 0):
    """A short direct training loop (Adam, cross-entropy) on all labelled, usable parcels."""
    import torch

    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, ModelBundle
    from thermocrop.core.model.networks import build_model

    torch.manual_seed(seed)
    keep = np.flatnonzero((ps.status == "ok") & (ps.labels >= 0))
    train = ps.subset(keep)
    scaling = InputScaling.from_pixel_sets(train)
    model = build_model("tpe_sinusoidal", len(CROP_CLASSES))
    x = torch.from_numpy(scaling.apply(np.asarray(train.pixels), np.asarray(train.pixel_mask)))
    pmask = torch.from_numpy(np.asarray(train.pixel_mask))
    dmask = torch.from_numpy(np.asarray(train.date_mask))
    dos = torch.from_numpy(np.broadcast_to(train.day_of_season, train.gdd.shape).copy())
    gdd = torch.from_numpy(np.asarray(train.gdd, dtype=np.float32))
    y = torch.from_numpy(train.labels.astype(np.int64))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        b = torch.randint(0, len(y), (32,), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x[b], pmask[b], dmask[b], dos[b], gdd[b]), y[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return ModelBundle(model, BundleConfig(variant="tpe_sinusoidal", classes=CROP_CLASSES, scaling=scaling))


@pytest.mark.slow
def test_classifying_an_unseen_synthetic_region_beats_chance(make_region, tmp_path):
    pytest.importorskip("thermocrop.core.thermal.gdd")
    pytest.importorskip("thermocrop.core.thermal.weather")
    pytest.importorskip("torch")
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.extract import extract_pixel_sets

    seen = make_region("FR2", "L2A", seed=0, parcels=100)
    unseen = make_region("FR2", "L2A", seed=1, parcels=100)
    ps = extract_pixel_sets(seen / "parcels.gpkg", seen / "scenes", seen / "weather.nc",
                            fields=ParcelFields(label_field="crop", classes=CROP_CLASSES))
    bundle = _train_in_test(ps)

    result = classify_parcels(unseen / "parcels.gpkg", unseen / "scenes", unseen / "weather.nc", bundle,
                              chunk_size=40)
    truth = gpd.read_file(unseen / "parcels.gpkg")["crop"].to_numpy().astype(str)
    assert set(result.status) <= {"ok", "outside_scenes", "too_small", "no_clear_date", "no_weather"}
    ok = result.status == "ok"
    assert ok.mean() > 0.9
    # Probabilities are distributions and the confidence is their maximum.
    np.testing.assert_allclose(result.probabilities[ok].sum(axis=1), 1.0, rtol=1e-4)
    np.testing.assert_allclose(result.confidence[ok], result.probabilities[ok].max(axis=1), rtol=1e-6)
    accuracy = float((result.labels[ok] == truth[ok]).mean())
    # Chance: always answering the most frequent class of the unseen region.
    _, counts = np.unique(truth[ok], return_counts=True)
    majority = counts.max() / counts.sum()
    assert accuracy > majority + 0.1, (accuracy, majority)


def test_few_dates_and_many_unknown_parcels_are_warned_about():
    from types import SimpleNamespace

    from thermocrop.core.classify import FEW_DATES, few_dates, unknown_share

    def scenes(n):
        return [SimpleNamespace(date=np.datetime64("2021-04-01") + 20 * i) for i in range(n)]

    warning = few_dates(scenes(2))
    assert warning.startswith("Only 2 acquisition dates (2021-04-01, 2021-04-21)")
    assert few_dates(scenes(FEW_DATES - 1)) is not None and few_dates(scenes(FEW_DATES)) is None
    # Two products of one date are one date.
    assert few_dates(scenes(FEW_DATES) + scenes(1)) is None and "Only 1 acquisition date " in few_dates(scenes(1) * 3)
    labels = np.array(["unknown"] * 159 + ["corn"] * 141 + [""] * 10)
    ok = labels != ""
    assert unknown_share(labels, ok).startswith("159 of 300 classified parcels came out 'unknown' (53 %)")
    assert unknown_share(np.array(["unknown"] * 74 + ["corn"] * 226), np.ones(300, bool)) is None
    assert unknown_share(np.array([""]), np.zeros(1, bool)) is None


def _level_warnings(warnings) -> list:
    return [w for w in warnings if "reflectance differ" in w]


@pytest.mark.parametrize("level", ["L1C", "L2A"])
def test_without_a_model_the_model_shipped_for_the_scenes_level_classifies_them(tmp_path, caplog, level):
    pytest.importorskip("torch")
    from thermocrop.core.classify import classify_parcels, prepare_classification
    from thermocrop.core.model.bundle import default_bundle_path, load_bundle

    weather, parcels = _small_scene_region(tmp_path, (level, level))
    shipped = default_bundle_path(level)
    other = default_bundle_path("L1C" if level == "L2A" else "L2A")
    with caplog.at_level("INFO", logger="thermocrop.core.model.shipped"):
        job = prepare_classification(parcels, tmp_path / "scenes", weather)
    assert job.model.config.checksum == load_bundle(shipped).config.checksum != load_bundle(other).config.checksum
    assert job.model.config.scene_level == level
    assert f"{level} scenes: using the shipped {level} model {shipped.name}" in caplog.text
    chosen = classify_parcels(parcels, tmp_path / "scenes", weather)
    assert _level_warnings(chosen.warnings) == []
    # The same probabilities as with that model given by its path, not those of the other level's model.
    given = classify_parcels(parcels, tmp_path / "scenes", weather, shipped)
    np.testing.assert_array_equal(chosen.probabilities, given.probabilities)
    ok = chosen.status == "ok"
    assert ok.sum() == 4
    assert not np.array_equal(chosen.probabilities[ok],
                              classify_parcels(parcels, tmp_path / "scenes", weather, other).probabilities[ok])


def test_a_model_given_is_used_whatever_the_scenes_level(tmp_path):
    pytest.importorskip("torch")
    from thermocrop.core.classify import prepare_classification
    from thermocrop.core.model.bundle import load_bundle

    weather, parcels = _small_scene_region(tmp_path, ("L2A", "L2A"))
    l1c = Path(thermocrop.__file__).parent / "resources" / "models" / "default.tcm"
    for given in (l1c, str(l1c), load_bundle(l1c)):
        job = prepare_classification(parcels, tmp_path / "scenes", weather, given)
        assert job.model.config.scene_level == "L1C"
        assert len(_level_warnings(job.warnings)) == 1 and "trained on L1C scenes but these are L2A" in job.warnings[0]


def test_scenes_of_both_levels_keep_the_l1c_model_and_its_warning(tmp_path, caplog):
    pytest.importorskip("torch")
    from thermocrop.core.classify import prepare_classification
    from thermocrop.core.model.bundle import default_bundle_path
    from thermocrop.core.scenes.local import find_scenes

    weather, parcels = _small_scene_region(tmp_path, ("L1C", "L2A"))
    # A folder of both levels gives its L2A products only; scenes found one by one keep both.
    scenes = [sc for path in sorted((tmp_path / "scenes").glob("*.tif")) for sc in find_scenes(path)]
    assert sorted(sc.level for sc in scenes) == ["L1C", "L2A"]
    with caplog.at_level("INFO", logger="thermocrop.core.model.shipped"):
        job = prepare_classification(parcels, scenes, weather)
    assert job.model.config.scene_level == "L1C"
    assert f"Scenes of levels L1C and L2A: using the shipped L1C model {default_bundle_path('L1C').name}" in caplog.text
    warned = _level_warnings(job.warnings)
    assert len(warned) == 1 and "trained on L1C scenes but these are L1C/L2A" in warned[0]


def test_a_folder_of_both_levels_keeps_the_given_models_level_and_says_what_it_left_out(tmp_path, caplog):
    """A folder of L1C scenes in May and L2A in July lost its May scenes with one vague warning,
    even with an L1C model given; the advice named a Python argument."""
    from thermocrop.core.scenes.local import find_scenes
    from thermocrop.core.scenes.product import one_level

    _small_scene_region(tmp_path, ("L1C", "L2A"))
    folder = tmp_path / "scenes"
    with caplog.at_level("WARNING", logger="thermocrop"):
        found = find_scenes(folder)
    assert [sc.level for sc in found] == ["L2A"]
    said = caplog.messages[-1]
    assert said.startswith("Both L1C and L2A products found; using the L2A ones (surface reflectance first): "
                           "1 L1C products left out, and with them every acquisition of 1 dates (2023-05-10).")
    assert "--level L1C" in said
    caplog.clear()
    with caplog.at_level("WARNING", logger="thermocrop"):
        kept = find_scenes(folder, prefer_level="L1C")
    assert [(sc.level, str(sc.date)) for sc in kept] == [("L1C", "2023-05-10")]
    assert "using the L1C ones (the level of the model given)" in caplog.messages[-1]
    assert "2023-07-12" in caplog.messages[-1] and "--level L2A" in caplog.messages[-1]
    # One level, or a level asked for: nothing left out, nothing said.
    products = [p for sc in kept for p in sc.products]
    assert one_level(products, None) == (products, None)
    caplog.clear()
    assert [sc.level for sc in find_scenes(folder, level="L1C", prefer_level="L2A")] == ["L1C"]
    assert not caplog.messages


def test_the_preflight_and_a_run_keep_the_level_of_the_model_given(tmp_path):
    pytest.importorskip("torch")
    from thermocrop import app
    from thermocrop.app import ClassifyRequest, ParcelsSpec
    from thermocrop.core.preflight import check_inputs

    weather, parcels = _small_scene_region(tmp_path, ("L1C", "L2A"))
    path = tmp_path / "parcels.gpkg"
    parcels.to_file(path, driver="GPKG")
    l1c = Path(thermocrop.__file__).parent / "resources" / "models" / "default_fast.tcm"
    checked = check_inputs(parcels=str(path), scenes=tmp_path / "scenes", weather=weather, bundle=str(l1c))
    assert [sc.level for sc in checked.scenes] == ["L1C"]
    shipped = check_inputs(parcels=str(path), scenes=tmp_path / "scenes", weather=weather, need_bundle=True)
    assert [sc.level for sc in shipped.scenes] == ["L2A"] and shipped.bundle.config.scene_level == "L2A"
    request = ClassifyRequest(parcels=ParcelsSpec(str(path)), scenes=app.ScenesSpec(files=(str(tmp_path / "scenes"),)),
                              weather=app.WeatherSpec(path=str(weather)), model=str(l1c))
    run = app.run_classification(request)
    assert [sc.level for sc in run.scenes] == ["L1C"]
    assert not any("trained on L1C scenes but these are" in w for w in run.result.warnings)
