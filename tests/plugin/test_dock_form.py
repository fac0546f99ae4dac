"""The Classify form as a value: read from the Classify tab's widgets alone (no dock), frozen, and
checked in the order the form reads, each problem named."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = pytest.mark.qgis


@pytest.fixture(autouse=True)
def fresh_settings(qgis_app):
    from qgis.core import QgsSettings

    QgsSettings().remove("thermocrop/dock")
    yield
    QgsSettings().remove("thermocrop/dock")


def _write_parcels(folder, driver: str, suffix: str):
    """Two square parcels written to ``folder/fields<suffix>`` by OGR, opened as a project layer."""
    from qgis.core import (
        QgsCoordinateTransformContext,
        QgsFeature,
        QgsGeometry,
        QgsProject,
        QgsVectorFileWriter,
        QgsVectorLayer,
    )

    memory = QgsVectorLayer("Polygon?crs=EPSG:32631&field=crop:string", "fields", "memory")
    features = []
    for i, crop in enumerate(("winter_wheat", "corn")):
        feature = QgsFeature(memory.fields())
        x = 500000 + 200 * i
        feature.setGeometry(QgsGeometry.fromWkt(f"POLYGON(({x} 4800000, {x + 100} 4800000, {x + 100} 4800100, "
                                                f"{x} 4800100, {x} 4800000))"))
        feature.setAttributes([crop])
        features.append(feature)
    memory.dataProvider().addFeatures(features)
    path = folder / f"fields{suffix}"
    options = QgsVectorFileWriter.SaveVectorOptions()
    options.driverName = driver
    error = QgsVectorFileWriter.writeAsVectorFormatV3(memory, str(path), QgsCoordinateTransformContext(), options)
    assert error[0] == QgsVectorFileWriter.NoError, error
    layer = QgsVectorLayer(str(path), f"fields{suffix}", "ogr")
    assert layer.isValid() and layer.featureCount() == 2
    QgsProject.instance().addMapLayer(layer)
    return layer


@pytest.fixture
def project_layers(qgis_app):
    from qgis.core import QgsProject

    yield
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def inputs(qgis_app):
    """The Classify tab's widgets alone, their hints collected in ``inputs.said``."""
    from thermocrop.plugin.dock.input_widgets import ClassifyInputs

    said = []
    widget = ClassifyInputs(lambda text, level=None: said.append((text, level)))
    widget.said = said
    yield widget
    widget.catalog.shutdown()
    widget.deleteLater()


def test_the_form_reads_the_widgets_into_a_frozen_value(inputs, project_layers, tmp_path):
    from thermocrop.plugin.dock.form import ClassifyForm, read_form

    layer = _write_parcels(tmp_path, "GPKG", ".gpkg")
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    weather = tmp_path / "tmean.nc"
    weather.write_bytes(b"")
    inputs.layer_combo.setLayer(layer)
    inputs.add_scene_paths([str(scenes)])
    inputs.weather.setFilePath(str(weather))
    inputs.label_field.setText(" my_class ")
    inputs.probabilities.setChecked(True)

    form = read_form(inputs)
    assert isinstance(form, ClassifyForm)
    assert form.layer is layer and not form.selected_only and not form.from_catalog
    assert form.scenes == (str(scenes),)
    assert form.weather == str(weather) and form.weather_service == ""
    assert form.model is None  # empty: the shipped model
    assert form.field_names == ("my_class", "crop_conf", "crop_status")  # stripped as typed
    assert form.field_kinds() == {"my_class": "string", "crop_conf": "real", "crop_status": "string"}
    assert form.probabilities is True
    # A new layer file by default: the parcel file's name with _classified, beside it.
    assert form.output == str(tmp_path / "fields_classified.gpkg")
    assert form.problem() is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        form.weather = "elsewhere.nc"

    # A weather service replaces the file; the fields of the parcel layer replace the new file.
    inputs.set_weather_service("open-meteo")
    inputs.in_place.setChecked(True)
    form = read_form(inputs)
    assert (form.weather, form.weather_service, form.output) == ("", "open-meteo", None)
    assert form.problem() is None
    chosen = tmp_path / "out" / "result.fgb"
    inputs.to_new_file.setChecked(True)
    inputs.output_file.setFilePath(str(chosen))
    assert read_form(inputs).output == str(chosen)
    assert inputs.said == []  # reading and checking the form says nothing by itself


