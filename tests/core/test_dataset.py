"""The dataset folder: rows written chunk by chunk in any order, read back memory-mapped."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from thermocrop.core.errors import DatasetError, OutputError
from thermocrop.core.pixel_sets import DatasetWriter, PixelSets, open_dataset, save_dataset

T, C, S = 4, 10, 6
DATES = np.array(["2023-04-01", "2023-05-01", "2023-06-01", "2023-07-01"], dtype="datetime64[D]")


def _pixel_sets(n: int, seed: int) -> PixelSets:
    rng = np.random.default_rng(seed)
    return PixelSets(
        pixels=rng.integers(0, 10000, (n, T, C, S), dtype=np.uint16),
        pixel_mask=rng.random((n, T, S)) > 0.3,
        date_mask=rng.random((n, T)) > 0.2,
        gdd=rng.random((n, T)).astype(np.float32) * 1000,
        dates=DATES,
        day_of_season=np.array([90, 120, 151, 181], dtype=np.float32),
        parcel_ids=np.array([f"LPIS-{seed}-{i:05d}" for i in range(n)]),
        status=rng.choice(["ok", "outside_scenes", "no_clear_date"], n),
        labels=rng.integers(-1, 5, n).astype(np.int16),
        blocks=rng.integers(-1, 9, n).astype(np.int32),
        classes=("corn", "meadow", "winter_wheat", "rapeseed", "sunflower"),
    )


def test_rows_in_any_order_land_where_they_belong(tmp_path):
    n = 40
    whole = _pixel_sets(n, seed=1)
    # Chunks as extraction hands them over: scattered rows, runs of neighbours, one reversed.
    first = np.array([5, 6, 7, 8, 20, 21, 0])
    second = np.arange(19, 14, -1)
    rest = np.setdiff1d(np.arange(n), np.r_[first, second])
    chunks = [first, second, np.random.default_rng(2).permutation(rest), np.array([], dtype=np.int64)]
    assert sorted(np.concatenate(chunks).tolist()) == list(range(n))
    with DatasetWriter(tmp_path / "ds", n, DATES, whole.day_of_season, S, classes=whole.classes,
                       meta={"parcels": "lpis.gpkg", "seed": 3}, parcel_id_width=16) as writer:
        for rows in chunks:
            writer.write_rows(rows, whole.subset(rows))
    back = open_dataset(tmp_path / "ds")
    assert isinstance(back.pixels, np.memmap)
    for name in ("pixels", "pixel_mask", "date_mask", "gdd", "labels", "blocks", "parcel_ids", "status"):
        np.testing.assert_array_equal(np.asarray(getattr(back, name)), getattr(whole, name), err_msg=name)
    assert back.classes == whole.classes and back.meta == {"parcels": "lpis.gpkg", "seed": 3}
    np.testing.assert_array_equal(back.dates, DATES)
    header = json.loads((tmp_path / "ds" / "dataset.json").read_text(encoding="utf-8"))
    assert header["n_parcels"] == n and header["max_pixels"] == S and header["dates"][1] == "2023-05-01"


def test_save_and_open_round_trip_and_bad_rows(tmp_path):
    ps = _pixel_sets(7, seed=5)
    save_dataset(ps, tmp_path / "ds")
    back = open_dataset(tmp_path / "ds", mmap=False)
    np.testing.assert_array_equal(back.pixels, ps.pixels)
    np.testing.assert_array_equal(back.parcel_ids, ps.parcel_ids)
    with pytest.raises(OutputError, match="already exists"):
        save_dataset(ps, tmp_path / "ds")
    with DatasetWriter(tmp_path / "other", 7, DATES, ps.day_of_season, S) as writer:
        with pytest.raises(DatasetError, match=r"0\.\.6"):
            writer.write_rows(np.array([0, 7]), ps.subset(np.array([0, 1])))
        writer.write(0, ps)
    assert open_dataset(tmp_path / "other").status.tolist() == ps.status.tolist()


def test_a_failed_write_leaves_nothing(tmp_path):
    ps = _pixel_sets(5, seed=7)
    with pytest.raises(RuntimeError):
        with DatasetWriter(tmp_path / "ds", 5, DATES, ps.day_of_season, S) as writer:
            writer.write(0, ps.subset(slice(0, 2)))
            raise RuntimeError("stopped")
    assert list(tmp_path.iterdir()) == []


def test_relabel_to_a_model_class_list_and_unseen_classes():
    ps = _pixel_sets(6, seed=2)
    ps = dataclasses.replace(ps, classes=("corn", "meadow", "soy"),
                             labels=np.array([0, 1, 2, -1, 2, 0], dtype=np.int16),
                             status=np.array(["ok"] * len(ps)))
    assert ps.class_counts() == {"corn": 2, "meadow": 1, "soy": 2}
    model = ("barley", "corn", "meadow", "soy")
    moved = ps.relabel(model)
    assert moved.classes == model and moved.labels.tolist() == [1, 2, 3, -1, 3, 1]
    assert moved.pixels is ps.pixels  # arrays are shared, only labels change
    with pytest.raises(DatasetError, match=r"classes the model has never seen: soy \(2 parcels\)"):
        ps.relabel(("corn", "meadow"))
    dropped = ps.relabel(("meadow", "corn"), unseen="drop")
    assert dropped.labels.tolist() == [1, 0, -1, -1, -1, 1]
    # A class whose parcels all failed extraction is not "seen" data: no error.
    failed = dataclasses.replace(ps, status=np.array(["ok", "ok", "outside_scenes", "ok", "too_small", "ok"]))
    assert failed.relabel(("corn", "meadow")).labels.tolist() == [0, 1, -1, -1, -1, 0]
