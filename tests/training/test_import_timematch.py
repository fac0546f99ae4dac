"""TimeMatch tiles built here from the format's description, imported and checked value by
value: pixels (channels reordered by name, dates sorted, large parcels subsampled), day
positions, GDD, labels (reference semantics), blocks and folds; hostile and broken files."""

import json
import os
import pickle
import re
import shutil
import zlib

import numpy as np
import pytest
import zarr
from fake_timematch import TM_BANDS, gdd_by_hand, make_tile, pixel_value

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import InputError
from thermocrop.core.io.zarr_read import ZarrError
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.training.importers.safe_pickle import UnsafePickleError, safe_load
from thermocrop.training.importers.timematch import import_timematch

TILE = "denmark/32VNH/2017"
DATES = [20170320, 20170105, 20170611]  # metadata order, not sorted
SIZES = [3, 70, 1, 5]
LABELS = [np.float64(1.0), np.float64("nan"), np.float64(7.0), np.float64(99.0)]
BLOCKS = [4, 9, 4, 17]
FOLDS = [{"train": [4, 17], "val": [9], "test": []}, {"train": [9], "val": [4], "test": [17]}]


def series(i, days=200):
    d = np.arange(days)
    tmin = -6.0 + 0.1 * d + 0.5 * i
    tmax = tmin + 7.0 + 0.05 * d
    return tmin, tmax


@pytest.fixture
def tm_root(tmp_path):
    root = tmp_path / "timematch"
    tmin, tmax = zip(*(series(i) for i in range(4)))
    tmin = [a.copy() for a in tmin]
    tmax = [a.copy() for a in tmax]
    tmin[1][30:33] = -9999.0  # a 3-day E-OBS gap: filled
    tmax[3][150:156] = -9999.0  # 6 days missing before the last date: no weather
    make_tile(root, TILE, dates=DATES, labels=LABELS, blocks=BLOCKS, sizes=SIZES, tmin=tmin, tmax=tmax,
              folds=FOLDS)
    (tmp_path / "dk.csv").write_text("code,class\n1,corn\n7,spring_oat\n3,winter_wheat\n")
    return root


def test_tile_equals_the_format_description(tm_root, tmp_path, capsys):
    out = tmp_path / "DK1"
    rc = main(["import", "timematch", str(tm_root), "--tile", "DK1", "--class-map", str(tmp_path / "dk.csv"),
               "--out", str(out)])
    assert rc == 0
    assert "4 parcels x 3 dates x 64 pixel slots" in capsys.readouterr().out
    ps = open_dataset(out)
    sorted_dates = sorted(DATES)
    assert [str(d) for d in ps.dates] == ["2017-01-05", "2017-03-20", "2017-06-11"]
    positions = [4, 78, 161]  # days after 2017-01-01
    assert ps.day_of_season.tolist() == positions
    assert ps.parcel_ids.tolist() == ["1000", "1001", "1002", "1003"]
    assert ps.bands == S2_BANDS and ps.classes == CROP_CLASSES
    # corn; NaN code -> unknown; spring_oat is not among the nine -> dropped; 99 unmapped -> unknown
    assert ps.labels.tolist() == [CROP_CLASSES.index("corn"), CROP_CLASSES.index("unknown"), -1,
                                  CROP_CLASSES.index("unknown")]
    assert ps.blocks.tolist() == BLOCKS
    assert ps.meta["splits"] == FOLDS and ps.meta["tile"] == TILE
    for i, s in enumerate(SIZES[:3]):  # parcel 3 has no weather (below)
        for t_new, date in enumerate(sorted_dates):
            t_old = DATES.index(date)
            expect = np.array([[pixel_value(i, t_old, TM_BANDS.index(b), p) for p in range(s)] for b in S2_BANDS])
            if s <= 64:
                assert (ps.pixels[i, t_new, :, :s] == expect).all()
                assert ps.pixel_mask[i, t_new, :s].all() and not ps.pixel_mask[i, t_new, s:].any()
                assert (ps.pixels[i, t_new, :, s:] == 0).all()
            else:  # 64 distinct pixels of the 70, the same ones on every date
                got = ps.pixels[i, t_new]
                cols = [int(np.flatnonzero((expect == got[:, [k]]).all(axis=0))[0]) for k in range(64)]
                assert len(set(cols)) == 64 and ps.pixel_mask[i, t_new].all()
                if t_new == 0:
                    first = cols
                assert cols == first
    for i in range(3):
        tmin, tmax = series(i)
        if i == 1:
            tmin = tmin.copy()
            tmin[30:33] = np.interp([30, 31, 32], [29, 33], tmin[[29, 33]])
        expect = [gdd_by_hand(tmin, tmax, p) for p in positions]
        np.testing.assert_allclose(ps.gdd[i], expect, rtol=1e-5)
        assert ps.status[i] == "ok" and ps.date_mask[i].all()
    assert ps.status[3] == "no_weather" and not ps.date_mask[3].any() and not ps.pixel_mask[3].any()
    assert (ps.pixels[3] == 0).all() and (ps.gdd[3] == 0).all()