def test_the_checks_name_the_first_problem_in_the_order_of_the_form(inputs, project_layers, tmp_path):
    from thermocrop.plugin.dock.form import read_form

    def problem():
        return read_form(inputs).problem()

    assert problem() == "Choose a parcel layer."
    layer = _write_parcels(tmp_path, "GPKG", ".gpkg")
    inputs.layer_combo.setLayer(layer)
    inputs.selected_only.setChecked(True)
    assert problem() == ("No feature of fields.gpkg is selected; select parcels or untick 'Selected features "
                         "only'.")
    layer.selectByIds([next(layer.getFeatures()).id()])
    assert problem() == "Tick or add at least one Sentinel-2 scene."
    inputs.add_scene_paths([str(tmp_path / "scenes")])  # the form lists it; the preflight finds it missing
    assert problem() == "Choose a daily temperature file, or a weather service under 'Weather'."
    inputs.set_weather_service("cds:e-obs")
    inputs.status_field.setText("crop_pred")
    assert problem() == "The class, confidence and status fields need three different names."
    inputs.status_field.setText("  ")
    assert problem() == "The class, confidence and status fields need three different names."
    inputs.status_field.setText("crop_status")
    assert problem() is None


def test_the_output_checks_follow_the_layer_format(inputs, project_layers, tmp_path):
    from qgis.core import QgsProject, QgsVectorLayer

    from thermocrop.plugin.dock.form import read_form

    memory = QgsVectorLayer("Polygon?crs=EPSG:32631", "sketch", "memory")
    QgsProject.instance().addMapLayer(memory)
    inputs.layer_combo.setLayer(memory)
    inputs.add_scene_paths([str(tmp_path)])
    inputs.set_weather_service("open-meteo")
    form = read_form(inputs)
    # No file beside a memory layer: the new file must be chosen.
    assert form.output == ""
    assert form.problem() == "sketch is not a file layer; choose the new layer file."

    # A shapefile keeps 10 characters of a field name, and has no room for the probability fields.
    shapefile = _write_parcels(tmp_path, "ESRI Shapefile", ".shp")
    inputs.layer_combo.setLayer(shapefile)
    inputs.in_place.setChecked(True)
    inputs.conf_field.setText("crop_confidence")
    assert read_form(inputs).problem() == (
        "Cannot write into fields.shp: crop_confidence is longer than a shapefile field name may be (10 "
        "characters); crop_status is longer than a shapefile field name may be (10 characters). Choose other "
        "field names or a new layer file.")
    inputs.conf_field.setText("crop_conf")
    inputs.status_field.setText("crop_state")  # ten characters fit
    assert read_form(inputs).problem() is None
    inputs.probabilities.setChecked(True)
    assert "the probability fields (p_<class>, crop_margin, crop_entropy) do not fit" in read_form(inputs).problem()
    shapefile.setReadOnly(True)
    assert read_form(inputs).problem() == "fields.shp is read-only; choose 'New layer file' to write the result."


def test_the_highest_coverage_the_box_offers_is_accepted_and_shown_as_it_runs(inputs):
    """With two decimals Qt showed and returned the maximum 0.999 as 1.00, which no set can have."""
    from thermocrop.app import ResultFields
    from thermocrop.core.limits import LIMITS

    inputs.prediction_sets.setChecked(True)
    inputs.coverage.setValue(inputs.coverage.maximum())
    inputs.coverage.stepUp()
    highest = inputs.set_coverage()
    assert highest == pytest.approx(inputs.coverage.maximum()) and highest < 1.0
    assert LIMITS["coverage"].problem(highest) is None
    assert ResultFields(coverage=highest).coverage == highest
    assert inputs.coverage.text() == f"{highest:.2f}"  # what the user sees is what runs


def test_class_shares_with_a_partitioned_run_are_named_before_the_run(inputs, project_layers, tmp_path):
    from thermocrop.plugin.dock.form import read_form

    layer = _write_parcels(tmp_path, "GPKG", ".gpkg")
    (tmp_path / "scenes").mkdir()
    (tmp_path / "tmean.nc").write_bytes(b"")
    (tmp_path / "shares.csv").write_text("class,share\ncorn,1\n", encoding="utf-8")
    inputs.layer_combo.setLayer(layer)
    inputs.add_scene_paths([str(tmp_path / "scenes")])
    inputs.weather.setFilePath(str(tmp_path / "tmean.nc"))
    inputs.class_shares.setFilePath(str(tmp_path / "shares.csv"))
    assert read_form(inputs).class_shares == str(tmp_path / "shares.csv") and read_form(inputs).problem() is None
    inputs.decided.setChecked(True)
    assert read_form(inputs).problem() is None
    inputs.cluster.workers.setValue(2)
    assert read_form(inputs).problem().startswith("Class shares need every parcel at once")
