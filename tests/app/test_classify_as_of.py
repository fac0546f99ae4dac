"""Classifying as of a date and saying when each label was decided, on small files written here.

The temperatures are 2 and 12 degrees C every day, so the GDD (base 0) on day ``d`` of the year are
``7 d``, computed here without the library."""

from __future__ import annotations

import datetime
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

import thermocrop
from thermocrop import app
from thermocrop.app import ClassificationOutput, ClassifyRequest, ParcelsSpec, ResultFields, RunProgress
from thermocrop.cli.main import main
from thermocrop.core.extract import extract_pixel_sets
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.scenes.bands import S2_BANDS

gpd = pytest.importorskip("geopandas")

MODEL = Path(thermocrop.__file__).parent / "resources" / "models" / "default.tcm"
CRS = "EPSG:32633"
X0, Y0 = 400000.0, 5500000.0
DATES = ("2023-03-30", "2023-04-12", "2023-05-02", "2023-06-02", "2023-06-20", "2023-07-20", "2023-08-15",
         "2023-10-20")


def _gdd(day) -> float:
    """GDD from 1 January to ``day`` included, at 7 degree days a day."""
    return 7.0 * ((np.datetime64(day, "D") - np.datetime64("2023-01-01")).astype(int) + 1)


@pytest.fixture(scope="module")
def region(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("as_of")
    rng = np.random.default_rng(4)
    for i, date in enumerate(DATES):
        stamp = date.replace("-", "")
        path = root / "scenes" / f"S2A_MSIL1C_{stamp}T100031_N0509_R122_T33UVP_{stamp}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=40, height=40, count=10, dtype="uint16", crs=CRS,
                           transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            green = 1.0 + np.sin(np.pi * i / (len(DATES) - 1))  # a crop greening and ripening
            bands = rng.integers(800, 2500, size=(10, 40, 40)).astype(np.float64)
            bands[6:8] *= green
            ds.write(bands.astype(np.uint16))
            for b, name in enumerate(S2_BANDS, start=1):
                ds.set_band_description(b, name)
    parcels = gpd.GeoDataFrame(
        {"parcel_id": [f"p{i}" for i in range(6)]},
        geometry=[box(X0 + 13 + 60 * (i % 3), Y0 - 97 - 150 * (i // 3), X0 + 57 + 60 * (i % 3),
                      Y0 - 53 - 150 * (i // 3)) for i in range(6)],
        crs=CRS)
    parcels.to_file(root / "parcels.gpkg", driver="GPKG")
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2024-01-01"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days),
                                      encoding="utf-8")
    return {"scenes": root / "scenes", "parcels": root / "parcels.gpkg", "weather": root / "weather.csv"}


def _request(region, **changes) -> ClassifyRequest:
    request = ClassifyRequest(parcels=ParcelsSpec(str(region["parcels"])),
                              scenes=app.ScenesSpec(files=(str(region["scenes"]),)),
                              weather=app.WeatherSpec(path=str(region["weather"])), model=str(MODEL))
    return replace(request, **changes)


def test_as_of_leaves_out_later_scenes_and_reports_the_season(region, monkeypatch):
    # Both runs on one thread: the budget follows the idle cores, and two thread counts sum the
    # model's products in another order (probabilities then differ by about 1e-7).
    monkeypatch.setenv("THERMOCROP_THREADS", "1")
    lines: list = []
    run = app.run_classification(_request(region, as_of=datetime.date(2023, 6, 25)), RunProgress(report=lines.append))
    assert [str(s.date) for s in run.scenes] == list(DATES[:5])
    assert f"as of 2023-06-25: 5 of 8 acquisitions, GDD {_gdd('2023-06-25'):,.0f} at the parcels' median" in lines[0]
    # The same as classifying the scenes up to the date alone.
    kept = tuple(str(p) for p in sorted(region["scenes"].iterdir()) if p.name[11:19] <= "20230625")
    alone = app.run_classification(_request(region, scenes=app.ScenesSpec(files=kept)))
    np.testing.assert_allclose(run.result.probabilities, alone.result.probabilities, rtol=1e-6)
    assert not any("third" in w for w in run.result.warnings)
    # GDD counted from the season start: the kept acquisitions' GDD do not change with the cut.
    whole = extract_pixel_sets(str(region["parcels"]), str(region["scenes"]), str(region["weather"]))
    cut = extract_pixel_sets(str(region["parcels"]), [str(p) for p in kept], str(region["weather"]))
    np.testing.assert_array_equal(cut.gdd, whole.gdd[:, :5])
    np.testing.assert_allclose(cut.gdd[0], [_gdd(d) for d in DATES[:5]])


def test_as_of_needs_no_temperatures_for_the_scenes_it_leaves_out(region, tmp_path, monkeypatch):
    """The inputs' check asked for temperatures to the last scene given, so a run as of June with
    the weather of the year so far was refused, unless the later scenes were removed by hand."""
    monkeypatch.setenv("THERMOCROP_THREADS", "1")
    short = tmp_path / "to_june.csv"
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-07-01"))
    short.write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days), encoding="utf-8")
    lines: list = []
    as_of = datetime.date(2023, 6, 25)
    run = app.run_classification(_request(region, as_of=as_of, weather=app.WeatherSpec(path=str(short))),
                                 RunProgress(report=lines.append))
    assert [str(s.date) for s in run.scenes] == list(DATES[:5])
    # The GDD to the date; the season's at the last scene given are unknown, so no share is said.
    assert lines[0] == f"as of 2023-06-25: 5 of 8 acquisitions, GDD {_gdd('2023-06-25'):,.0f} at the parcels' median"
    full = app.run_classification(_request(region, as_of=as_of))
    np.testing.assert_allclose(run.result.probabilities, full.result.probabilities, rtol=1e-6)
    # Temperatures that end before the date itself: counted to the last acquisition kept.
    shorter = tmp_path / "to_20_june.csv"
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-06-21"))
    shorter.write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days), encoding="utf-8")
    lines.clear()
    app.run_classification(_request(region, as_of=as_of, weather=app.WeatherSpec(path=str(shorter))),
                           RunProgress(report=lines.append))
    assert f"GDD {_gdd('2023-06-20'):,.0f} at the parcels' median on 2023-06-20" in lines[0]


