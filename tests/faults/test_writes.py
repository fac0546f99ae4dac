"""Faults on the write side, tried as a hostile user would through the command line: an output
that is the input, a full disk, a killed run, two runs racing for one file, multi-layer
GeoPackages, shapefile names, and outputs that cannot be written at all.

Disk-full runs are subprocesses with ``RLIMIT_FSIZE`` (every write past the limit fails with
EFBIG, as ENOSPC would; ``SIGXFSZ`` ignored), and on a real 2 MB tmpfs where mounting is
allowed. Killed runs are subprocesses sent SIGKILL while their output is being written.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from thermocrop.cli.main import EXIT_OUTPUT, main

ogr = pytest.importorskip("osgeo.ogr")
osr = pytest.importorskip("osgeo.osr")

N_BIG = 10_000
"""Parcels of the layer whose writing is killed, raced and cut short (about 2.5 MB as GeoPackage)."""
LIMIT = 1_000_000
"""File size limit of the disk-full runs, in bytes."""
X0, Y0 = 400000.0, 5500000.0


# -- files ------------------------------------------------------------------------------------

def _write_parcels(path: Path, layers: dict[str, int], *, epsg: int = 32633, geom=ogr.wkbPolygon) -> Path:
    """A GeoPackage with ``layers`` (name -> feature count) of 40 m squares on a 50 m grid."""
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(path)) if not path.exists() else ogr.Open(str(path), 1)
    for name, n in layers.items():
        layer = ds.CreateLayer(name, srs, geom)
        layer.CreateField(ogr.FieldDefn("parcel_id", ogr.OFTString))
        layer.CreateField(ogr.FieldDefn("area_ha", ogr.OFTReal))
        ds.StartTransaction()
        for i in range(n):
            x, y = X0 + (i % 200) * 50.0, Y0 + (i // 200) * 50.0
            f = ogr.Feature(layer.GetLayerDefn())
            f.SetField("parcel_id", f"{name}{i}")
            f.SetField("area_ha", 0.16)
            f.SetGeometry(ogr.CreateGeometryFromWkt(f"POLYGON (({x} {y},{x + 40} {y},{x + 40} {y + 40},{x} {y + 40},{x} {y}))"))
            layer.CreateFeature(f)
        ds.CommitTransaction()
    ds = None
    return path


def _features(path: Path, layer: str | None = None) -> list[tuple]:
    """Every feature of a layer as (fid, attributes, WKT), for comparing layers exactly."""
    ds = ogr.Open(str(path))
    lyr = ds.GetLayerByName(layer) if layer else ds.GetLayer(0)
    out = [(f.GetFID(), tuple(f.items().items()), f.GetGeometryRef().ExportToIsoWkt()) for f in lyr]
    ds = None
    return out


def _layers(path: Path) -> list[str]:
    ds = ogr.Open(str(path))
    names = [ds.GetLayer(i).GetName() for i in range(ds.GetLayerCount())]
    ds = None
    return names


def _fields(path: Path, layer: str | None = None) -> list[str]:
    ds = ogr.Open(str(path))
    defn = (ds.GetLayerByName(layer) if layer else ds.GetLayer(0)).GetLayerDefn()
    names = [defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())]
    ds = None
    return names


def _hidden(folder: Path) -> list[str]:
    """Hidden entries in a folder: temporary files or folders a run left beside the user's files."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("writes")
    _write_parcels(root / "big.gpkg", {"parcels": N_BIG, "roads": 5})
    _write_parcels(root / "small.gpkg", {"parcels": 150})
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2024-01-01"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days))
    return root


def _gdd_args(parcels: Path, weather: Path, out: Path, *more: str, date: str = "2023-05-01") -> list[str]:
    return ["gdd", "--parcels", str(parcels), "--weather", str(weather), "--dates", date, "--out", str(out), *more]


