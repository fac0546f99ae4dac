"""Toolbox input checks: a layer without a usable CRS and numbers out of range are refused by the
parameter check, before anything runs; the ranges are those of the command line."""

from __future__ import annotations

import pytest
from shapely.geometry import box

pytestmark = pytest.mark.qgis

X0, Y0 = 600000.0, 5400000.0


def _check(alg_id: str, params: dict):
    from qgis.core import QgsApplication, QgsProcessingContext

    alg = QgsApplication.processingRegistry().createAlgorithmById(alg_id)
    return alg.checkParameterValues(params, QgsProcessingContext())


@pytest.mark.parametrize("alg_id", ["thermocrop:classifyparcels", "thermocrop:parcelgdd",
                                    "thermocrop:exporttrainingdata"])
def test_a_geopackage_with_srs_id_0_is_refused_by_the_parameter_check(provider, tmp_path, alg_id):
    import geopandas as gpd

    layer = tmp_path / "nocrs.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a"], "crop": ["corn"]}, geometry=[box(X0, Y0 - 50, X0 + 50, Y0)],
                     crs=None).to_file(layer)
    weather = tmp_path / "w.csv"
    weather.write_text("date,tmin,tmax\n2021-01-01,1,2\n", encoding="utf-8")
    params = {"INPUT": str(layer), "WEATHER": str(weather), "SCENE_FOLDER": str(tmp_path),
              "DATES": "2021-01-01", "LABEL_FIELD": "crop", "OUTPUT": str(tmp_path / "out")}
    ok, message = _check(alg_id, params)
    assert not ok and "undefined coordinate reference system" in message


def test_toolbox_number_ranges_are_the_command_lines(provider):
    from qgis.core import QgsApplication

    from thermocrop.core.limits import LIMITS

    registry = QgsApplication.processingRegistry()
    pairs = {("thermocrop:exporttrainingdata", "MAX_PIXELS"): "max_pixels",
             ("thermocrop:parcelgdd", "T_BASE"): "t_base", ("thermocrop:parcelgdd", "T_CAP"): "t_cap",
             ("thermocrop:trainmodel", "EPOCHS"): "epochs", ("thermocrop:trainmodel", "STEPS"): "steps_per_epoch",
             ("thermocrop:trainmodel", "BATCH_SIZE"): "batch_size"}
    for (alg_id, name), limit in pairs.items():
        parameter = registry.algorithmById(alg_id).parameterDefinition(name)
        assert (parameter.minimum(), parameter.maximum()) == (LIMITS[limit].low, LIMITS[limit].high)
