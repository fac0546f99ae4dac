"""The paper's Figure 1 for generated regions: median NDVI per class against date and GDD.

Everything is read back from the written files (scenes, SCL, parcels, weather), so the plot
shows what any reader of the region sees, not the generator's internal state.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..core.crops import CLASS_COLOURS, CROP_CLASSES
from ..core.errors import InputError
from ..core.io.output import staged_file

log = logging.getLogger(__name__)

_SCL_MASKED = (0, 1, 3, 8, 9, 10, 11)
_L1C_CLOUD_B02 = 2000  # DN; bare soil reaches ~1600 at the top of the atmosphere, clouds 4000
REGION_STYLES = {"AT1": "-", "DK1": "--", "FR1": ":", "FR2": "-."}
REGION_COLOURS = {"AT1": "#4e79a7", "DK1": "#e15759", "FR1": "#59a14f", "FR2": "#f28e2b"}


@dataclass
class ParcelSeries:
    """Per-parcel median indices of one region, read from its files.

    Attributes:
        region: region name from truth.json (or the folder name).
        dates: (T,) datetime64[D] acquisition dates.
        crops: (P,) class of each parcel.
        ndvi: (P, T) median NDVI of the parcel's clear pixels, NaN when under half are clear.
        ndyi: (P, T) median NDYI, (B03 - B02) / (B03 + B02), same masking.
        gdd: (P, T) growing degree days since 1 Jan at the parcel's nearest weather cell.
    """

    region: str
    dates: np.ndarray
    crops: np.ndarray
    ndvi: np.ndarray
    ndyi: np.ndarray
    gdd: np.ndarray


def read_parcel_series(folder: Path) -> ParcelSeries:
    """Median NDVI/NDYI per parcel and date, and GDD from 1 Jan, from a region folder.

    Args:
        folder: a folder written by ``generate_region``.

    Raises:
        InputError: the folder lacks parcels.gpkg, scenes or weather.nc.
    """
    import geopandas as gpd
    import rasterio
    import xarray as xr
    from rasterio.features import rasterize

    folder = Path(folder)
    for need in ("parcels.gpkg", "scenes", "weather.nc"):
        if not (folder / need).exists():
            raise InputError(f"{folder} lacks {need}; generate the region with 'thermocrop synth' first.")
    truth = folder / "truth.json"
    region = json.loads(truth.read_text())["region"] if truth.exists() else folder.name
    parcels = gpd.read_file(folder / "parcels.gpkg")
    scene_files = sorted((p for p in (folder / "scenes").glob("*.tif") if not p.stem.endswith("_SCL")),
                         key=lambda p: (_date_of(p.name), p.name))
    dates = []
    ndvi = np.full((len(parcels), len(scene_files)), np.nan)
    ndyi = np.full_like(ndvi, np.nan)
    labels = None
    for t, path in enumerate(scene_files):
        dates.append(_date_of(path.name))
        with rasterio.open(path) as ds:
            if labels is None:
                geoms = parcels.to_crs(ds.crs).geometry
                labels = rasterize(((g, i + 1) for i, g in enumerate(geoms)), out_shape=(ds.height, ds.width),
                                   transform=ds.transform, fill=0, dtype="int32")
                order = np.argsort(labels.ravel(), kind="stable")
                sorted_labels = labels.ravel()[order]
                bounds = np.searchsorted(sorted_labels, np.arange(len(parcels) + 2))
            offset = 1000 if _baseline(path.name) >= (4, 0) else 0
            b02, b03, b04, b08 = (ds.read(i).astype(np.float64) for i in (1, 2, 3, 7))
        valid = b04 > 0
        scl_path = path.with_name(path.stem + "_SCL.tif")
        b02, b03, b04, b08 = (b - offset for b in (b02, b03, b04, b08))
        if scl_path.exists():
            with rasterio.open(scl_path) as s:
                valid &= ~np.isin(s.read(1), _SCL_MASKED)
        else:
            # L1C has no mask: drop pixels too bright in blue for land (clouds), a simple test
            # that misses thin edges and shadows, as a reader without a cloud mask would.
            valid &= b02 < _L1C_CLOUD_B02
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.where(valid, (b08 - b04) / (b08 + b04), np.nan).ravel()[order]
            y = np.where(valid, (b03 - b02) / (b03 + b02), np.nan).ravel()[order]
        for p in range(len(parcels)):
            lo, hi = bounds[p + 1], bounds[p + 2]
            if hi - lo == 0:
                continue
            seg = v[lo:hi]
            ok = ~np.isnan(seg)
            if ok.mean() >= 0.5:
                ndvi[p, t] = np.median(seg[ok])
                ndyi[p, t] = np.median(y[lo:hi][ok])
    dates = np.array(dates, dtype="datetime64[D]")

    with xr.open_dataset(folder / "weather.nc") as w:
        cents = parcels.geometry.representative_point().to_crs(4326)
        lon, lat = cents.x.to_numpy(), cents.y.to_numpy()
        year = int(str(dates[0])[:4])
        sel = w.sel(time=slice(f"{year}-01-01", f"{year}-12-31"))
        tn, tx = sel["tn"].values, sel["tx"].values
        days = sel["time"].values.astype("datetime64[D]")
        land = ~np.isnan(tn[0])
        rr, cc = np.nonzero(land)
        kx = np.cos(np.deg2rad(lat.mean()))
        dx = (w["longitude"].values[cc][None] - lon[:, None]) * kx
        dy = w["latitude"].values[rr][None] - lat[:, None]
        d2 = dx * dx + dy * dy
        k = np.argmin(d2, axis=1)
        ptn, ptx = tn[:, rr[k], cc[k]], tx[:, rr[k], cc[k]]
    daily = np.maximum((np.minimum(ptx, 30.0) + np.maximum(ptn, 0.0)) / 2.0, 0.0)
    cum = np.cumsum(daily, axis=0)
    gdd = cum[np.searchsorted(days, dates)].T
    return ParcelSeries(region, dates, parcels["crop"].to_numpy().astype(str), ndvi, ndyi, gdd)


def class_medians(series: ParcelSeries, crop: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dates, median GDD and median NDVI over the parcels of ``crop`` ((T',) each, NaN dates dropped)."""
    rows = series.crops == crop
    if not rows.any():
        return series.dates[:0], np.zeros(0), np.zeros(0)
    # Dates where no parcel of the class is clear give all-NaN columns; they are dropped below.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(series.ndvi[rows], axis=0)
    g = np.median(series.gdd[rows], axis=0)
    keep = ~np.isnan(med)
    return series.dates[keep], g[keep], med[keep]