def test_numpy2_pickles_tile_classes_and_pixel_cap(tmp_path):
    root = tmp_path / "tm"
    tmin, tmax = zip(*(series(i) for i in range(2)))
    make_tile(root, "france/31TCJ/2017", dates=[20170110, 20170301], labels=["BTH", "XYZ"], blocks=[0, 1],
              sizes=[5, 2], tmin=tmin, tmax=tmax, numpy2=True)
    assert b"numpy._core.multiarray" in (root / "france/31TCJ/2017/meta/metadata.pkl").read_bytes()
    (root / "dataset_classes.json").write_text('{"france/31TCJ/2017": ["sunflowers", "unknown", "winter_wheat"]}')
    out = import_timematch(root, "FR2", tmp_path / "FR2", class_map={"BTH": "winter_wheat"}, classes="tile",
                           max_pixels=3, seed=5)
    ps = open_dataset(out)
    assert ps.classes == ("sunflowers", "unknown", "winter_wheat")
    assert ps.labels.tolist() == [2, 1]
    assert ps.pixels.shape == (2, 2, 10, 3)
    assert ps.pixel_mask[1].sum(axis=1).tolist() == [2, 2]
    again = open_dataset(import_timematch(root, "FR2", tmp_path / "FR2b", class_map={"BTH": "winter_wheat"},
                                          classes="tile", max_pixels=3, seed=5))
    assert (again.pixels[:] == ps.pixels[:]).all()  # same seed, same pixels


