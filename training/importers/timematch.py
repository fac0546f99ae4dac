"""The TimeMatch dataset with its weather extension (the data behind the thermal positional
encoding paper's Table 1) -> ThermoCrop datasets, one per tile.

Layout of a download (``ROOT``)::

    ROOT/dataset_split.json                 {tile: [fold: {"train"|"val"|"test": [block, ...]}]}
    ROOT/dataset_classes.json               {tile: [class, ...]} (classes with >= 200 parcels)
    ROOT/<country>/<tile>/<year>/data/<i>.zarr    (T, C, S) uint16 pixel sets, zarr format 2
    ROOT/<country>/<tile>/<year>/meta/metadata.pkl    dates, start_date, parcels
    ROOT/<country>/<tile>/<year>/meta/weather_data.pkl  t_min, t_max per parcel and day

Facts the import follows (those of the reference loader, ``dataset.py`` of the paper's code):
``<i>.zarr`` and the weather lists are indexed by the parcel's position in
``metadata["parcels"]``, not by its id; dates are ``YYYYMMDD``, their positions are days after
``start_date`` and the weather series start on that day, so the GDD at an acquisition sums
every day up to and including it; the channels are B02 B03 B04 B08 B05 B06 B07 B8A B11 B12
(10 m bands first) and are reordered by name; every pixel is valid, 0 included; Danish and
Austrian crop codes are floats with NaN for none (NaN is ``unknown``), French codes strings.
Crop codes missing from the class map are ``unknown``; parcels whose class is not in the
chosen class list are left unlabelled, as the reference drops them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.crops import CROP_CLASSES
from ...core.errors import InputError
from ...core.io.safe_read import check_nesting, inside, member_path, read_json, read_limited
from ...core.io.zarr_read import read_zarr_array
from ...core.parcels import STATUS_NO_WEATHER
from ...core.pixel_sets import STATUS_OK, DatasetWriter, PixelSets
from ...core.progress import Progress
from ...core.scenes.bands import S2_BANDS
from .common import PathLike, assign_labels, check_parcel_ids
from .safe_pickle import safe_loads

log = logging.getLogger(__name__)

TIMEMATCH_BANDS = ("B02", "B03", "B04", "B08", "B05", "B06", "B07", "B8A", "B11", "B12")
"""Channel order of the TimeMatch pixel sets (10 m bands first)."""

TILES = {"AT1": "austria/33UVP/2017", "DK1": "denmark/32VNH/2017",
         "FR1": "france/30TXT/2017", "FR2": "france/31TCJ/2017"}
"""The paper's four tiles by the names of its Table 1."""

_PLAUSIBLE_C = 70.0

MAX_PIXEL_SET_BYTES = 256 * 1024 * 1024
"""The largest parcel array read (e.g. 140 dates x 10 bands x 95,000 pixels, a 950 ha parcel)."""

MAX_PICKLE_BYTES = 2 * 1024 ** 3
"""The largest metadata or weather pickle read (a tile of 30,000 parcels holds about 100 MB)."""


def tile_name(tile: str) -> str:
    """``AT1`` or ``austria/33UVP/2017`` -> the tile path ``country/tile/year``."""
    return TILES.get(tile.upper(), tile.strip("/")) if tile else tile


def yyyymmdd(value: Any, what: str) -> np.datetime64:
    """A TimeMatch date (int or str ``YYYYMMDD``, or a date object) as datetime64[D]."""
    if hasattr(value, "year") and hasattr(value, "month"):
        return np.datetime64(f"{value.year:04d}-{value.month:02d}-{value.day:02d}", "D")
    text = str(int(value)) if isinstance(value, (int, np.integer, float, np.floating)) else str(value)
    text = text.strip()
    try:
        return np.datetime64(f"{text[:4]}-{text[4:6]}-{text[6:8]}", "D") if len(text) == 8 \
            else np.datetime64(text, "D")
    except ValueError:
        raise InputError(f"{what}: {value!r} is not a date written YYYYMMDD") from None


