"""Partitioned runs from the Toolbox: Classify parcels, Export training data and Growing degree
days per parcel with their advanced parameters (local workers, scheduler, run folder, resume),
against one-process runs of the same algorithms. Small files written here: 4 scenes of 60 x 60
px, 40 parcels, 5 per partition (8 partitions)."""

from __future__ import annotations

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

pytestmark = pytest.mark.qgis
gpd = pytest.importorskip("geopandas")

CRS = "EPSG:32631"
X0, Y0 = 500000.0, 4800000.0
CHUNK = 5
PARTITIONS = 8
ADVANCED = ("CHUNK_SIZE", "WORKERS", "SCHEDULER", "RUN_FOLDER", "RESUME")


@pytest.fixture(scope="module")
def region(tmp_path_factory) -> dict:
    from thermocrop.core.scenes.bands import S2_BANDS

    root = tmp_path_factory.mktemp("partitioned")
    rng = np.random.default_rng(5)
    for date in ("20230412", "20230524", "20230602", "20230720"):
        path = root / "scenes" / f"S2A_MSIL1C_{date}T100031_N0509_R122_T31TCJ_{date}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=60, height=60, count=10, dtype="uint16", crs=CRS,
                           transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1200, 5000, size=(10, 60, 60), dtype=np.uint16))
            for i, band in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, band)
    # 36 parcels on a 6 x 6 grid listed column by column (layer order is not strip order), one
    # outside the scenes, one smaller than a pixel, two long ones across the grid.
    geoms = [box(X0 + 100 * c + 12, Y0 - 100 * r - 88, X0 + 100 * c + 88, Y0 - 100 * r - 12)
             for c in range(6) for r in range(6)]
    geoms += [box(X0 - 900, Y0 + 100, X0 - 800, Y0 + 200), box(X0 + 301, Y0 - 309, X0 + 304, Y0 - 301),
              box(X0 + 20, Y0 - 590, X0 + 580, Y0 - 560), box(X0 + 560, Y0 - 580, X0 + 590, Y0 - 20)]
    crops = ["wheat", "maize", "barley"]
    gpd.GeoDataFrame({"parcel_id": [f"p{k:02d}" for k in range(len(geoms))],
                      "crop": [crops[k % 3] for k in range(len(geoms))]},
                     geometry=geoms, crs=CRS).to_file(root / "parcels.gpkg", driver="GPKG")
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-12-31"))
    temps = "".join(f"{d},{2 + 6 * np.sin(i / 58):.1f},{12 + 9 * np.sin(i / 58):.1f}\n" for i, d in enumerate(days))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + temps, encoding="utf-8")
    return {"scenes": str(root / "scenes"), "parcels": str(root / "parcels.gpkg"), "weather": str(root / "weather.csv")}


def recording(cancel_when=None):
    """A ``QgsProcessingFeedback`` keeping its log lines (``infos``) and progress (``percents``);
    ``cancel_when(percent)`` is asked at every progress change and cancels when it says True."""
    from qgis.core import QgsProcessingFeedback

    class Feedback(QgsProcessingFeedback):
        def pushInfo(self, info):  # noqa: N802 (QGIS API)
            self.infos.append(info)
            super().pushInfo(info)

    feedback = Feedback()
    feedback.infos, feedback.percents = [], []

    def changed(percent):
        feedback.percents.append(percent)
        if cancel_when is not None and not feedback.isCanceled() and cancel_when(percent):
            feedback.cancel()

    feedback.progressChanged.connect(changed)
    return feedback


def _run(alg: str, params: dict, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext

    return processing.run(alg, params, context=QgsProcessingContext(), feedback=feedback or recording())


def _classify(region, out, **advanced):
    params = {"INPUT": region["parcels"], "SCENE_FOLDER": region["scenes"], "WEATHER": region["weather"],
              "CHUNK_SIZE": CHUNK, "OUTPUT": str(out)}
    return {**params, **advanced}


def _labels(path) -> tuple[list, list, np.ndarray]:
    frame = gpd.read_file(path)
    return (frame["crop_pred"].fillna("").tolist(), frame["crop_status"].tolist(),
            frame["crop_conf"].to_numpy(dtype=float))


_PROVIDERS: list = []  # a Python provider must stay referenced while registered


@pytest.fixture(scope="module")
def one_process(region, tmp_path_factory, qgis_app):
    """The classification of one process (no advanced parameter given)."""
    from qgis.core import QgsApplication

    from thermocrop.plugin.provider import ThermoCropProvider

    registry = QgsApplication.processingRegistry()
    if registry.providerById("thermocrop") is None:
        _PROVIDERS.append(ThermoCropProvider())
        registry.addProvider(_PROVIDERS[-1])
    out = tmp_path_factory.mktemp("one") / "classified.gpkg"
    _run("thermocrop:classifyparcels", _classify(region, out))
    return _labels(out)


def assert_same_labels(got, expected):
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-5)  # NaN where not classified, in both
    assert expected[1].count("ok") >= 30  # most parcels are classified, so the labels are compared


def test_the_advanced_parameters_of_the_three_algorithms(provider):
    for name in ("classifyparcels", "exporttrainingdata", "parcelgdd"):
        algorithm = provider.algorithm(name)
        for key in ADVANCED:
            definition = algorithm.parameterDefinition(key)
            assert definition is not None, (name, key)
            assert definition.flags() & definition.FlagAdvanced, (name, key)
            assert definition.help()  # the dialog and qgis_process help say what it does
        assert algorithm.parameterDefinition("WORKERS").defaultValue() == 1
        assert algorithm.parameterDefinition("RESUME").defaultValue() is False
        assert algorithm.parameterDefinition("CHUNK_SIZE").defaultValue() == 20000


