"""Parcels + scenes + weather -> per-parcel pixel sets ``(T, C, S)``, one pass over each scene:
scene windows read on threads, masked and converted, GDD per parcel, and datasets written.

Parcels come as a ``ParcelTable`` (:mod:`.parcels`); all of a chunk's parcels are rasterised once
per grid and S pixel positions per parcel drawn once (seeded, :mod:`.sampling`) and read from
every date, so a scene is decoded at most once per chunk. Settings travel as one
``ExtractionSettings`` (:mod:`.settings`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .errors import ExtractionError, SceneError, WeatherError
from .parcels import (
    STATUS_INVALID_VALUES,
    STATUS_NO_CLEAR_DATE,
    STATUS_NO_WEATHER,
    STATUS_OUTSIDE,
    STATUS_TOO_SMALL,
    ParcelFields,
    ParcelSource,
    ParcelTable,
    parcel_table,
    require_usable,
    some_names,
)
from .pixel_sampling import PixelSelection, reading_windows, sample_pixels, scene_grids, spatial_chunks
from .pixel_sets import STATUS_OK, DatasetWriter, PixelSets, status_ok
from .progress import Progress
from .scenes.bands import S2_BANDS
from .scenes.local import find_scenes
from .scenes.product import NOT_DIGITAL_NUMBERS, Grid, Scene, decode_threads, decoding_threads, usable_cpus
from .scenes.radiometry import bright_cloud_mask, check_missing_scl, to_reflectance
from .scenes.remote_product import prefetch_chunk
from .scenes.seasons import select_season
from .settings import ExtractionSettings
from .thermal.gdd import day_of_season, gdd_at_points
from .thermal.weather import DailyTemperature

log = logging.getLogger(__name__)

SATURATED_DN = 65535
"""The digital number Sentinel-2 gives saturated pixels: no reflectance, read as no data."""

INVALID_VALUES_SHARE = 0.5
"""A parcel more than this share of whose pixel-dates held values that are no reflectance (NaN,
infinite, negative or too large in the file, saturated) gets status ``invalid_values``."""

NEGATIVE_REFLECTANCE = "negative reflectance"

SceneSource = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], Sequence[Scene]]


def scene_list_of(scenes: SceneSource) -> list[Scene]:
    """``scenes`` as a list of scenes: scenes as they are, a folder / glob / files found by
    :func:`~thermocrop.core.scenes.local.find_scenes`."""
    if isinstance(scenes, (list, tuple)) and scenes and all(isinstance(s, Scene) for s in scenes):
        return list(scenes)
    return find_scenes(scenes)


def _gdd_for_parcels(table: ParcelTable, idx: np.ndarray, weather: Any, dates: np.ndarray,
                     settings: ExtractionSettings) -> tuple[np.ndarray, np.ndarray]:
    """GDD ``(n, T)`` at the acquisition dates and ``(n,)`` bool where the weather was usable.

    A weather problem of some parcels only (a coastal parcel far from any land cell, a long gap
    in one cell's record) marks those parcels; one of the file as a whole (days not covered,
    variables missing) raises ``WeatherError``.
    """
    n = len(idx)
    if n == 0:
        return np.zeros((0, len(dates)), dtype=np.float32), np.zeros(0, dtype=bool)
    xs = ys = None
    if isinstance(weather, DailyTemperature):
        if weather.tmin.shape[0] != len(table):
            raise WeatherError(
                f"The daily temperatures hold {weather.tmin.shape[0]} series but the layer has "
                f"{len(table)} parcels; read them for the same parcels."
            )
        weather = DailyTemperature(weather.dates, weather.tmin[idx], weather.tmax[idx], weather.source)
    else:
        pts = table.geometry.iloc[idx].representative_point()
        xs, ys = pts.x.to_numpy(), pts.y.to_numpy()
    gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, dates, season_start=settings.thermal.season_start,
                        t_base=settings.thermal.t_base, t_cap=settings.thermal.t_cap, method=settings.thermal.method,
                        parcel_ids=table.parcel_ids[idx], **settings.weather_options)
    ok = np.isfinite(gdd).all(axis=1)
    return np.where(ok[:, None], gdd, 0.0).astype(np.float32), ok


DENSE_BYTES = 64 * 1024 * 1024
"""Largest ``(n, T, C, S)`` pixel array built at a time from a chunk's compact buffers."""


