"""Field layout: an irregular tessellation of parcels with roads, woods and villages between."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from shapely.geometry import MultiPoint, Polygon, box
from shapely.ops import voronoi_diagram

PIXEL = 10.0
"""Ground sampling distance of the 10 m bands, metres."""

BACKGROUND_KINDS = ("forest", "urban", "meadow_unlisted")


@dataclass
class Layout:
    """Cells of the landscape.

    Attributes:
        polygons: all cells (parcels first), shrunk to leave roads between them.
        n_parcels: how many of the cells are declared parcels (the first ones).
        background: (len(polygons) - n_parcels,) kind of each non-parcel cell.
        blocks: (n_parcels,) spatial block id of each parcel.
        block_size: side of a block in pixels.
    """

    polygons: list[Polygon]
    n_parcels: int
    background: list[str]
    blocks: np.ndarray
    block_size: int


def default_size(parcels: int) -> int:
    """Scene side in pixels for ``parcels`` parcels of about 4.5 ha plus 20 % other land."""
    side = int(np.ceil(np.sqrt(parcels * 450 / 0.8)))
    return max(64, int(np.ceil(side / 16.0)) * 16)


def make_layout(
    size: int, parcels: int, origin: tuple[float, float], rng: np.random.Generator
) -> Layout:
    """Tessellate a ``size`` x ``size`` pixel scene into parcels and other land.

    Jittered seed points give a Voronoi tessellation with irregular shapes; a random share of
    the cells is split further so parcel sizes vary several-fold, as in real cadastres. Each
    cell is shrunk by half a road width so that 5-15 m roads and hedges separate the fields.

    Args:
        size: scene side in pixels.
        parcels: number of parcels wanted.
        origin: (x, y) of the upper-left corner in metres.
        rng: random generator.

    Returns:
        The layout; fewer parcels than asked only if the scene is too small to hold them.
    """
    x0, y0 = origin
    extent = size * PIXEL
    n_cells = int(round(parcels / 0.8))
    spacing = extent / np.sqrt(n_cells)
    nx = max(1, int(round(extent / spacing)))
    gx, gy = np.meshgrid((np.arange(nx) + 0.5) * extent / nx, (np.arange(nx) + 0.5) * extent / nx)
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    pts = pts + rng.uniform(-0.42, 0.42, pts.shape) * (extent / nx)
    # Make up the exact count with extra points; they split existing cells into smaller ones.
    extra = n_cells - len(pts)
    if extra > 0:
        pts = np.vstack([pts, rng.uniform(0, extent, (extra, 2))])
    elif extra < 0:
        pts = pts[rng.permutation(len(pts))[:n_cells]]
    pts[:, 0] += x0
    pts[:, 1] = y0 - pts[:, 1]
    frame = box(x0, y0 - extent, x0 + extent, y0)
    cells = voronoi_diagram(MultiPoint([tuple(p) for p in pts]), envelope=frame)
    shapes = []
    for cell in cells.geoms:
        clipped = cell.intersection(frame)
        road = rng.uniform(2.5, 7.5)
        shrunk = clipped.buffer(-road, join_style=2)
        if shrunk.is_empty or shrunk.geom_type != "Polygon" or shrunk.area < 30 * PIXEL * PIXEL:
            continue
        # Snap to centimetres so the written coordinates do not depend on float noise.
        shapes.append(Polygon(np.round(np.asarray(shrunk.exterior.coords), 2)))
    # Order by position so parcel ids run roughly north-west to south-east.
    shapes.sort(key=lambda s: (-round(s.centroid.y / 200), s.centroid.x))
    order = rng.permutation(len(shapes))
    n_parcels = min(parcels, len(shapes))
    parcel_idx = np.sort(order[:n_parcels])
    other_idx = np.sort(order[n_parcels:])
    polygons = [shapes[i] for i in parcel_idx] + [shapes[i] for i in other_idx]
    background = [str(rng.choice(BACKGROUND_KINDS, p=[0.5, 0.25, 0.25])) for _ in other_idx]

    # Spatial blocks for train/val/test splits, as the paper's 1098 px blocks; smaller scenes
    # get a 4 x 4 grid so that every split has blocks.
    block_size = int(min(1098, max(16, int(np.ceil(size / 4)))))
    n_side = int(np.ceil(size / block_size))
    blocks = np.empty(n_parcels, np.int32)
    for i, poly in enumerate(polygons[:n_parcels]):
        c = poly.representative_point()
        col = min(int((c.x - x0) / PIXEL // block_size), n_side - 1)
        row = min(int((y0 - c.y) / PIXEL // block_size), n_side - 1)
        blocks[i] = row * n_side + col
    return Layout(polygons, n_parcels, background, blocks, block_size)
