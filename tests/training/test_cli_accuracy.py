"""``thermocrop accuracy`` on a GeoPackage written here."""

from __future__ import annotations

import csv
import json

import pytest

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.errors import OutputError

gpd = pytest.importorskip("geopandas")


@pytest.fixture
def layer(tmp_path):
    from shapely.geometry import box

    # Map: 4 wheat parcels of 1 ha and 2 corn parcels of 4 ha; reference on five of them.
    geoms = [box(i * 500, 0, i * 500 + 100, 100) for i in range(4)]
    geoms += [box(3000 + i * 500, 0, 3000 + i * 500 + 200, 200) for i in range(2)]
    frame = gpd.GeoDataFrame({"crop_pred": ["winter_wheat"] * 4 + ["corn"] * 2,
                              "truth": ["winter_wheat", "winter_wheat", "corn", None, "corn", "corn"]},
                             geometry=geoms, crs="EPSG:3035")
    path = tmp_path / "classified.gpkg"
    frame.to_file(path)
    return path


def test_accuracy_command_writes_reports(layer, tmp_path, capsys):
    html = tmp_path / "report.html"
    assert main(["accuracy", "--layer", str(layer), "--reference", "truth", "--html", str(html),
                 "--matrix-csv", str(tmp_path / "m.csv"), "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "reference units 5  OA 0.8000" in out
    rows = {r["class"]: r for r in csv.DictReader(open(tmp_path / "report.csv", newline=""))}
    # Wheat stratum (4 ha of 12): 2 of 3 units wheat; corn (8 ha): 2 of 2 corn.
    # Wheat area = 12 * (4/12 * 2/3) = 2.667 ha; corn = 12 - 2.667.
    assert float(rows["winter_wheat"]["estimated_area"]) == pytest.approx(8 / 3, rel=1e-3)
    assert float(rows["corn"]["estimated_area"]) == pytest.approx(12 - 8 / 3, rel=1e-3)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["matrix"] == [[2, 0], [1, 2]] and data["classes"] == ["corn", "winter_wheat"]
    assert html.read_text().startswith("<!DOCTYPE html>")
    # An existing report is not replaced without --overwrite (an output refused: exit code 5).
    with pytest.raises(OutputError, match="--overwrite"):
        _run_raw(["accuracy", "--layer", str(layer), "--reference", "truth", "--html", str(html)])
    assert main(["accuracy", "--layer", str(layer), "--reference", "truth", "--html", str(html),
                 "--weighting", "count", "--overwrite"]) == 0
    rows = {r["class"]: r for r in csv.DictReader(open(tmp_path / "report.csv", newline=""))}
    assert float(rows["corn"]["map_area"]) == 2 and rows["corn"]["area_unit"] == "parcels"


def _run_raw(argv):
    """Run a command without main()'s error handling, so the exception itself is seen."""
    from thermocrop.cli.main import build_parser

    args = build_parser().parse_args(argv)
    return args._run(args)


def test_accuracy_command_errors(layer, tmp_path, capsys):
    assert main(["accuracy", "--layer", str(tmp_path / "none.gpkg"), "--reference", "truth",
                 "--html", str(tmp_path / "r.html")]) != 0
    assert "does not exist" in capsys.readouterr().err
    assert main(["accuracy", "--layer", str(layer), "--reference", "crop",
                 "--html", str(tmp_path / "r.html")]) != 0
    err = capsys.readouterr().err
    assert f"{layer}: The layer has no field 'crop'" in err and "truth" in err
    assert not (tmp_path / "r.html").exists()
    # A reference in other names than the map's: the file is named with the problem.
    gpd.read_file(layer).assign(truth=["1", "1", "2", None, "2", "2"]).to_file(tmp_path / "codes.gpkg")
    assert main(["accuracy", "--layer", str(tmp_path / "codes.gpkg"), "--reference", "truth",
                 "--html", str(tmp_path / "r.html")]) == EXIT_INPUT
    assert f"{tmp_path / 'codes.gpkg'}: The map classes (corn, winter_wheat)" in capsys.readouterr().err


def test_points_need_count_weights(tmp_path, capsys):
    from shapely.geometry import Point

    path = tmp_path / "points.gpkg"
    gpd.GeoDataFrame({"crop_pred": ["corn", "corn", "meadow"], "truth": ["corn", "meadow", "meadow"]},
                     geometry=[Point(0, 0), Point(10, 0), Point(20, 0)], crs="EPSG:3035").to_file(path)
    assert main(["accuracy", "--layer", str(path), "--reference", "truth", "--html", str(tmp_path / "a.html")]) == EXIT_INPUT
    assert "weight the classes by parcel count" in capsys.readouterr().err
    assert main(["accuracy", "--layer", str(path), "--reference", "truth", "--weighting", "count",
                 "--html", str(tmp_path / "a.html")]) == 0
    assert "reference units 3  OA 0.6667" in capsys.readouterr().out


def test_a_geoparquet_layer_written_by_classify_gives_the_report_of_its_geopackage(layer, tmp_path, capsys):
    """``classify --out map.parquet`` writes GeoParquet, which this GDAL cannot open: the layer is
    read as GeoParquet, and the figures are those of the same layer as a GeoPackage."""
    from thermocrop.core.io.geoparquet import write_geoparquet

    parquet = write_geoparquet(layer, {}, tmp_path / "classified.parquet")
    for name, source in (("gpkg", layer), ("parquet", parquet)):
        assert main(["accuracy", "--layer", str(source), "--reference", "truth", "--html", str(tmp_path / f"{name}.html"),
                     "--json", str(tmp_path / f"{name}.json")]) == 0
    assert "reference units 5  OA 0.8000" in capsys.readouterr().out
    assert (tmp_path / "parquet.csv").read_bytes() == (tmp_path / "gpkg.csv").read_bytes()
    figures = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("gpkg", "parquet")}
    assert figures["parquet"].pop("title") == "classified.parquet (crop_pred against truth)"
    assert figures["gpkg"].pop("title") == "classified.gpkg (crop_pred against truth)"
    assert figures["parquet"] == figures["gpkg"]
