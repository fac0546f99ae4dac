"""A GeoParquet parcel layer through the Toolbox: QGIS 3.22's GDAL cannot open it, so the
algorithms read it with ThermoCrop's own reader and write their output with ThermoCrop's writers,
and give what they give for the same parcels in a GeoPackage."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def _run(alg: str, params: dict):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    return processing.run(alg, params, context=QgsProcessingContext(), feedback=QgsProcessingFeedback())


@pytest.fixture()
def parquet_parcels(tiny_region, tmp_path):
    """The tiny region's parcels as GeoParquet in row groups of 30 (several per layer)."""
    import geopandas as gpd

    path = tmp_path / "parcels.parquet"
    gpd.read_file(tiny_region / "parcels.gpkg").to_parquet(path, row_group_size=30)
    return path


def test_qgis_cannot_open_the_geoparquet_layer_itself(qgis_app, parquet_parcels):
    """Why the algorithms read it themselves (if a later QGIS opens it, this path is still right,
    only no longer needed)."""
    from qgis.core import QgsVectorLayer

    assert not QgsVectorLayer(str(parquet_parcels), "p", "ogr").isValid()


@pytest.mark.slow
def test_classifyparcels_of_a_geoparquet_layer_equals_its_geopackage(provider, tiny_region, scene_files,
                                                                     region_weather, small_bundle,
                                                                     parquet_parcels, tmp_path):
    import geopandas as gpd

    from thermocrop.core.classify import classify_parcels

    common = {"SCENES": scene_files, "WEATHER": str(region_weather), "MODEL": str(small_bundle)}
    core = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            str(small_bundle), id_field="parcel_id")
    expected = dict(zip(core.parcel_ids, core.labels))
    conf = dict(zip(core.parcel_ids, core.confidence))
    source = gpd.read_file(tiny_region / "parcels.gpkg")
    for name in ("classified.gpkg", "classified.parquet", "classified.fgb"):
        out = tmp_path / name
        result = _run("thermocrop:classifyparcels", {"INPUT": str(parquet_parcels), "OUTPUT": str(out), **common})
        assert result["OUTPUT"].split("|")[0] == str(out)
        assert result["CLASSIFIED"] == int((core.status == "ok").sum())
        back = gpd.read_parquet(out) if out.suffix == ".parquet" else gpd.read_file(out)
        assert sorted(back["parcel_id"].astype(str)) == sorted(source["parcel_id"].astype(str))
        got = dict(zip(back["parcel_id"].astype(str), back["crop_pred"].fillna("")))
        assert got == expected, name
        np.testing.assert_allclose([c for c in back["crop_conf"].to_numpy(dtype=float)],
                                   [conf[p] for p in back["parcel_id"].astype(str)], rtol=1e-4)
        assert back.crs == source.crs
    assert (tmp_path / "classified.qml").is_file()  # styled like an output written through QGIS


def test_classifyparcels_refuses_an_unreadable_geoparquet_layer_before_any_work(provider, scene_files,
                                                                                region_weather, small_bundle,
                                                                                tmp_path):
    from qgis.core import QgsProcessingException

    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not a parquet file")
    out = tmp_path / "o.gpkg"
    with pytest.raises(QgsProcessingException, match="broken.parquet"):
        _run("thermocrop:classifyparcels", {"INPUT": str(broken), "SCENES": scene_files,
                                            "WEATHER": str(region_weather), "MODEL": str(small_bundle),
                                            "OUTPUT": str(out)})
    assert not out.exists()


def test_parcelgdd_of_a_geoparquet_layer_equals_its_geopackage(provider, tiny_region, parquet_parcels, tmp_path):
    import geopandas as gpd

    days = np.arange(np.datetime64("2017-01-01"), np.datetime64("2017-08-01"))
    csv = tmp_path / "station.csv"
    rng = np.random.default_rng(0)
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},{lo:.1f},{lo + 9:.1f}\n"
                                                for d, lo in zip(days, rng.uniform(-5, 15, len(days)))))
    params = {"WEATHER": str(csv), "DATES": "2017-03-01, 2017-06-15"}
    frames = {}
    for source, suffix in ((tiny_region / "parcels.gpkg", ".gpkg"), (parquet_parcels, ".gpkg"),
                           (parquet_parcels, ".parquet"), (parquet_parcels, ".fgb")):
        out = tmp_path / f"gdd-{source.suffix[1:]}{suffix}"
        _run("thermocrop:parcelgdd", {"INPUT": str(source), "OUTPUT": str(out), **params})
        frames[(source.suffix, suffix)] = gpd.read_parquet(out) if suffix == ".parquet" else gpd.read_file(out)
    reference = frames[(".gpkg", ".gpkg")].set_index("parcel_id")
    assert reference["gdd_20170301"].notna().all() and (reference["gdd_20170615"] > reference["gdd_20170301"]).all()
    for key, frame in frames.items():
        frame = frame.set_index("parcel_id").loc[reference.index]
        for column in ("gdd_20170301", "gdd_20170615"):
            np.testing.assert_allclose(frame[column], reference[column], rtol=1e-6, err_msg=str(key))


