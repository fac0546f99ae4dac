"""The PSE-TAE / L-TAE pixel-set format (Garnot et al.'s S2-2017-T31TFM data and any folder
made the same way) -> a ThermoCrop dataset.

Layout::

    FOLDER/DATA/<id>.npy        (T, C, S) array per parcel: T dates, C bands, S pixels
    FOLDER/META/labels.json     {nomenclature: {id: label, ...}, ...}
    FOLDER/META/dates.json      {"0": YYYYMMDD, "1": ..., ...} (date index -> date)

The format carries neither the band names nor the parcels' locations nor temperatures: the
band order is given (default ThermoCrop's), locations come from a parcel layer joined by id
or from one point for every parcel, and GDD from a weather file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.errors import InputError
from ...core.io.safe_read import inside, npy_header, read_json
from ...core.parcels import STATUS_NO_WEATHER, STATUS_TOO_SMALL
from ...core.pixel_sets import STATUS_OK, DatasetWriter, PixelSets
from ...core.progress import Progress
from ...core.scenes.bands import QUANTIFICATION_VALUE, S2_BANDS
from ...core.settings import PixelSampling
from .common import (
    ClassesAndBlocks,
    ImportWeather,
    Locations,
    ParcelLayer,
    PathLike,
    assign_labels,
    grid_blocks,
    join_layer,
    locations_from_geometries,
    locations_from_lonlat,
    read_layer,
    thermal_time,
)
from .timematch import yyyymmdd

log = logging.getLogger(__name__)

MAX_PIXEL_SET_BYTES = 256 * 1024 * 1024
"""The largest parcel array read (e.g. 140 dates x 10 bands x 95,000 pixels of uint16)."""


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise InputError(f"{path} does not exist; a PSE-TAE folder holds DATA/ and META/labels.json, "
                         "META/dates.json")
    return read_json(path, what="PSE-TAE metadata")


def psetae_ids(folder: Path) -> list[str]:
    """The parcel ids of ``DATA/*.npy``, numbers in numeric order first, then the rest."""
    data = folder / "DATA"
    if not data.is_dir():
        raise InputError(f"{data} does not exist; a PSE-TAE folder holds DATA/<id>.npy files")
    stems = [p.stem for p in data.glob("*.npy")]
    if not stems:
        raise InputError(f"{data} holds no .npy files")
    numeric = sorted((s for s in stems if s.lstrip("-").isdigit()), key=int)
    return numeric + sorted(s for s in stems if not s.lstrip("-").isdigit())


@dataclass(frozen=True)
class PsetaeFormat:
    """How a PSE-TAE folder is to be read.

    Attributes:
        nomenclature: which labelling of ``labels.json`` to use (needed when it has several).
        band_order: the bands of the arrays' channel axis, in order (ten Sentinel-2 bands).
        value_scale: the value a reflectance of 1 is written as (10000 for digital numbers).
        level: processing level of the source, recorded.
    """

    nomenclature: Optional[str] = None
    band_order: Sequence[str] = S2_BANDS
    value_scale: float = float(QUANTIFICATION_VALUE)
    level: Optional[str] = None


def import_psetae(
    folder: PathLike,
    out: PathLike,
    *,
    weather: Union[ImportWeather, PathLike],
    source: Optional[PsetaeFormat] = None,
    layer: Optional[ParcelLayer] = None,
    grouping: Optional[ClassesAndBlocks] = None,
    sampling: Optional[PixelSampling] = None,
    chunk_size: int = 2000,
    overwrite: bool = False,
    progress: Optional[Progress] = None,
) -> Path:
    """Write a PSE-TAE pixel-set folder as a ThermoCrop dataset folder.

    Args:
        folder: the folder holding ``DATA/`` and ``META/``.
        out: the dataset folder to create.
        weather: the temperatures and thermal time (:class:`ImportWeather`), or a weather file
            (E-OBS / CF NetCDF or station CSV) with the default thermal time.
        source: nomenclature, band order, value scale and level (:class:`PsetaeFormat`).
        layer: a layer whose ``join_field`` holds the ids, for locations (and ``block_field``);
            or its ``point``, ``(lon, lat)`` in WGS 84 for every parcel (a tile's centre) when
            the weather is gridded. A station CSV needs neither (:class:`ParcelLayer`; its
            ``label_field`` and ``join_by_row`` are not used: labels come from ``labels.json``).
        grouping: label values -> classes (as in ``assign_labels``) and grid blocks in metres
            (:class:`ClassesAndBlocks`).
        sampling: ``max_pixels`` (S, pixels kept per parcel: a seeded random subset of larger
            parcels) and ``seed`` of the subsets; the other fields are not used.
        chunk_size: parcels held in memory at once.
        overwrite: replace an existing dataset folder.
        progress: progress and cancellation.
    """
    from ...core.thermal.gdd import day_of_season

    fmt, lay, grp = source or PsetaeFormat(), layer or ParcelLayer(), grouping or ClassesAndBlocks()
    sampling, weather = sampling or PixelSampling(), ImportWeather.of(weather)
    nomenclature, band_order, value_scale, level = fmt.nomenclature, fmt.band_order, fmt.value_scale, fmt.level
    parcels, parcels_layer, join_field, point = lay.path, lay.layer, lay.join_field, lay.point
    block_field = lay.block_field
    class_map, classes, block_size_m = grp.class_map, grp.classes, grp.block_size_m
    max_pixels, seed, thermal = sampling.max_pixels, sampling.seed, weather.thermal
    progress = progress or Progress()
    folder, out = Path(folder), Path(out)
    if out.exists() and not overwrite:
        raise InputError(f"{out} already exists; choose another output or allow overwriting")
    band_order = [b.strip().upper() for b in band_order]
    if sorted(band_order) != sorted(S2_BANDS):
        raise InputError(f"the band order must name the ten bands {', '.join(S2_BANDS)} once each; "
                         f"got {', '.join(band_order)}")
    if not value_scale > 0:
        raise InputError(f"the value scale must be positive, not {value_scale}")
    ids = psetae_ids(folder)
    n = len(ids)
    labels_json = _read_json(folder / "META" / "labels.json")
    if not isinstance(labels_json, dict) or not labels_json:
        raise InputError(f"{folder / 'META' / 'labels.json'} holds no nomenclature")
    if nomenclature is None:
        if len(labels_json) > 1:
            raise InputError(f"{folder / 'META' / 'labels.json'} holds several nomenclatures "
                             f"({', '.join(labels_json)}); choose one with --nomenclature")
        nomenclature = next(iter(labels_json))
    if nomenclature not in labels_json:
        raise InputError(f"{folder / 'META' / 'labels.json'} has no nomenclature {nomenclature!r} "
                         f"(it has {', '.join(labels_json)})")
    table = labels_json[nomenclature]
    if not isinstance(table, dict):
        raise InputError(f"{folder / 'META' / 'labels.json'}: {nomenclature} must map parcel ids to labels")
    dates_json = _read_json(folder / "META" / "dates.json")
    if not isinstance(dates_json, dict):
        raise InputError(f"{folder / 'META' / 'dates.json'} must map date indices to YYYYMMDD dates")
    try:
        keys = sorted(dates_json, key=int)
    except (TypeError, ValueError):
        raise InputError(f"{folder / 'META' / 'dates.json'} must map date indices to YYYYMMDD dates") from None
    raw_dates = np.array([yyyymmdd(dates_json[k], str(folder / "META" / "dates.json")) for k in keys],
                         dtype="datetime64[D]")
    order = np.argsort(raw_dates, kind="stable")
    dates = raw_dates[order]
    season = thermal.season_start

    labels, classes, label_summary = assign_labels([table.get(i) for i in ids], class_map=class_map, classes=classes,
                                    source=f"{folder / 'META' / 'labels.json'} {nomenclature}")
    locations: Optional[Locations] = None
    blocks = np.full(n, -1, dtype=np.int32)
    if parcels is not None:
        if join_field is None:
            raise InputError("a parcel layer needs --join-field, the field holding the parcel ids")
        gdf = read_layer(parcels, parcels_layer)
        rows, found = join_layer(gdf, ids, join_field=join_field, source=str(parcels))
        geometry = gdf.geometry.iloc[np.maximum(rows, 0)].reset_index(drop=True)
        geometry[~found] = None
        locations = locations_from_geometries(geometry)
        if block_field is not None:
            if block_field not in gdf.columns:
                raise InputError(f"{parcels} has no field {block_field!r}")
            values = gdf[block_field].to_numpy()
            blocks = np.array([int(values[r]) if r >= 0 else -1 for r in rows], dtype=np.int32)
    elif point is not None:
        locations = locations_from_lonlat(np.full(n, float(point[0])), np.full(n, float(point[1])))
    elif block_field is not None:
        raise InputError("a block field needs the parcel layer (--parcels)")
    if block_size_m is not None and block_field is None:
        if locations is None or parcels is None:
            raise InputError("grid blocks need the parcels' locations: give --parcels and --join-field")
        blocks = grid_blocks(locations, block_size_m)

    gdd_all = thermal_time(weather.path, locations, dates, ids, season_start=season, t_base=thermal.t_base,
                           t_cap=thermal.t_cap, method=thermal.method, weather_options=weather.options)
    channel = [band_order.index(b) for b in S2_BANDS]
    meta = {
        "importer": "psetae", "source": str(folder), "nomenclature": nomenclature,
        "source_bands": band_order, "value_scale": value_scale, "max_pixels": max_pixels, "seed": seed,
        "class_map": None if class_map is None or isinstance(class_map, Mapping) else str(class_map),
        "labels": label_summary,
        "parcels": str(parcels) if parcels is not None else None, "weather": str(weather.path),
        "levels": [level] if level else [], "season_start": str(season), "t_base": thermal.t_base,
        "t_cap": thermal.t_cap, "gdd_method": thermal.method,
    }
    t_count = len(dates)
    writer = DatasetWriter(out, n_parcels=n, dates=dates,
                           day_of_season=np.asarray(day_of_season(dates, season), dtype=np.float32),
                           max_pixels=max_pixels, classes=classes, bands=S2_BANDS, meta=meta,
                           overwrite=overwrite, parcel_id_width=max(8, max(len(i) for i in ids)))
    try:
        for lo in range(0, n, chunk_size):
            hi = min(n, lo + chunk_size)
            m = hi - lo
            pixels = np.zeros((m, t_count, len(S2_BANDS), max_pixels), dtype=np.uint16)
            pixel_mask = np.zeros((m, t_count, max_pixels), dtype=bool)
            status = np.full(m, STATUS_OK, dtype=object)
            for k, i in enumerate(range(lo, hi)):
                path = folder / "DATA" / f"{ids[i]}.npy"
                inside(folder, path, source="the PSE-TAE folder")
                # The header is checked against the file before anything is allocated.
                shape, dtype, _ = npy_header(path)
                if len(shape) != 3 or shape[0] != t_count or shape[1] != len(S2_BANDS):
                    raise InputError(f"{path} holds an array of shape {shape}; expected ({t_count} dates, "
                                     f"{len(S2_BANDS)} bands, pixels)")
                if dtype.kind not in "biuf" or dtype.itemsize * int(np.prod(shape)) > MAX_PIXEL_SET_BYTES:
                    raise InputError(f"{path} holds a {dtype} array of shape {shape}; a parcel is read as "
                                     f"numbers of at most {MAX_PIXEL_SET_BYTES:,} bytes")
                try:
                    x = np.load(path, allow_pickle=False)
                except (OSError, ValueError) as exc:
                    raise InputError(f"cannot read {path} ({exc}); it must be a plain (T, C, S) array") from None
                s = x.shape[2]
                if s == 0:
                    status[k] = STATUS_TOO_SMALL
                    continue
                if s > max_pixels:
                    pick = np.sort(np.random.default_rng([seed, i]).choice(s, max_pixels, replace=False))
                    x, s = x[:, :, pick], max_pixels
                x = x[order][:, channel, :].astype(np.float64) * (QUANTIFICATION_VALUE / value_scale)
                pixels[k, :, :, :s] = np.clip(np.floor(x + 0.5), 0, 65535).astype(np.uint16)
                pixel_mask[k, :, :s] = True
                progress((i + 1) / n)
            gdd = np.array(gdd_all[lo:hi], dtype=np.float32)
            lost = ~np.isfinite(gdd).all(axis=1) & (status == STATUS_OK)
            status[lost] = STATUS_NO_WEATHER
            gdd[~np.isfinite(gdd)] = 0.0
            date_mask = np.broadcast_to((status == STATUS_OK)[:, None], (m, t_count)).copy()
            pixel_mask &= date_mask[:, :, None]
            pixels[~date_mask] = 0
            writer.write(lo, PixelSets(
                pixels=pixels, pixel_mask=pixel_mask, date_mask=date_mask, gdd=gdd, dates=dates,
                day_of_season=np.zeros(t_count, np.float32), parcel_ids=np.array(ids[lo:hi]),
                status=status.astype(str), labels=labels[lo:hi], blocks=blocks[lo:hi],
                classes=tuple(classes), bands=S2_BANDS))
    except BaseException:
        writer.abort()
        raise
    return writer.close()
