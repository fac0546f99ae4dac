"""Products whose bands are remote raster assets: ``RemoteProduct`` (fetched through a
``RemoteReader`` before it is read), its window reader, and the fetching, in parallel, of the
blocks an extraction chunk needs (:func:`prefetch_chunk`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import SceneError
from ..io.http_session import host_of
from ..progress import Progress
from .bands import S2_BANDS
from .product import Grid, Product
from .radiometry import foreign_nodata
from .remote import AssetRef, RemoteAssetError, RemoteReader, strip_signature

log = logging.getLogger(__name__)


def source_window(src: Grid, dst: Grid, window, margin: int):
    """The window of grid ``src`` under ``window`` of grid ``dst`` (same CRS), widened by
    ``margin`` source pixels for resampling kernels and cut to the source raster; None when
    they do not overlap."""
    from rasterio.windows import Window

    t, s = dst.transform, src.transform
    x0 = t.c + t.a * window.col_off
    x1 = x0 + t.a * window.width
    y0 = t.f + t.e * window.row_off
    y1 = y0 + t.e * window.height
    c0 = int(np.floor((min(x0, x1) - s.c) / s.a + 1e-9)) - margin
    c1 = int(np.ceil((max(x0, x1) - s.c) / s.a - 1e-9)) + margin
    r0 = int(np.floor((max(y0, y1) - s.f) / s.e + 1e-9)) - margin
    r1 = int(np.ceil((min(y0, y1) - s.f) / s.e - 1e-9)) + margin
    c0, r0 = max(c0, 0), max(r0, 0)
    c1, r1 = min(c1, src.width), min(r1, src.height)
    if c1 <= c0 or r1 <= r0:
        return None
    return Window(c0, r0, c1 - c0, r1 - r0)


@dataclass
class RemoteProduct(Product):
    """A product whose band files are remote assets read through a :class:`RemoteReader`.

    Attributes (beyond :class:`Product`'s):
        assets: band name -> asset, for every band of ``S2_BANDS``.
        scl_asset: the scene classification asset, or None.
        reader: the reader (cache, retries, signing) the assets are read through.
        item_id: the STAC item the product came from.
    """

    assets: dict[str, AssetRef] = field(default_factory=dict)
    scl_asset: Optional[AssetRef] = None
    reader: Optional[RemoteReader] = None
    item_id: str = ""

    fetch_first = True

    def open(self) -> "RemoteProductReader":
        return RemoteProductReader(self)

    def all_assets(self) -> list[AssetRef]:
        return [self.assets[b] for b in S2_BANDS] + ([self.scl_asset] if self.scl_asset else [])

    def source_windows(self, window) -> list[tuple[AssetRef, Any]]:
        """Per asset, the window of its own grid that reading ``window`` of the product needs."""
        out = []
        for asset in self.all_assets():
            grid = self.reader.info(asset).grid
            margin = 0 if grid == self.grid else 1  # bilinear needs one neighbour each side
            win = source_window(grid, self.grid, window, margin)
            if win is not None:
                out.append((asset, win))
        return out


class RemoteProductReader:
    """``read(window)`` of a :class:`RemoteProduct`, as ``ProductReader`` does for files.

    Bands on another grid (20 m) are resampled onto the product grid as ``ProductReader``
    does (bilinear for reflectance, nearest for SCL, 0 as no data), from the blocks under
    the window plus one source pixel around it.
    """

    def __init__(self, product: RemoteProduct) -> None:
        self.product = product

    def __enter__(self) -> "RemoteProductReader":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def close(self) -> None:
        pass

    def _band(self, asset: AssetRef, window, resampling: str) -> np.ndarray:
        from rasterio.enums import Resampling
        from rasterio.warp import reproject
        from rasterio.windows import transform as window_transform

        reader, grid = self.product.reader, self.product.grid
        info = reader.info(asset)
        src_grid = info.grid
        h, w = int(window.height), int(window.width)
        nodata = foreign_nodata(asset.nodata if asset.nodata is not None else info.nodata)
        if src_grid == grid:
            values = reader.read(asset, window)
        else:
            src_window = source_window(src_grid, grid, window, 1)
            values = np.zeros((h, w), dtype=info.dtype)
            if src_window is None:
                return values
            source = reader.read(asset, src_window)
            if nodata is not None:
                source = np.where(source == nodata, 0, source).astype(info.dtype)
                nodata = None
            reproject(source, values, src_transform=window_transform(src_window, src_grid.transform),
                      src_crs=src_grid.crs, dst_transform=window_transform(window, grid.transform),
                      dst_crs=grid.crs, resampling=getattr(Resampling, resampling), src_nodata=0, dst_nodata=0)
        if nodata is not None:
            values = np.where(values == nodata, 0, values)
        return values

    def read(self, window) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """``dn (C, h, w)`` uint16 in ``S2_BANDS`` order and ``scl (h, w)`` uint8 or None."""
        product = self.product
        h, w = int(window.height), int(window.width)
        dn = np.empty((len(S2_BANDS), h, w), dtype=np.uint16)
        try:
            for c, band in enumerate(S2_BANDS):
                dn[c] = np.clip(self._band(product.assets[band], window, "bilinear"), 0, 65535)
            scl = None
            if product.scl_asset is not None:
                scl = self._band(product.scl_asset, window, "nearest").astype(np.uint8)
        except RemoteAssetError:
            raise
        except Exception as exc:  # rasterio raises several classes
            raise SceneError(f"Reading product {product.name} failed: {exc}") from exc
        return dn, scl


def prefetch_chunk(scenes: Sequence[Any], grids: Sequence[Grid], windows_by_grid: Sequence[Sequence[Any]],
                   progress: Optional[Progress] = None) -> set[int]:
    """Fetch, in parallel, the blocks that reading ``windows_by_grid`` from every remote product
    of ``scenes`` needs.

    Args:
        scenes: the scenes of an extraction chunk.
        grids: the grids the windows are on.
        windows_by_grid: per grid, the windows that hold parcels.
        progress: progress and cancellation.

    Returns:
        ``id()`` of the products that could not be read whole: they must not be used (a
        warning names each one and the asset at fault).
    """
    progress = progress or Progress()
    by_reader: dict[int, tuple[RemoteReader, list]] = {}
    for scene in scenes:
        for product in scene.products:
            if not product.fetch_first or product.grid not in grids:
                continue
            windows = windows_by_grid[list(grids).index(product.grid)]
            if not windows:
                continue
            need: dict[str, tuple[AssetRef, set]] = {}
            for window in windows:
                for asset, win in product.source_windows(window):
                    info = product.reader.info(asset)
                    need.setdefault(asset.key, (asset, set()))[1].update(info.blocks_of(win))
            entry = by_reader.setdefault(id(product.reader), (product.reader, []))
            for asset, blocks in need.values():
                entry[1].append((asset, sorted(blocks), (scene.date, product)))
    failed: set[int] = set()
    first_error: Optional[RemoteAssetError] = None
    products = {id(p) for _, requests in by_reader.values() for *_, (_, p) in requests}
    for k, (reader, requests) in enumerate(by_reader.values()):
        # Requests of one date stay together, so that dates complete one after another.
        requests.sort(key=lambda r: (r[2][0], r[2][1].name))
        failures = reader.fetch([(a, b, date) for a, b, (date, _) in requests],
                                progress.sub(k / len(by_reader), (k + 1) / len(by_reader)))
        for asset, _, (date, product) in requests:
            error = failures.get(asset.key)
            if error is not None and id(product) not in failed:
                first_error = first_error or error
                failed.add(id(product))
                reader.stats.failed.append(strip_signature(asset.href))
                log.warning("Leaving out %s of %s: %s", product.name, date, error)
    if products and failed == products and first_error is not None:
        raise SceneError(f"Every download failed ({len(products)} remote products): the first error came from "
                         f"{host_of(first_error.href)}: {first_error}. Check the network and the catalogue's "
                         "service status, then run again (what was fetched is kept in the cache).")
    progress(1.0)
    return failed
