"""Every ThermoCrop Processing algorithm through ``processing.run`` on small real files."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def _run(alg: str, params: dict):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    return processing.run(alg, params, context=QgsProcessingContext(), feedback=QgsProcessingFeedback())


@pytest.mark.slow
def test_classifyparcels_matches_core_and_saves_style(provider, tiny_region, scene_files, region_weather,
                                                      small_bundle, tmp_path):
    import geopandas as gpd
    from qgis.core import QgsCategorizedSymbolRenderer, QgsVectorLayer

    from thermocrop.core.classify import classify_parcels

    out = tmp_path / "classified.gpkg"
    result = _run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENES": scene_files, "WEATHER": str(region_weather),
        "MODEL": str(small_bundle), "OUTPUT": str(out)})
    assert result["OUTPUT"] == str(out)

    # Second route: core straight on the files, then compared parcel by parcel.
    core = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            str(small_bundle), id_field="parcel_id")
    back = gpd.read_file(out)
    source = gpd.read_file(tiny_region / "parcels.gpkg")
    assert len(back) == len(source)
    assert back["parcel_id"].tolist() == source["parcel_id"].tolist()
    expected = dict(zip(core.parcel_ids, core.labels))
    got = dict(zip(back["parcel_id"].astype(str), back["crop_pred"].fillna("")))
    assert got == expected
    np.testing.assert_allclose(back["crop_conf"].to_numpy(dtype=float), core.confidence, rtol=1e-4)
    assert set(back["crop_status"]) <= set(core.status)
    assert result["CLASSIFIED"] == int((core.status == "ok").sum())

    qml = out.with_suffix(".qml")
    assert qml.is_file() and "crop_pred" in qml.read_text()
    layer = QgsVectorLayer(str(out), "x", "ogr")
    layer.loadDefaultStyle()
    renderer = layer.renderer()
    assert isinstance(renderer, QgsCategorizedSymbolRenderer)
    assert renderer.classAttribute() == "crop_pred"
    from thermocrop.core.crops import NOT_CLASSIFIED_COLOUR, UNKNOWN_COLOUR, class_colours
    from thermocrop.core.model.bundle import load_bundle

    colours = {c.value(): c.symbol().color().name() for c in renderer.categories()}
    expected = class_colours(load_bundle(small_bundle).classes)
    assert colours == {**expected, "": NOT_CLASSIFIED_COLOUR}
    assert colours["unknown"] == UNKNOWN_COLOUR != NOT_CLASSIFIED_COLOUR
    assert "92,92,92,255" in qml.read_text() and "255,255,255,255" in qml.read_text()


def test_classifyparcels_refuses_missing_weather_with_a_message(provider, tiny_region, scene_files, tmp_path):
    from qgis.core import QgsProcessingException

    with pytest.raises(QgsProcessingException, match="temperature file"):
        _run("thermocrop:classifyparcels", {
            "INPUT": str(tiny_region / "parcels.gpkg"), "SCENES": scene_files,
            "WEATHER": str(tmp_path / "nowhere.nc"), "OUTPUT": str(tmp_path / "o.gpkg")})
    assert not (tmp_path / "o.gpkg").exists()


def _square_layer(path):
    import geopandas as gpd
    from shapely.geometry import box

    gdf = gpd.GeoDataFrame({"name": ["a", "b"]}, geometry=[box(0, 0, 100, 100), box(500, 0, 600, 100)],
                           crs="EPSG:32631")
    gdf.to_file(path, driver="GPKG")
    return path


def test_parcelgdd_by_hand(provider, tmp_path):
    import geopandas as gpd

    # tmin -4, tmax 16 every day: the paper method clips to 0 and 16 -> 8 per day; the
    # average method averages to 6 first -> 6 per day. The acquisition day counts.
    days = np.arange(np.datetime64("2020-12-01"), np.datetime64("2021-06-30"))
    csv = tmp_path / "station.csv"
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},-4,16\n" for d in days))
    parcels = _square_layer(tmp_path / "p.gpkg")
    for method, per_day in ((0, 8.0), (1, 6.0)):
        out = tmp_path / f"gdd{method}.gpkg"
        _run("thermocrop:parcelgdd", {"INPUT": str(parcels), "WEATHER": str(csv),
                                      "DATES": "2021-01-10, 2021-03-01", "METHOD": method, "OUTPUT": str(out)})
        back = gpd.read_file(out)
        assert back["name"].tolist() == ["a", "b"]
        np.testing.assert_allclose(back["gdd_20210110"], [10 * per_day] * 2)
        np.testing.assert_allclose(back["gdd_20210301"], [60 * per_day] * 2)


def test_parcelgdd_writes_an_earlier_runs_gdd_fields_empty(provider, tmp_path):
    """A layer that holds GDD of other dates from an earlier run: those fields come out empty (they
    would sit beside this run's, perhaps of another base, with nothing to tell them apart)."""
    import geopandas as gpd

    days = np.arange(np.datetime64("2020-12-01"), np.datetime64("2021-06-30"))
    csv = tmp_path / "station.csv"
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},-4,16\n" for d in days))
    first = tmp_path / "first.gpkg"
    _run("thermocrop:parcelgdd", {"INPUT": str(_square_layer(tmp_path / "p.gpkg")), "WEATHER": str(csv),
                                  "DATES": "2021-01-10, 2021-03-01", "OUTPUT": str(first)})
    again = tmp_path / "again.gpkg"
    _run("thermocrop:parcelgdd", {"INPUT": str(first), "WEATHER": str(csv), "DATES": "2021-03-01",
                                  "OUTPUT": str(again)})
    back = gpd.read_file(again)
    assert back["name"].tolist() == ["a", "b"] and back["gdd_20210110"].isna().all()
    np.testing.assert_allclose(back["gdd_20210301"], [60 * 8.0] * 2)


