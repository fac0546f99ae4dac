"""The ``thermocrop extract`` and ``thermocrop classify`` commands on small files written here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

from thermocrop.cli.main import EXIT_INPUT, EXIT_NOTHING, EXIT_OUTPUT, main
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.scenes.bands import S2_BANDS

gpd = pytest.importorskip("geopandas")
# Growing degree days and weather reading come from core.thermal.gdd / core.thermal.weather.
pytest.importorskip("thermocrop.core.thermal.gdd")
pytest.importorskip("thermocrop.core.thermal.weather")

CRS = "EPSG:32633"
X0, Y0 = 400000.0, 5500000.0


@pytest.fixture(scope="module")
def small_region(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(1)
    for date in ("20230412", "20230602", "20230720"):
        name = f"S2A_MSIL1C_{date}T100031_N0509_R122_T33UVP_{date}T110000.tif"
        path = root / "scenes" / name
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=30, height=30, count=10, dtype="uint16", crs=CRS,
                           transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1500, 5000, size=(10, 30, 30), dtype=np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    parcels = gpd.GeoDataFrame(
        {"fid_lpis": ["p1", "p2", "p3"], "culture": ["corn", "winter_wheat", "corn"], "block": [0, 1, 2]},
        geometry=[box(X0 + 13, Y0 - 97, X0 + 97, Y0 - 13), box(X0 + 113, Y0 - 197, X0 + 197, Y0 - 113),
                  box(X0 + 1013, Y0 - 1097, X0 + 1097, Y0 - 1013)],
        crs=CRS,
    ).to_crs("EPSG:3035")
    parcels.to_file(root / "parcels.gpkg", driver="GPKG")
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-12-31"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days),
                                      encoding="utf-8")
    return {"root": root, "scenes": root / "scenes", "parcels": root / "parcels.gpkg",
            "weather": root / "weather.csv"}


def test_extract_command_writes_a_dataset_with_statuses(small_region, tmp_path, capsys):
    out = tmp_path / "dataset"
    rc = main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
               "--weather", str(small_region["weather"]), "--label-field", "culture", "--id-field", "fid_lpis",
               "--max-pixels", "16", "--out", str(out)])
    assert rc == 0
    ps = open_dataset(out)
    assert ps.parcel_ids.tolist() == ["p1", "p2", "p3"]
    assert ps.status.tolist() == ["ok", "ok", "outside_scenes"]
    assert ps.pixels.shape == (3, 3, 10, 16)
    assert ps.classes == ("corn", "winter_wheat")  # the labels found, sorted
    assert ps.labels.tolist() == [0, 1, 0]
    # (12 + 2) / 2 = 7 degree days a day since 1 January; 2023-04-12 is day 101 of the year.
    assert ps.gdd[0, 0] == pytest.approx(7.0 * 102, rel=1e-5)
    captured = capsys.readouterr()
    assert "outside_scenes: 1" in captured.out and "ok: 2" in captured.out
    assert "extract: 100%" in captured.err  # the progress bar ran to its end
    # The dataset exists now: a second run refuses to replace it.
    rc = main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
               "--weather", str(small_region["weather"]), "--out", str(out)])
    assert rc == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert "already exists" in err and "--overwrite" in err


def test_extract_command_maps_rpg_codes_with_the_france_preset(small_region, tmp_path, capsys, caplog):
    # A layer with the French RPG's CODE_CULTU field: twelve 40 m parcels inside the scenes.
    codes = ["BTH", "BTH", "bdh", "ORP", "ORP", "MIE", "MIS", "TRN", "VRC", "SOJ", "SOJ", None]
    geoms = [box(X0 + 10 + 70 * (i % 4), Y0 - 50 - 70 * (i // 4), X0 + 50 + 70 * (i % 4), Y0 - 10 - 70 * (i // 4))
             for i in range(len(codes))]
    layer = tmp_path / "rpg.gpkg"
    gpd.GeoDataFrame({"ID_PARCEL": [f"{i:03d}" for i in range(len(codes))], "CODE_CULTU": codes},
                     geometry=geoms, crs=CRS).to_file(layer, driver="GPKG")
    out = tmp_path / "rpg"
    rc = main(["extract", "--parcels", str(layer), "--scenes", str(small_region["scenes"]),
               "--weather", str(small_region["weather"]), "--label-field", "CODE_CULTU", "--id-field", "ID_PARCEL",
               "--class-map", "france", "--min-parcels", "2", "--max-pixels", "4", "--out", str(out)])
    assert rc == 0
    ps = open_dataset(out)
    assert (ps.status == "ok").all()
    # By hand from the reference table: BTH and BDH are winter wheat, ORP spring barley, MIE and MIS
    # corn, TRN sunflowers (1 parcel: fewer than 2, so unknown), VRC is listed as unknown, SOJ is
    # listed as unknown too; the parcel without a code stays unlabelled.
    assert ps.classes == ("corn", "spring_barley", "unknown", "winter_wheat")
    names = [ps.classes[k] if k >= 0 else None for k in ps.labels]
    assert names == ["winter_wheat"] * 3 + ["spring_barley"] * 2 + ["corn"] * 2 + ["unknown"] * 4 + [None]
    summary = ps.meta["labels"]
    assert summary["class_map"] == "france" and summary["rare_classes"] == {"sunflowers": 1}
    assert summary["unmapped_codes"] == {}
    text = capsys.readouterr().out
    assert "4 classes" in text and "unknown       4" in text and "winter_wheat  3" in text
    assert "fewer than 2 parcels and count as 'unknown': sunflowers (1)" in caplog.text
    # Codes outside the table are unknown too, counted per code in the log.
    layer2 = tmp_path / "rpg2.gpkg"
    gpd.GeoDataFrame({"CODE_CULTU": ["BTH", "XX1", "XX1", "XX2"]}, geometry=geoms[:4], crs=CRS).to_file(layer2)
    rc = main(["extract", "--parcels", str(layer2), "--scenes", str(small_region["scenes"]),
               "--weather", str(small_region["weather"]), "--label-field", "CODE_CULTU", "--class-map", "france",
               "--max-pixels", "4", "--out", str(tmp_path / "rpg2")])
    assert rc == 0
    ps = open_dataset(tmp_path / "rpg2")
    assert ps.classes == ("unknown", "winter_wheat") and ps.labels.tolist() == [1, 0, 0, 0]
    assert ps.meta["labels"]["unmapped_codes"] == {"XX1": 2, "XX2": 1}
    assert "3 parcels have 2 codes that preset france does not map" in caplog.text
    assert "XX1 (2), XX2 (1)" in caplog.text


def test_extract_command_marks_parcels_below_min_pixels(small_region, tmp_path, capsys):
    # p1 and p2 cover 9 x 9 pixel centres each (centres at 15 .. 95 m inside 13 .. 97 m).
    out = tmp_path / "min81"
    assert main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
                 "--weather", str(small_region["weather"]), "--min-pixels", "81", "--out", str(out)]) == 0
    assert open_dataset(out).status.tolist() == ["ok", "ok", "outside_scenes"]
    # One pixel more and no parcel is left: a run with nothing to show writes nothing.
    out = tmp_path / "min82"
    assert main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
                 "--weather", str(small_region["weather"]), "--min-pixels", "82", "--out", str(out)]) == EXIT_NOTHING
    assert "3 parcels: 2 too_small" in capsys.readouterr().err and not out.exists()


def test_extract_command_reports_bad_input(small_region, tmp_path, capsys):
    rc = main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(tmp_path / "nope"),
               "--weather", str(small_region["weather"]), "--out", str(tmp_path / "d")])
    assert rc == EXIT_INPUT
    assert "does not exist" in capsys.readouterr().err
    rc = main(["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
               "--weather", str(small_region["weather"]), "--label-field", "nope", "--out", str(tmp_path / "d")])
    assert rc == EXIT_INPUT
    assert "no label field 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


@pytest.mark.slow
def test_classify_command_end_to_end_on_a_synthetic_region(tiny_region, tmp_path, capsys):
    pytest.importorskip("torch")
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, save_bundle
    from thermocrop.core.model.networks import build_model

    # Plumbing only: an untrained model with scaling taken from the region's own pixels.
    weather = tiny_region / "weather.nc"
    data = tmp_path / "data"
    assert main(["extract", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(weather), "--label-field", "crop", "--out", str(data)]) == 0
    ps = open_dataset(data)
    model = build_model("tpe_sinusoidal", len(CROP_CLASSES)).eval()
    bundle = tmp_path / "model.tcm"
    save_bundle(bundle, model, BundleConfig(classes=CROP_CLASSES, scaling=InputScaling.from_pixel_sets(ps)))

    parcels = tiny_region / "parcels.gpkg"
    before = parcels.read_bytes()
    out = tmp_path / "classified.geojson"
    rc = main(["classify", "--parcels", str(parcels), "--scenes", str(tiny_region / "scenes"),
               "--weather", str(weather), "--model", str(bundle), "--out", str(out)])
    assert rc == 0
    layer = gpd.read_file(parcels)
    back = gpd.read_file(out)
    assert len(back) == len(layer) and back["parcel_id"].tolist() == layer["parcel_id"].tolist()
    assert back["crop"].tolist() == layer["crop"].tolist()
    statuses = dict(zip(ps.parcel_ids, ps.status))
    assert back["crop_status"].tolist() == [statuses[str(i)] for i in back["parcel_id"]]
    ok = back["crop_status"] == "ok"
    assert back.loc[ok, "crop_pred"].isin(CROP_CLASSES).all()
    assert ((back.loc[ok, "crop_conf"] > 0) & (back.loc[ok, "crop_conf"] <= 1)).all()
    assert f"wrote {out}" in capsys.readouterr().out
    # The input is never replaced without --overwrite.
    rc = main(["classify", "--parcels", str(parcels), "--scenes", str(tiny_region / "scenes"),
               "--weather", str(weather), "--model", str(bundle), "--out", str(parcels)])
    assert rc == EXIT_OUTPUT and parcels.read_bytes() == before


def test_extract_command_grid_blocks_and_absolute_paths(small_region, tmp_path, monkeypatch):
    # Run from the data folder with relative paths; dataset.json must still find the files later.
    monkeypatch.chdir(small_region["root"])
    out = tmp_path / "grid"
    assert main(["extract", "--parcels", "parcels.gpkg", "--scenes", "scenes", "--weather", "weather.csv",
                 "--block-size-km", "1", "--max-pixels", "4", "--out", str(out)]) == 0
    ps = open_dataset(out)
    meta = ps.meta
    assert meta["parcels"] == str(small_region["parcels"]) and Path(meta["weather"]).is_file()
    assert all(Path(f).is_absolute() and Path(f).is_file() for f in meta["scenes"])
    # Blocks by hand: 1 km cells of the parcel centroids in the layer's (projected) CRS, EPSG:3035.
    centroids = gpd.read_file(small_region["parcels"]).geometry.centroid
    cells = list(zip((centroids.x // 1000).astype(int), (centroids.y // 1000).astype(int)))
    same_cell = [[a == b for b in cells] for a in cells]
    assert [[x == y for y in ps.blocks] for x in ps.blocks] == same_cell
    assert (ps.blocks >= 0).all() and len(set(cells)) == len(set(ps.blocks.tolist()))


def test_weather_columns_named_on_the_command_line(small_region, tmp_path, capsys):
    """A station CSV with its own column names: refused naming the columns and the options, then
    read with --date-var/--tmin-var/--tmax-var to the same thermal time as the plain file."""
    plain = small_region["weather"].read_text(encoding="utf-8").splitlines()
    named = tmp_path / "klima.csv"
    named.write_text("\n".join(["Termin,T_Max_2m,T_Min_2m"] + [",".join([d, hi, lo]) for d, lo, hi in
                                                               (r.split(",") for r in plain[1:])]) + "\n")
    common = ["extract", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
              "--label-field", "culture"]
    assert main(common + ["--weather", str(named), "--out", str(tmp_path / "refused")]) == EXIT_INPUT
    assert "needs the columns date, tmax, tmin; it has Termin, T_Max_2m, T_Min_2m" in capsys.readouterr().err
    assert main(common + ["--weather", str(named), "--date-var", "Termin", "--tmin-var", "T_Min_2m",
                          "--tmax-var", "T_Max_2m", "--out", str(tmp_path / "named")]) == 0
    assert main(common + ["--weather", str(small_region["weather"]), "--out", str(tmp_path / "plain")]) == 0
    a, b = open_dataset(tmp_path / "named"), open_dataset(tmp_path / "plain")
    np.testing.assert_array_equal(a.gdd, b.gdd)
    assert np.nanmax(a.gdd) > 0
    pytest.importorskip("torch")
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, save_bundle
    from thermocrop.core.model.networks import build_model

    bundle = tmp_path / "model.tcm"  # plumbing only: an untrained model
    save_bundle(bundle, build_model("tpe_sinusoidal", len(CROP_CLASSES)).eval(),
                BundleConfig(classes=CROP_CLASSES, scaling=InputScaling.from_pixel_sets(a)))
    classify = ["classify", "--parcels", str(small_region["parcels"]), "--scenes", str(small_region["scenes"]),
                "--weather", str(named), "--model", str(bundle), "--as-of", "2023-06-30"]
    assert main(classify + ["--out", str(tmp_path / "refused.gpkg")]) == EXIT_INPUT
    assert "needs the columns date, tmax, tmin" in capsys.readouterr().err
    assert main(classify + ["--date-var", "Termin", "--tmin-var", "T_Min_2m", "--tmax-var", "T_Max_2m",
                            "--out", str(tmp_path / "named.gpkg")]) == 0
    assert len(gpd.read_file(tmp_path / "named.gpkg")) == 3
    for command in ("classify", "calibrate", "inseason"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        shown = capsys.readouterr().out
        assert all(flag in shown for flag in ("--tmin-var", "--tmax-var", "--date-var")), command
