"""Find Sentinel-2 products on disk, group them into one scene per date, and read them.

Three layouts are understood: (a) one multi-band GeoTIFF/COG per product, (b) one file per
band (10 m and 20 m; 20 m bands are resampled bilinearly onto the 10 m grid) and (c) a
``.SAFE`` folder or zip opened through GDAL's SENTINEL2 driver.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np

from .bands import BASELINE_OFFSET_DN, OFFSET_FROM_BASELINE, S2_BANDS
from ..errors import SceneError

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

SCL_INVALID: tuple[int, ...] = (0, 1, 3, 8, 9, 10, 11)
"""SCL classes masked out: no data, defective, cloud shadow, clouds (medium, high), cirrus
and snow. Snow is masked too because a snow-covered field shows nothing of its crop."""

BRIGHT_CLOUD = 2000
"""Reflectance x 10000 (0.2) from which a pixel bright in blue (B02) and in the mean of B02, B03
and B04 counts as cloud or snow, for L2A products without SCL (``missing_scl="bands"``)."""

NOT_DIGITAL_NUMBERS = ("not finite", "negative", "above 65535")
"""Kinds of values a float or 32-bit scene file may hold that are no Sentinel-2 digital number."""

MISSING_SCL = ("refuse", "warn", "bands")
"""What to do with L2A products without SCL: refuse them, use them unmasked with a warning, or
mask clouds with the brightness test :func:`bright_cloud_mask`."""

RASTER_SUFFIXES = (".tif", ".tiff", ".jp2", ".vrt", ".img")

# Names used by STAC catalogues (Earth Search) for the Sentinel-2 assets.
_BAND_ALIASES = {
    "coastal": "B01",
    "blue": "B02",
    "green": "B03",
    "red": "B04",
    "rededge1": "B05",
    "rededge2": "B06",
    "rededge3": "B07",
    "nir": "B08",
    "nir08": "B8A",
    "nir09": "B09",
    "cirrus": "B10",
    "swir16": "B11",
    "swir22": "B12",
    "scl": "SCL",
}
_BAND_RE = re.compile(r"^(?:B0?(\d{1,2})(A?)|(SCL))(?![0-9A-Za-z])", re.IGNORECASE)
_BAND_TOKEN_RE = re.compile(r"(?:^|(?<=[_\-.]))(B\d{1,2}A?|SCL)(?=$|[_\-.])", re.IGNORECASE)
# STAC asset names as file-name tokens (``red.tif``, ``T31UFU_20230701_nir08.tif``), longest first.
_ALIAS_TOKEN_RE = re.compile(
    r"(?:^|(?<=[_\-.]))(" + "|".join(sorted(_BAND_ALIASES, key=len, reverse=True)) + r")(?=$|[_\-.])",
    re.IGNORECASE,
)
_RESOLUTION_TOKEN_RE = re.compile(r"(?:^|[_\-.])(10|20|60)m(?=$|[_\-.])", re.IGNORECASE)
_DATE_RE = re.compile(r"(?<!\d)((?:19|20)\d{2})(\d{2})(\d{2})(?:T\d{6})?(?!\d)")
_BASELINE_RE = re.compile(r"_N(\d{2})(\d{2})(?=_|$|\.)")
# MGRS tile: UTM zone, latitude band (C..X without I, O), 100 km square (letters without I, O).
_TILE_RE = re.compile(r"(?:^|[_\-.])T?(\d{2})([C-HJ-NP-X])([A-HJ-NP-Z]{2})(?=$|[_\-.])")
_DATE_TAGS = (
    "DATATAKE_1_DATATAKE_SENSING_START",
    "PRODUCT_START_TIME",
    "SENSING_TIME",
    "ACQUISITION_DATE",
    "DATE_ACQUIRED",
    "datetime",
    "TIFFTAG_DATETIME",
)


def band_name(text: str) -> Optional[str]:
    """The Sentinel-2 band a description or file-name token denotes, or None.

    ``"B4, central wavelength 665 nm"`` -> ``"B04"``, ``"B8A"`` -> ``"B8A"``,
    ``"nir08"`` -> ``"B8A"``, ``"SCL"`` -> ``"SCL"``.
    """
    text = (text or "").strip()
    m = _BAND_RE.match(text)
    if m:
        if m.group(3):
            return "SCL"
        number, a = int(m.group(1)), m.group(2).upper()
        # Sentinel-2 writes the narrow NIR band as B8A, the others zero-padded (B02, B11).
        return f"B{number}A" if a else f"B{number:02d}"
    first = re.split(r"[\s,;:()_\-]+", text.lower(), maxsplit=1)[0]
    return _BAND_ALIASES.get(first)


def date_from_name(name: str) -> Optional[np.datetime64]:
    """The first valid ``YYYYMMDD`` in a product or file name (SAFE sensing start comes first)."""
    for m in _DATE_RE.finditer(name):
        try:
            return np.datetime64(f"{m.group(1)}-{m.group(2)}-{m.group(3)}", "D")
        except ValueError:
            continue
    return None


def _acquisition_date_tag(tags: dict[str, str]) -> tuple[Optional[np.datetime64], Optional[str]]:
    """The acquisition date in a file's metadata and the key it was found under (not
    ``TIFFTAG_DATETIME``, the time the file was written)."""
    for key in _DATE_TAGS:
        if key == "TIFFTAG_DATETIME":
            continue
        date = _date_from_tags({key: tags[key]}) if tags.get(key) else None
        if date is not None:
            return date, key
    return None, None


def _level_from_tags(tags: dict[str, str]) -> Optional[str]:
    text = tags.get("PROCESSING_LEVEL") or ""
    return "L2A" if "2A" in text else "L1C" if "1C" in text else None


def tile_from_name(name: str) -> Optional[str]:
    """The MGRS tile in a product or file name (``T32TMT`` or ``32TMT`` between separators)."""
    m = _TILE_RE.search(name)
    return "".join(m.groups()) if m else None


def _utm_zone_of_tile(tile: str) -> tuple[int, str]:
    """``"32TMT"`` -> ``(32, "north")``: latitude bands C..M lie south of the equator."""
    return int(tile[:2]), "south" if tile[2] <= "M" else "north"


def _utm_zone_of_crs(crs: Any) -> Optional[tuple[int, str]]:
    """The WGS 84 / UTM zone of ``crs`` (EPSG 326zz north, 327zz south), or None."""
    try:
        epsg = crs.to_epsg() if crs is not None else None
    except Exception:  # a CRS pyproj cannot match to a code
        return None
    if epsg is not None and 32601 <= epsg <= 32660:
        return epsg - 32600, "north"
    if epsg is not None and 32701 <= epsg <= 32760:
        return epsg - 32700, "south"
    return None


def _reconcile(path: Any, what: str, named: Any, stored: Any, where: Optional[str]) -> Any:
    """``stored`` (the file's own metadata) where present, else ``named`` (from its name); a
    disagreement between the two is logged with the file and both values."""
    if named is not None and stored is not None and named != stored:
        log.warning("%s: its name says %s %s but its metadata (%s) says %s; %s from the metadata is used. Rename the "
                    "file or correct its metadata if that is wrong.", path, what, named, where, stored, what)
    return _first(stored, named)


def _check_tile(path: Any, name: str, grid: "Grid") -> None:
    """Warn when the MGRS tile in ``name`` lies in another UTM zone than the file's georeferencing
    (which places the pixels, and so wins)."""
    tile = tile_from_name(name)
    zone = _utm_zone_of_crs(grid.crs)
    if tile is None or zone is None or _utm_zone_of_tile(tile) == zone:
        return
    log.warning("%s: its name says tile %s (UTM zone %d %s) but it is georeferenced in UTM zone %d %s (%s); its "
                "pixels are placed by its georeferencing. Rename the file or check how it was exported.", path,
                tile, *_utm_zone_of_tile(tile), *zone, grid.crs)


def _date_from_tags(tags: dict[str, str]) -> Optional[np.datetime64]:
    for key in _DATE_TAGS:
        value = tags.get(key)
        if not value:
            continue
        m = re.match(r"\s*(\d{4})[-:/](\d{2})[-:/](\d{2})", value)
        if m:
            try:
                return np.datetime64(f"{m.group(1)}-{m.group(2)}-{m.group(3)}", "D")
            except ValueError:
                continue
    return None


def level_from_name(name: str) -> Optional[str]:
    """``"L2A"``, ``"L1C"`` or None from a product name (``MSIL2A``, ``_L2A``)."""
    m = re.search(r"(?:MSI|^|[_\-.])(L1C|L2A)(?=$|[_\-.])", name, re.IGNORECASE)
    return m.group(1).upper() if m else None


def offset_from_name(name: str) -> Optional[int]:
    """The DN offset implied by the processing baseline ``Nxxyy`` in a SAFE name, or None."""
    m = _BASELINE_RE.search(name)
    if not m:
        return None
    baseline = (int(m.group(1)), int(m.group(2)))
    return BASELINE_OFFSET_DN if baseline >= OFFSET_FROM_BASELINE else 0


def _offset_from_tags(tags: dict[str, str]) -> Optional[int]:
    for key, value in tags.items():
        if "ADD_OFFSET" in key.upper():
            try:
                return int(round(float(value)))
            except ValueError:
                continue
    baseline = tags.get("PROCESSING_BASELINE")
    if baseline:
        m = re.match(r"\s*(\d{1,2})\.(\d{1,2})", baseline)
        if m:
            return BASELINE_OFFSET_DN if (int(m.group(1)), int(m.group(2))) >= OFFSET_FROM_BASELINE else 0
    return None


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
                ds = rasterio.open(path)
            except rasterio.errors.RasterioIOError as exc:
                raise SceneError(f"Cannot open {path}: {exc}. Check that the file is complete.") from exc
            self._datasets[path] = ds
        grid = self.product.grid
        if _grid_of(ds) == grid:
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
                nodata = _foreign_nodata(ds)
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
        ``GDAL_NUM_THREADS`` where it is set (a number or ``ALL_CPUS``); else
        ``OMP_NUM_THREADS`` where it is set, the variable torch follows too, which Dask sets
        to 1 in every worker process (a cluster runs one worker per core); else the number
        of CPUs this process may run on.
    """
    for name in ("GDAL_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return str(usable_cpus())


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no CPU affinity on this platform (Windows, macOS)
        return os.cpu_count() or 1


def decoding_threads(threads: Optional[int] = None):
    """A GDAL environment (``rasterio.Env``) that decodes with ``threads`` threads
    (:func:`decode_threads` by default); the previous setting returns when it closes."""
    import rasterio

    return rasterio.Env(GDAL_NUM_THREADS=decode_threads() if threads is None else str(threads))


def _foreign_nodata(ds) -> Optional[int]:
    """A file's no-data value when it is not Sentinel-2's 0 and a digital number could hold it.

    Some tools write 65535 as no data; those pixels become 0 so that one rule masks them all.
    Negative no-data values already read as 0 once clamped to uint16.
    """
    nodata = ds.nodata
    if nodata is None or not np.isfinite(nodata) or nodata != int(nodata) or not 0 < nodata <= 65535:
        return None
    return int(nodata)


def to_reflectance(
    dn: np.ndarray, offset: int, scl: Optional[np.ndarray] = None, scl_invalid: Sequence[int] = SCL_INVALID
) -> tuple[np.ndarray, np.ndarray]:
    """Digital numbers -> reflectance x 10000 and validity.

    Args:
        dn: ``(C, ...)`` uint16 digital numbers; 0 in any band is Sentinel-2's no data.
        offset: DN offset of the product (-1000 from baseline 04.00).
        scl: ``(...)`` SCL classes or None.
        scl_invalid: SCL classes to mask.

    Returns:
        ``values (C, ...)`` uint16 reflectance x 10000 (clipped at 0) and ``valid (...)`` bool.
    """
    valid = (dn != 0).all(axis=0)
    if scl is not None:
        valid &= ~np.isin(scl, np.asarray(scl_invalid, dtype=scl.dtype))
    if offset:
        values = np.clip(dn.astype(np.int32) + offset, 0, 65535).astype(np.uint16)
    else:
        values = dn.astype(np.uint16, copy=True)
    return values, valid


def bright_cloud_mask(values: np.ndarray) -> np.ndarray:
    """``(...)`` bool: pixels bright in blue and across the visible bands, i.e. thick cloud or snow.

    A fallback for surface reflectance without SCL: on the synthetic L2A regions it flags every
    pixel SCL calls high-probability cloud and about half of medium-probability cloud, but no thin
    cirrus and no cloud shadow (docs/extraction.md).

    Args:
        values: ``(C, ...)`` reflectance x 10000 in ``S2_BANDS`` order (B02, B03, B04 first).
    """
    visible = values[:3].astype(np.int32)
    return (visible[0] >= BRIGHT_CLOUD) & (visible.mean(axis=0) >= BRIGHT_CLOUD)


def check_missing_scl(scenes: Sequence["Scene"], missing_scl: str = "warn") -> Optional[str]:
    """What the user must know about L2A products without SCL among ``scenes``, or None.

    Raises:
        SceneError: there are such products and ``missing_scl`` is ``"refuse"``, or
            ``missing_scl`` is not one of :data:`MISSING_SCL`.
    """
    if missing_scl not in MISSING_SCL:
        raise SceneError(f"Unknown missing_scl {missing_scl!r}; use one of {', '.join(MISSING_SCL)}.")
    products = [p for sc in scenes for p in sc.products if p.level == "L2A" and p.scl is None]
    if not products:
        return None
    total = sum(1 for sc in scenes for p in sc.products if p.level == "L2A")
    names = ", ".join(p.name for p in products[:3]) + (", ..." if len(products) > 3 else "")
    head = (f"{len(products)} of {total} L2A products have no scene classification (SCL) to mask clouds with "
            f"({names})")
    if missing_scl == "refuse":
        raise SceneError(f"{head}. Put each product's SCL raster beside it (<name>_SCL.tif, or an SCL band), or "
                         "choose what to do: --missing-scl bands masks clouds by a brightness test (thick "
                         "clouds and snow only), --missing-scl warn uses the products unmasked.")
    if missing_scl == "bands":
        return (f"{head}: their clouds are masked by a brightness test (blue and visible reflectance of 0.2 or "
                "more), which finds thick clouds and snow but not thin clouds or cloud shadows.")
    return (f"{head}: their clouds are not masked, so cloudy pixels enter the pixel sets. Add the SCL rasters, "
            "or mask by a brightness test (missing_scl='bands', --missing-scl bands).")


def _first(*values):
    """The first value that is not None (a datetime64 of 1970-01-01 is falsy, so no ``or``)."""
    return next((v for v in values if v is not None), None)


def _grid_of(ds) -> Grid:
    return Grid(ds.crs, ds.transform, ds.width, ds.height)


def _expand_source(source: Union[PathLike, Sequence[PathLike]]) -> list[Path]:
    items: Iterable = [source] if isinstance(source, (str, os.PathLike)) else source
    paths: list[Path] = []
    for item in items:
        text = os.fspath(item)
        if any(ch in text for ch in "*?["):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise SceneError(f"No file matches {text!r}; check the pattern.")
            paths += [Path(m) for m in matches]
        else:
            p = Path(text)
            if not p.exists():
                raise SceneError(f"Scene source {text} does not exist.")
            paths.append(p)
    return paths


def _is_safe(path: Path) -> bool:
    name = path.name.upper()
    return name.endswith(".SAFE") or (name.endswith(".ZIP") and "_MSIL" in name)


def _walk(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """Split sources into SAFE products and loose raster files, descending into folders."""
    safes, rasters = [], []
    for p in paths:
        if _is_safe(p):
            safes.append(p)
        elif p.is_dir():
            for root, dirs, files in os.walk(p):
                for d in sorted(dirs):
                    if _is_safe(Path(d)):
                        safes.append(Path(root) / d)
                dirs[:] = sorted(d for d in dirs if not _is_safe(Path(d)) and not d.startswith("."))
                for f in sorted(files):
                    fp = Path(root) / f
                    if _is_safe(fp):
                        safes.append(fp)
                    elif fp.suffix.lower() in RASTER_SUFFIXES and not f.startswith("."):
                        rasters.append(fp)
        elif p.suffix.lower() in RASTER_SUFFIXES:
            rasters.append(p)
        else:
            raise SceneError(f"{p} is neither a raster file, a folder nor a .SAFE product.")
    return safes, rasters


@dataclass
class _Part:
    """What one raster file contributes to a product."""

    key: tuple[str, str]
    name: str
    path: str
    bands: dict[str, BandSource]
    grid: Grid
    date: Optional[np.datetime64]
    level: Optional[str]
    offset: Optional[int]


def _reflectance_fraction_max(ds) -> Optional[float]:
    """For a floating-point raster holding reflectance as 0..1 fractions, its largest value.

    Such a file would read as zeros (no data) once cast to digital numbers, so it must be
    refused rather than silently yield no clear date. A coarse look at the first band
    (overviews when present) is enough to tell fractions from digital numbers.
    """
    if np.dtype(ds.dtypes[0]).kind != "f":
        return None
    sample = ds.read(1, out_shape=(min(ds.height, 64), min(ds.width, 64)), masked=True).compressed()
    sample = sample[np.isfinite(sample) & (sample != 0)]
    if sample.size == 0 or float(np.percentile(sample, 99)) > 2.0:
        return None
    return float(sample.max())


def _read_part(path: Path, band_order: Optional[Sequence[str]]) -> _Part:
    import rasterio

    try:
        with rasterio.open(path) as ds:
            descriptions = list(ds.descriptions)
            count = ds.count
            tags = dict(ds.tags())
            for i in range(1, count + 1):
                for k, v in ds.tags(i).items():
                    tags.setdefault(k, v)
            grid = _grid_of(ds)
            fraction_max = _reflectance_fraction_max(ds)
    except rasterio.errors.RasterioIOError as exc:
        raise SceneError(f"Cannot open {path}: {exc}. Remove it from the scene folder or replace it.") from exc
    if fraction_max is not None:
        raise SceneError(
            f"{path} holds floating-point reflectance between 0 and 1 (largest value {fraction_max:.3g}); "
            "ThermoCrop reads Sentinel-2 digital numbers (reflectance x 10000). Convert it, e.g. "
            "gdal_translate -ot UInt16 -scale 0 1 0 10000, and pass --offset 0 if no baseline offset is left."
        )

    stem = path.stem
    bands: dict[str, BandSource] = {}
    if band_order is not None and count > 1:
        if len(band_order) != count:
            raise SceneError(
                f"{path} has {count} bands but the configured band order names {len(band_order)}: "
                f"{list(band_order)}."
            )
        for i, b in enumerate(band_order, start=1):
            name = band_name(b)
            if name is None:
                raise SceneError(f"Configured band order entry {b!r} is not a Sentinel-2 band name.")
            bands[name] = BandSource(str(path), i)
    else:
        for i, d in enumerate(descriptions, start=1):
            name = band_name(d or "")
            if name is not None and name not in bands:
                bands[name] = BandSource(str(path), i)
        if count == 1:
            token = _BAND_TOKEN_RE.search(stem) or _ALIAS_TOKEN_RE.search(stem)
            name = band_name(token.group(1)) if token else band_name(stem)
            if name is not None and not bands:
                bands[name] = BandSource(str(path), 1)
            elif name is not None and name not in bands:
                _reconcile(path, "band", name, next(iter(bands)), "band description")
        if count > 1 and not any(b in bands for b in S2_BANDS):
            raise SceneError(
                f"{path} has {count} bands without Sentinel-2 band descriptions; set the band "
                "descriptions (B02 ... B12) or pass the band order, e.g. --band-order "
                + ",".join(S2_BANDS)
                + "."
            )
    if not bands:
        raise SceneError(
            f"Cannot tell which Sentinel-2 band {path} holds; name it after the band (e.g. B04.tif) "
            "or set its band description."
        )

    # Strip the band and resolution tokens so that per-band files of one product share a key.
    if count > 1 and band_order is None and len(bands) > 1:
        cleaned = stem
    else:
        cleaned = _ALIAS_TOKEN_RE.sub("", _BAND_TOKEN_RE.sub("", stem))
    cleaned = _RESOLUTION_TOKEN_RE.sub("", cleaned).strip("_-. ")
    parent = path.parent
    name = cleaned or parent.name
    # The file's own metadata wins over its name; where they disagree, a warning names both.
    stored_date, date_key = _acquisition_date_tag(tags)
    date = _first(_reconcile(path, "date", _first(date_from_name(cleaned), date_from_name(parent.name),
                                                  date_from_name(stem)), stored_date, date_key),
                  _date_from_tags(tags))
    level = _reconcile(path, "level", level_from_name(name) or level_from_name(parent.name) or level_from_name(stem),
                       _level_from_tags(tags), "PROCESSING_LEVEL")
    offset = _reconcile(path, "baseline offset", _first(offset_from_name(name), offset_from_name(parent.name)),
                        _offset_from_tags(tags), "ADD_OFFSET / PROCESSING_BASELINE")
    _check_tile(path, stem if tile_from_name(stem) else parent.name, grid)
    return _Part((str(parent), cleaned), name, str(path), bands, grid, date, level, offset)


def _safe_image_parts(path: Path, name: str) -> list[_Part]:
    """The band files inside a .SAFE folder (``GRANULE/*/IMG_DATA``), finest resolution first."""
    files = sorted(path.glob("GRANULE/*/IMG_DATA/*.jp2"))  # L1C keeps every band in IMG_DATA
    for folder in ("R10m", "R20m", "R60m"):
        files += sorted(path.glob(f"GRANULE/*/IMG_DATA/{folder}/*.jp2"))
    parts = []
    for f in files:
        token = _BAND_TOKEN_RE.search(f.stem)
        band = band_name(token.group(1)) if token else None
        if band is None or (band not in S2_BANDS and band != "SCL"):
            continue
        part = _read_part(f, None)
        part.key, part.name = ("SAFE", str(path)), name
        part.date = _first(date_from_name(name), part.date)
        part.level = _first(level_from_name(name), part.level)
        part.offset = _first(part.offset, offset_from_name(name))
        parts.append(part)
    return parts


def _safe_parts(path: Path) -> list[_Part]:
    """Open a .SAFE folder or zip through GDAL's SENTINEL2 driver, one part per subdataset.

    A .SAFE folder the driver cannot open (e.g. a GDAL built without it, or trimmed metadata)
    is read from the band files inside its granule instead.
    """
    import rasterio

    name = path.name[: -len(path.suffix)] if path.suffix else path.name
    if path.is_dir():
        mtd = sorted(path.glob("MTD_MSIL*.xml"))
        target = str(mtd[0]) if mtd else None
    else:
        target = str(path)
    try:
        if target is None:
            raise SceneError(f"{path} holds no MTD_MSIL1C.xml / MTD_MSIL2A.xml; the .SAFE folder is incomplete.")
        try:
            # The product-level dataset has no geotransform of its own; only its subdatasets do.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
                with rasterio.open(target) as ds:
                    subdatasets = list(ds.subdatasets)
                    tags = dict(ds.tags())
        except rasterio.errors.RasterioIOError as exc:
            raise SceneError(f"GDAL cannot open {path} as a Sentinel-2 product: {exc}") from exc
    except SceneError:
        if not path.is_dir():
            raise
        parts = _safe_image_parts(path, name)
        if not parts:
            raise
        log.info("Reading %s from its granule's band files", path)
        return parts
    wanted = [s for s in subdatasets if re.search(r":(10|20)m:", s)]
    if not wanted:
        raise SceneError(f"{path} offers no 10 m / 20 m subdatasets; is it a Sentinel-2 L1C/L2A product?")
    stored_date, date_key = _acquisition_date_tag(tags)
    date = _first(_reconcile(path, "date", date_from_name(name), stored_date, date_key), _date_from_tags(tags))
    level = _reconcile(path, "level", level_from_name(name), _level_from_tags(tags), "PROCESSING_LEVEL")
    offset = _reconcile(path, "baseline offset", offset_from_name(name), _offset_from_tags(tags),
                        "ADD_OFFSET / PROCESSING_BASELINE")
    parts = []
    for sub in wanted:
        with rasterio.open(sub) as ds:
            bands: dict[str, BandSource] = {}
            for i, d in enumerate(ds.descriptions, start=1):
                b = band_name(d or "")
                if b is not None and b not in bands:
                    bands[b] = BandSource(sub, i)
            band_tags: dict[str, str] = {}
            for i in range(1, ds.count + 1):
                band_tags.update(ds.tags(i))
            sub_offset = _offset_from_tags({**band_tags, **dict(ds.tags())})
            parts.append(
                _Part(("SAFE", str(path)), name, str(path), bands, _grid_of(ds), date, level,
                      sub_offset if sub_offset is not None else offset)
            )
    # L2A products also keep SCL as a 20 m JPEG 2000 file inside the granule.
    if path.is_dir() and not any("SCL" in p.bands for p in parts):
        for scl in sorted(path.glob("GRANULE/*/IMG_DATA/R20m/*_SCL_20m.jp2")):
            with rasterio.open(scl) as ds:
                parts.append(_Part(("SAFE", str(path)), name, str(scl), {"SCL": BandSource(str(scl), 1)},
                                   _grid_of(ds), date, level, offset))
    return parts


def _assemble(parts: list[_Part], offset_override: Optional[int]) -> Product:
    first = parts[0]
    bands: dict[str, BandSource] = {}
    grids: dict[str, Grid] = {}
    for part in parts:
        for b, src in part.bands.items():
            bands.setdefault(b, src)
            grids.setdefault(src.path, part.grid)
    files = tuple(sorted({p.path for p in parts}))
    missing = [b for b in S2_BANDS if b not in bands]
    if missing:
        raise SceneError(
            f"Product {first.name} ({', '.join(files)}) lacks bands {', '.join(missing)}; ThermoCrop "
            f"needs {', '.join(S2_BANDS)}."
        )
    dates = {p.date for p in parts if p.date is not None}
    if not dates:
        raise SceneError(
            f"Cannot find the acquisition date of {first.name} ({', '.join(files)}): put YYYYMMDD in the "
            "file or folder name (e.g. S2A_31UFU_20230701_0_L2A) or set the GDAL metadata "
            "ACQUISITION_DATE."
        )
    if len(dates) > 1:
        raise SceneError(f"Files of product {first.name} carry different dates {sorted(map(str, dates))}.")
    reflectance_grids = [grids[bands[b].path] for b in S2_BANDS]
    grid = min(reflectance_grids, key=lambda g: g.resolution)
    if any(str(g.crs) != str(grid.crs) for g in reflectance_grids):
        raise SceneError(f"The band files of {first.name} are in different coordinate systems.")
    offsets = {p.offset for p in parts if p.offset is not None}
    offset = offset_override if offset_override is not None else (offsets.pop() if len(offsets) == 1 else
                                                                   min(offsets) if offsets else 0)
    levels = {p.level for p in parts if p.level}
    level = levels.pop() if len(levels) == 1 else None
    scl = bands.pop("SCL", None)
    if level is None and scl is not None:
        level = "L2A"
    return Product(
        name=first.name,
        date=next(iter(dates)),
        level=level,
        bands={b: bands[b] for b in S2_BANDS},
        scl=scl,
        offset=int(offset),
        grid=grid,
        files=files,
    )


def find_scenes(
    source: Union[PathLike, Sequence[PathLike]],
    *,
    band_order: Optional[Sequence[str]] = None,
    level: Optional[str] = None,
    offset: Optional[int] = None,
) -> list[Scene]:
    """Find Sentinel-2 products and group them into one scene per acquisition date.

    Args:
        source: a folder (searched recursively), a glob pattern, a file, a ``.SAFE`` folder or
            zip, or a list of any of these.
        band_order: band names of multi-band files that lack band descriptions, in file order
            (e.g. ``S2_BANDS`` or ``S2_BANDS + ("SCL",)``).
        level: ``"L1C"`` or ``"L2A"`` to keep only products of that level. When None and both
            levels are present, L2A is kept (top-of-atmosphere and surface reflectance must not
            be mixed in one series).
        offset: DN offset to use for every product instead of the one read from the processing
            baseline (name ``Nxxyy`` or metadata ``BOA_ADD_OFFSET`` / ``RADIO_ADD_OFFSET``).

    Returns:
        Scenes sorted by date; products of one date are merged into one scene, in name order.

    Raises:
        SceneError: nothing found, or a product that cannot be understood (the message names it).
    """
    paths = _expand_source(source)
    stac_files = [p for p in paths if _is_stac_file(p)]
    if stac_files:
        return _with_stac_scenes(stac_files, [p for p in paths if p not in stac_files], band_order, level, offset)
    safes, rasters = _walk(paths)
    parts: list[_Part] = []
    seen: set[str] = set()
    for r in rasters:
        real = os.path.realpath(r)
        if real in seen:
            continue
        seen.add(real)
        parts.append(_read_part(r, band_order))
    for s in safes:
        real = os.path.realpath(s)
        if real in seen:
            continue
        seen.add(real)
        parts += _safe_parts(s)
    if not parts:
        raise SceneError(f"No Sentinel-2 rasters found in {', '.join(map(str, paths))}.")

    grouped: dict[tuple[str, str], list[_Part]] = {}
    for part in parts:
        grouped.setdefault(part.key, []).append(part)
    products = [_assemble(group, offset) for group in grouped.values()]

    levels = {p.level for p in products if p.level}
    if level is not None:
        level = level.upper()
        products = [p for p in products if p.level in (level, None)]
        if not products:
            raise SceneError(f"No {level} products among the scenes; found levels {sorted(levels)}.")
    elif levels == {"L1C", "L2A"}:
        log.warning("Both L1C and L2A products found; using L2A only (ask for level='L1C' to use the others).")
        products = [p for p in products if p.level != "L1C"]

    # The same product may be present twice (e.g. a copy in two folders): keep one.
    unique: dict[tuple, Product] = {}
    for p in sorted(products, key=lambda p: (p.date, p.name, p.files)):
        unique.setdefault((p.name, p.date, p.grid.key), p)
    scenes: dict[np.datetime64, Scene] = {}
    for p in unique.values():
        scenes.setdefault(p.date, Scene(p.date)).products.append(p)
    result = [scenes[d] for d in sorted(scenes)]
    log.info("Found %d products on %d dates", len(unique), len(result))
    return result


def describe_seasons(dates: Sequence, season_start: Any = None) -> str:
    """The seasons of ``dates`` as text, e.g. ``2017 (31 dates, 2017-01-05 to 2017-12-20) and 2018
    (...)``."""
    from ..thermal.gdd import SeasonStart, season_of

    season_start = season_start or SeasonStart()
    days = np.asarray(dates, dtype="datetime64[D]")
    years = season_of(days, season_start)
    parts = []
    for year in np.unique(years):
        mine = days[years == year]
        parts.append(f"{year} ({mine.size} dates, {mine.min()} to {mine.max()})")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def select_season(scenes: Sequence["Scene"], season_start: Any = None,
                  season: Optional[int] = None) -> list["Scene"]:
    """The scenes of one season, refusing a mix of seasons unless one is named.

    A series of two seasons (2017 and 2018 scenes in one folder) would be read as one long
    season, its thermal time summed across both years; a model never saw such a series.

    Args:
        scenes: scenes from ``find_scenes``.
        season_start: ``SeasonStart`` (or its text) the season is counted from; default 01-01.
        season: keep only the scenes of this season (its harvest year, see ``gdd.season_of``).

    Raises:
        SceneError: the scenes span several seasons and none was named, or none is of ``season``.
    """
    from ..thermal.gdd import SeasonStart, season_of, season_span

    if isinstance(season_start, str):
        season_start = SeasonStart.parse(season_start)
    season_start = season_start or SeasonStart()
    scenes = list(scenes)
    if not scenes:
        return scenes
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    years = season_of(dates, season_start)
    if season is not None:
        keep = [sc for sc, y in zip(scenes, years) if y == season]
        if not keep:
            first, last = season_span(season, season_start)
            raise SceneError(f"No scene falls in season {season} ({first} to {last}, season start "
                             f"{season_start}); the scenes are of {describe_seasons(dates, season_start)}.")
        return keep
    if np.unique(years).size > 1:
        autumn = ("" if season_start.year_offset else
                  " If the season begins the autumn before, count it from then (e.g. season start "
                  "09-01/-1).")
        raise SceneError(
            f"The scenes span {np.unique(years).size} seasons (season start {season_start}): "
            f"{describe_seasons(dates, season_start)}. Give the scenes of one season only (on the "
            f"command line --season {years.max()} picks one).{autumn}"
        )
    return scenes


# --------------------------------------------------------------------------------------------
# STAC item collections (``core.stac``) among the sources


def _is_stac_file(path: Path) -> bool:
    from .stac import is_item_collection_file

    return path.suffix.lower() in (".json", ".geojson") and is_item_collection_file(path)


def _with_stac_scenes(stac_files: list[Path], others: list[Path], band_order, level, offset) -> list[Scene]:
    """Scenes of saved STAC item collections, merged by date with those of local files."""
    from .stac import scenes_from_files

    scenes = {sc.date: sc for sc in scenes_from_files(stac_files, level=level, offset=offset)}
    if others:
        for sc in find_scenes(others, band_order=band_order, level=level, offset=offset):
            if sc.date in scenes:
                scenes[sc.date].products.extend(sc.products)
            else:
                scenes[sc.date] = sc
    return [scenes[d] for d in sorted(scenes)]
