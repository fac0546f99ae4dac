"""The product model and its reader: a raster ``Grid``, the ``BandSource`` of each band, a
``Product`` (one tile, one datatake), a ``Scene`` (the products of one date), the
``ProductReader`` that reads windows of a product's files, and the number of threads scenes
are decoded with."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import numpy as np

from ..errors import SceneError
from ..threads import active_threads, usable_cpus
from .bands import S2_BANDS
from .radiometry import foreign_nodata
from .raster_files import open_scene_file

NOT_DIGITAL_NUMBERS = ("not finite", "negative", "above 65535")
"""Kinds of values a float or 32-bit scene file may hold that are no Sentinel-2 digital number."""


@dataclass(frozen=True)
class Grid:
    """A raster grid: CRS, affine transform and size. Pixels of one grid line up exactly."""

    crs: object
    transform: object
    width: int
    height: int

    @property
    def key(self) -> tuple:
        return (str(self.crs), tuple(round(v, 6) for v in tuple(self.transform)[:6]), self.width, self.height)

    @property
    def resolution(self) -> float:
        return abs(self.transform.a)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grid) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


@dataclass(frozen=True)
class BandSource:
    """One band of one raster: ``path`` as GDAL opens it, ``index`` 1-based."""

    path: str
    index: int


@dataclass
class Product:
    """One Sentinel-2 product (one tile, one datatake) on its 10 m grid.

    Attributes:
        name: product name (SAFE name, STAC id or file stem).
        date: acquisition date.
        level: ``"L1C"``, ``"L2A"`` or None when unknown.
        bands: band name -> source, for every band of ``S2_BANDS``.
        scl: the scene classification source, or None (no cloud masking).
        offset: DN offset added before dividing by 10000 (-1000 from baseline 04.00).
        grid: the grid all bands are read on (that of the finest band).
        files: the files the product was found in.
    """

    name: str
    date: np.datetime64
    level: Optional[str]
    bands: dict[str, BandSource]
    scl: Optional[BandSource]
    offset: int
    grid: Grid
    files: tuple[str, ...] = ()

    fetch_first: ClassVar[bool] = False
    """Whether the blocks a read needs must first be fetched into a cache (bands read over the
    network): extraction then fetches those of a whole chunk at once, keeps out a product that
    could not be fetched whole, and reads such scenes one at a time through their reader's
    one cache. Files on disk are read directly."""

    def open(self) -> "ProductReader":
        """Open the product's rasters for windowed reading (use as a context manager)."""
        return ProductReader(self)


@dataclass
class Scene:
    """All products of one acquisition date; earlier products win where both hold data."""

    date: np.datetime64
    products: list[Product] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return [f for p in self.products for f in p.files]

    @property
    def level(self) -> Optional[str]:
        return self.products[0].level if self.products else None

    @property
    def grids(self) -> list[Grid]:
        seen: list[Grid] = []
        for p in self.products:
            if p.grid not in seen:
                seen.append(p.grid)
        return seen

    def __repr__(self) -> str:
        return f"Scene({self.date}, {[p.name for p in self.products]})"