def test_parcelgdd_refuses_bad_dates(provider, tmp_path):
    from qgis.core import QgsProcessingException

    csv = tmp_path / "s.csv"
    csv.write_text("date,tmin,tmax\n2021-01-01,0,10\n")
    with pytest.raises(QgsProcessingException, match="YYYY-MM-DD"):
        _run("thermocrop:parcelgdd", {"INPUT": str(_square_layer(tmp_path / "p.gpkg")), "WEATHER": str(csv),
                                      "DATES": "tenth of may", "OUTPUT": str(tmp_path / "o.gpkg")})


@pytest.mark.slow
def test_exporttrainingdata_writes_a_dataset(provider, tiny_region, scene_files, region_weather, tmp_path):
    import geopandas as gpd

    from thermocrop.core.pixel_sets import open_dataset

    out = tmp_path / "dataset"
    result = _run("thermocrop:exporttrainingdata", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop", "SCENES": scene_files,
        "WEATHER": str(region_weather), "MAX_PIXELS": 8, "OUTPUT": str(out)})
    ps = open_dataset(result["OUTPUT"])
    source = gpd.read_file(tiny_region / "parcels.gpkg")
    assert len(ps.parcel_ids) == len(source)
    assert ps.pixels.shape[-1] == 8
    names = np.asarray(ps.classes, dtype=object)[ps.labels[ps.labels >= 0]]
    assert sorted(names) == sorted(source["crop"][ps.labels >= 0])


# French RPG codes of the synthetic region's crops (from the reference's France table).
RPG_CODES = {"corn": "MIE", "horsebeans": "FVL", "meadow": "PPH", "spring_barley": "ORP", "unknown": "VRC",
             "winter_barley": "ORH", "winter_rapeseed": "CZH", "winter_triticale": "TTH", "winter_wheat": "BTH"}