@dataclass
class _ChunkPixels:
    """The pixels of a chunk's parcels, stored compactly: parcel ``i`` owns the rows
    ``offsets[i]:offsets[i + 1]`` of ``values`` and ``valid``, one per pixel slot it has, so
    memory follows the pixels parcels really cover (two for a tiny field, up to S for a large
    one) rather than S per parcel."""

    values: np.ndarray  # (N, T, C) uint16
    valid: np.ndarray  # (N, T) bool
    offsets: np.ndarray  # (n + 1,) int64
    date_mask: np.ndarray  # (n, T) bool
    gdd: np.ndarray  # (n, T) float32
    status: np.ndarray  # (n,) str
    idx: np.ndarray  # (n,) rows of the table

    @property
    def slots(self) -> np.ndarray:
        return np.diff(self.offsets)

    def dense(self, rows: np.ndarray, slots: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """``pixels (m, T, C, S)`` and ``pixel_mask (m, T, S)`` of the chunk's parcels ``rows``,
        S the largest slot count among them (or ``slots``)."""
        count = self.slots[rows]
        s = int(slots if slots is not None else max(1, int(count.max()) if len(rows) else 1))
        t, c = self.values.shape[1], self.values.shape[2]
        pixels = np.zeros((len(rows), t, c, s), dtype=np.uint16)
        mask = np.zeros((len(rows), t, s), dtype=bool)
        if count.sum():
            local = np.repeat(np.arange(len(rows)), count)
            slot = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
            source = np.repeat(self.offsets[rows], count) + slot
            pixels[local, :, :, slot] = self.values[source]
            mask[local, :, slot] = self.valid[source]
        return pixels, mask


def _pixel_sets(chunk: _ChunkPixels, rows: np.ndarray, table: ParcelTable, dates: np.ndarray,
                settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                slots: Optional[int] = None) -> PixelSets:
    """The ``PixelSets`` of the chunk's parcels ``rows``."""

    pixels, pixel_mask = chunk.dense(rows, slots)
    idx = chunk.idx[rows]
    return PixelSets(
        pixels=pixels,
        pixel_mask=pixel_mask,
        date_mask=chunk.date_mask[rows] & status_ok(chunk.status[rows])[:, None],
        gdd=chunk.gdd[rows],
        dates=dates,
        day_of_season=np.asarray(day_of_season(dates, settings.thermal.season_start), dtype=np.float32),
        parcel_ids=table.parcel_ids[idx],
        status=chunk.status[rows].astype(str),
        labels=table.labels[idx],
        blocks=table.blocks[idx],
        classes=tuple(classes),
        bands=S2_BANDS,
        meta=meta,
    )


def _slot_groups(slots: np.ndarray, t_count: int, fixed: Optional[int]) -> list[np.ndarray]:
    """Chunk rows in groups whose dense pixel arrays stay within ``DENSE_BYTES``; rows are
    grouped by slot count, so a group of tiny parcels is built with few slots."""
    order = np.argsort(slots, kind="stable")
    per_slot = t_count * len(S2_BANDS) * 2
    groups, start = [], 0
    while start < len(order):
        stop = start + 1
        while stop < len(order):
            s = fixed or max(1, int(slots[order[stop]]))
            if (stop - start + 1) * s * per_slot > DENSE_BYTES:
                break
            stop += 1
        groups.append(np.sort(order[start:stop]))
        start = stop
    return groups


def _extract_chunk(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                   settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                   progress: Optional[Progress]) -> PixelSets:
    """Pixel sets of the parcels ``idx`` of ``table`` (in that order), ``max_pixels`` slots each."""
    chunk = _read_chunk(table, idx, scenes, weather, settings, progress)
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    return _pixel_sets(chunk, np.arange(len(idx)), table, dates, settings, classes, meta, settings.sampling.max_pixels)


def _read_chunk(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                settings: ExtractionSettings, progress: Optional[Progress],
                stats: Optional[dict[str, float]] = None) -> _ChunkPixels:
    """Read the pixels, masks and GDD of the parcels ``idx`` of ``table`` into compact buffers.

    ``stats``, when given, receives what the chunk cost: ``windows`` read, ``window_pixels``
    decoded (per band), ``read_cpu_s`` spent decoding and converting them and ``cpu_s`` in all.
    """
    progress = progress or Progress()
    cpu_start = time.process_time()
    read_cpu = 0.0
    n_windows = window_pixels = 0
    n, t_count, c_count, s = len(idx), len(scenes), len(S2_BANDS), settings.sampling.max_pixels
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    status = table.status[idx].copy()
    active = status == ""
    geoms = table.geometry.iloc[idx].reset_index(drop=True)

    grids: list[Grid] = []
    for sc in scenes:
        for g in sc.grids:
            if g not in grids:
                grids.append(g)
    projected: dict[str, Any] = {}
    selections: list[PixelSelection] = []
    for k, grid in enumerate(grids):
        crs_key = grid.crs.to_wkt()
        if crs_key not in projected:
            projected[crs_key] = geoms.to_crs(crs_key)
        selections.append(sample_pixels(projected[crs_key], active, grid, s, settings.sampling.seed,
                                        settings.block_size))
        progress(0.1 * (k + 1) / len(grids))

    # Each parcel is read first from the grid that covers most of it (tiles overlap at their
    # edges); where that grid has no product on a date, or no data over the parcel (outside
    # the swath, a tile not downloaded), the other grids that cover it fill the empty slots.
    shared = np.logical_or.reduce([sel.shared for sel in selections]) if selections else np.zeros(n, dtype=bool)
    if shared.any():
        log.info("%d parcels of %s overlap others or lie next to overlaps; each is given every pixel it covers, "
                 "shared ones included: %s", int(shared.sum()), table.source, some_names(table.parcel_ids[idx[shared]]))
    counts = np.stack([sel.counts for sel in selections]) if selections else np.zeros((1, n), dtype=np.int64)
    preference = np.argsort(-counts, axis=0, kind="stable")  # (G, n) grids, most covering first
    rank = np.empty_like(preference)
    rank[preference, np.arange(n)[None, :]] = np.arange(len(counts))[:, None]
    covered = counts.max(axis=0)
    status[active & (covered == 0)] = STATUS_OUTSIDE
    status[active & (covered > 0) & (covered < settings.sampling.min_pixels)] = STATUS_TOO_SMALL
    readable = status == ""
    n_slots = np.where(readable, np.minimum(covered, s), 0)
    offsets = np.r_[0, np.cumsum(n_slots)].astype(np.int64)

    passes = []  # per preference rank: per grid (buffer rows, windows)
    for r in range(len(selections)):
        per_grid = []
        for k, sel in enumerate(selections):
            keep = readable[sel.parcel] & (rank[k, sel.parcel] == r)
            position = offsets[sel.parcel[keep]] + sel.slot[keep]  # row in the compact buffers
            per_grid.append((position, reading_windows(sel.flat[keep], grids[k], settings.block_size)))
        passes.append(per_grid)

    total = int(offsets[-1])
    pixels = np.zeros((total, t_count, c_count), dtype=np.uint16)
    pixel_mask = np.zeros((total, t_count), dtype=bool)
    read_progress = progress.sub(0.1, 0.9)
    unreadable = set()  # products (STAC items) that could not be fetched whole: never half-used
    if passes and any(p.fetch_first for sc in scenes for p in sc.products):
        windows_by_grid = [[w for per_grid in passes for w, *_ in per_grid[k][1]] for k in range(len(grids))]
        unreadable = prefetch_chunk(scenes, grids, windows_by_grid, progress.sub(0.1, 0.6))
        read_progress = progress.sub(0.6, 0.9)
    # Scenes are read on as many threads as decoding may use (one per Dask worker); each
    # thread fills its own date's column of the buffers. One scene alone: GDAL's threads.
    threads = min(scene_threads(scenes), t_count)
    # Several scenes at once: each decodes on its own thread, timed by that thread's clock.
    gdal_threads, clock = (1, time.thread_time) if threads > 1 else (None, time.process_time)

    odd = np.zeros((total, t_count), dtype=bool)  # values that are no reflectance, by slot and date
    seen: list[dict[str, dict[str, int]]] = [{} for _ in range(t_count)]  # one per date: no thread shares one

    def read(t: int) -> tuple[int, int, float]:
        with decoding_threads(gdal_threads):
            return _read_scene(t, scenes[t], passes, grids, unreadable, pixels, pixel_mask, settings, clock,
                               odd, seen[t], progress.check)

    with contextlib.closing(_in_threads(read, t_count, threads)) as results:
        for t, (windows, decoded, cpu) in enumerate(results):
            n_windows, window_pixels, read_cpu = n_windows + windows, window_pixels + decoded, read_cpu + cpu
            read_progress((t + 1) / max(t_count, 1))
    odd &= ~pixel_mask  # a slot another product filled holds a clear value

    valid_count = np.zeros((n, t_count), dtype=np.int64)
    has = np.flatnonzero(n_slots > 0)
    if len(has):
        valid_count[has] = np.add.reduceat(pixel_mask, offsets[has], axis=0, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = valid_count / np.maximum(n_slots, 1)[:, None]
    date_mask = readable[:, None] & (valid_count > 0) & (fraction >= settings.sampling.min_valid_fraction)
    owner_dates = date_mask[np.repeat(np.arange(n), n_slots)]
    pixel_mask &= owner_dates
    pixels[~owner_dates] = 0
    del owner_dates
    status[readable & ~date_mask.any(axis=1)] = STATUS_NO_CLEAR_DATE
    _say_values(table, idx, odd, offsets, n_slots, seen, status)

    progress.check()
    gdd = np.zeros((n, t_count), dtype=np.float32)
    need = np.flatnonzero(status == "")
    if len(need) and weather is not None:
        g, ok = _gdd_for_parcels(table, idx[need], weather, dates, settings)
        gdd[need] = g
        status[need[~ok]] = STATUS_NO_WEATHER
    elif len(need):
        status[need] = STATUS_NO_WEATHER
    progress(1.0)
    status[status == ""] = STATUS_OK
    if stats is not None:
        stats.update(windows=n_windows, window_pixels=window_pixels, read_cpu_s=read_cpu,
                     cpu_s=time.process_time() - cpu_start, parcel_dates=n * t_count)
    return _ChunkPixels(pixels, pixel_mask, offsets, date_mask, gdd, status.astype(str), np.asarray(idx))


def scene_threads(scenes: Sequence[Scene]) -> int:
    """Scenes a chunk reads at once: :func:`~thermocrop.core.scenes.product.decode_threads` as a
    number (``ALL_CPUS``: every CPU), one where a product is read over the network (its
    reader keeps fetched blocks in one cache)."""
    if any(p.fetch_first for sc in scenes for p in sc.products):
        return 1
    value = decode_threads()
    if value.upper() == "ALL_CPUS":
        return usable_cpus()
    try:
        return max(1, int(value))
    except ValueError:  # GDAL reads a value it does not understand as one thread
        return 1


def _in_threads(function, count: int, threads: int):
    """``function(0) .. function(count - 1)``, their results yielded in that order, computed on
    up to ``threads`` threads; where the caller stops early (an error, cancellation), the calls
    not yet started are dropped and the running ones finish before this returns."""
    if threads <= 1 or count <= 1:
        for i in range(count):
            yield function(i)
        return
    with ThreadPoolExecutor(max_workers=min(threads, count), thread_name_prefix="thermocrop-read") as pool:
        futures = [pool.submit(function, i) for i in range(count)]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _not_reflectance(dn: np.ndarray, reader: Any, rr: np.ndarray, cc: np.ndarray, offset: int,
                     seen: dict[str, int]) -> np.ndarray:
    """``(N,)`` bool: sampled pixels whose values are no reflectance: saturated (65535, as
    Sentinel-2 marks it) or, in the file, NaN, infinite, negative or above 65535 (see
    ``ProductReader.not_reflectance``). Counts them into ``seen`` by kind, and the pixels below
    the baseline offset, whose negative reflectance is read as 0."""
    bad = (dn == SATURATED_DN).any(axis=0)
    if bad.any():
        seen["saturated (65535)"] = seen.get("saturated (65535)", 0) + int(bad.sum())
    in_file = getattr(reader, "not_reflectance", None)  # remote readers fetch uint16 only
    if in_file is not None:
        code = np.where(bad, 0, in_file[rr, cc])
        for k, count in enumerate(np.bincount(code, minlength=len(NOT_DIGITAL_NUMBERS) + 1)[1:]):
            if count:
                seen[NOT_DIGITAL_NUMBERS[k]] = seen.get(NOT_DIGITAL_NUMBERS[k], 0) + int(count)
        bad |= code > 0
    if offset < 0:
        low = ((dn > 0) & (dn < -offset)).any(axis=0) & ~bad
        if low.any():
            seen[NEGATIVE_REFLECTANCE] = seen.get(NEGATIVE_REFLECTANCE, 0) + int(low.sum())
    return bad


def _named(product: Any) -> str:
    """A product and its file (or folder) for messages."""
    files = list(product.files)
    if len(files) == 1:
        return f"{product.name} ({files[0]})"
    return f"{product.name} ({len(files)} files in {Path(files[0]).parent})" if files else product.name


def _say_values(table: ParcelTable, idx: np.ndarray, odd: np.ndarray, offsets: np.ndarray, n_slots: np.ndarray,
                seen: Sequence[dict[str, dict[str, int]]], status: np.ndarray) -> None:
    """Log the values that are no reflectance, by product, and give the parcels most of whose
    pixel-dates held them the status ``invalid_values``.

    Args:
        odd: ``(N, T)`` bool, slots and dates whose value was no reflectance and that no other
            product filled.
        seen: per date, product name -> kind -> count (see :func:`_not_reflectance`).
        status: ``(n,)`` statuses of the chunk's parcels, changed in place.
    """
    by_product: dict[str, dict[str, int]] = {}
    for per_date in seen:
        for name, kinds in per_date.items():
            mine = by_product.setdefault(name, {})
            for kind, count in kinds.items():
                mine[kind] = mine.get(kind, 0) + count
    for name, kinds in sorted(by_product.items()):
        said = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()) if kind != NEGATIVE_REFLECTANCE)
        if said:
            log.warning("Product %s: pixels under the parcels hold values that are no reflectance (%s); they "
                        "are read as no data", name, said)
        if kinds.get(NEGATIVE_REFLECTANCE):
            log.info("Product %s: %d pixels under the parcels lie below the baseline offset (%s); read as "
                     "reflectance 0", name, kinds[NEGATIVE_REFLECTANCE], NEGATIVE_REFLECTANCE)
    has = np.flatnonzero(n_slots > 0)
    if not odd.any() or len(has) == 0:
        return
    count = np.zeros(len(n_slots), dtype=np.int64)
    count[has] = np.add.reduceat(odd.sum(axis=1), offsets[has])
    share = count / np.maximum(n_slots * odd.shape[1], 1)
    hit = np.flatnonzero((share > INVALID_VALUES_SHARE) & np.isin(status, ("", STATUS_NO_CLEAR_DATE)))
    status[hit] = STATUS_INVALID_VALUES
    affected = np.flatnonzero(count > 0)
    log.warning("%d parcels of %s have pixel values that are no reflectance on some dates (read as no data); %d of "
                "them on more than %d%% of their pixel-dates get status %s: %s", len(affected), table.source,
                len(hit), round(INVALID_VALUES_SHARE * 100), STATUS_INVALID_VALUES,
                some_names([f"{table.parcel_ids[idx[i]]} ({count[i]} of {n_slots[i] * odd.shape[1]})"
                            for i in affected]))