def _start(args: list[str], *, limit: int | None = None) -> subprocess.Popen:
    """``thermocrop ARGS`` in a subprocess; with ``limit``, no file it writes may grow past it."""

    def restrict():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process

    return subprocess.Popen([sys.executable, "-m", "thermocrop.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=restrict)


def _finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


# -- 1. the output is the input ---------------------------------------------------------------

def test_output_equal_to_input_is_refused_by_any_name(files, tmp_path, capsys):
    parcels = shutil.copy(files / "small.gpkg", tmp_path / "parcels.gpkg")
    parcels = Path(parcels)
    before = parcels.read_bytes()
    (tmp_path / "link.gpkg").symlink_to(parcels)
    os.link(parcels, tmp_path / "hard.gpkg")
    (tmp_path / "sub").mkdir()
    names = [parcels, tmp_path / "sub" / ".." / "parcels.gpkg", tmp_path / "link.gpkg", tmp_path / "hard.gpkg"]
    for name in names:
        assert main(_gdd_args(parcels, files / "weather.csv", name)) == EXIT_OUTPUT
        assert "is the input" in capsys.readouterr().err
        assert main(["classify", "--parcels", str(parcels), "--scenes", str(tmp_path / "none"), "--weather",
                     str(files / "weather.csv"), "--out", str(name)]) == EXIT_OUTPUT
        assert "is the input" in capsys.readouterr().err
    # Not even with --overwrite may an output replace the weather file.
    weather = Path(shutil.copy(files / "weather.csv", tmp_path / "w.csv"))
    assert main(_gdd_args(parcels, weather, weather, "--overwrite")) == EXIT_OUTPUT
    assert "is the input" in capsys.readouterr().err
    assert parcels.read_bytes() == before and weather.read_bytes() == (files / "weather.csv").read_bytes()


def test_a_read_only_output_is_not_replaced_even_with_overwrite(files, tmp_path, capsys):
    """A file the user made read-only (mode 0444) is their sign to keep it: --overwrite does not
    replace it (the run is refused before any work, the file keeps its bytes and mode); once
    writable it is replaced."""
    parcels = files / "small.gpkg"
    out = tmp_path / "gdd.gpkg"
    assert main(_gdd_args(parcels, files / "weather.csv", out)) == 0
    before = out.read_bytes()
    out.chmod(0o444)
    assert main(_gdd_args(parcels, files / "weather.csv", out, "--overwrite", date="2023-06-01")) == EXIT_OUTPUT
    assert f"{out} is read-only, so it is not replaced" in capsys.readouterr().err
    assert out.read_bytes() == before and (out.stat().st_mode & 0o777) == 0o444
    out.chmod(0o644)
    assert main(_gdd_args(parcels, files / "weather.csv", out, "--overwrite", date="2023-06-01")) == 0
    assert out.read_bytes() != before


# -- 2. a full disk ---------------------------------------------------------------------------

def test_full_disk_leaves_no_file_and_replaces_none(files, tmp_path):
    # Good files to be replaced: a GeoJSON output and a GeoPackage written in place.
    good_json = tmp_path / "good.geojson"
    assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", good_json)) == 0
    in_place = Path(shutil.copy(files / "big.gpkg", tmp_path / "in_place.gpkg"))
    before = {good_json: good_json.read_bytes(), in_place: in_place.read_bytes()}
    runs = {
        "new.geojson": _start(_gdd_args(files / "big.gpkg", files / "weather.csv", tmp_path / "new.geojson"),
                              limit=LIMIT),
        "new.gpkg": _start(_gdd_args(files / "big.gpkg", files / "weather.csv", tmp_path / "new.gpkg"), limit=LIMIT),
        "good.geojson": _start(_gdd_args(files / "big.gpkg", files / "weather.csv", good_json, "--overwrite"),
                               limit=LIMIT),
        "in_place.gpkg": _start(_gdd_args(in_place, files / "weather.csv", in_place, "--overwrite"), limit=LIMIT),
    }
    for name, proc in runs.items():
        rc, said = _finish(proc)
        assert rc == EXIT_OUTPUT, (name, said)
        assert "the disk may be full" in said and "Traceback" not in said, (name, said)
    assert not (tmp_path / "new.geojson").exists() and not (tmp_path / "new.gpkg").exists()
    for path, content in before.items():
        assert path.read_bytes() == content
    assert _hidden(tmp_path) == []


def test_full_tmpfs_leaves_no_file(files, tmp_path):
    """The issue's own case on a real 2 MB file system, where this machine lets us mount one."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here (the RLIMIT_FSIZE test covers the same writes)")
    try:
        rc, said = _finish(_start(_gdd_args(files / "big.gpkg", files / "weather.csv", mount / "new.geojson")))
        assert rc == EXIT_OUTPUT and "the disk may be full" in said, said
        assert list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_full_disk_while_saving_a_dataset_or_bundle_leaves_the_old_one(tmp_path):
    script = """
import sys, numpy as np
from thermocrop.core.pixel_sets import PixelSets, save_dataset
from thermocrop.core.errors import ThermoCropError
p, t, s = int(sys.argv[2]), 10, 16
ps = PixelSets(pixels=np.full((p, t, 10, s), 7, np.uint16), pixel_mask=np.ones((p, t, s), bool),
               date_mask=np.ones((p, t), bool), gdd=np.zeros((p, t), np.float32),
               dates=np.arange(np.datetime64('2023-04-01'), np.datetime64('2023-04-11')),
               day_of_season=np.arange(t, dtype=np.float32), parcel_ids=np.array([str(i) for i in range(p)]),
               status=np.array(['ok'] * p))
try:
    save_dataset(ps, sys.argv[1], overwrite=True)
except ThermoCropError as exc:
    print(exc)
    sys.exit(2)
"""

    def run(n, limit=None):
        def restrict():
            if limit:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        return subprocess.run([sys.executable, "-c", script, str(tmp_path / "ds"), str(n)], capture_output=True,
                              text=True, preexec_fn=restrict)

    assert run(3).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "ds").iterdir()}
    proc = run(2000, limit=LIMIT)  # 6.4 MB of pixels
    assert proc.returncode == 2 and "the disk may be full" in proc.stdout, proc.stdout + proc.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "ds").iterdir()} == before
    assert _hidden(tmp_path) == []

    bundle_script = """
import sys, torch
from thermocrop.core.model.bundle import BundleConfig, save_bundle
from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import ThermoCropError
from thermocrop.core.model.networks import build_model
try:
    save_bundle(sys.argv[1], build_model("tpe_recurrent", len(CROP_CLASSES)), BundleConfig())
except ThermoCropError as exc:
    print(exc)
    sys.exit(2)
"""
    pytest.importorskip("torch")
    good = tmp_path / "model.tcm"
    good.write_bytes(b"a good old bundle")

    def restrict():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))  # the bundle is about 0.5 MB
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    proc = subprocess.run([sys.executable, "-c", bundle_script, str(good)], capture_output=True, text=True,
                          preexec_fn=restrict)
    assert proc.returncode == 2 and "the disk may be full" in proc.stdout, proc.stdout + proc.stderr
    assert good.read_bytes() == b"a good old bundle" and _hidden(tmp_path) == []


# -- 3. two runs, one output ------------------------------------------------------------------

def test_two_runs_racing_for_one_output_one_fails_clearly(files, tmp_path):
    out = tmp_path / "raced.gpkg"
    runs = {date: _start(_gdd_args(files / "big.gpkg", files / "weather.csv", out, date=date))
            for date in ("2023-05-01", "2023-06-01")}
    results = {date: _finish(proc) for date, proc in runs.items()}
    winners = [d for d, (rc, _) in results.items() if rc == 0]
    assert len(winners) == 1, results
    loser = next(d for d in results if d not in winners)
    rc, said = results[loser]
    assert rc == EXIT_OUTPUT and ("already exists" in said or "appeared while this run was writing" in said), said
    fields = _fields(out, "raced")
    assert f"gdd_{winners[0].replace('-', '')}" in fields and f"gdd_{loser.replace('-', '')}" not in fields
    assert len(_features(out)) == N_BIG and _hidden(tmp_path) == []


def test_the_final_step_refuses_an_output_that_appeared_meanwhile(files, tmp_path):
    """The no-replace promise holds at the rename itself, not only at the preflight."""
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import VectorOutput, check_vector_output

    out = tmp_path / "late.geojson"
    first = VectorOutput(check_vector_output(out))
    second = VectorOutput(check_vector_output(out))  # both checked while nothing was there
    for output, text in ((first, "first"), (second, "second")):
        output.path.write_text('{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": '
                               f'{{"who": "{text}"}}, "geometry": null}}]}}')
    first.commit(1, ["who"])
    with pytest.raises(OutputError, match="appeared while this run was writing"):
        second.commit(1, ["who"])
    assert '"first"' in out.read_text()
    first.discard()
    second.discard()
    assert _hidden(tmp_path) == []



def test_a_file_there_before_the_run_is_said_to_exist_not_to_have_appeared(tmp_path):
    """Writing a bundle without replacing onto a file that was there from the start said it
    'appeared while this run was writing it'; a file that does appear meanwhile still says so."""
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.output import staged_file, write_bytes

    there = tmp_path / "there.tcm"
    there.write_bytes(b"the user's bundle")
    with pytest.raises(OutputError, match="model bundle .*there.tcm already exists; it was left as it is"):
        write_bytes(there, b"new", overwrite=False, what="model bundle")
    assert there.read_bytes() == b"the user's bundle" and _hidden(tmp_path) == []
    late = tmp_path / "late.tcm"
    with pytest.raises(OutputError, match="appeared while this run was writing"):
        with staged_file(late, overwrite=False) as tmp:
            tmp.write_bytes(b"mine")
            late.write_bytes(b"another run's")
    assert late.read_bytes() == b"another run's" and _hidden(tmp_path) == []
    assert write_bytes(there, b"new", what="model bundle").read_bytes() == b"new"  # replacing, when allowed

# -- 4. multi-layer GeoPackages ---------------------------------------------------------------

def test_writing_a_layer_leaves_the_other_layers_alone(files, tmp_path):
    multi = _write_parcels(tmp_path / "multi.gpkg", {"zeta": 3, "parcels": 40, "roads": 2})
    others = {name: _features(multi, name) for name in ("zeta", "roads")}
    parcels = _features(multi, "parcels")
    # In place: the parcels layer gets the field, keeps its name and place; nothing else changes.
    assert main(_gdd_args(multi, files / "weather.csv", multi)) == EXIT_OUTPUT  # not without --overwrite
    assert main(["gdd", "--parcels", str(multi), "--weather", str(files / "weather.csv"), "--dates", "2023-05-01",
                 "--out", str(multi), "--overwrite"]) == 0
    # gdd reads the first layer, zeta, when none is named: it is the one written.
    assert _layers(multi) == ["zeta", "parcels", "roads"]
    assert "gdd_20230501" in _fields(multi, "zeta") and len(_features(multi, "zeta")) == 3
    assert _features(multi, "parcels") == parcels and _features(multi, "roads") == others["roads"]
    # Into another GeoPackage: a new layer beside its layers.
    assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", multi, "--overwrite", "--out-layer",
                          "gdd_small")) == 0
    assert _layers(multi) == ["zeta", "parcels", "roads", "gdd_small"]
    assert len(_features(multi, "gdd_small")) == 150 and _features(multi, "roads") == others["roads"]
    assert _features(multi, "parcels") == parcels


def test_classify_in_place_and_shapefile_reclassification(scene_region, tmp_path, capsys):
    """Item 4 and 6 through ``classify``; unclassified parcels get NULL."""
    pytest.importorskip("torch")
    multi = tmp_path / "lpis.gpkg"
    shutil.copy(scene_region["parcels"], multi)
    _write_parcels(multi, {"roads": 2})
    roads = _features(multi, "roads")
    args = ["classify", "--scenes", str(scene_region["scenes"]), "--weather", str(scene_region["weather"])]
    assert main(args + ["--parcels", str(multi), "--out", str(multi), "--overwrite"]) == 0
    capsys.readouterr()
    assert _layers(multi) == ["parcels", "roads"] and _features(multi, "roads") == roads
    ds = ogr.Open(str(multi))
    rows = {f["parcel_id"]: (f.IsFieldNull("crop_pred"), f["crop_status"]) for f in ds.GetLayerByName("parcels")}
    ds = None
    assert rows["p3"] == (True, "outside_scenes")  # NULL, not ''
    assert rows["p1"][0] is False and rows["p1"][1] == "ok"

    first, second = tmp_path / "first.shp", tmp_path / "second.shp"
    assert main(args + ["--parcels", str(scene_region["parcels"]), "--out", str(first)]) == 0
    said = capsys.readouterr().out
    assert "fields crop_pred, crop_conf, crop_statu" in said  # the names reported are the names written
    assert _fields(first)[-5:] == ["crop_pred", "crop_conf", "crop_statu", "crop_set", "crop_set_s"]
    assert main(args + ["--parcels", str(first), "--out", str(second)]) == 0
    assert _fields(second) == _fields(first)  # no crop_sta_1, no stale crop_statu
    ds = ogr.Open(str(second))
    assert sorted(f["crop_statu"] for f in ds.GetLayer(0)) == ["ok", "ok", "outside_scenes"]
    ds = None


# -- 5. a killed run --------------------------------------------------------------------------

def _kill_mid_write(proc: subprocess.Popen, folder: Path, known: set, timeout: float = 120) -> bool:
    """SIGKILL ``proc`` once a file it writes in ``folder`` (the output or a temporary file beside
    it, anything not in ``known``) holds data; False when it finished first."""

    def writing() -> bool:
        for entry in folder.iterdir():
            if entry.name in known:
                continue
            files = [entry] if entry.is_file() else list(entry.rglob("*")) if entry.is_dir() else []
            if any(f.is_file() and f.stat().st_size > 0 for f in files):
                return True
        return False

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            found = writing()
        except FileNotFoundError:  # a file went away between listing and looking
            found = False
        if found:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return True
        time.sleep(0.005)
    proc.communicate()
    return False


def test_killed_run_leaves_no_partial_file_and_its_staging_goes_next_run(files, tmp_path):
    new_dir, old_dir = tmp_path / "new", tmp_path / "old"
    new_dir.mkdir()
    old_dir.mkdir()
    good = old_dir / "good.gpkg"
    assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", good)) == 0
    before = good.read_bytes()
    # One run after the other: started together, the second could finish while the first is
    # being watched.
    new = _start(_gdd_args(files / "big.gpkg", files / "weather.csv", new_dir / "out.gpkg"))
    assert _kill_mid_write(new, new_dir, set())
    old = _start(_gdd_args(files / "big.gpkg", files / "weather.csv", good, "--overwrite"))
    assert _kill_mid_write(old, old_dir, {"good.gpkg"})
    assert not (new_dir / "out.gpkg").exists()
    assert good.read_bytes() == before
    assert _hidden(new_dir) and _hidden(old_dir)  # what a kill leaves ...
    for folder in (new_dir, old_dir):  # ... the next run writing there removes
        assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", folder / "next.csv")) == 0
        assert _hidden(folder) == []


# -- 6. the output checked before any work (item 14) ------------------------------------------

@pytest.mark.parametrize("case", ["extension", "missing folder", "folder", "proc", "field type"])
def test_classify_and_gdd_check_the_output_before_reading_anything(files, tmp_path, capsys, case):
    parcels = files / "small.gpkg"
    if case == "field type":  # crop_conf holds text: the real-valued confidence cannot replace it
        parcels = tmp_path / "typed.gpkg"
        _write_parcels(parcels, {"parcels": 3})
        ds = ogr.Open(str(parcels), 1)
        ds.GetLayer(0).CreateField(ogr.FieldDefn("crop_conf", ogr.OFTString))
        ds.GetLayer(0).CreateField(ogr.FieldDefn("gdd_20230501", ogr.OFTString))
        ds = None
    (tmp_path / "taken.gpkg").mkdir()
    out = {"extension": tmp_path / "out.xyz", "missing folder": tmp_path / "nowhere" / "out.gpkg",
           "folder": tmp_path / "taken.gpkg", "proc": Path("/proc/out.gpkg"), "field type": tmp_path / "o.gpkg"}[case]
    said = {"extension": "Cannot tell the format", "missing folder": "does not exist; create it first",
            "folder": "is a folder", "proc": "under /proc", "field type": "of type string"}[case]
    # The scenes and the weather do not exist: an answer about the output shows it came first.
    rc = main(["classify", "--parcels", str(parcels), "--scenes", str(tmp_path / "no-scenes"), "--weather",
               str(tmp_path / "no-weather.nc"), "--out", str(out)])
    assert rc == EXIT_OUTPUT and said in capsys.readouterr().err
    rc = main(_gdd_args(parcels, files / "weather.csv", out))
    assert rc == EXIT_OUTPUT and said in capsys.readouterr().err
    assert not out.is_file()


def test_extract_train_experiment_evaluate_check_their_outputs_first(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder.tcm").mkdir()
    missing = ["--parcels", str(tmp_path / "no.gpkg"), "--scenes", str(tmp_path / "no"), "--weather",
               str(tmp_path / "no.nc")]
    cases = [
        (["extract", *missing, "--out", str(tmp_path / "afile")], "is a file"),
        (["extract", *missing, "--out", str(tmp_path / "nowhere" / "ds")], "does not exist; create it first"),
        (["extract", *missing, "--out", "/proc/ds"], "under /proc"),
        (["train", "--data", str(tmp_path / "no"), "--out", str(tmp_path / "model.pt")], "Cannot tell the format"),
        (["train", "--data", str(tmp_path / "no"), "--out", str(tmp_path / "folder.tcm")], "is a folder"),
        (["train", "--data", str(tmp_path / "no"), "--out", "/sys/m.tcm"], "under /sys"),
        (["experiment", "--regions", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "afile")],
         "is a file"),
        (["evaluate", "--model", str(tmp_path / "no.tcm"), "--data", str(tmp_path / "no"), "--json",
          str(tmp_path / "folder.tcm")], "is a folder"),
    ]
    for args, said in cases:
        assert main(args) == EXIT_OUTPUT, args
        assert said in capsys.readouterr().err, args
    # An existing folder that is not a dataset is never replaced, even with --overwrite.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    assert main(["extract", *missing, "--out", str(tmp_path / "notes"), "--overwrite"]) == EXIT_OUTPUT
    assert "not a ThermoCrop dataset folder" in capsys.readouterr().err
    # A bundle, or the checkpoint of an unfinished run, is replaced only when asked.
    (tmp_path / "m.tcm").write_bytes(b"bundle")
    assert main(["train", "--data", str(tmp_path / "no"), "--out", str(tmp_path / "m.tcm")]) == EXIT_OUTPUT
    assert "already exists" in capsys.readouterr().err
    (tmp_path / "n.ckpt").write_bytes(b"checkpoint")
    assert main(["train", "--data", str(tmp_path / "no"), "--out", str(tmp_path / "n.tcm")]) == EXIT_OUTPUT
    assert "--resume" in capsys.readouterr().err


def test_a_read_only_folder_is_reported_before_any_work(files, tmp_path):
    """As a user who may not write there (root may write anywhere, so the run drops to nobody)."""
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"thermocrop-ro-{os.getpid()}"
    folder.mkdir()
    try:
        shutil.copy(files / "small.gpkg", folder / "parcels.gpkg")
        shutil.copy(files / "weather.csv", folder / "weather.csv")
        folder.chmod(0o555)
        user = 65534 if os.geteuid() == 0 else None
        proc = subprocess.run([sys.executable, "-m", "thermocrop.cli.main",
                               *_gdd_args(folder / "parcels.gpkg", folder / "weather.csv", folder / "out.gpkg")],
                              capture_output=True, text=True, user=user, cwd="/",
                              env={**os.environ, "HOME": "/tmp"})
        assert proc.returncode == EXIT_OUTPUT and "Cannot write in the folder" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and sorted(p.name for p in folder.iterdir()) == ["parcels.gpkg",
                                                                                              "weather.csv"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


# -- smaller: geometry types and M values ----------------------------------------------------

def test_declared_geometry_type_is_the_stored_one_and_m_values_are_kept(files, tmp_path, caplog):
    from thermocrop.core.io.vector import write_with_fields

    source = tmp_path / "odd.gpkg"
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(source))
    mixed = ds.CreateLayer("mixed", srs, ogr.wkbPolygon)  # declared Polygon, holding a MultiPolygon
    for wkt in ("POLYGON ((0 0,1 0,1 1,0 0))", "MULTIPOLYGON (((2 0,3 0,3 1,2 0)),((4 0,5 0,5 1,4 0)))"):
        f = ogr.Feature(mixed.GetLayerDefn())
        f.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        mixed.CreateFeature(f)
    measured = ds.CreateLayer("measured", srs, ogr.wkbPolygonM)
    f = ogr.Feature(measured.GetLayerDefn())
    f.SetGeometry(ogr.CreateGeometryFromWkt("POLYGON M ((0 0 1,1 0 2,1 1 3,0 0 1))"))
    measured.CreateFeature(f)
    ds = None

    out = write_with_fields(source, {"x": np.array([1.0, 2.0])}, tmp_path / "mixed.gpkg", layer="mixed")
    ds = ogr.Open(str(out))
    layer = ds.GetLayer(0)
    assert layer.GetGeomType() == ogr.wkbMultiPolygon
    assert {f.GetGeometryRef().GetGeometryType() for f in layer} == {ogr.wkbMultiPolygon}
    ds = None
    out = write_with_fields(source, {"x": np.array([1.0])}, tmp_path / "measured.gpkg", layer="measured")
    ds = ogr.Open(str(out))
    feature = ds.GetLayer(0).GetNextFeature()
    ring = feature.GetGeometryRef().GetGeometryRef(0)
    assert feature.GetGeometryRef().IsMeasured() and [ring.GetM(i) for i in range(4)] == [1, 2, 3, 1]
    ring = feature = ds = None
    with caplog.at_level("WARNING"):
        write_with_fields(source, {"x": np.array([1.0])}, tmp_path / "measured.geojson", layer="measured")
    assert "M (measure) values" in caplog.text and "GeoJSON files cannot hold them" in caplog.text


# -- a tiny region to classify (three scenes of 30 x 30 px, three parcels, one outside) --------

@pytest.fixture(scope="module")
def scene_region(tmp_path_factory):
    rasterio = pytest.importorskip("rasterio")
    from rasterio.transform import from_origin

    from thermocrop.core.scenes.bands import S2_BANDS

    root = tmp_path_factory.mktemp("scenes")
    rng = np.random.default_rng(1)
    x0, y0 = 400000.0, 5500000.0
    for date in ("20230412", "20230602", "20230720"):
        path = root / "scenes" / f"S2A_MSIL1C_{date}T100031_N0509_R122_T33UVP_{date}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=30, height=30, count=10, dtype="uint16",
                           crs="EPSG:32633", transform=from_origin(x0, y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1500, 5000, size=(10, 30, 30), dtype=np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(root / "parcels.gpkg"))
    layer = ds.CreateLayer("parcels", srs, ogr.wkbPolygon)
    layer.CreateField(ogr.FieldDefn("parcel_id", ogr.OFTString))
    for pid, (a, b) in {"p1": (13, 97), "p2": (113, 197), "p3": (1013, 1097)}.items():
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("parcel_id", pid)
        f.SetGeometry(ogr.CreateGeometryFromWkt(
            f"POLYGON (({x0 + a} {y0 - b},{x0 + b} {y0 - b},{x0 + b} {y0 - a},{x0 + a} {y0 - a},{x0 + a} {y0 - b}))"))
        layer.CreateFeature(f)
    ds = None
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2024-01-01"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days))
    return {"scenes": root / "scenes", "parcels": root / "parcels.gpkg", "weather": root / "weather.csv"}


# -- 7. accuracy reports: never over an input or another report -------------------------------

def _classified(path: Path, n: int = 12) -> Path:
    """A classified GeoPackage: crop_pred on every parcel, truth on every other one."""
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    layer = ds.CreateLayer("classified", srs, ogr.wkbPolygon)
    layer.CreateField(ogr.FieldDefn("crop_pred", ogr.OFTString))
    layer.CreateField(ogr.FieldDefn("truth", ogr.OFTString))
    for i in range(n):
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("crop_pred", "wheat" if i % 3 else "maize")
        if i % 2 == 0:
            f.SetField("truth", "wheat" if i % 4 else "maize")
        x = X0 + i * 50.0
        f.SetGeometry(ogr.CreateGeometryFromWkt(f"POLYGON (({x} {Y0},{x + 40} {Y0},{x + 40} {Y0 + 40},{x} {Y0 + 40},"
                                                f"{x} {Y0}))"))
        layer.CreateFeature(f)
    ds = None
    return path


def _accuracy(layer: Path, html: Path, *more: str) -> list[str]:
    return ["accuracy", "--layer", str(layer), "--reference", "truth", "--html", str(html), *more]


def test_accuracy_reports_never_replace_the_layer_or_each_other(tmp_path, capsys):
    layer = _classified(tmp_path / "classified.gpkg")
    before = layer.read_bytes()
    (tmp_path / "link.gpkg").symlink_to(layer)
    os.link(layer, tmp_path / "hard.gpkg")
    (tmp_path / "sub").mkdir()
    areas = tmp_path / "areas.csv"
    areas.write_text("class,area\nwheat,80\nmaize,20\n")
    same_layer = [layer, tmp_path / "sub" / ".." / "classified.gpkg", tmp_path / "link.gpkg", tmp_path / "hard.gpkg"]
    for name in same_layer:
        for option in ("--html", "--csv", "--matrix-csv", "--json"):
            html = name if option == "--html" else tmp_path / "r.html"
            more = [] if option == "--html" else [option, str(name)]
            assert main(_accuracy(layer, html, *more, "--overwrite")) == EXIT_OUTPUT, (name, option)
            said = capsys.readouterr().err
            assert "is the input" in said and option in said, said
    # The class-area table is an input too.
    assert main(_accuracy(layer, tmp_path / "r.html", "--class-areas", str(areas), "--csv", str(areas),
                          "--overwrite")) == EXIT_OUTPUT
    assert "is the input" in capsys.readouterr().err
    # Two reports of one run on one file, under one name or two: refused before anything is written.
    for html, csv in ((tmp_path / "r.html", tmp_path / "r.html"), (tmp_path / "r.html", tmp_path / "sub/../r.html")):
        assert main(_accuracy(layer, html, "--csv", str(csv))) == EXIT_OUTPUT
        said = capsys.readouterr().err
        assert "are the same file" in said and "--html" in said and "--csv" in said, said
    assert main(_accuracy(layer, tmp_path / "r.html", "--matrix-csv", str(tmp_path / "m"), "--json",
                          str(tmp_path / "sub" / ".." / "m"))) == EXIT_OUTPUT
    assert "are the same file" in capsys.readouterr().err
    assert layer.read_bytes() == before and areas.read_text() == "class,area\nwheat,80\nmaize,20\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["areas.csv", "classified.gpkg", "hard.gpkg", "link.gpkg",
                                                          "sub"]
    # The same through a subprocess, the issue's own case: exit code 5, no traceback.
    rc, said = _finish(_start(_accuracy(layer, layer, "--overwrite")))
    assert rc == EXIT_OUTPUT and "is the input" in said and "Traceback" not in said, said
    assert layer.read_bytes() == before
    # Good outputs are written, each whole.
    assert main(_accuracy(layer, tmp_path / "r.html", "--json", str(tmp_path / "r.json"))) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "r.csv").read_text().startswith("class,") and _hidden(tmp_path) == []


def test_accuracy_report_writes_that_fail_are_named_errors(tmp_path):
    layer = _classified(tmp_path / "classified.gpkg")
    # A full disk (a file size limit below the report's size): exit 5, no report, nothing left.
    rc, said = _finish(_start(_accuracy(layer, tmp_path / "full.html"), limit=2000))
    assert rc == EXIT_OUTPUT and "the disk may be full" in said and "Traceback" not in said, said
    assert not (tmp_path / "full.html").exists() and not (tmp_path / "full.csv").exists()
    assert _hidden(tmp_path) == []
    # A real full file system, where this machine lets us mount a 64 KB tmpfs.
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                                            capture_output=True).returncode == 0:
        try:
            fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):  # until the file system is full
                while os.write(fd, b"x" * 4096):
                    pass
            os.close(fd)
            rc, said = _finish(_start(_accuracy(layer, mount / "r.html")))
            assert rc == EXIT_OUTPUT and "the disk may be full" in said and "Traceback" not in said, said
            assert [p.name for p in mount.iterdir()] == ["filler"]
        finally:
            subprocess.run(["umount", str(mount)], check=True)
    # A read-only folder (as a user who may not write there): refused before the layer is read.
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"thermocrop-ro-acc-{os.getpid()}"
    folder.mkdir()
    try:
        shutil.copy(layer, folder / "classified.gpkg")
        folder.chmod(0o555)
        proc = subprocess.run([sys.executable, "-m", "thermocrop.cli.main",
                               *_accuracy(folder / "classified.gpkg", folder / "r.html")],
                              capture_output=True, text=True, user=65534 if os.geteuid() == 0 else None, cwd="/",
                              env={**os.environ, "HOME": "/tmp"})
        assert proc.returncode == EXIT_OUTPUT and "Cannot write in the folder" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and [p.name for p in folder.iterdir()] == ["classified.gpkg"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


# -- 8. output names longer than the file system allows ---------------------------------------

def test_output_names_too_long_for_the_file_system_are_refused_first(files, tmp_path, capsys):
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    layer = _classified(tmp_path / "classified.gpkg")
    cases = [
        (tmp_path / ("x" * (name_max + 20) + ".gpkg"), f"at most {name_max} bytes"),
        # fits the file system, but not with what is written beside it while staging
        (tmp_path / ("y" * (name_max - 8) + ".gpkg"), "needs 15 more"),
        (tmp_path / ("é" * (name_max // 2 + 1)) / "out.gpkg", "folder name"),  # two bytes a character
        (tmp_path / Path(*["d" * 200] * 22) / "out.gpkg", "limit of"),
    ]
    for out, said in cases:
        # The scenes and the weather do not exist: the answer shows the name was checked first.
        assert main(["classify", "--parcels", str(files / "small.gpkg"), "--scenes", str(tmp_path / "none"),
                     "--weather", str(tmp_path / "none.nc"), "--out", str(out)]) == EXIT_OUTPUT
        assert said in capsys.readouterr().err, out
        assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", out)) == EXIT_OUTPUT
        assert said in capsys.readouterr().err, out
        html = out.with_suffix(".html")
        assert main(_accuracy(layer, html)) == EXIT_OUTPUT
        assert said in capsys.readouterr().err, html
    rc, said = _finish(_start(_gdd_args(files / "small.gpkg", files / "weather.csv", cases[0][0])))
    assert rc == EXIT_OUTPUT and "Traceback" not in said and f"at most {name_max} bytes" in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classified.gpkg"]
    # A name that fits with its margin is written.
    fits = tmp_path / ("z" * (name_max - 15 - 4) + ".csv")
    assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", fits)) == 0 and fits.is_file()


# -- 9. another program's transaction on a GeoPackage -----------------------------------------

HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "write":
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO notes VALUES ('written while the run ran')")
else:
    db.execute("SELECT count(*) FROM notes").fetchone()
print("ready", flush=True)
sys.stdin.readline()
if sys.argv[2] == "write":
    db.execute("COMMIT")
db.close()
print("committed", flush=True)
"""


def _notes(path: Path, mode: str) -> Path:
    """A table of another program's notes in a GeoPackage, in journal ``mode``."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("CREATE TABLE notes (text TEXT)")
    db.close()
    return path


class _Holder:
    """Another program holding ``path`` open in a subprocess: an open write transaction
    (``write``) or, in WAL mode, only a connection (``read``)."""

    def __init__(self, path: Path, what: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), what], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def finish(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "committed"
        self.proc.wait(timeout=30)


def _rows(path: Path) -> list:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT text FROM notes").fetchall()


@pytest.mark.parametrize("mode,what", [("delete", "write"), ("wal", "write"), ("wal", "read")])
def test_overwrite_stops_while_another_program_is_changing_the_geopackage(files, tmp_path, mode, what):
    target = _notes(Path(shutil.copy(files / "small.gpkg", tmp_path / "lpis.gpkg")), mode)
    holder = _Holder(target, what)
    try:
        for out in (target, tmp_path / "other.gpkg"):  # in place, and a layer written into it from elsewhere
            parcels = target if out == target else files / "small.gpkg"
            args = _gdd_args(parcels, files / "weather.csv", target, "--overwrite")
            if out != target:
                args += ["--out-layer", "gdd"]
            rc, said = _finish(_start(args))
            assert rc == EXIT_OUTPUT and str(target) in said and "is in use: another program" in said, said
            assert "Traceback" not in said
    finally:
        holder.finish()
    # That program's change was committed to the file the run left alone.
    assert _rows(target) == ([("written while the run ran",)] if what == "write" else [])
    assert "gdd_20230501" not in _fields(target, "parcels")
    # Once it is done, the run goes through and keeps the program's table.
    assert main(_gdd_args(target, files / "weather.csv", target, "--overwrite")) == 0
    assert "gdd_20230501" in _fields(target, "parcels")
    assert _rows(target) == ([("written while the run ran",)] if what == "write" else [])
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("mode", ["delete", "wal"])
def test_the_final_step_stops_for_a_transaction_begun_during_the_run(files, tmp_path, mode):
    """A program that begins its change after the preflight: the replacing rename is refused."""
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import VectorOutput, check_vector_output

    target = _notes(Path(shutil.copy(files / "small.gpkg", tmp_path / "lpis.gpkg")), mode)
    before = _features(target, "parcels")
    with VectorOutput(check_vector_output(target, overwrite=True, layer="late")) as output:
        _write_parcels(output.path, {"late": 4})
        holder = _Holder(target, "write")
        try:
            with pytest.raises(OutputError, match="another program"):
                output.commit(4, ["parcel_id"])
        finally:
            holder.finish()
    assert _rows(target) == [("written while the run ran",)] and "late" not in _layers(target)
    assert _features(target, "parcels") == before and _hidden(tmp_path) == []


def test_a_geopackage_with_an_unfinished_change_in_its_journal_is_not_replaced(files, tmp_path):
    """A -journal that still holds a change would be rolled back into the new file; a zeroed
    one (``journal_mode=PERSIST`` after a commit) is harmless."""
    target = Path(shutil.copy(files / "small.gpkg", tmp_path / "lpis.gpkg"))
    journal = tmp_path / "lpis.gpkg-journal"
    journal.write_bytes(bytes.fromhex("d9d505f920a163d7") + bytes(504))
    before = target.read_bytes()
    rc, said = _finish(_start(_gdd_args(target, files / "weather.csv", target, "--overwrite")))
    assert rc == EXIT_OUTPUT and "unfinished change in its -journal" in said and str(target) in said, said
    assert target.read_bytes() == before
    journal.write_bytes(bytes(512))
    assert main(_gdd_args(target, files / "weather.csv", target, "--overwrite")) == 0
    assert "gdd_20230501" in _fields(target, "parcels")


# -- 10. cleanup removes only what a run made -------------------------------------------------

def test_cleanup_leaves_the_users_files_that_look_like_staging(files, tmp_path):
    import socket

    from thermocrop.core.io.output import STAGING_MARKER, STAGING_PREFIX

    host = socket.gethostname()
    old = time.time() - 3 * 24 * 3600
    mine = {  # a file, a folder named exactly as a dead run's staging folder, and one of another host
        f"{STAGING_PREFIX}notes.txt": None,
        f"{STAGING_PREFIX}999999999.1.0a1b2c3d4e5f6a7b.{host}": "thesis.tex",
        f"{STAGING_PREFIX}999999999.1.feedfacecafebeef.elsewhere": "data.csv",
        # one with a marker, but not the token its name ends with
        f"{STAGING_PREFIX}999999999.1.1111111111111111.{host}": STAGING_MARKER,
    }
    for name, inside in mine.items():
        path = tmp_path / name
        if inside is None:
            path.write_text("my notes")
        else:
            path.mkdir()
            (path / inside).write_text("my work")
        os.utime(path, (old, old))
    # What a killed run really leaves is removed; the user's entries stay, with their content.
    proc = _start(_gdd_args(files / "big.gpkg", files / "weather.csv", tmp_path / "out.gpkg"))
    assert _kill_mid_write(proc, tmp_path, set(mine))
    assert len(_hidden(tmp_path)) == len(mine) + 1
    assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", tmp_path / "next.csv")) == 0
    assert _hidden(tmp_path) == sorted(mine)
    for name, inside in mine.items():
        path = tmp_path / name
        assert (path.read_text() if inside is None else (path / inside).read_text()) in ("my notes", "my work")


# -- 11. --resume after an input changed ------------------------------------------------------

@pytest.fixture(scope="module")
def many_parcels(scene_region, tmp_path_factory):
    """The scene region with 36 parcels (one partition each with --chunk-size 1)."""
    root = tmp_path_factory.mktemp("resume")
    shutil.copytree(scene_region["scenes"], root / "scenes")
    shutil.copy(scene_region["weather"], root / "weather.csv")
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(root / "parcels.gpkg"))
    layer = ds.CreateLayer("parcels", srs, ogr.wkbPolygon)
    layer.CreateField(ogr.FieldDefn("parcel_id", ogr.OFTString))
    for i in range(36):
        x, y = X0 + 5 + (i % 6) * 50.0, Y0 - 45 - (i // 6) * 50.0
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("parcel_id", f"p{i}")
        f.SetGeometry(ogr.CreateGeometryFromWkt(f"POLYGON (({x} {y},{x + 35} {y},{x + 35} {y + 35},{x} {y + 35},"
                                                f"{x} {y}))"))
        layer.CreateFeature(f)
    ds = None
    return root


def _rewrite_in_place(path: Path) -> bytes:
    """Write other pixel values into ``path`` (same size), then give it back its times; returns the old bytes."""
    old, st = path.read_bytes(), path.stat()
    rasterio = pytest.importorskip("rasterio")
    with rasterio.open(path, "r+") as ds:
        ds.write(ds.read() // 2 + 100)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == len(old) and path.read_bytes() != old
    return old


def test_resume_refuses_inputs_that_changed_since_the_interrupted_run(many_parcels, tmp_path):
    pytest.importorskip("torch")
    root, run, out = many_parcels, tmp_path / "run", tmp_path / "classified.gpkg"
    args = ["classify", "--parcels", str(root / "parcels.gpkg"), "--scenes", str(root / "scenes"), "--weather",
            str(root / "weather.csv"), "--out", str(out), "--run-folder", str(run), "--chunk-size", "1"]
    proc = _start(args)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not list(run.glob("part-*.parquet")):
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    done = len(list(run.glob("part-*.parquet")))
    assert (run / "run.json").is_file() and 1 <= done < 36, done  # an interrupted run
    scene = sorted((root / "scenes").iterdir())[1]
    original, times = scene.read_bytes(), scene.stat()
    _rewrite_in_place(scene)  # same size, same modification time, other pixels
    rc, said = _finish(_start(args + ["--resume"]))
    assert rc == EXIT_OUTPUT and str(scene) in said and "Start afresh" in said and "Traceback" not in said, said
    assert not out.exists() and len(list(run.glob("part-*.parquet"))) == done
    # The same scene put back: the run resumes from its partitions and finishes.
    scene.write_bytes(original)
    os.utime(scene, ns=(times.st_atime_ns, times.st_mtime_ns))
    rc, said = _finish(_start(args + ["--resume"]))
    assert rc == 0 and f"{done} from the interrupted run" in said, said
    assert out.is_file() and not run.exists()


def test_the_run_folder_of_a_partitioned_run_is_not_its_output(files, tmp_path, capsys):
    out = tmp_path / "gdd.csv"
    for run in (out, tmp_path / "sub" / ".." / "gdd.csv"):
        assert main(_gdd_args(files / "small.gpkg", files / "weather.csv", out, "--run-folder", str(run))) \
            == EXIT_OUTPUT
        said = capsys.readouterr().err
        assert "--run-folder" in said and "are the same file" in said, said
    assert list(tmp_path.iterdir()) == []
