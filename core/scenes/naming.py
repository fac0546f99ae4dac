"""What Sentinel-2 file and product names, and GDAL metadata tags, say: the band a name or
description denotes, the acquisition date, the MGRS tile, the processing level and the
digital-number offset of the processing baseline; and how a name and a file's own metadata
are reconciled where both speak."""

from __future__ import annotations

import logging
import re
from typing import Any, Optional

import numpy as np

from .bands import BASELINE_OFFSET_DN, OFFSET_FROM_BASELINE

log = logging.getLogger(__name__)

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
# A band name as a file-name token (``T31UFU_20230701_B04_10m.tif``).
BAND_TOKEN = re.compile(r"(?:^|(?<=[_\-.]))(B\d{1,2}A?|SCL)(?=$|[_\-.])", re.IGNORECASE)
# STAC asset names as file-name tokens (``red.tif``, ``T31UFU_20230701_nir08.tif``), longest first.
ALIAS_TOKEN = re.compile(
    r"(?:^|(?<=[_\-.]))(" + "|".join(sorted(_BAND_ALIASES, key=len, reverse=True)) + r")(?=$|[_\-.])",
    re.IGNORECASE,
)
# A resolution as a file-name token (``_10m``), stripped with the band to name the product.
RESOLUTION_TOKEN = re.compile(r"(?:^|[_\-.])(10|20|60)m(?=$|[_\-.])", re.IGNORECASE)
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


def acquisition_date_tag(tags: dict[str, str]) -> tuple[Optional[np.datetime64], Optional[str]]:
    """The acquisition date in a file's metadata and the key it was found under (not
    ``TIFFTAG_DATETIME``, the time the file was written)."""
    for key in _DATE_TAGS:
        if key == "TIFFTAG_DATETIME":
            continue
        date = date_from_tags({key: tags[key]}) if tags.get(key) else None
        if date is not None:
            return date, key
    return None, None


def level_from_tags(tags: dict[str, str]) -> Optional[str]:
    """``"L2A"``, ``"L1C"`` or None from a file's ``PROCESSING_LEVEL`` tag."""
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


def reconcile(path: Any, what: str, named: Any, stored: Any, where: Optional[str]) -> Any:
    """``stored`` (the file's own metadata) where present, else ``named`` (from its name); a
    disagreement between the two is logged with the file and both values."""
    if named is not None and stored is not None and named != stored:
        log.warning("%s: its name says %s %s but its metadata (%s) says %s; %s from the metadata is used. Rename the "
                    "file or correct its metadata if that is wrong.", path, what, named, where, stored, what)
    return first_given(stored, named)


def check_tile(path: Any, name: str, crs: Any) -> None:
    """Warn when the MGRS tile in ``name`` lies in another UTM zone than the file's georeferencing
    (which places the pixels, and so wins)."""
    tile = tile_from_name(name)
    zone = _utm_zone_of_crs(crs)
    if tile is None or zone is None or _utm_zone_of_tile(tile) == zone:
        return
    log.warning("%s: its name says tile %s (UTM zone %d %s) but it is georeferenced in UTM zone %d %s (%s); its "
                "pixels are placed by its georeferencing. Rename the file or check how it was exported.", path,
                tile, *_utm_zone_of_tile(tile), *zone, crs)


def date_from_tags(tags: dict[str, str]) -> Optional[np.datetime64]:
    """The first date in a file's metadata tags, ``TIFFTAG_DATETIME`` (when it was written) last."""
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


def offset_from_tags(tags: dict[str, str]) -> Optional[int]:
    """The DN offset a file's metadata gives (``BOA_ADD_OFFSET``, ``RADIO_ADD_OFFSET``), else the
    one its ``PROCESSING_BASELINE`` implies, or None."""
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


def first_given(*values):
    """The first value that is not None (a datetime64 of 1970-01-01 is falsy, so no ``or``)."""
    return next((v for v in values if v is not None), None)