def _read_scene(t: int, scene: Scene, passes: list, grids: list[Grid], unreadable: set, pixels: np.ndarray,
                pixel_mask: np.ndarray, settings: ExtractionSettings,
                clock=time.process_time, odd: Optional[np.ndarray] = None,
                seen: Optional[dict[str, dict[str, int]]] = None, check=lambda: None) -> tuple[int, int, float]:
    """Fill date ``t`` of a chunk's buffers from ``scene``; returns the windows read, the pixels
    decoded and the CPU seconds (by ``clock``) spent decoding and converting them.

    ``odd`` (like ``pixel_mask``) receives the slots whose value was no reflectance, ``seen``
    their counts by product (see :func:`_not_reflectance`). ``check`` raises ``CancelledError``
    once the user asked to stop: it is asked before every window, so that a cancel waits for one
    window per thread, not for whole scenes."""
    n_windows = window_pixels = 0
    read_cpu = 0.0
    for per_grid in passes:
        for k, grid in enumerate(grids):
            position, windows = per_grid[k]
            products = [p for p in scene.products if p.grid == grid and id(p) not in unreadable]
            if len(position) == 0 or not products:
                continue
            for product in products:
                with product.open() as reader:
                    for window, pos, rr, cc in windows:
                        if pixel_mask[position[pos], t].all():
                            continue
                        check()
                        read_start = clock()
                        dn, scl = reader.read(window)
                        values, valid = to_reflectance(dn[:, rr, cc], product.offset,
                                                       None if scl is None else scl[rr, cc],
                                                       settings.sampling.scl_invalid)
                        read_cpu += clock() - read_start
                        n_windows += 1
                        window_pixels += int(window.width) * int(window.height)
                        if scl is None and product.level == "L2A" and settings.sampling.missing_scl == "bands":
                            valid &= ~bright_cloud_mask(values)
                        if seen is not None:
                            bad = _not_reflectance(dn[:, rr, cc], reader, rr, cc, product.offset,
                                                   seen.setdefault(_named(product), {}))
                            if bad.any():
                                valid &= ~bad
                                odd[position[pos][bad], t] = True
                        # Earlier products and preferred grids win: fill only empty slots.
                        fill = valid & ~pixel_mask[position[pos], t]
                        p_f = position[pos][fill]
                        pixels[p_f, t, :] = values[:, fill].T
                        pixel_mask[p_f, t] = True
    return n_windows, window_pixels, read_cpu


