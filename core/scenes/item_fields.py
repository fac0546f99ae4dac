"""What the fields of a Sentinel-2 STAC item say: its date, MGRS tile, processing level and
cloud cover; which asset holds which band at which resolution; the digital-number offset of
its reflectance; and the grids its projection metadata give the assets."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Optional

import numpy as np

from ..errors import SceneError
from .bands import BASELINE_OFFSET_DN, OFFSET_FROM_BASELINE, S2_BANDS
from .naming import band_name, offset_from_name
from .product import Grid


def item_date(item: Any) -> np.datetime64:
    when = item.datetime or item.common_metadata.start_datetime
    if when is None:
        raise SceneError(f"STAC item {item.id} has no datetime.")
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc)
    return np.datetime64(when.date().isoformat(), "D")


def item_tile(item: Any) -> str:
    """The MGRS tile of an item (``31UFU``), or ""."""
    p = item.properties
    code = p.get("grid:code") or ""
    if code.upper().startswith("MGRS-"):
        return code[5:]
    if p.get("s2:mgrs_tile"):
        return str(p["s2:mgrs_tile"])
    if p.get("mgrs:utm_zone"):
        return f"{int(p['mgrs:utm_zone']):02d}{p.get('mgrs:latitude_band', '')}{p.get('mgrs:grid_square', '')}"
    m = re.search(r"(?:_T|_)(\d{2}[C-X][A-Z]{2})(?=_|$)", item.id)
    return m.group(1) if m else ""


def item_level(item: Any) -> Optional[str]:
    p = item.properties
    for text in (p.get("processing:level"), p.get("s2:product_type"), p.get("s2:product_uri"), item.id,
                 item.collection_id):
        text = str(text or "")
        m = re.search(r"(L1C|L2A|1C|2A)$", text.upper()) or re.search(r"(L1C|L2A)", text.upper())
        if m:
            return "L2A" if "2A" in m.group(1) else "L1C"
    return None


def cloud_cover(item: Any) -> Optional[float]:
    """The item's ``eo:cloud_cover`` in percent, or None when it gives none."""
    value = item.properties.get("eo:cloud_cover")
    if value is None:
        return None
    try:
        cloud = float(value)
    except (TypeError, ValueError):
        cloud = float("nan")
    if isinstance(value, bool) or not 0 <= cloud <= 100:
        raise SceneError(f"STAC item {item.id} gives eo:cloud_cover {str(value)[:40]!r}, not a percentage; the item "
                         "collection is damaged or not STAC.")
    return cloud


def asset_resolution(key: str, asset: dict) -> float:
    for value in (asset.get("gsd"), ((asset.get("raster:bands") or [{}])[0] or {}).get("spatial_resolution"),
                  ((asset.get("bands") or [{}])[0] or {}).get("raster:spatial_resolution")):
        if value:
            return float(value)
    transform = asset.get("proj:transform")
    if transform:
        return abs(float(transform[0]))
    m = re.search(r"_(\d+)m$", key) or next((re.search(r"gsd:(\d+)m", r) for r in asset.get("roles") or []
                                             if re.search(r"gsd:(\d+)m", r)), None)
    return float(m.group(1)) if m else 1e9


def asset_band(key: str, asset: dict) -> Optional[str]:
    """The Sentinel-2 band (``S2_BANDS`` or ``SCL``) an asset holds, or None."""
    roles = asset.get("roles") or []
    if roles and "data" not in roles:
        return None
    media = (asset.get("type") or "").lower()
    if media and not any(t in media for t in ("tiff", "jp2", "geotiff")):
        return None
    bands = asset.get("eo:bands") or asset.get("bands") or []
    if len(bands) > 1:  # a true-colour composite and the like
        return None
    first = bands[0] if bands else {}
    for name in (first.get("name"), key, first.get("common_name"), first.get("eo:common_name")):
        band = band_name(str(name)) if name else None
        if band in S2_BANDS or band == "SCL":
            return band
    return None


def _scale_offset(asset: dict) -> tuple[Optional[float], Optional[float]]:
    raster = (asset.get("raster:bands") or [{}])[0] or {}
    band = (asset.get("bands") or [{}])[0] or {}
    scale = raster.get("scale", asset.get("raster:scale", band.get("raster:scale")))
    offset = raster.get("offset", asset.get("raster:offset", band.get("raster:offset")))
    return (None if scale is None else float(scale)), (None if offset is None else float(offset))


def dn_offset(item: Any, assets: dict[str, dict]) -> tuple[int, str]:
    """The offset to add to the item's digital numbers, and where it came from.

    Earth Search's ``earthsearch:boa_offset_applied: true`` means its COGs already had the
    offset removed (their ``raster:bands`` may still say -0.1); otherwise the ``raster``
    extension's offset / scale (0.0001 for Sentinel-2) of the reflectance bands; otherwise
    the processing baseline (-1000 from 04.00 on).
    """
    p = item.properties
    if p.get("earthsearch:boa_offset_applied") is True:
        return 0, "earthsearch:boa_offset_applied"
    offsets = set()
    for asset in assets.values():
        scale, offset = _scale_offset(asset)
        if offset is None:
            continue
        scale = 1e-4 if scale is None else scale
        if offset == 0:
            offsets.add(0)
        elif abs(scale - 1e-4) < 1e-9:
            offsets.add(int(round(offset / scale)))
        else:
            raise SceneError(f"STAC item {item.id}: reflectance scale {scale} is not Sentinel-2's 0.0001; "
                             "ThermoCrop reads digital numbers of reflectance x 10000.")
    if len(offsets) == 1:
        return offsets.pop(), "raster extension"
    if len(offsets) > 1:
        raise SceneError(f"STAC item {item.id} gives different offsets for its bands: {sorted(offsets)}.")
    for key in ("s2:processing_baseline", "processing:version", "sentinel:processing_baseline"):
        m = re.match(r"\s*(\d{1,2})\.(\d{1,2})", str(p.get(key) or ""))
        if m:
            baseline = (int(m.group(1)), int(m.group(2)))
            return (BASELINE_OFFSET_DN if baseline >= OFFSET_FROM_BASELINE else 0), key
    for name in (p.get("s2:product_uri"), p.get("sentinel:product_id"), item.id):
        offset = offset_from_name(str(name or ""))
        if offset is not None:
            return offset, "product name"
    return 0, "no offset information (0 assumed)"


def _crs_of(asset: dict, properties: dict) -> Optional[Any]:
    from rasterio.crs import CRS

    for where in (asset, properties):
        code = where.get("proj:code")
        epsg = where.get("proj:epsg")
        wkt = where.get("proj:wkt2")
        try:
            if code:
                return CRS.from_user_input(code)
            if epsg:
                return CRS.from_epsg(int(epsg))
            if wkt:
                return CRS.from_wkt(wkt)
        except Exception:  # an unknown code: fall back to opening the file
            return None
    return None


def grid_of_asset(asset: dict, properties: dict) -> Optional[Grid]:
    from affine import Affine

    crs = _crs_of(asset, properties)
    transform = asset.get("proj:transform") or properties.get("proj:transform")
    shape = asset.get("proj:shape") or properties.get("proj:shape")
    if crs is None or not transform or not shape or len(transform) < 6:
        return None
    return Grid(crs, Affine(*[float(v) for v in transform[:6]]), int(shape[1]), int(shape[0]))


def is_cog(asset: dict) -> bool:
    media = (asset.get("type") or "").lower()
    return "tiff" in media or str(asset.get("href", "")).lower().split("?")[0].endswith((".tif", ".tiff"))
