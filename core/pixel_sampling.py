"""Where parcels lie on the scene grids: which pixels of each parcel are read (a seeded sample on
the CRS-wide pixel lattice, the same whatever the window, the chunk or the raster extent), the
reading windows around them, and the spatial chunks parcels are read in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import ExtractionError, SceneError
from .parcels import ParcelTable
from .scenes.product import Grid, Scene


def _hash64(values: np.ndarray, seed: int) -> np.ndarray:
    """A seeded, order-independent pseudo-random key per pixel index (splitmix64)."""
    z = values.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _lattice_index(flat: np.ndarray, grid: Grid) -> np.ndarray:
    """Pixel indices of a grid -> one index per pixel of the CRS-wide lattice of that pixel size.

    A pixel keeps its index (and so its sampling key) whichever raster it is read from: a
    local clip of a scene or the whole remote tile, whose grids differ only in extent.
    """
    t = grid.transform
    row0, col0 = int(round(t.f / t.e)), int(round(t.c / t.a))
    rows = flat // grid.width + (row0 + 2**31)
    cols = flat % grid.width + (col0 + 2**31)
    return (rows.astype(np.uint64) << np.uint64(32)) | cols.astype(np.uint64)


def _keep_smallest(parcel: np.ndarray, key: np.ndarray, flat: np.ndarray, s: int):
    """Per parcel, the ``s`` entries with the smallest keys, and their rank (0..s-1)."""
    order = np.lexsort((key, parcel))
    parcel, key, flat = parcel[order], key[order], flat[order]
    if len(parcel) == 0:
        return parcel, key, flat, parcel.astype(np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(parcel)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(parcel)]))
    rank = np.arange(len(parcel)) - group_start
    keep = rank < s
    return parcel[keep], key[keep], flat[keep], rank[keep]


LAYER_BITS = 8
"""Low bits of ``sample_pixels``' uint32 burn values that count the parcels covering a pixel;
the other 24 hold the parcel, so a chunk holds fewer than 2**24 parcels. A sum that overflows
(many large parcel numbers on one pixel) still reads as a shared pixel: it wraps or saturates,
and neither leaves a count of one."""
LAYER_MASK = np.uint32((1 << LAYER_BITS) - 1)
MAX_CHUNK_PARCELS = (1 << (32 - LAYER_BITS)) - 1


@dataclass
class PixelSelection:
    """The pixel slots chosen for the parcels on one grid."""

    parcel: np.ndarray  # (M,) local parcel index
    flat: np.ndarray  # (M,) row * width + col on the grid
    slot: np.ndarray  # (M,) pixel slot 0..S-1
    counts: np.ndarray  # (n,) pixels covered by each parcel on the grid
    shared: np.ndarray  # (n,) bool: rasterised on its own, near pixels that parcels share


def _parcel_pixels(geom, grid: Grid, bounds: np.ndarray, block: int) -> np.ndarray:
    """Flat indices of the pixel centres ``geom`` covers on ``grid`` (rasterised on its own)."""
    from rasterio.features import rasterize
    from rasterio.windows import Window
    from rasterio.windows import transform as window_transform

    c_lo, c_hi, r_lo, r_hi = (int(v) for v in bounds)
    c_lo, r_lo = max(c_lo, 0), max(r_lo, 0)
    c_hi, r_hi = min(c_hi, grid.width), min(r_hi, grid.height)
    found = []
    for r0 in range(r_lo, r_hi, block):
        h = min(block, r_hi - r0)
        for c0 in range(c_lo, c_hi, block):
            w = min(block, c_hi - c0)
            burnt = rasterize([(geom, 1)], out_shape=(h, w), fill=0, all_touched=False, dtype="uint8",
                              transform=window_transform(Window(c0, r0, w, h), grid.transform))
            nz = np.flatnonzero(burnt)
            found.append((r0 + nz // w).astype(np.int64) * grid.width + (c0 + nz % w))
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def sample_pixels(geoms, active: np.ndarray, grid: Grid, s: int, seed: int, block: int) -> PixelSelection:
    """Rasterise the parcels window by window and draw up to ``s`` pixels per parcel.

    Pixels are drawn by the smallest seeded hash of their lattice index, which gives the same
    sample whatever the window size, however the parcels are chunked and whichever raster
    extent (a clip or the whole tile) the same pixels are read from.

    In one label image a pixel holds one parcel only, so parcels that overlap (an LPIS layer's
    slivers, a field inside another, the same field twice) would lose the pixels they share.
    Each window also counts how many parcels cover each pixel; the parcels whose extent holds a
    pixel covered twice are rasterised one by one instead (``PixelSelection.shared``).
    """
    from rasterio.enums import MergeAlg
    from rasterio.features import rasterize
    from rasterio.windows import Window
    from rasterio.windows import transform as window_transform

    t = grid.transform
    if t.b != 0 or t.d != 0:
        raise SceneError("Rotated scene grids are not supported; warp the scenes to a north-up grid first.")
    n = len(geoms)
    if n > MAX_CHUNK_PARCELS:
        raise ExtractionError(f"A chunk holds at most {MAX_CHUNK_PARCELS:,} parcels; give a smaller chunk size.")
    bounds = np.full((n, 4), np.nan)
    idx_active = np.flatnonzero(active)
    if len(idx_active):
        bounds[idx_active] = geoms.iloc[idx_active].bounds.to_numpy()
    c_lo = np.floor((bounds[:, 0] - t.c) / t.a)
    c_hi = np.ceil((bounds[:, 2] - t.c) / t.a)
    r_lo = np.floor((bounds[:, 3] - t.f) / t.e)
    r_hi = np.ceil((bounds[:, 1] - t.f) / t.e)
    with np.errstate(invalid="ignore"):
        on_grid = active & (c_hi > 0) & (c_lo < grid.width) & (r_hi > 0) & (r_lo < grid.height)
    counts = np.zeros(n, dtype=np.int64)
    shared = np.zeros(n, dtype=bool)
    geom_list = list(geoms)  # pandas .iloc per shape costs more than rasterising small parcels
    kept = []
    for r0 in range(0, grid.height, block):
        h = min(block, grid.height - r0)
        in_rows = on_grid & (r_hi > r0) & (r_lo < r0 + h)
        if not in_rows.any():
            continue
        for c0 in range(0, grid.width, block):
            w = min(block, grid.width - c0)
            sel = np.flatnonzero(in_rows & (c_hi > c0) & (c_lo < c0 + w))
            if len(sel) == 0:
                continue
            # One pass gives both the parcel and how many parcels cover each pixel: the burnt
            # values, (parcel + 1) << LAYER_BITS | 1 each, add up.
            shapes = ((geom_list[i], (int(i) + 1) << LAYER_BITS | 1) for i in sel)
            burnt = rasterize(shapes, out_shape=(h, w), transform=window_transform(Window(c0, r0, w, h), t), fill=0,
                              all_touched=False, dtype="uint32", merge_alg=MergeAlg.add).ravel()
            layers = burnt & LAYER_MASK
            if (layers > 1).any():
                twice = (layers > 1).reshape(h, w)
                shared[sel[_extent_holds(twice, c_lo[sel] - c0, c_hi[sel] - c0, r_lo[sel] - r0, r_hi[sel] - r0)]] = True
            nz = np.flatnonzero(layers == 1)
            if len(nz) == 0:
                continue
            parcel = (burnt[nz] >> LAYER_BITS).astype(np.int32) - 1
            flat = (r0 + nz // w).astype(np.int64) * grid.width + (c0 + nz % w)
            counts += np.bincount(parcel, minlength=n)
            p, k, f, _ = _keep_smallest(parcel, _hash64(_lattice_index(flat, grid), seed), flat, s)
            kept.append((p, k, f))
    if shared.any():
        kept = [(p[~shared[p]], k[~shared[p]], f[~shared[p]]) for p, k, f in kept]
        for i in np.flatnonzero(shared):
            flat = _parcel_pixels(geom_list[i], grid, np.array([c_lo[i], c_hi[i], r_lo[i], r_hi[i]]), block)
            counts[i] = len(flat)
            parcel = np.full(len(flat), i, dtype=np.int64)
            kept.append(_keep_smallest(parcel, _hash64(_lattice_index(flat, grid), seed), flat, s)[:3])
    if kept:
        p, k, f = (np.concatenate(a) for a in zip(*kept))
        parcel, _, flat, slot = _keep_smallest(p, k, f, s)
    else:
        parcel = flat = slot = np.zeros(0, dtype=np.int64)

    # Parcels that cover no pixel centre (smaller than a pixel, or thin) get the pixel under
    # a point inside them, so that small fields are still classified.
    tiny = np.flatnonzero(on_grid & (counts == 0))
    if len(tiny):
        pts = geoms.iloc[tiny].representative_point()
        col = np.floor((pts.x.to_numpy() - t.c) / t.a).astype(np.int64)
        row = np.floor((pts.y.to_numpy() - t.f) / t.e).astype(np.int64)
        inside = (col >= 0) & (col < grid.width) & (row >= 0) & (row < grid.height)
        tiny, col, row = tiny[inside], col[inside], row[inside]
        counts[tiny] = 1
        parcel = np.r_[parcel, tiny]
        flat = np.r_[flat, row * grid.width + col]
        slot = np.r_[slot, np.zeros(len(tiny), dtype=np.int64)]
    return PixelSelection(parcel.astype(np.int64), flat.astype(np.int64), slot.astype(np.int64), counts, shared)


def _extent_holds(mask: np.ndarray, c_lo: np.ndarray, c_hi: np.ndarray, r_lo: np.ndarray,
                  r_hi: np.ndarray) -> np.ndarray:
    """``(m,)`` bool: which of m pixel extents (columns ``c_lo:c_hi``, rows ``r_lo:r_hi``, clipped
    to the window) hold a True of the window's ``mask (h, w)``, by a summed-area table."""
    h, w = mask.shape
    table = np.zeros((h + 1, w + 1), dtype=np.int64)
    table[1:, 1:] = mask.cumsum(axis=0).cumsum(axis=1)
    c0, c1 = np.clip(c_lo, 0, w).astype(np.int64), np.clip(c_hi, 0, w).astype(np.int64)
    r0, r1 = np.clip(r_lo, 0, h).astype(np.int64), np.clip(r_hi, 0, h).astype(np.int64)
    return (table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]) > 0