def read_pixel_set(path: Path, *, dates: int, what: str = "") -> np.ndarray:
    """One parcel's ``(T, C, S)`` array from a zarr format 2 store (``core.io.zarr_read``: the
    codec and dtype are checked before any chunk is decoded, every chunk must be present)."""
    what = what or str(path)
    if not (path / ".zarray").is_file():
        if (path / "zarr.json").is_file():
            raise InputError(f"{path} is a zarr format 3 store; the TimeMatch pixel sets are zarr "
                             "format 2 (as downloaded): download the tile again")
        raise InputError(f"{path} is missing or is not a zarr array; the tile's data folder is "
                         "incomplete: download it again")
    return read_zarr_array(path, what=what, max_bytes=MAX_PIXEL_SET_BYTES,
                           expected=(dates, len(TIMEMATCH_BANDS), None))


def _read_pickle(folder: Path, path: Path) -> Any:
    """A TimeMatch pickle of plain data (``safe_pickle``), inside the tile and of bounded size."""
    if not path.is_file():
        raise InputError(f"{path} does not exist")
    inside(folder, path, source="the TimeMatch tile")
    value = safe_loads(read_limited(path, what="TimeMatch pickle", max_bytes=MAX_PICKLE_BYTES), str(path))
    check_nesting(value, str(path))
    return value


def _season(start: np.datetime64, dates: np.ndarray):
    """The ``SeasonStart`` whose season for ``dates`` begins on ``start``."""
    from ...core.thermal.gdd import SeasonStart, season_bounds

    text = str(start)
    for offset in (0, -1, -2):
        season = SeasonStart(int(text[5:7]), int(text[8:10]), offset)
        if season_bounds(dates, season)[0] == start:
            return season
    raise InputError(f"start_date {start} is more than a year before the first acquisition {dates.min()}")


def _temperatures(series: Any, count: int, what: str) -> list:
    if not isinstance(series, (list, tuple, np.ndarray)) or len(series) != count:
        raise InputError(f"{what} must hold one series per parcel ({count}); it has "
                         f"{len(series) if hasattr(series, '__len__') else 'none'}")
    return list(series)


def _as_days(values: Any, days: int, where: str) -> np.ndarray:
    out = np.full(days, np.nan, dtype=np.float32)
    v = np.asarray(values, dtype=np.float32).ravel()[:days]
    out[:len(v)] = v
    out[out <= -9999.0] = np.nan  # E-OBS fill value, left where the grid had no land
    return out


def timematch_classes(root: PathLike, tile: str) -> list[str]:
    """The tile's classes in ``dataset_classes.json`` (those with at least 200 parcels)."""
    path = Path(root) / "dataset_classes.json"
    if not path.is_file():
        raise InputError(f"{path} does not exist; it comes with the TimeMatch download")
    table = read_json(path, what="TimeMatch class table")
    if not isinstance(table, dict) or not isinstance(table.get(tile, []), list):
        raise InputError(f"{path} must map tiles to lists of class names")
    if tile not in table:
        raise InputError(f"{path} has no entry for {tile} (it has {', '.join(table)})")
    names = list(table[tile])
    if not all(isinstance(n, str) and 0 < len(n) <= 200 for n in names):
        raise InputError(f"{path}: the classes of {tile} must be names of 1 to 200 characters")
    return names


