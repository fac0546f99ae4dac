"""Find Sentinel-2 products on disk and group them into one scene per date (products are read
by ``core.scenes.product``; saved STAC item collections among the sources by ``core.scenes.stac``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from ..errors import SceneError
from .bands import S2_BANDS
from .naming import (
    ALIAS_TOKEN,
    BAND_TOKEN,
    RESOLUTION_TOKEN,
    acquisition_date_tag,
    band_name,
    check_tile,
    date_from_name,
    date_from_tags,
    first_given,
    level_from_name,
    level_from_tags,
    offset_from_name,
    offset_from_tags,
    reconcile,
    tile_from_name,
)
from .product import BandSource, Grid, Product, Scene, grid_of, one_level
from .raster_files import open_scene_file
from .stac import is_item_collection_file, scenes_from_files

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

RASTER_SUFFIXES = (".tif", ".tiff", ".jp2", ".vrt", ".img")


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
        with open_scene_file(path) as ds:
            descriptions = list(ds.descriptions)
            count = ds.count
            tags = dict(ds.tags())
            for i in range(1, count + 1):
                for k, v in ds.tags(i).items():
                    tags.setdefault(k, v)
            grid = grid_of(ds)
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
            token = BAND_TOKEN.search(stem) or ALIAS_TOKEN.search(stem)
            name = band_name(token.group(1)) if token else band_name(stem)
            if name is not None and not bands:
                bands[name] = BandSource(str(path), 1)
            elif name is not None and name not in bands:
                reconcile(path, "band", name, next(iter(bands)), "band description")
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
        cleaned = ALIAS_TOKEN.sub("", BAND_TOKEN.sub("", stem))
    cleaned = RESOLUTION_TOKEN.sub("", cleaned).strip("_-. ")
    parent = path.parent
    name = cleaned or parent.name
    # The file's own metadata wins over its name; where they disagree, a warning names both.
    stored_date, date_key = acquisition_date_tag(tags)
    date = first_given(reconcile(path, "date", first_given(date_from_name(cleaned), date_from_name(parent.name),
                                                  date_from_name(stem)), stored_date, date_key),
                  date_from_tags(tags))
    level = reconcile(path, "level", level_from_name(name) or level_from_name(parent.name) or level_from_name(stem),
                       level_from_tags(tags), "PROCESSING_LEVEL")
    offset = reconcile(path, "baseline offset", first_given(offset_from_name(name), offset_from_name(parent.name)),
                        offset_from_tags(tags), "ADD_OFFSET / PROCESSING_BASELINE")
    check_tile(path, stem if tile_from_name(stem) else parent.name, grid.crs)
    return _Part((str(parent), cleaned), name, str(path), bands, grid, date, level, offset)


def _safe_image_parts(path: Path, name: str) -> list[_Part]:
    """The band files inside a .SAFE folder (``GRANULE/*/IMG_DATA``), finest resolution first."""
    files = sorted(path.glob("GRANULE/*/IMG_DATA/*.jp2"))  # L1C keeps every band in IMG_DATA
    for folder in ("R10m", "R20m", "R60m"):
        files += sorted(path.glob(f"GRANULE/*/IMG_DATA/{folder}/*.jp2"))
    parts = []
    for f in files:
        token = BAND_TOKEN.search(f.stem)
        band = band_name(token.group(1)) if token else None
        if band is None or (band not in S2_BANDS and band != "SCL"):
            continue
        part = _read_part(f, None)
        part.key, part.name = ("SAFE", str(path)), name
        part.date = first_given(date_from_name(name), part.date)
        part.level = first_given(level_from_name(name), part.level)
        part.offset = first_given(part.offset, offset_from_name(name))
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
    stored_date, date_key = acquisition_date_tag(tags)
    date = first_given(reconcile(path, "date", date_from_name(name), stored_date, date_key), date_from_tags(tags))
    level = reconcile(path, "level", level_from_name(name), level_from_tags(tags), "PROCESSING_LEVEL")
    offset = reconcile(path, "baseline offset", offset_from_name(name), offset_from_tags(tags),
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
            sub_offset = offset_from_tags({**band_tags, **dict(ds.tags())})
            parts.append(
                _Part(("SAFE", str(path)), name, str(path), bands, grid_of(ds), date, level,
                      sub_offset if sub_offset is not None else offset)
            )
    # L2A products also keep SCL as a 20 m JPEG 2000 file inside the granule.
    if path.is_dir() and not any("SCL" in p.bands for p in parts):
        for scl in sorted(path.glob("GRANULE/*/IMG_DATA/R20m/*_SCL_20m.jp2")):
            with open_scene_file(scl) as ds:
                parts.append(_Part(("SAFE", str(path)), name, str(scl), {"SCL": BandSource(str(scl), 1)},
                                   grid_of(ds), date, level, offset))
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
    prefer_level: Optional[str] = None,
) -> list[Scene]:
    """Find Sentinel-2 products and group them into one scene per acquisition date.

    Args:
        source: a folder (searched recursively), a glob pattern, a file, a ``.SAFE`` folder or
            zip, or a list of any of these.
        band_order: band names of multi-band files that lack band descriptions, in file order
            (e.g. ``S2_BANDS`` or ``S2_BANDS + ("SCL",)``).
        level: ``"L1C"`` or ``"L2A"`` to keep only products of that level. When None and both
            levels are present, those of ``prefer_level`` are kept, else L2A (top-of-atmosphere
            and surface reflectance must not be mixed in one series), and the run's log says
            what was left out (``core.scenes.product.one_level``).
        prefer_level: the level of the model given, kept where both are found.
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
    else:
        products, note = one_level(products, prefer_level)
        if note:
            log.warning(note)

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


# --------------------------------------------------------------------------------------------
# Saved STAC item collections (``core.scenes.stac``) among the sources


def _is_stac_file(path: Path) -> bool:
    return path.suffix.lower() in (".json", ".geojson") and is_item_collection_file(path)


def _with_stac_scenes(stac_files: list[Path], others: list[Path], band_order, level, offset) -> list[Scene]:
    """Scenes of saved STAC item collections, merged by date with those of local files."""
    scenes = {sc.date: sc for sc in scenes_from_files(stac_files, level=level, offset=offset)}
    if others:
        for sc in find_scenes(others, band_order=band_order, level=level, offset=offset):
            if sc.date in scenes:
                scenes[sc.date].products.extend(sc.products)
            else:
                scenes[sc.date] = sc
    return [scenes[d] for d in sorted(scenes)]
