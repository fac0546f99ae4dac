"""Small TimeMatch trees built from the format's description, for the importer and the paper
protocol tests: zarr format 2 pixel sets, pickled metadata and weather, block folds.

Pixel values follow ``pixel_value`` so a test can say which value any pixel must have; the
channels are written in TimeMatch's order (10 m bands first).
"""

import json
import pickle

import numpy as np
import zarr

TM_BANDS = ("B02", "B03", "B04", "B08", "B05", "B06", "B07", "B8A", "B11", "B12")


def pixel_value(parcel, date_index, channel, pixel):
    """DN of one pixel; ``channel`` in TimeMatch order, ``date_index`` in metadata order."""
    return (300 + 1000 * (parcel % 7) + 40 * date_index + 97 * channel + 13 * pixel) % 60000


def numpy2_names(data: bytes) -> bytes:
    """A protocol-2 pickle as numpy 2 writes it (``numpy._core`` instead of ``numpy.core``)."""
    return data.replace(b"numpy.core.multiarray\n", b"numpy._core.multiarray\n")


def make_tile(root, tile, *, dates, labels, blocks, sizes, tmin, tmax, start="20170101",
              folds=None, numpy2=False, pixels=None):
    """Write ``root/<tile>/{data,meta}`` and merge the tile's folds into dataset_split.json.

    Args:
        dates: ``YYYYMMDD`` ints in metadata order (may be unsorted).
        labels: crop codes (floats with NaN, or strings).
        blocks, sizes: block and pixel count of each parcel.
        tmin, tmax: per-parcel daily series from ``start`` (lists of arrays).
        pixels: optional per-parcel (T, C, S) arrays instead of ``pixel_value``.
    """
    folder = root / tile
    (folder / "data").mkdir(parents=True)
    (folder / "meta").mkdir()
    for i, s in enumerate(sizes):
        if pixels is not None:
            x = pixels[i]
        else:
            t, c, p = np.meshgrid(np.arange(len(dates)), np.arange(10), np.arange(s), indexing="ij")
            x = pixel_value(i, t, c, p).astype(np.uint16)
        z = zarr.open(str(folder / "data" / f"{i}.zarr"), mode="w", shape=x.shape, dtype=np.uint16)
        z[...] = x
    metadata = {
        "start_date": start, "end_date": start[:4] + "1231", "dates": list(dates),
        "cloudy_pct": [np.float64(10.0)] * len(dates),
        "parcels": [{"id": np.int64(1000 + i), "label": labels[i], "n_pixels": np.int32(sizes[i]),
                     "block": np.int64(blocks[i]),
                     "geometric_features": [np.float64(400.0), np.float64(1e4), np.float64(0.04), np.float64(0.5)]}
                    for i in range(len(sizes))],
    }
    weather = {"t_min": [np.asarray(a, dtype=np.float32) for a in tmin],
               "t_max": [np.asarray(a, dtype=np.float32) for a in tmax]}
    for name, obj in (("metadata.pkl", metadata), ("weather_data.pkl", weather)):
        data = pickle.dumps(obj, protocol=2)
        (folder / "meta" / name).write_bytes(numpy2_names(data) if numpy2 else data)
    split_path = root / "dataset_split.json"
    table = json.loads(split_path.read_text()) if split_path.exists() else {}
    table[tile] = folds or [{"train": sorted(set(blocks)), "val": [], "test": []}]
    split_path.write_text(json.dumps(table))
    return folder


def gdd_by_hand(tmin, tmax, position):
    """The paper's rule summed over days 0..position (the acquisition day included)."""
    total = 0.0
    for day in range(position + 1):
        total += max((min(float(tmax[day]), 30.0) + max(float(tmin[day]), 0.0)) / 2.0, 0.0)
    return total