@pytest.mark.slow
def test_exporttrainingdata_of_a_geoparquet_layer_equals_its_geopackage(provider, tiny_region, scene_files,
                                                                        region_weather, parquet_parcels, tmp_path):
    import geopandas as gpd

    from thermocrop.core.pixel_sets import open_dataset

    sets = []
    for source in (tiny_region / "parcels.gpkg", parquet_parcels):
        out = tmp_path / f"dataset-{source.suffix[1:]}"
        result = _run("thermocrop:exporttrainingdata", {
            "INPUT": str(source), "LABEL_FIELD": "crop", "SCENES": scene_files, "WEATHER": str(region_weather),
            "MAX_PIXELS": 8, "OUTPUT": str(out)})
        sets.append(open_dataset(result["OUTPUT"]))
    a, b = sets
    # A QGIS layer's parcels are named by feature id; the GeoParquet file's by its parcel_id field,
    # as the command line names them. The parcels are the same, in the same order.
    assert list(a.parcel_ids) == [str(i) for i in range(1, len(a.parcel_ids) + 1)]
    assert list(b.parcel_ids) == gpd.read_file(tiny_region / "parcels.gpkg")["parcel_id"].astype(str).tolist()
    assert a.classes == b.classes
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(np.asarray(a.pixels), np.asarray(b.pixels))


def test_a_geoparquet_output_of_a_qgis_layer_is_refused_before_any_work(provider, tiny_region, tmp_path):
    """QGIS 3.22's writer cannot make GeoParquet: a run from a QGIS layer used to end, after its
    work, in "cannot be read back after writing ... the disk may be full"."""
    from qgis.core import QgsProcessingException

    csv = tmp_path / "station.csv"
    days = np.arange(np.datetime64("2017-01-01"), np.datetime64("2017-04-01"))
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},0,10\n" for d in days))
    out = tmp_path / "gdd.parquet"
    with pytest.raises(QgsProcessingException, match="QGIS 3.22 cannot write GeoParquet") as caught:
        _run("thermocrop:parcelgdd", {"INPUT": str(tiny_region / "parcels.gpkg"), "WEATHER": str(csv),
                                      "DATES": "2017-03-01", "OUTPUT": str(out)})
    assert "disk may be full" not in str(caught.value) and "GeoPackage (.gpkg)" in str(caught.value)
    assert not out.exists()


def test_qgis_process_reads_a_geoparquet_layer_headless(tiny_region, parquet_parcels, tmp_path):
    import geopandas as gpd

    from thermocrop.plugin.headless import run_algorithm

    csv = tmp_path / "station.csv"
    days = np.arange(np.datetime64("2017-01-01"), np.datetime64("2017-04-01"))
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},-4,16\n" for d in days))
    out = tmp_path / "gdd.fgb"
    params = [("INPUT", str(parquet_parcels)), ("WEATHER", str(csv)), ("DATES", "2017-03-01"), ("OUTPUT", str(out))]
    answer = run_algorithm("thermocrop:parcelgdd", params, tmp_path / "profile", timeout=600)
    assert answer["results"]["OUTPUT"] == str(out)
    back = gpd.read_file(out)
    # -4 / 16 every day: clipped to 0 and 16, 8 GDD a day; 1 March is day 60, counted.
    assert sorted(back["parcel_id"]) == sorted(gpd.read_parquet(parquet_parcels)["parcel_id"])
    np.testing.assert_allclose(back["gdd_20170301"], 8.0 * 60)