def import_timematch(
    root: PathLike,
    tile: str,
    out: PathLike,
    *,
    class_map: Union[PathLike, Mapping, None] = None,
    classes: Union[Sequence[str], str, None] = None,
    max_pixels: int = 64,
    seed: int = 0,
    chunk_size: int = 2000,
    overwrite: bool = False,
    progress: Optional[Progress] = None,
) -> Path:
    """Write one TimeMatch tile as a ThermoCrop dataset folder.

    Args:
        root: the folder holding ``dataset_split.json`` and ``<country>/<tile>/<year>/``.
        tile: ``country/tile/year`` (e.g. ``denmark/32VNH/2017``) or the paper's name (``DK1``).
        out: the dataset folder to create.
        class_map: crop code -> class (CSV ``code,class``, a preset name or a mapping); by
            default the preset named after the tile's country.
        classes: the class list: default the paper's nine; ``"tile"`` takes the tile's list
            from ``dataset_classes.json``. Parcels of other classes stay unlabelled.
        max_pixels: S, pixels kept per parcel (a seeded random subset of larger parcels; real
            parcels hold hundreds to thousands).
        seed: seed of the pixel subsets (each parcel's subset depends on the seed and its
            position only).
        chunk_size: parcels held in memory at once.
        overwrite: replace an existing dataset folder.
        progress: progress and cancellation.

    Returns:
        The dataset folder. Its ``meta`` records the tile, the block folds of
        ``dataset_split.json`` (``splits``), the source channel order and the settings.
    """
    from ...core.thermal.gdd import day_of_season, gdd_at_dates
    from ...core.thermal.weather import DailyTemperature

    progress = progress or Progress()
    root, out = Path(root), Path(out)
    tile = tile_name(tile)
    folder = member_path(root, tile, source="the tile name") if tile else root
    if not folder.is_dir():
        raise InputError(f"{folder} does not exist; give the TimeMatch root folder and a tile such as "
                         f"denmark/32VNH/2017 ({', '.join(f'{k} = {v}' for k, v in TILES.items())})")
    if out.exists() and not overwrite:
        raise InputError(f"{out} already exists; choose another output or allow overwriting")
    if max_pixels < 1:
        raise InputError("max_pixels must be at least 1")
    country = tile.split("/")[0]
    meta_path, weather_path = folder / "meta" / "metadata.pkl", folder / "meta" / "weather_data.pkl"
    metadata, weather = _read_pickle(folder, meta_path), _read_pickle(folder, weather_path)
    if not isinstance(metadata, dict) or not {"dates", "start_date", "parcels"} <= set(metadata):
        raise InputError(f"{meta_path} lacks dates, start_date or parcels; is it a TimeMatch metadata file?")
    if not isinstance(weather, dict) or not {"t_min", "t_max"} <= set(weather):
        raise InputError(f"{weather_path} lacks t_min or t_max; it comes with the weather extension "
                         "(thermal_time.zip) of the TimeMatch download")
    parcels = metadata["parcels"]
    if not isinstance(parcels, (list, tuple)) or not all(isinstance(p, dict) for p in parcels):
        raise InputError(f"{meta_path}: parcels must be a list of mappings (id, label, block)")
    parcels = list(parcels)
    n = len(parcels)
    if n == 0:
        raise InputError(f"{meta_path} lists no parcels")
    if not isinstance(metadata["dates"], (list, tuple, np.ndarray)) or not len(metadata["dates"]):
        raise InputError(f"{meta_path}: dates must be a list of YYYYMMDD dates")
    raw_dates = np.array([yyyymmdd(d, str(meta_path)) for d in metadata["dates"]], dtype="datetime64[D]")
    order = np.argsort(raw_dates, kind="stable")
    dates = raw_dates[order]
    if len(np.unique(dates)) != len(dates):
        raise InputError(f"{meta_path}: the acquisition dates repeat")
    start = yyyymmdd(metadata["start_date"], f"{meta_path} start_date")
    if dates.min() < start:
        raise InputError(f"{meta_path}: acquisitions before start_date {start}")
    season = _season(start, dates)
    positions = (dates - start).astype(np.int64)
    t_min = _temperatures(weather["t_min"], n, f"{weather_path} t_min")
    t_max = _temperatures(weather["t_max"], n, f"{weather_path} t_max")
    days = int(positions.max()) + 1
    if days > 2 * 366:
        raise InputError(f"{meta_path}: the acquisitions reach {days} days after start_date {start}; a "
                         "season spans at most two years")

    if class_map is None:
        class_map = country
    if classes is None:
        classes = CROP_CLASSES
    elif isinstance(classes, str):
        classes = timematch_classes(root, tile) if classes == "tile" else [classes]
    # NaN (no declared crop) is unknown, as the reference makes it; classes outside the list
    # are left unlabelled, as the reference leaves them out.
    labels, classes, label_summary = assign_labels([p.get("label") for p in parcels], class_map=class_map,
                                                   classes=classes, missing="unknown",
                                                   source=f"{meta_path} labels")
    try:
        blocks = np.array([int(p.get("block", -1)) for p in parcels], dtype=np.int32)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{meta_path}: a parcel's block is not a whole number") from None
    ids = [str(p.get("id", i)) for i, p in enumerate(parcels)]
    check_parcel_ids(ids, str(meta_path))
    splits = None
    split_path = root / "dataset_split.json"
    if split_path.is_file():
        table = read_json(split_path, what="TimeMatch split table")
        splits = table.get(tile) if isinstance(table, dict) else None
    if splits is None:
        log.warning("%s has no block folds for %s; the dataset's blocks are split at random", split_path, tile)
    channel = [TIMEMATCH_BANDS.index(b) for b in S2_BANDS]
    meta = {
        "importer": "timematch", "source": str(folder), "tile": tile, "country": country,
        "splits": splits, "source_bands": list(TIMEMATCH_BANDS), "max_pixels": max_pixels, "seed": seed,
        "labels": label_summary,
        "class_map": class_map if isinstance(class_map, str) else str(class_map)
        if not isinstance(class_map, Mapping) else "mapping",
        "levels": ["L1C"], "weather": str(weather_path), "start_date": str(start),
        "season_start": str(season), "t_base": 0.0, "t_cap": 30.0, "gdd_method": "paper",
        "pixels": "all pixels valid, 0 included (as the reference loader)",
    }
    id_width = max(8, max(len(i) for i in ids))
    writer = DatasetWriter(out, n_parcels=n, dates=dates,
                           day_of_season=np.asarray(day_of_season(dates, season), dtype=np.float32),
                           max_pixels=max_pixels, classes=classes, bands=S2_BANDS, meta=meta,
                           overwrite=overwrite, parcel_id_width=id_width)
    t_count = len(dates)
    no_weather = 0
    try:
        for lo in range(0, n, chunk_size):
            hi = min(n, lo + chunk_size)
            m = hi - lo
            pixels = np.zeros((m, t_count, len(S2_BANDS), max_pixels), dtype=np.uint16)
            pixel_mask = np.zeros((m, t_count, max_pixels), dtype=bool)
            for k, i in enumerate(range(lo, hi)):
                path = folder / "data" / f"{i}.zarr"
                inside(folder, path, source="the TimeMatch tile")
                x = read_pixel_set(path, dates=len(raw_dates), what=f"parcel {ids[i]}")
                s = x.shape[2]
                if s > max_pixels:
                    pick = np.sort(np.random.default_rng([seed, i]).choice(s, max_pixels, replace=False))
                    x, s = x[:, :, pick], max_pixels
                pixels[k, :, :, :s] = x[order][:, channel, :]
                pixel_mask[k, :, :s] = True
                progress((i + 1) / n)
            tmin = np.stack([_as_days(t_min[i], days, "t_min") for i in range(lo, hi)])
            tmax = np.stack([_as_days(t_max[i], days, "t_max") for i in range(lo, hi)])
            finite = np.isfinite(tmin) & np.isfinite(tmax)
            if finite.any() and max(np.abs(tmin[finite]).max(), np.abs(tmax[finite]).max()) > _PLAUSIBLE_C:
                raise InputError(f"{weather_path} holds temperatures beyond +-{_PLAUSIBLE_C:g} C; "
                                 "they must be daily minima and maxima in degrees C")
            series = DailyTemperature(start + np.arange(days), tmin, tmax, str(weather_path))
            gdd = gdd_at_dates(series, dates, season_start=season, parcel_ids=ids[lo:hi], missing="mask")
            status = np.full(m, STATUS_OK, dtype=object)
            lost = ~np.isfinite(gdd).all(axis=1)
            status[lost] = STATUS_NO_WEATHER
            no_weather += int(lost.sum())
            gdd[lost] = 0.0
            date_mask = np.broadcast_to(~lost[:, None], (m, t_count)).copy()
            pixel_mask &= date_mask[:, :, None]
            pixels[~date_mask] = 0
            writer.write(lo, PixelSets(
                pixels=pixels, pixel_mask=pixel_mask, date_mask=date_mask, gdd=gdd.astype(np.float32),
                dates=dates, day_of_season=np.zeros(t_count, np.float32),
                parcel_ids=np.array(ids[lo:hi]), status=status.astype(str), labels=labels[lo:hi],
                blocks=blocks[lo:hi], classes=tuple(classes), bands=S2_BANDS))
    except BaseException:
        writer.abort()
        raise
    if no_weather:
        log.warning("%s: %d parcels have gaps of more than 3 days or no data in their temperatures "
                    "(status %s)", weather_path, no_weather, STATUS_NO_WEATHER)
    return writer.close()