def reading_windows(flat: np.ndarray, grid: Grid, block: int):
    """Group pixel indices by reading window: ``[(window, positions, rows, cols)]``.

    Each window is the block cut down to the bounding box of its pixels, so that a chunk
    covering a strip of the scene decodes only the file tiles under that strip.
    """
    from rasterio.windows import Window

    if len(flat) == 0:
        return []
    rows, cols = flat // grid.width, flat % grid.width
    nbc = math.ceil(grid.width / block)
    wid = (rows // block) * nbc + cols // block
    order = np.argsort(wid, kind="stable")
    wid_sorted = wid[order]
    starts = np.r_[0, np.flatnonzero(np.diff(wid_sorted)) + 1]
    ends = np.r_[starts[1:], len(order)]
    out = []
    for a, b in zip(starts, ends):
        pos = order[a:b]
        r, c = rows[pos], cols[pos]
        r0, c0 = int(r.min()), int(c.min())
        window = Window(c0, r0, int(c.max()) - c0 + 1, int(r.max()) - r0 + 1)
        out.append((window, pos, r - r0, c - c0))
    return out



def _tiles_of(bounds: np.ndarray, crs: Any, grids: Sequence[Grid]) -> np.ndarray:
    """``(len(bounds),)`` index of the first grid whose footprint holds each parcel's bounding-box
    centre (``bounds``: ``(N, 4)`` minx, miny, maxx, maxy in ``crs``); ``len(grids)`` for parcels
    on none."""
    from rasterio.warp import transform_bounds

    cx = (bounds[:, 0] + bounds[:, 2]) / 2
    cy = (bounds[:, 1] + bounds[:, 3]) / 2
    tile = np.full(len(bounds), len(grids), dtype=np.int64)
    for k in reversed(range(len(grids))):  # the first grid wins where footprints overlap
        t, g = grids[k].transform, grids[k]
        left, right = sorted((t.c, t.c + t.a * g.width))
        bottom, top = sorted((t.f, t.f + t.e * g.height))
        x0, y0, x1, y1 = transform_bounds(g.crs, crs, left, bottom, right, top)
        tile[(cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)] = k
    return tile


def spatial_chunks(table: ParcelTable, chunk_size: int, grids: Sequence[Grid] = ()) -> list[np.ndarray]:
    """Split the parcels into chunks of nearby parcels: by tile, then north-to-south strips.

    Nearby parcels share reading windows, so chunking in strips keeps the total decoding
    close to one pass over each scene; with several scene grids (tiles), a chunk holds the
    parcels of one tile only, so that it reads the windows of that tile alone. Each chunk's
    indices are sorted (layer order). The chunks depend only on the parcels, the grids and
    ``chunk_size``, so every run (one process or partitioned) makes the same ones.
    """
    n = len(table)
    if n <= chunk_size:
        return [np.arange(n)]
    usable = table.status == ""
    bounds = np.full((n, 4), np.nan)
    if usable.any():
        bounds[usable] = table.geometry.iloc[np.flatnonzero(usable)].bounds.to_numpy()
    return chunks_of_bounds(bounds, usable, table.geometry.crs, chunk_size, grids)


def chunks_of_bounds(bounds: np.ndarray, usable: np.ndarray, crs: Any, chunk_size: int,
                     grids: Sequence[Grid] = ()) -> list[np.ndarray]:
    """:func:`spatial_chunks` of parcels given by their bounding boxes alone: ``bounds`` ``(N, 4)``
    (minx, miny, maxx, maxy in ``crs``) of the parcels where ``usable`` ``(N,)`` is True."""
    n = len(bounds)
    if n <= chunk_size:
        return [np.arange(n)]
    usable = np.asarray(usable, dtype=bool)
    y = np.where(usable, bounds[:, 3], 0.0)
    chunks = []
    if len(grids) <= 1:  # one tile: no per-parcel tile index or member list (a country's layer)
        order = np.argsort(-y, kind="stable")
        del y
        return [np.sort(order[i:i + chunk_size]) for i in range(0, n, chunk_size)]
    tile = np.zeros(n, dtype=np.int64)
    if usable.any():
        tile[usable] = _tiles_of(bounds[usable], crs, grids)
    for k in np.unique(tile):
        members = np.flatnonzero(tile == k)
        order = members[np.argsort(-y[members], kind="stable")]
        chunks += [np.sort(order[i:i + chunk_size]) for i in range(0, len(order), chunk_size)]
    return chunks


def scene_grids(scenes: Sequence[Scene]) -> list[Grid]:
    """The distinct grids (tiles) of ``scenes``, in the order they first appear."""
    grids: list[Grid] = []
    for sc in scenes:
        for g in sc.grids:
            if g not in grids:
                grids.append(g)
    return grids