def test_an_early_date_is_warned_about_and_a_date_before_every_scene_refused(region):
    run = app.run_classification(_request(region, as_of=datetime.date(2023, 4, 5)))
    warning = [w for w in run.result.warnings if "as of 2023-04-05" in w]
    share = _gdd("2023-04-05") / _gdd(DATES[-1])
    assert len(warning) == 1 and f"{100 * share:.0f} % of the season's" in warning[0]
    with pytest.raises(thermocrop.core.errors.SceneError, match="on or before 2023-03-01"):
        app.run_classification(_request(region, as_of=datetime.date(2023, 3, 1)))


def test_a_model_that_records_its_accuracy_warns_with_it(region, late_signal_model):
    """The tiny model trained in the fixture records its validation OA through the season; the run's
    season share (GDD 7 a day here) is compared with the first cut where it reaches its level."""
    from thermocrop.core.model.season_curve import bundle_season_curve

    model = str(late_signal_model["bundle"])
    curve = bundle_season_curve(load_bundle(model).config)
    reached = curve.fractions[curve.reached()]
    early, late = datetime.date(2023, 4, 5), datetime.date(2023, 8, 15)
    early_share, late_share = _gdd(early) / _gdd(DATES[-1]), _gdd(late) / _gdd(DATES[-1])
    assert early_share < reached <= late_share
    run = app.run_classification(_request(region, model=model, as_of=early))
    warning = [w for w in run.result.warnings if "As of 2023-04-05" in w]
    at = curve.cut_at(early_share)
    assert len(warning) == 1 and f"validation OA was {curve.overall_accuracy[at]:.2f}" in warning[0]
    assert f"its level {curve.level:.2f} is reached from {100 * reached:.0f} % of the season's GDD" in warning[0]
    assert "third" not in warning[0]
    run = app.run_classification(_request(region, model=model, as_of=late))
    assert not any("As of" in w or "as of" in w for w in run.result.warnings)