def test_trainmodel_writes_a_bundle(provider, tiny_region, scene_files, region_weather, tmp_path):
    pytest.importorskip("thermocrop.training.train")
    import geopandas as gpd

    from thermocrop.core.model.bundle import load_bundle
    from thermocrop.core.pixel_sets import open_dataset

    # The region's parcels labelled with RPG codes, one of them a code outside the table.
    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    layer["CODE_CULTU"] = [RPG_CODES[c] for c in layer["crop"]]
    layer.loc[0, "CODE_CULTU"] = "ZZZ"
    parcels = tmp_path / "rpg.gpkg"
    layer.drop(columns=["crop"]).to_file(parcels)
    data = tmp_path / "dataset"
    _run("thermocrop:exporttrainingdata", {
        "INPUT": str(parcels), "LABEL_FIELD": "CODE_CULTU", "CLASS_MAP": 1, "SCENES": scene_files,
        "WEATHER": str(region_weather), "MAX_PIXELS": 4, "OUTPUT": str(data)})
    ps = open_dataset(data)
    # The France table maps each code back to the crop name it came from; ZZZ is unknown.
    expected = ["unknown"] + list(layer["crop"][1:])
    assert ps.classes == tuple(sorted(set(expected)))
    assert [ps.classes[k] for k in ps.labels] == expected
    assert ps.meta["labels"]["unmapped_codes"] == {"ZZZ": 1}
    out = tmp_path / "m.tcm"
    _run("thermocrop:trainmodel", {"DATASETS": str(data), "VARIANT": 1, "EPOCHS": 1, "STEPS": 3, "BATCH_SIZE": 16,
                                   "DEVICE": 1, "CLASSES": "meadow, winter_wheat,corn", "OUTPUT": str(out)})
    bundle = load_bundle(out)
    assert bundle.config.variant == "tpe_sinusoidal"
    assert bundle.classes == ("meadow", "winter_wheat", "corn")


def test_exporttrainingdata_refuses_two_class_maps_and_a_bad_one(provider, tiny_region, scene_files,
                                                                 region_weather, tmp_path):
    from qgis.core import QgsProcessingException

    table = tmp_path / "map.csv"
    table.write_text("code,class\nMIE,corn\nmie,meadow\n")
    common = {"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop", "SCENES": scene_files,
              "WEATHER": str(region_weather), "OUTPUT": str(tmp_path / "d")}
    with pytest.raises(QgsProcessingException, match="either the france code table or the class map file"):
        _run("thermocrop:exporttrainingdata", {**common, "CLASS_MAP": 1, "CLASS_MAP_FILE": str(table)})
    with pytest.raises(QgsProcessingException, match="mapped to two classes"):
        _run("thermocrop:exporttrainingdata", {**common, "CLASS_MAP_FILE": str(table)})
    assert not (tmp_path / "d").exists()


@pytest.mark.slow
def test_qgis_process_classifies_headless_and_styles(tiny_region, scene_files, region_weather, small_bundle,
                                                     tmp_path):
    import geopandas as gpd

    from thermocrop.plugin.headless import run_algorithm

    out = tmp_path / "headless.gpkg"
    params = [("INPUT", str(tiny_region / "parcels.gpkg"))] + [("SCENES", f) for f in scene_files] + [
        ("WEATHER", str(region_weather)), ("MODEL", str(small_bundle)), ("LABEL_FIELD", "pred"),
        ("OUTPUT", str(out))]
    answer = run_algorithm("thermocrop:classifyparcels", params, tmp_path / "profile", timeout=600)
    assert answer["results"]["OUTPUT"] == str(out)
    back = gpd.read_file(out)
    assert len(back) == len(gpd.read_file(tiny_region / "parcels.gpkg"))
    ok = back["crop_status"] == "ok"
    assert ok.sum() == answer["results"]["CLASSIFIED"] > 0
    from thermocrop.core.crops import CROP_CLASSES

    assert back.loc[ok, "pred"].isin(CROP_CLASSES).all()
    assert back.loc[~ok, "pred"].isna().all()
    assert "pred" in out.with_suffix(".qml").read_text()