class Hostile:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_hostile_pickle_is_refused_before_anything_runs(tm_root, tmp_path):
    marker = tmp_path / "ran"
    Hostile.marker = marker
    path = tm_root / TILE / "meta" / "metadata.pkl"
    path.write_bytes(pickle.dumps({"dates": [20170105], "parcels": [Hostile()]}, protocol=2))
    with pytest.raises(UnsafePickleError, match="system"):
        safe_load(path)
    with pytest.raises(InputError, match="refused"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not marker.exists() and not (tmp_path / "out").exists()
    for proto in (0, 4, 5):
        path.write_bytes(pickle.dumps([1, Hostile()], protocol=proto))
        with pytest.raises(UnsafePickleError):
            safe_load(path)
    assert not marker.exists()
    path.write_bytes(b"\x80\x02}q\x00")  # truncated
    with pytest.raises(InputError, match="cannot be read as a pickle"):
        safe_load(path)


def test_broken_stores_are_named_and_leave_nothing(tm_root, tmp_path):
    store = tm_root / TILE / "data" / "2.zarr"
    for f in store.iterdir():
        f.unlink() if f.is_file() else None
    (store / "zarr.json").write_text('{"zarr_format": 3}')
    with pytest.raises(InputError, match="2.zarr is a zarr format 3 store"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    (store / "zarr.json").unlink()
    store.rmdir()
    with pytest.raises(InputError, match="2.zarr is missing"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    with pytest.raises(InputError, match="does not exist"):
        import_timematch(tm_root, "austria/33UVP/2017", tmp_path / "out", class_map=tmp_path / "dk.csv")


def test_country_preset_is_the_default_class_map(tmp_path):
    root = tmp_path / "tm"
    tmin, tmax = zip(*(series(i) for i in range(4)))
    codes = [np.float64(1.0), np.float64("nan"), np.float64(3.0), np.float64(11.0)]  # Danish afgkode
    make_tile(root, TILE, dates=[20170110, 20170301], labels=codes, blocks=[0, 0, 1, 1], sizes=[2, 2, 2, 2],
              tmin=tmin, tmax=tmax)
    ps = open_dataset(import_timematch(root, "DK1", tmp_path / "DK1"))
    # 1 spring barley, NaN unknown, 3 spring oats (not among the nine: left out), 11 winter wheat
    names = [CROP_CLASSES[i] if i >= 0 else None for i in ps.labels]
    assert names == ["spring_barley", "unknown", None, "winter_wheat"]


# --------------------------------------------------------------------------------------------
# Tampered tiles: nothing in a store runs, nothing missing reads as zeros


class OpensAFile:
    """Unpickling it creates ``marker`` (as a hostile chunk would run any other call)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _retag(store, **changes):
    meta = json.loads((store / ".zarray").read_text())
    meta.update(changes)
    (store / ".zarray").write_text(json.dumps(meta))


def _pickle_store(store, marker):
    """A store whose one chunk is a pickle, decoded by the pickle codec its .zarray names."""
    _retag(store, compressor={"id": "pickle", "protocol": 2}, filters=None)
    for chunk in [p for p in store.iterdir() if not p.name.startswith(".")]:
        chunk.unlink()
    (store / "0.0.0").write_bytes(pickle.dumps(OpensAFile(marker), protocol=2))


def test_a_pickle_codec_store_runs_nothing_and_exits_with_a_named_error(tm_root, tmp_path, capsys):
    # The hostile store is real: zarr itself decodes it with pickle.loads and the file appears.
    proof = tmp_path / "proof.zarr"
    zarr.open(str(proof), mode="w", shape=(3, 10, 4), dtype=np.uint16)[...] = 1
    _pickle_store(proof, tmp_path / "created-by-zarr")
    with pytest.raises(Exception):  # noqa: B017 (whatever the payload leaves behind after it ran)
        zarr.open_array(str(proof), mode="r")[...]
    assert (tmp_path / "created-by-zarr").exists()

    marker = tmp_path / "created-by-the-tile"
    _pickle_store(tm_root / TILE / "data" / "2.zarr", marker)
    rc = main(["import", "timematch", str(tm_root), "--tile", "DK1", "--class-map", str(tmp_path / "dk.csv"),
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == EXIT_INPUT
    assert not marker.exists() and not (tmp_path / "out").exists()
    assert "parcel 1002" in err and "2.zarr" in err and "'pickle'" in err and "Traceback" not in err


@pytest.mark.parametrize("changes, named", [
    ({"filters": [{"id": "pickle"}]}, "filter 'pickle'"),
    ({"filters": [{"id": "vlen-utf8"}]}, "filter 'vlen-utf8'"),
    ({"filters": [{"id": "categorize", "labels": ["a"], "dtype": "<U1"}]}, "filter 'categorize'"),
    ({"compressor": {"id": "msgpack2"}}, "codec 'msgpack2'"),
    ({"compressor": {"id": "json2"}}, "codec 'json2'"),
    ({"dtype": "|O", "filters": [{"id": "pickle"}]}, "dtype '|O'"),
    ({"dtype": [["a", "<u2"]]}, "dtype"),
    ({"dtype": "<U4"}, "dtype '<U4'"),
])
def test_codecs_filters_and_dtypes_outside_the_lists_are_refused(tm_root, tmp_path, changes, named):
    store = tm_root / TILE / "data" / "1.zarr"
    _retag(store, **changes)
    with pytest.raises(ZarrError, match=re.escape(named)):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not (tmp_path / "out").exists()


def _chunked_store(tm_root, parcel=1, size=70):
    """Parcel ``parcel`` written again in 3 x 2 x 3 = 18 chunks; returns (store, its values)."""
    t, c, p = np.meshgrid(np.arange(3), np.arange(10), np.arange(size), indexing="ij")
    x = pixel_value(parcel, t, c, p).astype(np.uint16)
    store = tm_root / TILE / "data" / f"{parcel}.zarr"
    zarr.open(str(store), mode="w", shape=x.shape, chunks=(1, 5, 30), dtype=np.uint16)[...] = x
    return store, x


def test_a_missing_chunk_is_named_not_read_as_zeros(tm_root, tmp_path):
    store, x = _chunked_store(tm_root)
    assert len([p for p in store.iterdir() if not p.name.startswith(".")]) == 18
    (store / "2.1.1").unlink()
    # zarr reads the lost pixels as its fill value, 0, without a word ...
    lost = zarr.open_array(str(store), mode="r")[...]
    assert (lost[2, 5:10, 30:60] == 0).all() and (x[2, 5:10, 30:60] != 0).all()
    # ... ThermoCrop names the parcel, the store and the chunk, and writes nothing.
    with pytest.raises(ZarrError, match=r"parcel 1001 \(.*1\.zarr\) lacks chunk 2\.1\.1: .* need 18 chunk files "
                                         r"and 17 are present"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not (tmp_path / "out").exists()


def test_a_corrupt_or_oversized_chunk_is_named(tm_root, tmp_path):
    store, x = _chunked_store(tm_root)
    good = (store / "0.0.0").read_bytes()
    (store / "0.0.0").write_bytes(good[: len(good) // 2])
    with pytest.raises(ZarrError, match=r"parcel 1001 .*chunk 0\.0\.0 is damaged"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    # A chunk of 300 bytes (1 x 5 x 30 uint16) whose 50 kB file would unpack to 50 MB is stopped
    # while it unpacks; a file far larger than any compressed chunk is not opened.
    _retag(store, compressor={"id": "zlib", "level": 9})
    bomb = zlib.compress(bytes(50 * 1024 * 1024), 9)
    assert len(bomb) < 60_000
    (store / "0.0.0").write_bytes(bomb)
    with pytest.raises(ZarrError, match="chunk 0.0.0 is damaged .*more than the 300 bytes a chunk holds"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    (store / "0.0.0").write_bytes(bytes(200_000))
    with pytest.raises(ZarrError, match="chunk 0.0.0 is damaged .the file holds 200,000 bytes for a chunk of 300"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not (tmp_path / "out").exists()


def test_a_store_declaring_a_huge_array_is_refused_before_allocating(tm_root, tmp_path):
    store = tm_root / TILE / "data" / "0.zarr"
    _retag(store, shape=[3, 10, 2_000_000_000], chunks=[3, 10, 2_000_000_000])
    with pytest.raises(ZarrError, match=r"declares an array of shape \(3, 10, 2000000000\) \(120,000,000,000 bytes\)"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    _retag(store, shape=[3, 10, 1_000_000], chunks=[1, 1, 1])  # 60 MB in 30 million chunk files
    with pytest.raises(ZarrError, match=r"is split into 30,000,000 chunks of \(1, 1, 1\)"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    _retag(store, shape=[3, 11, 3], chunks=[3, 11, 3])
    with pytest.raises(ZarrError, match=r"shape \(3, 11, 3\); expected \(3, 10, 'any'\)"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")


def test_paths_in_a_tile_stay_in_the_tile(tm_root, tmp_path):
    outside = tmp_path / "elsewhere.zarr"
    shutil.move(str(tm_root / TILE / "data" / "3.zarr"), outside)
    (tm_root / TILE / "data" / "3.zarr").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InputError, match="leads outside"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    chunk = next(p for p in outside.iterdir() if not p.name.startswith("."))
    (tm_root / TILE / "data" / "3.zarr").unlink()
    shutil.copytree(outside, tm_root / TILE / "data" / "3.zarr")
    secret = tmp_path / "secret"
    secret.write_bytes(chunk.read_bytes())
    (tm_root / TILE / "data" / "3.zarr" / chunk.name).unlink()
    (tm_root / TILE / "data" / "3.zarr" / chunk.name).symlink_to(secret)
    with pytest.raises(InputError, match="leads outside"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")
    with pytest.raises(InputError, match="not a plain path inside its folder"):
        import_timematch(tm_root, "../../etc", tmp_path / "out", class_map=tmp_path / "dk.csv")
    assert not (tmp_path / "out").exists()


def test_deeply_nested_tables_exit_with_a_named_error(tm_root, tmp_path, capsys):
    (tm_root / "dataset_classes.json").write_text('{"' + TILE + '": ' + "[" * 50_000 + "]" * 50_000 + "}")
    rc = main(["import", "timematch", str(tm_root), "--tile", "DK1", "--class-map", str(tmp_path / "dk.csv"),
               "--classes", "tile", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == EXIT_INPUT and "dataset_classes.json nests lists or mappings more than 32 deep" in err
    (tm_root / "dataset_split.json").write_text("[" * 40 + "]" * 40)
    with pytest.raises(InputError, match="dataset_split.json nests"):
        import_timematch(tm_root, TILE, tmp_path / "out", class_map=tmp_path / "dk.csv")


def test_a_deeply_nested_or_aliased_yaml_class_map_exits_with_a_named_error(tm_root, tmp_path, capsys):
    deep = tmp_path / "deep.yml"
    deep.write_text("winter_wheat: " + "[" * 100_000 + "]" * 100_000 + "\n")
    aliased = tmp_path / "aliased.yaml"
    # Nine levels of nine aliases: 9**9 codes once expanded, from 400 bytes.
    lines = ["l0: &l0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    aliased.write_text("\n".join(lines) + "\n")
    for path, message in ((deep, "nest more than 32 deep"), (aliased, "aliases (*name) are not read")):
        rc = main(["import", "timematch", str(tm_root), "--tile", "DK1", "--class-map", str(path),
                   "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc == EXIT_INPUT and message in err and str(path) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