def test_decided_is_the_first_cut_from_which_the_label_holds(region, tmp_path):
    out = tmp_path / "decided.gpkg"
    run = app.run_classification(_request(region, fields=ResultFields(decided=0.0),
                                          output=ClassificationOutput(str(out))))
    # Independently: one classification per cut of the pixel sets.
    bundle = load_bundle(MODEL)
    ps = extract_pixel_sets(str(region["parcels"]), str(region["scenes"]), str(region["weather"]))
    labels = []
    for t in range(len(DATES)):
        mask = np.asarray(ps.date_mask).copy()
        mask[:, t + 1:] = False
        labels.append(bundle.predict(replace(ps, date_mask=mask)).argmax(axis=1))
    labels = np.array(labels).T
    expected = [next(t for t in range(len(DATES)) if (row[t:] == row[-1]).all()) for row in labels]
    assert [str(d) for d in run.result.decided] == [DATES[t] for t in expected]
    np.testing.assert_allclose(run.result.decided_gdd, [_gdd(DATES[t]) for t in expected])
    written = gpd.read_file(out)
    assert written["crop_decided"].tolist() == [DATES[t] for t in expected]
    np.testing.assert_allclose(written["crop_decided_gdd"], [_gdd(DATES[t]) for t in expected])
    # In partitions on a Dask cluster: the same dates.
    parts = app.run_classification(_request(region, fields=ResultFields(decided=0.0),
                                            cluster=app.ClusterSpec(run_folder=str(tmp_path / "run"))))
    assert parts.result.decided.tolist() == run.result.decided.tolist()
    np.testing.assert_array_equal(parts.result.decided_gdd, run.result.decided_gdd)
    # A confidence no parcel keeps: nothing decided, the fields NULL.
    never = app.run_classification(_request(region, fields=ResultFields(decided=1.0)))
    assert np.isnat(never.result.decided).all() and np.isnan(never.result.decided_gdd).all()