def test_parcelgdd_at_the_dates_of_a_scene_folder(provider, tiny_region, tmp_path):
    import re

    import geopandas as gpd

    days = np.arange(np.datetime64("2016-12-01"), np.datetime64("2018-01-31"))
    csv = tmp_path / "station.csv"
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},-4,16\n" for d in days))
    # Dates read from the product names by hand: ..._MSIL2A_YYYYMMDDT...
    stamps = {re.search(r"_MSIL2A_(\d{8})T", p.name).group(1) for p in (tiny_region / "scenes").glob("*.tif")}
    out = tmp_path / "gdd.gpkg"
    _run("thermocrop:parcelgdd", {"INPUT": str(_square_layer(tmp_path / "p.gpkg")), "WEATHER": str(csv),
                                  "SCENE_FOLDER": str(tiny_region / "scenes"), "OUTPUT": str(out)})
    back = gpd.read_file(out)
    assert {c[4:] for c in back.columns if c.startswith("gdd_")} == stamps
    for stamp in stamps:
        day = np.datetime64(f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:]}")
        day_of_year = int((day - np.datetime64("2017-01-01")).astype(int)) + 1
        np.testing.assert_allclose(back[f"gdd_{stamp}"], [8.0 * day_of_year] * 2)


def test_classifyparcels_needs_scenes(provider, tiny_region, region_weather, tmp_path):
    from qgis.core import QgsProcessingException

    with pytest.raises(QgsProcessingException, match="SCENE_FOLDER"):
        _run("thermocrop:classifyparcels", {"INPUT": str(tiny_region / "parcels.gpkg"),
                                            "WEATHER": str(region_weather), "OUTPUT": str(tmp_path / "o.gpkg")})


@pytest.mark.slow
def test_classifyparcels_styles_a_temporary_output(provider, tiny_region, region_weather, small_bundle):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProcessingUtils

    context = QgsProcessingContext()
    result = processing.run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
        "WEATHER": str(region_weather), "MODEL": str(small_bundle), "CONFIDENCE_FIELD": "p",
        "OUTPUT": "TEMPORARY_OUTPUT"}, context=context, feedback=QgsProcessingFeedback())
    layer = result["OUTPUT"]
    if isinstance(layer, str):
        layer = QgsProcessingUtils.mapLayerFromString(layer, context)
    import geopandas as gpd

    assert layer.featureCount() == len(gpd.read_file(tiny_region / "parcels.gpkg"))
    assert layer.renderer().type() == "categorizedSymbol"
    assert layer.renderer().classAttribute() == "crop_pred"
    assert "p" in layer.fields().names()
    values = [f["p"] for f in layer.getFeatures() if f["crop_status"] == "ok"]
    assert values and all(0 < v <= 1 for v in values)


def test_classifyparcels_parameters_and_defaults(provider):
    algorithm = provider.algorithm("classifyparcels")
    names = [p.name() for p in algorithm.parameterDefinitions()]
    assert names == ["INPUT", "SCENES", "SCENE_FOLDER", "STAC_ITEMS", "AUTH", "WEATHER", "WEATHER_SERVICE", "MODEL",
                     "LABEL_FIELD", "CONFIDENCE_FIELD", "STATUS_FIELD", "PROBABILITIES", "PREDICTION_SETS",
                     "COVERAGE", "AS_OF", "DECIDED", "DECIDED_THRESHOLD", "CLASS_SHARES", "CHUNK_SIZE", "WORKERS", "SCHEDULER",
                     "RUN_FOLDER", "RESUME", "OUTPUT"]
    definition = algorithm.parameterDefinition
    assert definition("LABEL_FIELD").defaultValue() == "crop_pred"
    assert definition("CONFIDENCE_FIELD").defaultValue() == "crop_conf"
    assert definition("PROBABILITIES").defaultValue() is False
    assert definition("PREDICTION_SETS").defaultValue() is True
    # The coverage takes the command line's default and range (core.limits).
    from thermocrop.core.limits import LIMITS

    assert definition("COVERAGE").defaultValue() == 0.9
    assert 0 < definition("COVERAGE").minimum() < 1e-6 and definition("COVERAGE").maximum() == LIMITS["coverage"].high
    assert definition("DECIDED").defaultValue() is False and definition("DECIDED_THRESHOLD").defaultValue() == 0.8
    optional = {p.name() for p in algorithm.parameterDefinitions()
                if p.flags() & p.FlagOptional}
    assert optional == {"SCENES", "SCENE_FOLDER", "STAC_ITEMS", "AUTH", "WEATHER", "MODEL", "AS_OF", "CLASS_SHARES", "SCHEDULER",
                        "RUN_FOLDER"}
    assert {o.name() for o in algorithm.outputDefinitions()} == {"OUTPUT", "CLASSIFIED"}