def test_an_algorithm_that_needs_a_qgis_layer_says_so_for_a_geoparquet_file(provider, parquet_parcels, tmp_path):
    """Not "Could not load source layer for INPUT: ... not found" for a file that is there."""
    from qgis.core import QgsProcessingException

    with pytest.raises(QgsProcessingException, match="QGIS 3.22 cannot open the GeoParquet file") as caught:
        _run("thermocrop:accuracyassessment", {"INPUT": str(parquet_parcels), "PREDICTED_FIELD": "crop",
                                               "REFERENCE_FIELD": "crop", "OUTPUT_HTML": str(tmp_path / "a.html")})
    assert "Accuracy assessment" in str(caught.value) and str(parquet_parcels) in str(caught.value)
    assert not (tmp_path / "a.html").exists()


@pytest.mark.slow
def test_a_partitioned_toolbox_run_of_a_geoparquet_layer_equals_one_process(provider, tiny_region, scene_files,
                                                                              region_weather, small_bundle,
                                                                              parquet_parcels, tmp_path):
    """Two local workers, partitions of 40 parcels: the output is written from the run folder as the
    partitions finish, and equals a one-process run's."""
    import geopandas as gpd

    common = {"INPUT": str(parquet_parcels), "SCENES": scene_files, "WEATHER": str(region_weather),
              "MODEL": str(small_bundle)}
    _run("thermocrop:classifyparcels", {**common, "OUTPUT": str(tmp_path / "one.gpkg")})
    run_folder = tmp_path / "run"
    result = _run("thermocrop:classifyparcels", {**common, "WORKERS": 2, "CHUNK_SIZE": 40,
                                                 "RUN_FOLDER": str(run_folder), "OUTPUT": str(tmp_path / "parts.gpkg")})
    one, parts = (gpd.read_file(tmp_path / name).set_index("parcel_id") for name in ("one.gpkg", "parts.gpkg"))
    assert result["CLASSIFIED"] == int((one["crop_status"] == "ok").sum()) > 0
    assert parts.index.tolist() == one.index.tolist()
    assert parts["crop_pred"].fillna("").tolist() == one["crop_pred"].fillna("").tolist()
    np.testing.assert_allclose(parts["crop_conf"].to_numpy(dtype=float), one["crop_conf"].to_numpy(dtype=float),
                               rtol=1e-5)
    assert not run_folder.exists()  # removed once the output is published


def test_a_temporary_output_of_a_geoparquet_layer_is_a_geopackage_loaded_on_completion(provider, parquet_parcels,
                                                                                         tmp_path):
    import geopandas as gpd
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProcessingOutputLayerDefinition, QgsProject

    csv = tmp_path / "station.csv"
    days = np.arange(np.datetime64("2017-01-01"), np.datetime64("2017-04-01"))
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},0,10\n" for d in days))
    params = {"INPUT": str(parquet_parcels), "WEATHER": str(csv), "DATES": "2017-03-01"}
    loaded = {}
    for name, destination in (("temporary", "TEMPORARY_OUTPUT"), ("parquet", str(tmp_path / "gdd.parquet"))):
        context = QgsProcessingContext()
        context.setProject(QgsProject.instance())
        output = QgsProcessingOutputLayerDefinition(destination, QgsProject.instance())
        result = processing.run("thermocrop:parcelgdd", {**params, "OUTPUT": output}, context=context,
                                feedback=QgsProcessingFeedback())
        loaded[name] = (result["OUTPUT"], list(context.layersToLoadOnCompletion()))
    path, registered = loaded["temporary"]
    assert path.endswith(".gpkg") and registered == [path]  # not the "memory:" layer QGIS named
    assert len(gpd.read_file(path)) == len(gpd.read_parquet(parquet_parcels))
    assert loaded["parquet"] == (str(tmp_path / "gdd.parquet"), [])  # QGIS cannot open it


def test_a_cancelled_run_of_a_geoparquet_layer_writes_nothing(provider, tiny_region, scene_files, region_weather,
                                                               small_bundle, parquet_parcels, tmp_path):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    feedback = QgsProcessingFeedback()
    said = []

    def cancel_once_running(percent):  # the first move of the bar: the scenes are being read
        said.append(percent)
        feedback.cancel()

    feedback.progressChanged.connect(cancel_once_running)
    out = tmp_path / "classified.gpkg"
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        processing.run("thermocrop:classifyparcels", {
            "INPUT": str(parquet_parcels), "SCENES": scene_files, "WEATHER": str(region_weather),
            "MODEL": str(small_bundle), "OUTPUT": str(out)}, context=QgsProcessingContext(), feedback=feedback)
    assert said and not out.exists() and not list(tmp_path.glob("classified*"))