def plot_phenology(folders: Sequence[Path], png: Path, classes: Optional[Sequence[str]] = None) -> Path:
    """Draw median NDVI per class against calendar date and against GDD, one line per region.

    Args:
        folders: region folders written by ``generate_region``.
        png: output PNG path.
        classes: classes to draw (default all nine).

    Returns:
        ``png``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    classes = list(classes or CROP_CLASSES)
    series = [read_parcel_series(Path(f)) for f in folders]
    n = len(classes)
    ncols = 3
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows * 2, ncols, figsize=(4.2 * ncols, 2.3 * nrows * 2), squeeze=False)
    for i, crop in enumerate(classes):
        ax_d = axes[(i // ncols) * 2, i % ncols]
        ax_g = axes[(i // ncols) * 2 + 1, i % ncols]
        for s in series:
            d, g, v = class_medians(s, crop)
            if not len(d):
                continue
            style = dict(ls=REGION_STYLES.get(s.region, "-"), color=REGION_COLOURS.get(s.region), lw=1.3,
                         label=s.region)
            # One common calendar year on the x axis so regions overlay.
            ax_d.plot(d.astype("datetime64[D]").astype("O"), v, **style)
            ax_g.plot(g, v, **style)
        ax_d.set_title(crop.replace("_", " "), fontsize=10, color=CLASS_COLOURS.get(crop, "k"),
                       fontweight="bold")
        for ax in (ax_d, ax_g):
            ax.set_ylim(-0.1, 1.0)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
        ax_d.xaxis.set_major_formatter(mdates.DateFormatter("%b"))
        ax_d.xaxis.set_major_locator(mdates.MonthLocator(bymonth=(1, 3, 5, 7, 9, 11)))
        ax_g.set_xlabel("GDD since 1 Jan (degree days)", fontsize=7)
        ax_d.set_ylabel("NDVI", fontsize=7)
        ax_g.set_ylabel("NDVI", fontsize=7)
    for j in range(n, nrows * ncols):
        axes[(j // ncols) * 2, j % ncols].axis("off")
        axes[(j // ncols) * 2 + 1, j % ncols].axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.suptitle("Median parcel NDVI per class: calendar date (upper) and thermal time (lower)",
                 fontsize=11, y=0.995)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.978), ncol=len(series),
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.955))
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    try:
        with staged_file(png, what="figure") as tmp:
            fig.savefig(tmp, dpi=72)
    finally:
        plt.close(fig)
    log.info("Phenology plot written to %s", png)
    return png


def _date_of(name: str) -> np.datetime64:
    m = re.search(r"_(\d{8})T\d{6}_", name)
    if not m:
        raise InputError(f"Scene {name} does not carry a YYYYMMDDTHHMMSS sensing time in its name.")
    d = m.group(1)
    return np.datetime64(f"{d[:4]}-{d[4:6]}-{d[6:]}")


def _baseline(name: str) -> tuple[int, int]:
    m = re.search(r"_N(\d{2})(\d{2})_", name)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
