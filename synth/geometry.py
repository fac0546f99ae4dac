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

    Jittered seed points give a Voronoi tessellation with irregular shapes. Neighbouring
    cells are then merged into large, non-convex fields and others cut into halves or strips,
    favouring large holdings in some parts of the scene and small ones elsewhere, so that
    parcel sizes vary several-fold, as in real cadastres. Each cell is shrunk by half a road
    width so that 5-15 m roads and hedges separate the fields.

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
    clipped_cells = [cell.intersection(frame) for cell in cells.geoms]
    clipped_cells = [c for c in clipped_cells if c.geom_type == "Polygon" and not c.is_empty]
    clipped_cells = vary_field_sizes(clipped_cells, (x0, y0), extent, rng)
    shapes = []
    for clipped in clipped_cells:
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


MERGE_SHARE = 0.15
"""Share of the tessellation's cells merged with a neighbour (and as many cells cut in two)."""

MIN_SPLIT_AREA = 60 * PIXEL * PIXEL
"""Smallest piece a cut may leave, m2: after the road margin it still holds ~30 pixels."""


def vary_field_sizes(
    cells: list[Polygon], origin: tuple[float, float], extent: float, rng: np.random.Generator
) -> list[Polygon]:
    """Merge some neighbouring cells and cut others in two, keeping the number of cells.

    A smooth random "farm structure" field over the scene decides where: merges where it is
    high (large holdings), cuts where it is low (small holdings, strips), so field sizes are
    spatially clustered as on real landscapes. Merged pairs give non-convex fields; a cut runs
    either across a cell's long axis (two compact halves) or along it (two long strips).

    Args:
        cells: adjacent polygons tiling the scene (Voronoi cells), metres.
        origin: (x, y) of the scene's upper-left corner.
        extent: scene side in metres.
        rng: random generator.

    Returns:
        The new cells, as many as given unless too few are large enough to cut.
    """
    from scipy.ndimage import map_coordinates
    from scipy.spatial import cKDTree

    n = len(cells)
    if n < 4:
        return list(cells)
    x0, y0 = origin
    cents = np.array([c.centroid.coords[0] for c in cells])
    coarse = rng.standard_normal((6, 6))
    u = (cents[:, 0] - x0) / extent * 3 + 1.5
    v = (y0 - cents[:, 1]) / extent * 3 + 1.5
    structure = map_coordinates(coarse, [v, u], order=3, mode="nearest")
    spacing = extent / np.sqrt(n)

    # Merges: each picked cell joins the neighbour it shares the longest edge with.
    tree = cKDTree(cents)
    weight = np.exp(1.5 * structure)
    picks = rng.choice(n, size=int(round(MERGE_SHARE * n)), replace=False, p=weight / weight.sum())
    used = np.zeros(n, bool)
    alive = np.ones(n, bool)
    merged = list(cells)
    for i in picks:
        if used[i]:
            continue
        _, near = tree.query(cents[i], k=min(9, n))
        best, best_len = -1, 0.25 * spacing
        for j in near[1:]:
            if used[j]:
                continue
            shared = cells[i].intersection(cells[j]).length
            if shared > best_len:
                best, best_len = int(j), shared
        if best < 0:
            continue
        union = cells[i].union(cells[best])
        if union.geom_type != "Polygon":
            continue
        merged[i] = Polygon(union.exterior.coords)
        used[i] = used[best] = True
        alive[best] = False
    out = [c for c, keep in zip(merged, alive) if keep]
    smallness = list(np.exp(-1.5 * structure[alive]))
    areas = [c.area for c in out]

    # Cuts restore the count; larger cells in small-holding areas are cut first.
    wanted = n - len(out)
    tries = 0
    while wanted > 0 and tries < 20 * n:
        tries += 1
        a = np.asarray(areas)
        w = np.where(a >= 2.5 * MIN_SPLIT_AREA, a * np.asarray(smallness), 0.0)
        if w.sum() <= 0:
            break
        k = int(rng.choice(len(out), p=w / w.sum()))
        pieces = _cut(out[k], rng)
        if pieces is None:
            continue
        out[k] = pieces[0]
        out.append(pieces[1])
        areas[k] = pieces[0].area
        areas.append(pieces[1].area)
        smallness.append(smallness[k])
        wanted -= 1
    return out


def _cut(cell: Polygon, rng: np.random.Generator) -> tuple[Polygon, Polygon] | None:
    """Cut ``cell`` by a straight line near its centroid; None if a piece would be too small."""
    rect = np.asarray(cell.minimum_rotated_rectangle.exterior.coords)
    edges = np.diff(rect[:3], axis=0)
    long_edge = edges[int(np.argmax(np.hypot(edges[:, 0], edges[:, 1])))]
    theta = np.arctan2(long_edge[1], long_edge[0])
    # Along the long axis: two strips; across it: two halves.
    angle = theta + (0.0 if rng.random() < 0.5 else np.pi / 2) + rng.normal(0.0, 0.12)
    d = np.array([np.cos(angle), np.sin(angle)])
    normal = np.array([-d[1], d[0]])
    width = np.sqrt(cell.area)
    c = np.asarray(cell.centroid.coords[0]) + normal * rng.uniform(-0.15, 0.15) * width
    far = 10.0 * width
    side = Polygon([c - d * far, c + d * far, c + d * far + normal * far, c - d * far + normal * far])
    a, b = cell.intersection(side), cell.difference(side)
    for piece in (a, b):
        if piece.geom_type != "Polygon" or piece.area < max(MIN_SPLIT_AREA, 0.2 * cell.area):
            return None
    return Polygon(a.exterior.coords), Polygon(b.exterior.coords)