def test_command_line_as_of_and_decided(region, tmp_path, capsys):
    out = tmp_path / "cli.gpkg"
    assert main(["classify", "--parcels", str(region["parcels"]), "--scenes", str(region["scenes"]),
                 "--weather", str(region["weather"]), "--model", str(MODEL), "--out", str(out),
                 "--as-of", "2023-07-31", "--decided", "--decided-threshold", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "as of 2023-07-31: 6 of 8 acquisitions" in printed and "crop_decided_gdd" in printed
    written = gpd.read_file(out)
    decided = written["crop_decided"].dropna()
    assert set(decided) <= set(DATES[:6])
    with pytest.raises(SystemExit):  # a usage error, before anything is read
        main(["classify", "--parcels", str(region["parcels"]), "--scenes", str(region["scenes"]),
              "--weather", str(region["weather"]), "--out", str(tmp_path / "x.gpkg"), "--as-of", "2023-7-31"])
    assert "not a date written YYYY-MM-DD" in capsys.readouterr().err


def _around_switch() -> tuple[datetime.date, datetime.date, str]:
    """The first acquisition with at least ``INSEASON_GDD`` (7 a day here), the day before it (as
    of which the scenes kept end with an acquisition of fewer GDD, though the day itself has
    more), and that earlier acquisition."""
    from thermocrop.app.season_status import INSEASON_GDD

    i = next(i for i, d in enumerate(DATES) if _gdd(d) >= INSEASON_GDD)
    late = datetime.date.fromisoformat(DATES[i])
    early = late - datetime.timedelta(days=1)
    assert i > 0 and _gdd(DATES[i - 1]) < INSEASON_GDD <= _gdd(early)
    return early, late, DATES[i - 1]


def test_an_early_run_naming_no_model_uses_the_in_season_model(region, monkeypatch, caplog):
    """With no model named, a run whose last acquisition kept has fewer GDD (7 a day here) than
    ``INSEASON_GDD`` is classified by the shipped in-season ensemble, even as of a later day with
    more; from the first acquisition with more, by the shipped L1C model; a model named is always
    kept."""
    from thermocrop.app.season_status import INSEASON_BUNDLE, INSEASON_GDD, inseason_model_choice
    from thermocrop.core.inseason import SeasonStatus

    monkeypatch.setenv("THERMOCROP_THREADS", "1")
    models = MODEL.parent
    early, late, seen = _around_switch()
    lines: list = []
    with caplog.at_level("INFO", logger="thermocrop"):
        run = app.run_classification(_request(region, model=None, as_of=early), RunProgress(report=lines.append))
    # The model that runs is said once: the level's choice it replaces is not logged first.
    assert not any(m.startswith("L1C scenes:") for m in [*caplog.messages, *lines]), caplog.messages
    named = app.run_classification(_request(region, model=str(models / INSEASON_BUNDLE), as_of=early))
    np.testing.assert_allclose(run.result.probabilities, named.result.probabilities, rtol=1e-6)
    said = [line for line in lines if INSEASON_BUNDLE in line]
    assert len(said) == 1 and f"kept ({_gdd(seen):,.0f}) are fewer than {INSEASON_GDD:,.0f}" in said[0], said
    # The same scenes as of the day of their last acquisition: the same model, the same map.
    same = app.run_classification(_request(region, model=None, as_of=seen))
    np.testing.assert_allclose(same.result.probabilities, run.result.probabilities, rtol=1e-6)
    assert INSEASON_BUNDLE in run.checked.model_choice
    # The next day, and any day with a model named: the shipped model of the scenes' level.
    lines.clear()
    run = app.run_classification(_request(region, model=None, as_of=late), RunProgress(report=lines.append))
    fast = app.run_classification(_request(region, model=str(models / "default_fast.tcm"), as_of=late))
    np.testing.assert_allclose(run.result.probabilities, fast.result.probabilities, rtol=1e-6)
    assert not any(INSEASON_BUNDLE in line for line in lines)
    early_fast = app.run_classification(_request(region, model=str(models / "default_fast.tcm"), as_of=early))
    assert not np.allclose(early_fast.result.probabilities, named.result.probabilities)
    # L2A scenes keep their own shipped model; a date whose GDD are unknown keeps the shipped one.
    status = SeasonStatus(as_of=np.datetime64(early), used=1, total=8, gdd=_gdd(early), season_gdd=_gdd(DATES[-1]),
                          gdd_date=np.datetime64(early), seen_gdd=_gdd(seen))
    assert inseason_model_choice(status, ["L2A"]) is None
    assert inseason_model_choice(status, ["L1C", "L2A"])[0].resolve() == (models / INSEASON_BUNDLE).resolve()
    # Where the last acquisition's GDD are unknown, those of the date choose.
    assert inseason_model_choice(replace(status, seen_gdd=float("nan")), ["L1C"]) is None
    assert inseason_model_choice(replace(status, seen_gdd=float("nan"), gdd=_gdd(seen)), ["L1C"]) is not None
    assert inseason_model_choice(replace(status, seen_gdd=float("nan"), gdd=float("nan")), ["L1C"]) is None


def test_an_early_run_naming_a_whole_season_model_says_the_in_season_model_exists(region, monkeypatch):
    """A model calibrated on the user's parcels replaced the in-season model for every run, and
    nothing said that early maps would come out better with it."""
    from thermocrop.app.season_status import INSEASON_BUNDLE

    monkeypatch.setenv("THERMOCROP_THREADS", "1")
    models = MODEL.parent
    early, late, _ = _around_switch()
    said = {}
    for name, day in (("default_fast.tcm", early), ("default_fast.tcm", late), (INSEASON_BUNDLE, early)):
        lines: list = []
        app.run_classification(_request(region, model=str(models / name), as_of=day), RunProgress(report=lines.append))
        said[name, day] = [line for line in lines if "a run that names no model uses the shipped in-season model" in line]
    hint = said["default_fast.tcm", early]
    assert len(hint) == 1 and "(default_fast.tcm: 50 %)" in hint[0] and "75 % were cut" in hint[0], hint
    assert not said["default_fast.tcm", late] and not said[INSEASON_BUNDLE, early]
    # A bundle the door loaded (the dock's) is named by its file.
    from thermocrop.core.model.bundle import load_bundle

    lines = []
    app.run_classification(_request(region, model=load_bundle(models / "default_fast.tcm"), as_of=early),
                           RunProgress(report=lines.append))
    assert any("(default_fast.tcm: 50 %)" in line for line in lines), lines


def test_a_run_as_of_a_date_is_calibrated_by_its_season_stage(region, tmp_path, monkeypatch):
    """A model with season stages below 1,200 and 2,000 GDD: as of 25 June (1,232 GDD here; the last
    scene kept, 20 June, 1,197) the confidence and the sets are those of the stage below 1,200; the
    whole season keeps the model's own calibration."""
    from thermocrop.core.model.bundle import calibrated_bundle
    from thermocrop.core.model.calibration import apply_temperature, conformal_threshold, prediction_sets
    from thermocrop.core.model.season_stages import SeasonStage

    monkeypatch.setenv("THERMOCROP_THREADS", "1")
    bundle = load_bundle(MODEL)
    whole = bundle.calibration
    scores = tuple(float(s) for s in np.linspace(0.05, 0.95, 60))
    # 20 June, the last scene kept, is 1,197 GDD here and 25 June 1,232: the two sides of a bound.
    stages = (SeasonStage(below_gdd=1200.0, temperature=3.0, scores=scores, parcels=60),
              SeasonStage(below_gdd=2000.0, temperature=1.5, scores=tuple(s / 10 for s in scores), parcels=60))
    staged = tmp_path / "staged.tcm"
    calibrated_bundle(bundle, replace(whole, stages=stages), staged)
    as_of = datetime.date(2023, 6, 25)
    lines: list = []
    run = app.run_classification(_request(region, model=str(staged), as_of=as_of), RunProgress(report=lines.append))
    plain = app.run_classification(_request(region, as_of=as_of))
    raw = whole.undo(plain.result.probabilities)
    expected = apply_temperature(raw, 3.0)
    np.testing.assert_allclose(run.result.probabilities, expected, atol=2e-6)
    np.testing.assert_array_equal(run.result.sets, prediction_sets(expected, conformal_threshold(np.array(scores), 0.9)))
    # The stage is that of the last acquisition kept (20 June), not of the date itself.
    assert any(f"At the last acquisition kept ({_gdd('2023-06-20'):,.0f} GDD), confidence and prediction sets "
               "calibrated on 60 labelled parcels (none the model trained on) as of 800-1,200 GDD (temperature 3.00)" in line for line in lines), lines
    # Two dates that keep the same scenes give the same confidence and sets, whatever their own GDD.
    near = datetime.date(2023, 6, 21)
    other = app.run_classification(_request(region, model=str(staged), as_of=near))
    np.testing.assert_array_equal(other.result.sets, run.result.sets)
    # The whole season (its last date past 2,000 GDD): the model's own calibration, as before.
    run = app.run_classification(_request(region, model=str(staged)))
    np.testing.assert_allclose(run.result.probabilities,
                               app.run_classification(_request(region)).result.probabilities, atol=2e-6)