def dataset_meta(table: ParcelTable, scenes: list[Scene], weather: Any, settings: ExtractionSettings,
                 label_field: Optional[str]) -> dict[str, Any]:
    """The provenance a dataset stores in its ``meta``: where parcels, scenes and weather came from
    and the settings (:meth:`ExtractionSettings.to_dict`). Of ``table`` only its ``source`` and
    ``class_summary`` are read (a partitioned run gives its ``runs.layer_plan.LayerPlan``)."""
    # Absolute paths: a dataset is opened from other working directories than it was made in.
    return {
        "parcels": os.path.abspath(table.source) if os.path.exists(table.source) else table.source,
        "scenes": [os.path.abspath(f) for sc in scenes for f in sc.files],
        "levels": sorted({sc.level for sc in scenes if sc.level}),
        "weather": (os.path.abspath(weather) if isinstance(weather, (str, os.PathLike))
                    else getattr(weather, "source", None)),
        "label_field": label_field,
        **({"labels": table.class_summary} if table.class_summary else {}),
        **settings.to_dict(),
    }


def extract_pixel_sets(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    *,
    settings: Optional[ExtractionSettings] = None,
    fields: Optional[ParcelFields] = None,
    progress: Optional[Progress] = None,
) -> PixelSets:
    """Extract per-parcel pixel sets in memory (for a whole layer at once).

    Args:
        parcels: vector file, GeoDataFrame (any CRS) or a prepared :class:`ParcelTable`.
        scenes: a scene folder / glob / list of files, or scenes from :func:`find_scenes`.
        weather: a temperature file for :func:`core.thermal.weather.read_daily_temperature` or a
            ``DailyTemperature`` with one series per parcel of the layer.
        settings: pixel sampling (S = ``settings.sampling.max_pixels`` slots per parcel, all
            pixels when it has fewer), thermal time, window size and the weather reader's
            options; None for the defaults of :class:`ExtractionSettings`.
        fields: the fields of the parcel layer (:class:`ParcelFields`); its ``label_field`` is
            recorded in the provenance even when ``parcels`` is a ``ParcelTable``.
        progress: progress and cancellation.

    Returns:
        :class:`PixelSets` with P = the layer's parcels in layer order, T = all scene dates.
    """
    settings = settings or ExtractionSettings()
    fields = fields or ParcelFields()
    table = parcel_table(parcels, fields)
    scene_list = scene_list_of(scenes)
    if not scene_list:
        raise SceneError("No scenes were given.")
    select_season(scene_list, settings.thermal.season_start)  # refuses scenes of several seasons
    say_missing_scl(scene_list, settings)
    meta = dataset_meta(table, scene_list, weather, settings, fields.label_field)
    return _extract_chunk(table, np.arange(len(table)), scene_list, weather, settings, table.classes, meta,
                          progress)