@pytest.mark.slow
def test_a_geoparquet_run_logs_what_a_layer_run_logs(provider, tiny_region, scene_files, region_weather,
                                                     calibrated_small_bundle, parquet_parcels, tmp_path,
                                                     log_feedback):
    """The model, the parcels and scenes found, the count per status and the prediction sets'
    size: the same lines for the layer's GeoParquet file as for its GeoPackage."""
    import processing
    from qgis.core import QgsProcessingContext

    def logged(source, out):
        feedback = log_feedback()
        processing.run("thermocrop:classifyparcels", {
            "INPUT": str(source), "SCENES": scene_files, "WEATHER": str(region_weather),
            "MODEL": str(calibrated_small_bundle), "PREDICTION_SETS": True, "OUTPUT": str(out)},
            context=QgsProcessingContext(), feedback=feedback)
        return [line for line in feedback.lines
                if line.startswith(("Model:", "Prediction sets", "  ")) or " parcels, " in line]

    from_layer = logged(tiny_region / "parcels.gpkg", tmp_path / "from_layer.gpkg")
    from_file = logged(parquet_parcels, tmp_path / "from_file.gpkg")
    n = len(__import__("geopandas").read_file(tiny_region / "parcels.gpkg"))
    assert any(line.startswith(f"{n} parcels, ") for line in from_layer)
    assert any(line.startswith("Model: ") for line in from_layer)
    assert any(line.startswith("Prediction sets for 90 % coverage") for line in from_layer)
    assert from_file == from_layer


@pytest.mark.slow
def test_an_earlier_runs_sets_are_emptied_in_the_toolbox_output(provider, tiny_region, scene_files,
                                                               region_weather, small_bundle, tmp_path):
    """A layer that holds an earlier run's sets and decision dates, classified again without
    them (a layer and its GeoParquet file): those fields come out empty, the user's own kept."""
    import geopandas as gpd

    frame = gpd.read_file(tiny_region / "parcels.gpkg")
    frame["crop_set"], frame["crop_set_size"], frame["crop_decided"] = "corn|meadow", 2, "2017-05-26"
    frame["note"] = "mine"
    frame.to_file(tmp_path / "earlier.gpkg")
    frame.to_parquet(tmp_path / "earlier.parquet")
    for source in ("earlier.gpkg", "earlier.parquet"):
        out = tmp_path / f"again_{source.split('.')[1]}.gpkg"
        _run("thermocrop:classifyparcels", {"INPUT": str(tmp_path / source), "SCENES": scene_files,
                                            "WEATHER": str(region_weather), "MODEL": str(small_bundle),
                                            "OUTPUT": str(out)})
        back = gpd.read_file(out)
        assert back["crop_pred"].notna().any(), source
        assert back[["crop_set", "crop_set_size", "crop_decided"]].isna().all().all(), source
        assert (back["note"] == "mine").all(), source


@pytest.mark.slow
def test_a_geoparquet_output_is_not_opened_through_qgis_after_the_run(provider, tiny_region, scene_files,
                                                                       region_weather, small_bundle,
                                                                       parquet_parcels, tmp_path):
    """Styling the output once written tried every QGIS provider on a file none can open: GDAL's
    "not recognized as a supported file format" four times and "Unable to load mesh" in the log."""
    import geopandas as gpd
    from osgeo import gdal

    said = []
    gdal.PushErrorHandler(lambda _class, _number, message: said.append(message))
    try:
        out = tmp_path / "classified.parquet"
        _run("thermocrop:classifyparcels", {"INPUT": str(parquet_parcels), "OUTPUT": str(out),
                                            "SCENES": scene_files, "WEATHER": str(region_weather),
                                            "MODEL": str(small_bundle)})
    finally:
        gdal.PopErrorHandler()
    assert len(gpd.read_parquet(out)) == len(gpd.read_parquet(parquet_parcels))
    assert not [m for m in said if "classified.parquet" in m], said
    assert not (tmp_path / "classified.qml").exists()
