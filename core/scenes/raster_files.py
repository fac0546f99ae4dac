"""Which local raster files ThermoCrop opens as scenes, and through which GDAL drivers.

GDAL chooses a driver from a file's content, not its name, and some formats name other
files: a VRT lists source files that may lie anywhere, or be ``/vsicurl/`` addresses of any
host; XML files of the WMS driver name a server. A scene folder is data a user downloaded or
was given, so nothing in it may make ThermoCrop read outside that folder or reach a host:
scene files are opened only as GeoTIFF, JPEG 2000, ERDAS Imagine or VRT, and a VRT is read
only when every file it names (and every file those VRTs name) lies inside its own folder and
is itself one of these formats.
"""

from __future__ import annotations

import functools
import os
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Optional, Union

from ..errors import SceneError

JP2_DRIVERS = ("JP2OpenJPEG", "JP2ECW", "JP2KAK", "JP2MrSID")
"""GDAL's JPEG 2000 drivers, tried in this order where present."""

VRT_MAX_BYTES = 16 * 1024 * 1024
"""A VRT larger than this is refused unread (a scene's VRT is a few kilobytes)."""

VRT_MAX_DEPTH = 4
"""VRTs naming VRTs are followed this deep."""

_FILE_ELEMENTS = ("SourceFilename", "SourceDataset")
_HEADER_BYTES = 1024
_MAGIC = {
    b"II*\x00": "GeoTIFF", b"MM\x00*": "GeoTIFF", b"II+\x00": "BigTIFF", b"MM\x00+": "BigTIFF",
    b"\x00\x00\x00\x0cjP  ": "JPEG 2000", b"\xff\x4f\xff\x51": "JPEG 2000 codestream",
    b"EHFA_HEADER_TAG": "ERDAS Imagine",
}
_ADVICE = ("ThermoCrop reads a VRT only when the files it names lie in its own folder; "
           "build it beside its sources (gdalbuildvrt) or convert it to a GeoTIFF (gdal_translate)")


def raster_kind(path: Union[str, os.PathLike]) -> Optional[str]:
    """What a file's first bytes say it is: ``"VRT"``, a raster format's name, or None."""
    with open(path, "rb") as handle:
        header = handle.read(_HEADER_BYTES)
    if b"<VRTDataset" in header:  # how GDAL's VRT driver recognises one
        return "VRT"
    for magic, kind in _MAGIC.items():
        if header.startswith(magic):
            return kind
    return None


def check_scene_file(path: Union[str, os.PathLike]) -> None:
    """Refuse a local scene file that would make GDAL read outside its folder.

    Raises:
        SceneError: naming the file and what it names, for a VRT that points outside its own
            folder, at a ``/vsi`` path or an address, at a file of another format, or that
            holds Python pixel functions.
    """
    path = Path(path)
    if path.is_file() and raster_kind(path) == "VRT":
        _check_top_vrt(path)


def open_scene_file(path: Union[str, os.PathLike]):
    """``rasterio.open`` of a checked local scene file, through the driver of its format.

    Raises:
        SceneError: for a file of another format, or a VRT :func:`check_scene_file` refuses.
    """
    kind = raster_kind(path)
    if kind == "VRT":
        _check_top_vrt(Path(path))
    elif kind is None:
        raise SceneError(f"{path} is not a GeoTIFF, JPEG 2000, ERDAS Imagine or VRT file (going by its first "
                         "bytes); convert it to a GeoTIFF (gdal_translate) or remove it from the scene folder.")
    drivers = {"VRT": ("VRT",), "ERDAS Imagine": ("HFA",)}.get(kind, ("JP2",) if "JPEG" in kind else ("GTiff",))
    return _open_first(path, drivers)