def say_missing_scl(scenes: list[Scene], settings: ExtractionSettings) -> Optional[str]:
    """Log what :func:`core.scenes.check_missing_scl` says (it raises when asked to refuse)."""
    note = check_missing_scl(scenes, settings.sampling.missing_scl)
    if note:
        log.warning("%s", note)
    return note


def iter_chunks(table: ParcelTable, scenes: list[Scene], weather: Any, settings: ExtractionSettings,
                classes: Sequence[str], meta: dict[str, Any], chunk_size: int,
                progress: Optional[Progress] = None, full_slots: bool = False):
    """Yield ``(indices, PixelSets)`` for the parcels of spatial chunks of at most
    ``chunk_size`` parcels.

    A chunk is read into compact buffers sized by the pixels its parcels cover, then handed
    out in groups of parcels with similar pixel counts, each group's arrays within
    ``DENSE_BYTES``: S is the largest slot count of the group, or ``max_pixels`` with
    ``full_slots`` (as a dataset on disk stores them).
    """
    progress = progress or Progress()
    select_season(scenes, settings.thermal.season_start)  # refuses scenes of several seasons
    chunks = spatial_chunks(table, chunk_size, scene_grids(scenes))
    for i, idx in enumerate(chunks):
        yield from chunk_groups(table, idx, scenes, weather, settings, classes, meta,
                                progress.sub(i / len(chunks), (i + 1) / len(chunks)), full_slots)


