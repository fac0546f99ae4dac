"""The accuracy report's reliability table, diagram and expected calibration error, against numbers
worked out by hand."""

from __future__ import annotations

import base64
import math
import re

import geopandas as gpd
import pytest
from shapely.geometry import box

from thermocrop.core.accuracy import assess_layer, report_html
from thermocrop.core.accuracy_stats import reliability
from thermocrop.core.errors import InputError


def _layer():
    mapped = ["wheat", "wheat", "wheat", "wheat", "corn", "corn", "corn", "corn", "wheat", "corn"]
    reference = ["wheat", "wheat", "corn", "wheat", "corn", "wheat", "corn", "corn", None, "corn"]
    confidence = [0.95, 0.92, 0.85, 0.55, 0.58, 0.31, 0.99, 1.0, 0.7, None]
    return gpd.GeoDataFrame({"crop_pred": mapped, "truth": reference, "crop_conf": confidence},
                            geometry=[box(i, 0, i + 1, 1) for i in range(10)], crs="EPSG:32631")


def test_reliability_of_a_layer_by_hand():
    report = assess_layer(_layer(), "crop_pred", "truth", weighting="none", confidence_field="crop_conf")
    table = report.reliability
    # The sample: the 9 units with a reference; the last has no confidence, so 8 units.
    # Right or wrong: 0.95 T, 0.92 T, 0.85 F, 0.55 T, 0.58 T, 0.31 F, 0.99 T, 1.0 T.
    assert table.units == 8
    by_bin = {round(row["low"], 1): row for row in table.bins if row["parcels"]}
    assert sorted(by_bin) == [0.3, 0.5, 0.8, 0.9]
    assert by_bin[0.9]["parcels"] == 4 and by_bin[0.9]["confidence"] == pytest.approx(3.86 / 4)
    assert by_bin[0.9]["accuracy"] == 1.0
    assert (by_bin[0.8]["parcels"], by_bin[0.8]["accuracy"]) == (1, 0.0)
    assert by_bin[0.5]["confidence"] == pytest.approx(0.565) and by_bin[0.5]["accuracy"] == 1.0
    assert (by_bin[0.3]["parcels"], by_bin[0.3]["accuracy"]) == (1, 0.0)
    empty = [row for row in table.bins if not row["parcels"]]
    assert len(empty) == 6 and all(math.isnan(row["accuracy"]) for row in empty)
    # ECE = (4 * 0.035 + 1 * 0.85 + 2 * 0.435 + 1 * 0.31) / 8
    assert table.ece == pytest.approx(2.17 / 8)
    assert any("no confidence" in w for w in report.warnings)
    assert report.as_dict()["reliability"]["ece"] == pytest.approx(0.27125)

    page = report_html(report)
    assert "Expected calibration error (10 bins): <b>0.271</b>" in page
    png = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    assert png is not None and base64.b64decode(png.group(1)).startswith(b"\x89PNG")


def test_no_confidence_field_no_reliability_and_a_missing_one_is_named():
    report = assess_layer(_layer(), "crop_pred", "truth", weighting="none")
    assert report.reliability is None and "Reliability" not in report_html(report)
    with pytest.raises(InputError, match="'score' for the confidence"):
        assess_layer(_layer(), "crop_pred", "truth", weighting="none", confidence_field="score")


def test_a_confidence_of_one_is_in_the_last_bin_and_nothing_gives_zero():
    table = reliability([1.0, 0.05], [True, False])
    assert table.bins[-1]["parcels"] == 1 and table.bins[0]["parcels"] == 1
    assert table.ece == pytest.approx((0.0 + 0.05) / 2)
    assert reliability([], []).ece == 0.0 and reliability([], []).units == 0


def test_the_command_line_gives_the_same_reliability(tmp_path, capsys):
    import json

    from thermocrop.cli.main import main

    _layer().to_file(tmp_path / "classified.gpkg")
    assert main(["accuracy", "--layer", str(tmp_path / "classified.gpkg"), "--reference", "truth", "--confidence",
                 "crop_conf", "--weighting", "none", "--html", str(tmp_path / "r.html"), "--json",
                 str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["reliability"]["ece"] == pytest.approx(0.27125)
    assert "expected calibration error (10 bins) 0.2712 over 8 units" in capsys.readouterr().out


@pytest.mark.parametrize("values, words", [
    (["wheat"] * 10, "not numbers"),                         # the class field given as the confidence
    ([95.0, 92, 85, 55, 58, 31, 99, 100, 70, None], "from 31 to 100"),  # a percentage
    ([None] * 10, "holds no value"),
])
def test_a_confidence_field_of_no_probabilities_is_refused(values, words):
    layer = _layer()
    layer["score"] = values
    with pytest.raises(InputError, match=f"'score'.*{words}"):
        assess_layer(layer, "crop_pred", "truth", weighting="none", confidence_field="score")


@pytest.mark.parametrize("field, words", [("crop_pred", "map"), ("truth", "reference")])
def test_the_class_fields_are_refused_as_the_confidence(field, words):
    with pytest.raises(InputError, match=f"'{field}' is the field of the {words}"):
        assess_layer(_layer(), "crop_pred", "truth", weighting="none", confidence_field=field)


def test_an_empty_layer_is_named_as_such():
    with pytest.raises(InputError, match="no features"):
        assess_layer(_layer().iloc[:0], "crop_pred", "truth", weighting="none", confidence_field="crop_conf")
