"""Digital numbers to reflectance and validity: Sentinel-2's no data and a file's own no-data
value, the scene classification (SCL) classes masked, the brightness test for L2A products
without SCL, and what to do about such products."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..errors import SceneError

SCL_INVALID: tuple[int, ...] = (0, 1, 3, 8, 9, 10, 11)
"""SCL classes masked out: no data, defective, cloud shadow, clouds (medium, high), cirrus
and snow. Snow is masked too because a snow-covered field shows nothing of its crop."""

BRIGHT_CLOUD = 2000
"""Reflectance x 10000 (0.2) from which a pixel bright in blue (B02) and in the mean of B02, B03
and B04 counts as cloud or snow, for L2A products without SCL (``missing_scl="bands"``)."""

MISSING_SCL = ("refuse", "warn", "bands")
"""What to do with L2A products without SCL: refuse them, use them unmasked with a warning, or
mask clouds with the brightness test :func:`bright_cloud_mask`."""


def foreign_nodata(nodata: Optional[float]) -> Optional[int]:
    """A file's no-data value when it is not Sentinel-2's 0 and a digital number could hold it.

    Some tools write 65535 as no data; those pixels become 0 so that one rule masks them all.
    Negative no-data values already read as 0 once clamped to uint16.
    """
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


def check_missing_scl(scenes: Sequence[Any], missing_scl: str = "warn") -> Optional[str]:
    """What the user must know about L2A products without SCL among ``scenes``, or None.

    Args:
        scenes: ``Scene`` objects (``core.scenes.product``), e.g. from ``find_scenes``.
        missing_scl: one of :data:`MISSING_SCL`.

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