def open_remote_asset(path: str):
    """``rasterio.open`` of a remote asset (a GDAL ``/vsi`` path) as a GeoTIFF or JPEG 2000 only:
    a remote VRT could name any local file or host."""
    suffix = urllib.parse.urlsplit(path.split("/vsicurl/", 1)[-1]).path.lower()
    return _open_first(path, ("JP2", "GTiff") if suffix.endswith((".jp2", ".j2k")) else ("GTiff", "JP2"))


def _open_first(path: Union[str, os.PathLike], kinds: tuple[str, ...]):
    """Open ``path`` with the first of these drivers that recognises it (``"JP2"``: any JPEG 2000
    driver this GDAL has); errors other than "not recognized" are raised at once."""
    import rasterio

    last: Optional[Exception] = None
    for name in [d for kind in kinds for d in (JP2_DRIVERS if kind == "JP2" else (kind,))]:
        if name not in _registered_drivers():
            continue
        try:
            return rasterio.open(path, driver=name)
        except rasterio.errors.RasterioIOError as exc:
            if "not recognized" not in str(exc):
                raise
            last = exc
    raise last or rasterio.errors.RasterioIOError(f"{path}: no driver of {', '.join(kinds)} in this GDAL")


@functools.lru_cache(maxsize=1)
def _registered_drivers() -> frozenset:
    import rasterio

    with rasterio.Env() as env:
        return frozenset(env.drivers())


def _check_top_vrt(vrt: Path) -> None:
    _check_vrt(vrt, Path(os.path.realpath(vrt.parent)), vrt, 0)


def _check_vrt(vrt: Path, folder: Path, top: Path, depth: int) -> None:
    def refuse(why: str) -> SceneError:
        inner = f" (named by {top})" if vrt != top else ""
        return SceneError(f"The VRT scene file {vrt}{inner} is refused: {why}. {_ADVICE}.")

    if depth > VRT_MAX_DEPTH:
        raise refuse(f"it nests VRTs more than {VRT_MAX_DEPTH} deep")
    if vrt.stat().st_size > VRT_MAX_BYTES:
        raise refuse(f"it is larger than {VRT_MAX_BYTES // 2 ** 20} MB")
    try:
        root = ET.fromstring(vrt.read_bytes())
    except ET.ParseError as exc:
        raise refuse(f"it is not well-formed XML ({exc})") from None
    for element in root.iter():
        tag = str(element.tag)
        if tag == "PixelFunctionCode" or (tag == "PixelFunctionLanguage"
                                          and (element.text or "").strip().lower() == "python"):
            raise refuse("it holds a Python pixel function, which ThermoCrop never runs")
        if tag not in _FILE_ELEMENTS:
            continue
        named = (element.text or "").strip()
        source = _resolve(named, vrt, element.get("relativeToVRT", "0").strip() == "1")
        if source is None:
            raise refuse(f"it names {named[:200]!r}, which is no local file path")
        real = Path(os.path.realpath(source))
        if real != folder and folder not in real.parents:
            raise refuse(f"it names {named[:200]!r}, outside the folder {folder}")
        if not real.is_file():
            raise refuse(f"it names {named[:200]!r}, which does not exist")
        kind = raster_kind(real)
        if kind == "VRT":
            _check_vrt(real, folder, top, depth + 1)
        elif kind is None:
            raise refuse(f"it names {named[:200]!r}, which is not a GeoTIFF, JPEG 2000 or ERDAS Imagine file")


def _resolve(named: str, vrt: Path, relative_to_vrt: bool) -> Optional[Path]:
    """The local path a VRT source names, or None for a GDAL /vsi path, an address or a
    driver-prefixed name (``NETCDF:...``, ``vrt://...``)."""
    if not named or "\x00" in named or named.lower().startswith("/vsi") or "://" in named:
        return None
    if ":" in named and not (len(named) > 2 and named[1] == ":" and named[0].isalpha()):
        return None  # a subdataset name such as NETCDF:"file":var (a drive letter is kept)
    source = Path(named)
    if not source.is_absolute():
        source = (vrt.parent if relative_to_vrt else Path.cwd()) / source
    return source