@pytest.mark.slow
def test_classifyparcels_stops_when_cancelled(provider, tiny_region, region_weather, tmp_path):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    feedback = QgsProcessingFeedback()
    seen = []

    def cancel_once_running(percent):
        if percent > 0 and not seen:
            seen.append(percent)
            feedback.cancel()

    feedback.progressChanged.connect(cancel_once_running)
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        processing.run("thermocrop:classifyparcels", {
            "INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
            "WEATHER": str(region_weather), "OUTPUT": str(tmp_path / "o.gpkg")},
            context=QgsProcessingContext(), feedback=feedback)
    assert seen and seen[0] < 95
    assert not (tmp_path / "o.gpkg").exists()


@pytest.fixture
def counted_work(monkeypatch):
    """The work of the runs in a test, counted as it is done: ``windows`` (scene windows read)
    and ``parcels`` (parcels through the classifier, call by call)."""
    pytest.importorskip("torch")
    import threading

    from torch.nn.modules.module import register_module_forward_hook

    from thermocrop.core.model.networks import CropClassifier
    from thermocrop.core.scenes.product import ProductReader

    work = {"windows": 0, "parcels": 0}
    lock = threading.Lock()  # scenes are read on several threads
    read = ProductReader.read

    def counting_read(self, window):
        values = read(self, window)
        with lock:
            work["windows"] += 1
        return values

    def counting_call(module, inputs, output):
        if isinstance(module, CropClassifier):
            work["parcels"] += len(inputs[0])

    monkeypatch.setattr(ProductReader, "read", counting_read)
    hook = register_module_forward_hook(counting_call)
    yield work
    hook.remove()


def _shown_once_done(calls: list, kind: str, amount: int) -> float:
    """The bar, as a fraction, at the first report made once ``amount`` of the work ``kind`` was
    done, from ``(percent, work done)`` reports."""
    return next(p for p, done in calls if done[kind] >= amount) / 100.0