class ProductReader:
    """Windowed reads of one product on its grid: raw DNs in ``S2_BANDS`` order plus SCL.

    Bands stored on another grid (20 m) are warped onto the product grid, bilinearly for
    reflectance and by nearest neighbour for SCL classes.
    """

    def __init__(self, product: Product) -> None:
        self.product = product
        self._datasets: dict[str, object] = {}
        self._warped: dict[tuple[str, str], object] = {}
        self.not_reflectance: Optional[np.ndarray] = None
        """``(h, w)`` uint8 of the last window read, None where every band is a 16-bit file:
        0, or the index in :data:`NOT_DIGITAL_NUMBERS` plus one of the kind of value that is no
        digital number a pixel holds in some band; such pixels are read as no data."""

    def __enter__(self) -> "ProductReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for vrt in self._warped.values():
            vrt.close()
        for ds in self._datasets.values():
            ds.close()
        self._warped.clear()
        self._datasets.clear()

    def _dataset(self, path: str, resampling: str):
        import rasterio
        from rasterio.enums import Resampling
        from rasterio.vrt import WarpedVRT

        ds = self._datasets.get(path)
        if ds is None:
            try:
                # Local files through the scene drivers (a VRT only when it names files beside
                # it); a subdataset name of a .SAFE product as GDAL gave it.
                ds = open_scene_file(path) if os.path.isfile(path) else rasterio.open(path)
            except rasterio.errors.RasterioIOError as exc:
                raise SceneError(f"Cannot open {path}: {exc}. Check that the file is complete.") from exc
            self._datasets[path] = ds
        grid = self.product.grid
        if grid_of(ds) == grid:
            return ds
        key = (path, resampling)
        vrt = self._warped.get(key)
        if vrt is None:
            vrt = WarpedVRT(
                ds,
                crs=grid.crs,
                transform=grid.transform,
                width=grid.width,
                height=grid.height,
                resampling=getattr(Resampling, resampling),
                src_nodata=ds.nodata if ds.nodata is not None else 0,
                nodata=0,
            )
            self._warped[key] = vrt
        return vrt

    def _digital_numbers(self, data: np.ndarray, nodata: Optional[float]) -> np.ndarray:
        """``(c, h, w)`` values of a float or wider integer raster -> uint16 digital numbers.

        GDAL would clamp what uint16 cannot hold (a negative value to 0, 70000 to 65535, NaN
        to 0) and so turn it into no data or a bright pixel without a word; here such values
        are marked (:attr:`not_reflectance`, for the caller to count) and read as no data.
        The file's own no-data value is no data, not marked.
        """
        with np.errstate(invalid="ignore"):
            empty = np.isnan(data) if nodata is not None and np.isnan(nodata) else (
                data == nodata if nodata is not None else np.zeros(data.shape, dtype=bool))
            kinds = (~np.isfinite(data) if data.dtype.kind == "f" else np.zeros(data.shape, bool), data < 0,
                     data > 65535)
        bad = np.zeros(data.shape, dtype=bool)
        code = np.zeros(data.shape[1:], dtype=np.uint8) if self.not_reflectance is None else self.not_reflectance
        for k, where in enumerate(kinds, start=1):
            where &= ~empty & ~bad
            code[(code == 0) & where.any(axis=0)] = k
            bad |= where
        self.not_reflectance = code
        if data.dtype.kind == "f":
            data = np.floor(np.where(bad | empty, 0.0, data) + 0.5)  # rounded as GDAL rounds
        return np.where(bad | empty, 0, data).astype(np.uint16)

    def read(self, window) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Read one window.

        Args:
            window: a ``rasterio.windows.Window`` on the product grid.

        Returns:
            ``dn (C, h, w)`` uint16 digital numbers in ``S2_BANDS`` order and
            ``scl (h, w)`` uint8 classes, or None when the product has no SCL.
        """
        by_path: dict[str, list[tuple[int, int]]] = {}
        for c, band in enumerate(S2_BANDS):
            src = self.product.bands[band]
            by_path.setdefault(src.path, []).append((c, src.index))
        h, w = int(window.height), int(window.width)
        dn = np.empty((len(S2_BANDS), h, w), dtype=np.uint16)
        self.not_reflectance = None
        try:
            for path, pairs in by_path.items():
                ds = self._dataset(path, "bilinear")
                channels = [c for c, _ in pairs]
                nodata = foreign_nodata(ds.nodata)
                if np.dtype(ds.dtypes[0]) not in (np.uint8, np.uint16):
                    dn[channels] = self._digital_numbers(ds.read([i for _, i in pairs], window=window), ds.nodata)
                elif channels == list(range(channels[0], channels[0] + len(channels))):
                    # Consecutive channels: GDAL decodes straight into the output, no copy.
                    block = dn[channels[0]:channels[0] + len(channels)]
                    ds.read([i for _, i in pairs], window=window, out=block)
                    if nodata is not None:
                        block[block == nodata] = 0
                else:
                    data = ds.read([i for _, i in pairs], window=window, out_dtype=np.uint16)
                    if nodata is not None:
                        data[data == nodata] = 0
                    for k, c in enumerate(channels):
                        dn[c] = data[k]
            scl = None
            if self.product.scl is not None:
                src = self.product.scl
                ds = self._dataset(src.path, "nearest")
                scl = ds.read(src.index, window=window, out_dtype=np.uint8)
        except Exception as exc:  # rasterio raises several classes for damaged files
            if isinstance(exc, SceneError):
                raise
            raise SceneError(
                f"Reading product {self.product.name} ({', '.join(self.product.files)}) failed: {exc}. "
                "The file may be truncated; download it again or leave it out."
            ) from exc
        return dn, scl


def decode_threads() -> str:
    """How many threads extraction decodes scenes with.

    Decoding is most of an extraction's time. A chunk reads its local scenes on this many
    threads, each decoding its own scene's windows (``core.extract.scene_threads``); where
    scenes are read one after the other (products fetched over the network), GDAL decodes
    the compressed blocks of each window on this many threads instead (its
    ``GDAL_NUM_THREADS``, which JPEG 2000 products and warped 20 m bands follow too). Values
    do not depend on the thread count.

    Returns:
        The budget of the run in progress (``core.threads.run_threads``, which itself keeps
        the user's settings below); else ``GDAL_NUM_THREADS`` where it is set (a number or
        ``ALL_CPUS``); else
        ``OMP_NUM_THREADS`` where it is set, the variable torch follows too, which Dask sets
        to 1 in every worker process (a cluster runs one worker per core); else the number
        of CPUs this process may run on.
    """
    budget = active_threads()
    if budget is not None:
        return str(budget)
    for name in ("GDAL_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return str(usable_cpus())


def decoding_threads(threads: Optional[int] = None):
    """A GDAL environment (``rasterio.Env``) that decodes with ``threads`` threads
    (:func:`decode_threads` by default); the previous setting returns when it closes."""
    import rasterio

    return rasterio.Env(GDAL_NUM_THREADS=decode_threads() if threads is None else str(threads))


def grid_of(ds) -> Grid:
    """The grid of an open rasterio dataset."""
    return Grid(ds.crs, ds.transform, ds.width, ds.height)



def one_level(products: list, prefer: Optional[str], what: str = "products") -> tuple[list, Optional[str]]:
    """``products`` of one processing level where both L1C and L2A are among them (top-of-
    atmosphere and surface reflectance must not be mixed in one series): those of ``prefer`` (the
    level of the model given), else L2A; the others as they are. Products of no known level stay.

    Returns:
        The products kept, and where some were left out a sentence for the run's log that says
        how many, on which dates, and how to keep them instead (else None).
    """
    levels = {p.level for p in products if p.level}
    if levels != {"L1C", "L2A"}:
        return products, None
    keep = prefer.upper() if prefer and prefer.upper() in levels else "L2A"
    other = "L1C" if keep == "L2A" else "L2A"
    left = sorted({str(np.datetime64(p.date, "D")) for p in products if p.level == other})
    kept_dates = {str(np.datetime64(p.date, "D")) for p in products if p.level != other}
    lost = [d for d in left if d not in kept_dates]
    why = "the level of the model given" if prefer and keep == prefer.upper() else "surface reflectance first"
    shown = ", ".join(lost[:6]) + (f" and {len(lost) - 6} more" if len(lost) > 6 else "")
    note = (f"Both L1C and L2A {what} found; using the {keep} ones ({why}): {sum(p.level == other for p in products)} "
            f"{other} {what} left out"
            + (f", and with them every acquisition of {len(lost)} dates ({shown})" if lost else
               " (every date they hold has an L2A one too)" if keep == "L2A" else
               " (every date they hold has an L1C one too)")
            + f". To use the {other} ones instead, choose that level (the command line's --level {other}) or give "
            f"scenes of one level; a model of that level goes with them.")
    return [p for p in products if p.level != other], note