def test_classify_on_two_local_workers_equals_one_process(provider, region, one_process, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "classified.gpkg"
    feedback = recording()
    _run("thermocrop:classifyparcels", _classify(region, out, WORKERS=2), feedback)
    assert_same_labels(_labels(out), one_process)
    assert f"{PARTITIONS} partitions" in feedback.infos
    assert any(line.startswith(f"{PARTITIONS} partitions ({PARTITIONS} computed now") for line in feedback.infos)
    assert feedback.percents == sorted(feedback.percents) and feedback.percents[-1] == 100
    assert not (tmp_path / "classified.gpkg.parts").exists()  # removed once the output is written


def test_a_run_cancelled_after_its_first_partition_is_resumed(provider, region, one_process, tmp_path):
    """The run folder given, the partitions run here one after the other; the cancel comes as the
    first is written, and the user's file stays as it was until the resumed run replaces it."""
    from qgis.core import QgsProcessingException

    out = tmp_path / "classified.gpkg"
    gpd.GeoDataFrame({"note": ["the user's own file"]}, geometry=[box(0, 0, 1, 1)], crs=CRS).to_file(out)
    before = out.read_bytes()
    run_folder = tmp_path / "run"

    def written():
        return sorted(p.name for p in run_folder.glob("part-*.parquet")) if run_folder.is_dir() else []

    cancelling = recording(cancel_when=lambda percent: bool(written()))
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        _run("thermocrop:classifyparcels", _classify(region, out, RUN_FOLDER=str(run_folder)), cancelling)
    assert written() == ["part-00000.parquet"]
    assert out.read_bytes() == before
    assert any(str(run_folder) in line and "Resume" in line for line in cancelling.infos)

    # Without "Resume" the folder of the interrupted run is refused, and nothing is touched.
    with pytest.raises(QgsProcessingException, match="interrupted run"):
        _run("thermocrop:classifyparcels", _classify(region, out, RUN_FOLDER=str(run_folder)))
    assert written() == ["part-00000.parquet"] and out.read_bytes() == before

    resuming = recording()
    _run("thermocrop:classifyparcels", _classify(region, out, RUN_FOLDER=str(run_folder), RESUME=True), resuming)
    assert f"Resuming: 1 of {PARTITIONS} partitions already written" in resuming.infos
    assert_same_labels(_labels(out), one_process)
    assert not run_folder.exists()


@pytest.mark.parametrize("advanced, message", [
    ({"SCHEDULER": "http://10.0.0.5:8786"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "tcp://10.0.0.5"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "scheduler:99999"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "scheduler.example:8786", "WORKERS": 2}, "not both"),
    ({"RESUME": True}, "Resuming needs the run folder"),
])
def test_bad_cluster_choices_are_refused_before_the_run(provider, region, tmp_path, advanced, message):
    from qgis.core import QgsProcessingException

    for name, params in (("classifyparcels", _classify(region, "TEMPORARY_OUTPUT", **advanced)),
                         ("parcelgdd", {"INPUT": region["parcels"], "WEATHER": region["weather"],
                                        "DATES": "2023-06-01", "OUTPUT": "TEMPORARY_OUTPUT", **advanced})):
        with pytest.raises(QgsProcessingException, match=message):
            _run(f"thermocrop:{name}", params)
    assert list(tmp_path.iterdir()) == []


def test_gdd_and_training_data_in_partitions_equal_one_process(provider, region, tmp_path):
    from thermocrop.core.pixel_sets import open_dataset

    gdd = {"INPUT": region["parcels"], "WEATHER": region["weather"], "DATES": "2023-04-12, 2023-07-20",
           "CHUNK_SIZE": CHUNK}
    _run("thermocrop:parcelgdd", {**gdd, "OUTPUT": str(tmp_path / "gdd1.gpkg")})
    feedback = recording()
    _run("thermocrop:parcelgdd", {**gdd, "RUN_FOLDER": str(tmp_path / "gdd-run"),
                                  "OUTPUT": str(tmp_path / "gdd2.gpkg")}, feedback)
    assert f"{PARTITIONS} partitions" in feedback.infos
    one, parted = gpd.read_file(tmp_path / "gdd1.gpkg"), gpd.read_file(tmp_path / "gdd2.gpkg")
    for field in ("gdd_20230412", "gdd_20230720"):
        assert one[field].notna().sum() >= 38
        np.testing.assert_allclose(parted[field].to_numpy(dtype=float), one[field].to_numpy(dtype=float))
    assert not (tmp_path / "gdd-run").exists()

    extract = {"INPUT": region["parcels"], "LABEL_FIELD": "crop", "SCENE_FOLDER": region["scenes"],
               "WEATHER": region["weather"], "MAX_PIXELS": 8, "CHUNK_SIZE": CHUNK}
    first = _run("thermocrop:exporttrainingdata", {**extract, "OUTPUT": str(tmp_path / "one")})["OUTPUT"]
    second = _run("thermocrop:exporttrainingdata", {**extract, "RUN_FOLDER": str(tmp_path / "extract-run"),
                                                    "OUTPUT": str(tmp_path / "parted")})["OUTPUT"]
    a, b = open_dataset(first), open_dataset(second)
    assert a.parcel_ids.tolist() == b.parcel_ids.tolist() and a.status.tolist() == b.status.tolist()
    assert list(a.classes) == list(b.classes) and a.labels.tolist() == b.labels.tolist()
    np.testing.assert_array_equal(np.asarray(a.pixels), np.asarray(b.pixels))
    np.testing.assert_array_equal(np.asarray(a.gdd), np.asarray(b.gdd))
    assert (np.asarray(a.pixel_mask).sum()) > 0
    assert not (tmp_path / "extract-run").exists()