@pytest.mark.slow
def test_classifyparcels_progress_follows_the_work_and_a_cancel_is_acknowledged(
        provider, tiny_region, region_weather, small_bundle, counted_work, tmp_path):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    from thermocrop.core.scenes.local import find_scenes

    work = counted_work

    class Recording(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.infos: list = []
            self.calls: list = []  # (percent, the work done when it was reported)
            self.progressChanged.connect(lambda p: self.calls.append((p, dict(work))))

        def pushInfo(self, info):  # noqa: N802 (QGIS API)
            self.infos.append(info)
            super().pushInfo(info)

    out = tmp_path / "classified.gpkg"
    params = {"INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
              "WEATHER": str(region_weather), "MODEL": str(small_bundle), "OUTPUT": str(out)}
    first = Recording()
    processing.run("thermocrop:classifyparcels", params, context=QgsProcessingContext(), feedback=first)
    percents = [p for p, _ in first.calls]
    assert percents == sorted(percents) and percents[-1] == 100 and len(percents) > 20
    windows, parcels = work["windows"], work["parcels"]
    assert windows >= len(find_scenes(tiny_region / "scenes")) and parcels > 50  # a window or more per date
    # The bar follows the work done, whatever the clock says (on a busy machine any stretch
    # between two reports may stall): the scene reading and the model each move it over a fair
    # part, the reading window by window up to where the model starts, then the model parcel
    # by parcel.
    at_model = max(p for p, done in first.calls if done["parcels"] == 0) / 100.0
    assert 0.2 <= at_model <= 0.8
    assert 0.2 * at_model < _shown_once_done(first.calls, "windows", windows / 2) < 0.8 * at_model
    modelled = _shown_once_done(first.calls, "parcels", parcels) - at_model
    assert 0.2 * modelled < _shown_once_done(first.calls, "parcels", parcels / 2) - at_model < 0.8 * modelled

    # Again into the same output, cancelled once the model has run on some parcels: the log
    # says so at once, the run stops before the next model call, and the output and the parcels
    # stay as they were.
    output_before, parcels_before = out.read_bytes(), (tiny_region / "parcels.gpkg").read_bytes()
    work.update(windows=0, parcels=0)
    second = Recording()
    said_at_once = []

    def cancel_in_the_model(percent):
        if work["parcels"] and not said_at_once:
            second.cancel()
            said_at_once.extend([second.infos[-1], len(second.calls), work["parcels"]])

    second.progressChanged.connect(cancel_in_the_model)
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        processing.run("thermocrop:classifyparcels", params, context=QgsProcessingContext(), feedback=second)
    assert said_at_once[0] == "Cancelling…" and said_at_once[2] < parcels
    assert len(second.calls) == said_at_once[1]  # no progress after the cancel: nothing more was done
    assert work["parcels"] == said_at_once[2]  # nor any model call
    assert out.read_bytes() == output_before and (tiny_region / "parcels.gpkg").read_bytes() == parcels_before


@pytest.mark.slow
def test_dock_task_cancel_is_acknowledged_and_writes_nothing(qgis_app, tiny_region, region_weather, small_bundle,
                                                             tmp_path):
    import geopandas as gpd
    from qgis.core import QgsApplication

    from thermocrop.plugin.task import ClassificationParameters, ClassificationTask

    frame = gpd.read_file(tiny_region / "parcels.gpkg")
    out = tmp_path / "new.gpkg"
    task = ClassificationTask(ClassificationParameters(
        parcels=frame, fids=list(range(len(frame))), scenes=[str(tiny_region / "scenes")],
        weather=str(region_weather), model=str(small_bundle), output=str(out)), on_done=None)
    logged: list = []
    QgsApplication.messageLog().messageReceived.connect(lambda message, tag, level: logged.append(message))
    percents: list = []
    acknowledged = []

    def cancel_half_way(percent):
        percents.append(percent)
        if percent > 50 and not acknowledged:
            task.cancel()
            acknowledged.append(any("cancelling" in m for m in logged))

    task.progressChanged.connect(cancel_half_way)
    assert task.run() is False and task.cancelled and task.error is None
    assert acknowledged == [True]
    assert percents == sorted(percents) and percents[-1] < 100
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_classifyparcels_writes_prediction_sets_of_the_calibrated_model(provider, tiny_region, scene_files,
                                                                        region_weather, set_bundle, tmp_path):
    from qgis.core import QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.model.bundle import load_bundle

    out = tmp_path / "sets.gpkg"
    _run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENES": scene_files, "WEATHER": str(region_weather),
        "MODEL": str(set_bundle), "COVERAGE": 0.8, "OUTPUT": str(out)})
    layer = QgsVectorLayer(str(out), "sets", "ogr")
    fields = layer.fields()
    assert fields.field("crop_set").type() == QVariant.String
    assert fields.field("crop_set_size").type() in (QVariant.Int, QVariant.LongLong)

    # By hand: the calibration's 99 scores hold 79 zeros, so q, the ceil((99 + 1) * 0.8) = 80th
    # smallest, is 0.9: a set is every class of probability 0.1 or more, and the most probable.
    core = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            str(set_bundle), id_field="parcel_id")
    assert sorted(load_bundle(set_bundle).calibration.scores)[79] == 0.9
    q = 0.9
    got = {str(f["parcel_id"]): (f["crop_set"], f["crop_set_size"]) for f in layer.getFeatures()}
    sizes = []
    for pid, status, probs in zip(core.parcel_ids, core.status, core.probabilities):
        if status != "ok":
            assert got[pid][1] is None or str(got[pid][1]) == "NULL"
            continue
        order = np.argsort(-probs, kind="stable")
        members = [core.classes[k] for k in order if probs[k] >= 1 - q - 1e-9 or k == order[0]]
        assert got[pid] == ("|".join(members), len(members))
        sizes.append(len(members))
    assert max(sizes) > 1  # some parcel is in doubt at 80 %

    # No sets asked: no set fields.
    _run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENES": scene_files, "WEATHER": str(region_weather),
        "MODEL": str(set_bundle), "PREDICTION_SETS": False, "OUTPUT": str(tmp_path / "none.gpkg")})
    assert "crop_set" not in QgsVectorLayer(str(tmp_path / "none.gpkg"), "none", "ogr").fields().names()


