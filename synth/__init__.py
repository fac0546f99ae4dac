"""Synthetic Sentinel-2 regions in real file formats, driven by thermal time."""

from __future__ import annotations

from .generate import acquisition_dates, generate_region
from .regions import REGIONS, Region, get_region

__all__ = ["REGIONS", "Region", "acquisition_dates", "generate_region", "get_region", "plot_phenology"]


def plot_phenology(*args, **kwargs):
    """Draw median NDVI per class against date and GDD; see :func:`.plot.plot_phenology`."""
    from .plot import plot_phenology as _plot

    return _plot(*args, **kwargs)