def chunk_groups(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                 settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                 progress: Optional[Progress] = None, full_slots: bool = False,
                 stats: Optional[dict[str, float]] = None):
    """Yield ``(indices, PixelSets)`` for the groups of one chunk ``idx`` (see :func:`iter_chunks`).

    A partitioned run (``core.runs.partitions``) calls it for one chunk per task, so that its
    groups, and so every model batch, are those of a one-process run.
    """
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    fixed = settings.sampling.max_pixels if full_slots else None
    chunk = _read_chunk(table, idx, scenes, weather, settings, progress, stats)
    for rows in _slot_groups(chunk.slots, len(dates), fixed):
        yield idx[rows], _pixel_sets(chunk, rows, table, dates, settings, classes, meta, fixed)
    del chunk


def extract_to_dataset(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    out: Union[str, os.PathLike],
    *,
    settings: Optional[ExtractionSettings] = None,
    fields: Optional[ParcelFields] = None,
    chunk_size: int = 20000,
    overwrite: bool = False,
    progress: Optional[Progress] = None,
) -> Path:
    """Extract pixel sets chunk by chunk straight into a dataset folder (bounded memory).

    Arguments as :func:`extract_pixel_sets`, plus ``out`` (the dataset folder), ``chunk_size``
    (parcels held in memory at once: 20,000 x 60 dates x 64 pixels is about 1.5 GB) and
    ``overwrite``. Parcels keep their layer order. A failed or cancelled run writes nothing.

    Returns:
        The dataset folder.
    """
    settings = settings or ExtractionSettings()
    fields = fields or ParcelFields()
    table = parcel_table(parcels, fields)
    scene_list = scene_list_of(scenes)
    if not scene_list:
        raise SceneError("No scenes were given.")
    say_missing_scl(scene_list, settings)
    if len(table) == 0:
        raise ExtractionError(f"Parcel layer {table.source} holds no parcels.")
    meta = dataset_meta(table, scene_list, weather, settings, fields.label_field)
    dates = np.array([sc.date for sc in scene_list], dtype="datetime64[D]")

    writer = DatasetWriter(
        out,
        n_parcels=len(table),
        dates=dates,
        day_of_season=np.asarray(day_of_season(dates, settings.thermal.season_start), dtype=np.float32),
        max_pixels=settings.sampling.max_pixels,
        classes=table.classes,
        meta=meta,
        overwrite=overwrite,
        parcel_id_width=max(8, max(len(x) for x in table.parcel_ids)),
    )
    status = np.empty(len(table), dtype=object)
    with writer:
        for idx, chunk in iter_chunks(table, scene_list, weather, settings, table.classes, meta, chunk_size,
                                      progress, full_slots=True):
            writer.write_rows(idx, chunk)
            status[idx] = chunk.status
        require_usable(status, "extracted", table.source)  # raising here leaves no dataset
    counts = {s: int(n) for s, n in zip(*np.unique(open_status(out), return_counts=True))}
    log.info("Extracted %d parcels into %s: %s", len(table), out, counts)
    return Path(out)


def open_status(path: Union[str, os.PathLike]) -> np.ndarray:
    """The ``(P,)`` status array of a dataset folder."""
    return np.load(Path(path) / "status.npy", mmap_mode="r")