@pytest.mark.parametrize("geometry", [None, "POLYGON EMPTY"], ids=["no geometry", "empty geometry"])
def test_parcelgdd_refuses_features_without_a_geometry_for_a_flatgeobuf_output(provider, tmp_path, geometry):
    """GDAL's FlatGeobuf writer drops features without a geometry: the Toolbox refuses them before
    any work, naming the first one, as the command line does; a GeoPackage output keeps them."""
    import geopandas as gpd
    from qgis.core import QgsProcessingException
    from shapely import wkt
    from shapely.geometry import box

    frame = gpd.GeoDataFrame({"name": ["a", "b", "c"]},
                             geometry=[box(0, 0, 100, 100), geometry and wkt.loads(geometry), box(500, 0, 600, 100)],
                             crs="EPSG:32631")
    parcels = tmp_path / "p.gpkg"
    frame.to_file(parcels, driver="GPKG")
    csv = tmp_path / "station.csv"
    days = np.arange(np.datetime64("2021-01-01"), np.datetime64("2021-03-01"))
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},0,10\n" for d in days))
    params = {"INPUT": str(parcels), "WEATHER": str(csv), "DATES": "2021-02-01"}

    out = tmp_path / "gdd.fgb"
    said = r"The parcel layer p has features without a geometry \(the first at feature id 2\)"
    with pytest.raises(QgsProcessingException, match=said) as caught:
        _run("thermocrop:parcelgdd", {**params, "OUTPUT": str(out)})
    assert "disk may be full" not in str(caught.value) and "GeoPackage (.gpkg)" in str(caught.value)
    assert not out.exists() and not list(tmp_path.glob("*.fgb*"))

    kept = tmp_path / "gdd.gpkg"
    _run("thermocrop:parcelgdd", {**params, "OUTPUT": str(kept)})
    assert gpd.read_file(kept)["name"].tolist() == ["a", "b", "c"]


@pytest.mark.slow
def test_every_field_name_a_shapefile_shortens_is_reported(provider, tiny_region, scene_files, region_weather,
                                                          small_bundle, tmp_path, log_feedback):
    import processing
    from qgis.core import QgsProcessingContext

    feedback = log_feedback()
    processing.run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENES": scene_files, "WEATHER": str(region_weather),
        "MODEL": str(small_bundle), "PROBABILITIES": True, "OUTPUT": str(tmp_path / "out.shp")},
        context=QgsProcessingContext(), feedback=feedback)
    said = next(line for line in feedback.lines if line.startswith("Field names as stored in this format"))
    for shortened in ("crop_status -> crop_statu", "crop_margin -> crop_margi", "crop_entropy -> crop_entro"):
        assert shortened in said
    assert "crop_pred ->" not in said  # kept whole
