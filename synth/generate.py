"""Generate one region: parcels, daily weather, crop development and the Sentinel-2 scenes.

Scenes are computed and written one at a time, in strips of rows, so benchmark-scale regions
never hold more than one strip of one scene in memory.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..core.crops import CROP_CLASSES
from ..core.errors import InputError
from ..core.io.output import Staging, check_name_lengths, publish
from ..core.progress import Progress
from . import spectra
from .climate import simulate_weather
from .geometry import PIXEL, default_size, make_layout
from .phenology import simulate_canopy
from .regions import Region, get_region
from .snow import snow_cover, wet_days
from .writers import (
    SCL_SUFFIX,
    product_name,
    scene_profile,
    set_band_descriptions,
    write_json,
    write_parcels,
    write_weather,
)

log = logging.getLogger(__name__)

MANIFEST_FORMAT = "thermocrop-synth-1"
OUTPUTS = ("scenes", "parcels.gpkg", "weather.nc", "truth.json")
"""What a region folder holds; replaced as a whole when a region is generated again."""

STRIP_ROWS = 256
"""Rows computed at once; matches the GeoTIFF tile height."""

NOISE_ROWS = 256
"""Rows per random-noise block: fixed, so that the strip height does not change the output."""

SCL_NODATA, SCL_SHADOW, SCL_VEGETATION, SCL_NOT_VEGETATED = 0, 3, 4, 5
SCL_CLOUD_MEDIUM, SCL_CLOUD_HIGH, SCL_CIRRUS, SCL_SNOW = 8, 9, 10, 11

SOIL_SPREAD = 0.12
"""Between-parcel spread (SD) of soil brightness [B: the real bare fields of spring span +-15 %
between their quartiles]."""
SNOW_SHOWING = {"forest": 0.3, "christmas_trees": 0.4, "urban": 0.6, "road": 0.5}
"""Share of a snow pack that shows from above where trees or buildings stick out of it; on
fields the green canopy hides part of it (1 - 0.6 x green cover) [E]."""


def generate_region(
    region: str,
    out: Path,
    *,
    parcels: int = 100,
    size: Optional[int] = None,
    seed: int = 0,
    level: str = "L1C",
    year: int = 2017,
    baseline: Optional[str] = None,
    progress: Optional[Progress] = None,
) -> dict:
    """Generate a synthetic region in real file formats under ``out``.

    Writes ``parcels.gpkg`` (layer ``parcels``: parcel_id, crop, block), ``scenes/`` (one
    10-band GeoTIFF per acquisition; for L2A plus ``<name>_SCL.tif``), ``weather.nc`` (E-OBS
    layout) and ``truth.json`` (this manifest).

    Args:
        region: AT1, DK1, FR1 or FR2.
        out: output folder: new, empty, or an earlier generated region (whose files are
            replaced only once the new ones are complete).
        parcels: number of parcels.
        size: scene side in pixels (10 m); default fits ``parcels`` parcels of ~4.5 ha.
        seed: random seed; the same seed gives the same bytes.
        level: "L1C" (top of atmosphere, as the paper's data) or "L2A" (surface, with SCL).
        year: season year (acquisitions 1 Jan - 31 Dec).
        baseline: processing baseline "Nxxyy"; default N0205 before 2022, else N0400. From
            N0400 the DNs carry the +1000 offset.
        progress: progress / cancellation.

    Returns:
        The manifest (also written as truth.json).

    Raises:
        InputError: unknown region or level, impossible sizes, or a target folder holding
            other data.
        CancelledError: the user cancelled; the target folder is left as it was.
    """
    reg = get_region(region)
    level = level.upper()
    if level not in ("L1C", "L2A"):
        raise InputError(f"Level {level!r} is not supported; use L1C or L2A.")
    if parcels < 9:
        raise InputError(f"Asked for {parcels} parcels; at least 9 are needed so every class appears.")
    size = int(size) if size else default_size(parcels)
    if size * size < parcels * 60:
        raise InputError(
            f"A {size} px scene cannot hold {parcels} parcels; use --size {default_size(parcels)} or more."
        )
    baseline = baseline or ("N0400" if year >= 2022 else "N0205")
    if not (len(baseline) == 5 and baseline[0] == "N" and baseline[1:].isdigit()):
        raise InputError(f"Processing baseline {baseline!r} must look like N0205 or N0400.")
    dn_offset = 1000 if (int(baseline[1:3]), int(baseline[3:5])) >= (4, 0) else 0
    progress = progress or Progress()
    out = Path(os.path.abspath(out))
    check_name_lengths(out, what="region folder")
    _check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Everything is written in a staging folder beside the target and moved in at the end, each
    # part by one rename, so that a cancelled or failed run leaves the target folder as it was.
    with Staging(out) as staging:
        work = staging.path
        (work / "scenes").mkdir(parents=True)
        manifest = _generate(reg, work, parcels, size, seed, level, year, baseline, dn_offset, progress)
        out.mkdir(exist_ok=True)
        for name in OUTPUTS:
            publish(work / name, out / name, overwrite=True, staging=staging)
    progress(1.0)
    log.info("Generated %s: %d parcels, %d scenes, %d px square in %s", reg.name, len(manifest["parcels"]),
             len(manifest["dates"]), size, out)
    return manifest


def _check_target(out: Path) -> None:
    """Refuse to write into a non-empty folder that is not an earlier generated region."""
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"{out} exists and is not a folder; choose a folder for the region.")
    truth = out / "truth.json"
    earlier = False
    if truth.exists():
        try:
            earlier = json.loads(truth.read_text()).get("format") == MANIFEST_FORMAT
        except (ValueError, OSError):
            earlier = False
    if any(out.iterdir()) and not earlier:
        raise InputError(
            f"{out} is not empty and holds no generated region; choose an empty or new folder "
            "(an earlier 'thermocrop synth' output is replaced)."
        )


def _generate(reg: Region, out: Path, parcels: int, size: int, seed: int, level: str, year: int,
              baseline: str, dn_offset: int, progress: Progress) -> dict:
    """Write the region's files into ``out`` (which has an empty ``scenes`` folder)."""
    scenes_dir = out / "scenes"
    ss = np.random.SeedSequence([seed, zlib.crc32(reg.name.encode())])
    rng_layout, rng_crop, rng_weather, rng_pheno, rng_dates, rng_snow, rng_surface = (
        np.random.default_rng(s) for s in ss.spawn(7))
    pixel_seed = int(ss.generate_state(1)[0])

    # Scene origin: the tile centre, snapped to the 10 m grid of the tile.
    x0 = np.floor((reg.centre[0] - size * PIXEL / 2) / PIXEL) * PIXEL
    y0 = np.floor((reg.centre[1] + size * PIXEL / 2) / PIXEL) * PIXEL
    layout = make_layout(size, parcels, (x0, y0), rng_layout)
    n_p = layout.n_parcels
    classes = _assign_classes(reg, n_p, rng_crop)
    sub = [_unknown_crop(reg, rng_crop) if c == "unknown" else c for c in classes]
    cover_kinds = sub + [("meadow" if k == "meadow_unlisted" else k) for k in layout.background]
    progress(0.03)

    from pyproj import Transformer

    to_ll = Transformer.from_crs(reg.epsg, 4326, always_xy=True)
    cents = np.array([p.representative_point().coords[0] for p in layout.polygons])
    lon, lat = to_ll.transform(cents[:, 0], cents[:, 1])
    cx = np.array([x0, x0 + size * PIXEL, x0, x0 + size * PIXEL])
    cy = np.array([y0, y0, y0 - size * PIXEL, y0 - size * PIXEL])
    clon, clat = to_ll.transform(cx, cy)
    margin = 0.25
    start = np.datetime64(f"{year - 1}-07-01")
    end = np.datetime64(f"{year}-12-31")
    grid = simulate_weather(reg, (clon.min() - margin, clon.max() + margin),
                            (clat.min() - margin, clat.max() + margin), start, end, rng_weather)
    rows, cols = grid.nearest_cell(lon, lat)
    tmin = grid.tmin[:, rows, cols].T.astype(np.float64)
    tmax = grid.tmax[:, rows, cols].T.astype(np.float64)
    progress(0.08)

    acq = acquisition_dates(reg, year, rng_dates)
    canopy = simulate_canopy(reg, cover_kinds, lat, tmin, tmax, grid.dates, acq, year, rng_pheno)
    _, rain = wet_days(len(grid.dates), reg.wet_days, rng_snow)
    snow = snow_cover(tmin, tmax, rain)[:, np.searchsorted(grid.dates, acq)]
    soil_factor = np.clip(rng_surface.normal(1.0, SOIL_SPREAD, len(cover_kinds)), 0.7, 1.3)
    progress(0.15)

    # Parcels and weather files.
    import geopandas as gpd

    ids = [f"{reg.name}-{i + 1:05d}" for i in range(n_p)]
    gdf = gpd.GeoDataFrame(
        {"parcel_id": ids, "crop": classes, "block": layout.blocks.astype(np.int32)},
        geometry=layout.polygons[:n_p], crs=f"EPSG:{reg.epsg}",
    )
    write_parcels(out / "parcels.gpkg", gdf)
    write_weather(out / "weather.nc", grid, f"thermocrop synth region {reg.name} seed {seed}")
    progress(0.2)

    from rasterio.features import rasterize
    from rasterio.transform import from_origin

    transform = from_origin(x0, y0, PIXEL, PIXEL)
    # Cell labels: 0 roads and hedges, 1..n parcels then other land.
    labels = rasterize(((poly, i + 1) for i, poly in enumerate(layout.polygons)),
                       out_shape=(size, size), transform=transform, fill=0, dtype="int32")
    kinds = ["road"] + cover_kinds
    series = _SceneSeries(level=level, dn_offset=dn_offset, baseline=baseline, region=reg, labels=labels,
                          kinds=kinds, canopy=canopy, transform=transform, crs=f"EPSG:{reg.epsg}",
                          pixel_seed=pixel_seed, snow=snow, soil_factor=soil_factor)
    scene_info = []
    sats = _satellites(acq, rng_dates)
    for t, date in enumerate(acq):
        name = product_name(sats[t], level, date, reg.sensing_time,
                            baseline, reg.orbit, reg.tile)
        srng = np.random.default_rng([pixel_seed, 1, t])
        info = _write_scene(scenes_dir / f"{name}.tif", series, t, date, srng)
        info.update(date=str(date), file=f"scenes/{name}.tif")
        if level == "L2A":
            info["scl"] = f"scenes/{name}{SCL_SUFFIX}.tif"
        scene_info.append(info)
        progress(0.2 + 0.78 * (t + 1) / len(acq))

    manifest = {
        "format": MANIFEST_FORMAT,
        "region": reg.name,
        "tile": reg.tile,
        "crs": f"EPSG:{reg.epsg}",
        "seed": seed,
        "year": year,
        "level": level,
        "baseline": baseline,
        "dn_offset": dn_offset,
        "size": size,
        "origin": [float(x0), float(y0)],
        "block_size": layout.block_size,
        "classes": list(CROP_CLASSES),
        "dates": [str(d) for d in acq],
        "scenes": scene_info,
        "parcels": {
            pid: {"crop": c, "cover": k, "block": int(b), **_clean(m)}
            for pid, c, k, b, m in zip(ids, classes, sub, layout.blocks, canopy.info[:n_p])
        },
        "class_counts": {c: int(sum(1 for x in classes if x == c)) for c in CROP_CLASSES},
        "weather": {"file": "weather.nc", "start": str(grid.dates[0]), "end": str(grid.dates[-1])},
    }
    write_json(out / "truth.json", manifest)
    return manifest


def acquisition_dates(region: Region, year: int, rng: np.random.Generator) -> np.ndarray:
    """Acquisition dates with the per-month counts of the fact sheet (section 5 table [R]).

    Each month is split into equal slots and one date is drawn in each, so gaps are realistic
    (several days to a few weeks) and never two scenes on one day.
    """
    out = []
    for m, k in enumerate(region.acquisitions, start=1):
        first = np.datetime64(f"{year}-{m:02d}-01")
        nxt = np.datetime64(f"{year + (m == 12)}-{(m % 12) + 1:02d}-01")
        n_days = int((nxt - first).astype(int))
        edges = np.linspace(0, n_days, k + 1)
        for i in range(k):
            lo, hi = int(np.ceil(edges[i])), int(np.floor(edges[i + 1])) - 1
            out.append(first + np.timedelta64(int(rng.integers(lo, max(lo, hi) + 1)), "D"))
    return np.array(sorted(set(out)), dtype="datetime64[D]")


def _satellites(acq: np.ndarray, rng: np.random.Generator) -> list[str]:
    # Sentinel-2B was launched 7 Mar 2017 and delivered data from summer 2017 (facts s.5).
    return ["S2B" if d >= np.datetime64("2017-07-01") and rng.random() < 0.5 else "S2A" for d in acq]


def _assign_classes(region: Region, n: int, rng: np.random.Generator) -> list[str]:
    """Classes in proportion to the region's LPIS counts, every class at least once or twice."""
    names = list(CROP_CLASSES)
    w = np.array([region.class_weights[c] for c in names], float)
    w /= w.sum()
    minimum = 2 if n >= 60 else 1
    counts = np.full(len(names), minimum)
    rest = n - counts.sum()
    counts += rng.multinomial(rest, w)
    classes = np.repeat(names, counts)
    return [str(c) for c in rng.permutation(classes)]


def _unknown_crop(region: Region, rng: np.random.Generator) -> str:
    names = sorted(region.unknown_mix)
    w = np.array([region.unknown_mix[k] for k in names], float)
    return str(rng.choice(names, p=w / w.sum()))


def _clean(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if v is not None}


def _coarse_field(rng: np.random.Generator, size: int, cell: int) -> np.ndarray:
    n = size // cell + 4
    return rng.standard_normal((n, n))


def _sample(field: np.ndarray, cell: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    from scipy.ndimage import map_coordinates

    return map_coordinates(field, [rows / cell + 1.5, cols / cell + 1.5], order=3, mode="nearest")


def _cloud_fields(rng: np.random.Generator, size: int):
    """Two octaves of smooth noise: cloud decks and their ragged edges."""
    big = max(24, size // 6)
    return (_coarse_field(rng, size, big), big), (_coarse_field(rng, size, 12), 12)


def _cloud_opacity(fields, rows, cols, threshold):
    (f1, c1), (f2, c2) = fields
    v = 0.8 * _sample(f1, c1, rows, cols) + 0.35 * _sample(f2, c2, rows, cols)
    return np.clip((v - threshold) / 0.5, 0.0, 1.0)


@dataclass(frozen=True)
class _SceneSeries:
    """What the scenes of one region share: the product level and format, the landscape raster,
    its georeferencing and the state of the ground over the season.

    Attributes:
        labels: ``(size, size)`` cell of each pixel (0 roads and hedges, then parcels and other land).
        kinds: the cover kind of each cell.
        canopy: the simulated canopy of every parcel and background cell.
        snow: ``(cells - 1, T)`` snow cover of open ground at each acquisition.
        soil_factor: ``(cells - 1,)`` soil brightness of each parcel or background cell.
    """

    level: str
    dn_offset: int
    baseline: str
    region: Region
    labels: np.ndarray
    kinds: list[str]
    canopy: Any
    transform: Any
    crs: str
    pixel_seed: int
    snow: np.ndarray
    soil_factor: np.ndarray


def _write_scene(path: Path, series: _SceneSeries, t: int, date: Any, rng: np.random.Generator) -> dict:
    """Write acquisition ``t`` of ``series`` (and its SCL layer for L2A) at ``path``; return its
    cloud, shadow, no-data and snow fractions and its haze and soil wetness."""
    import rasterio

    level, dn_offset, baseline, reg = series.level, series.dn_offset, series.baseline, series.region
    labels, kinds, canopy = series.labels, series.kinds, series.canopy
    transform, crs, pixel_seed = series.transform, series.crs, series.pixel_seed
    snow, soil_factor = series.snow[:, t], series.soil_factor
    size = labels.shape[0]
    month = int(str(date)[5:7])
    # Cloud cover of this scene: many scenes clear, some partly cloudy, never over the 80 %
    # the paper's data kept (facts s.0).
    mean_cloud = reg.cloudiness[month - 1]
    cloud_frac = 0.0 if rng.random() < 0.45 else float(min(0.75, rng.exponential(mean_cloud * 1.3)))
    fields = _cloud_fields(rng, size)
    probe = np.arange(0, size, 4, dtype=float)
    pr, pc = np.meshgrid(probe, probe, indexing="ij")
    (f1, c1), (f2, c2) = fields
    v = 0.8 * _sample(f1, c1, pr, pc) + 0.35 * _sample(f2, c2, pr, pc)
    threshold = float(np.quantile(v, 1 - cloud_frac)) if cloud_frac > 0 else np.inf
    # Sun in the south-east at the morning overpass: shadows fall north-west of their clouds.
    shadow_shift = (rng.uniform(8, 30), rng.uniform(6, 25))
    # Some scenes end at the swath edge: a near-north-south line with no data beyond it.
    swath = None
    if rng.random() < 0.15:
        frac = rng.uniform(0.1, 0.4)
        swath = (bool(rng.random() < 0.5), size * (1 - frac), np.tan(np.deg2rad(rng.uniform(-12, 12))))
    # Haze: most scenes near the mean path reflectance, one in ten hazy [B: one of the 14 real
    # Bavarian dates has blue 0.05 brighter than its neighbours over every class, 1.7 times
    # the path reflectance].
    aerosol = float(np.exp(rng.normal(0.0, 0.15)))
    if rng.random() < 0.1:
        aerosol *= float(rng.uniform(1.4, 2.2))
    # Soils are wettest after the winter, in February-March [B: real bare fields are darker in
    # March-April than in May], and driest in August.
    wetness = float(np.clip(0.4 + 0.4 * np.cos(2 * np.pi * (month - 2) / 12) + rng.normal(0, 0.15), 0, 1))

    comp = _cell_components(kinds, canopy, t, wetness, snow, soil_factor)
    profile = scene_profile(size, size, crs, transform, 10)
    counts = {"cloud": 0, "shadow": 0, "nodata": 0, "snow": 0}
    scl_path = path.with_name(path.stem + SCL_SUFFIX + ".tif")
    tmp = path.with_name(path.name + ".part")
    scl_ds = None
    with rasterio.open(tmp, "w", **profile) as ds:
        set_band_descriptions(ds, level, -dn_offset, date, baseline)
        if level == "L2A":
            scl_profile = scene_profile(size, size, crs, transform, 1)
            scl_profile.update(dtype="uint8", nodata=None, predictor=1)
            scl_ds = rasterio.open(scl_path.with_name(scl_path.name + ".part"), "w", **scl_profile)
            scl_ds.set_band_description(1, "SCL")
        try:
            for r0 in range(0, size, STRIP_ROWS):
                r1 = min(size, r0 + STRIP_ROWS)
                dn, scl, c = _strip(labels[r0:r1], r0, comp, fields, threshold, shadow_shift, swath,
                                    level, aerosol, dn_offset, pixel_seed, t)
                window = rasterio.windows.Window(0, r0, size, r1 - r0)
                ds.write(dn, window=window)
                if scl_ds is not None:
                    scl_ds.write(scl[None], window=window)
                for k in counts:
                    counts[k] += c[k]
        finally:
            if scl_ds is not None:
                scl_ds.close()
    os.replace(tmp, path)
    if level == "L2A":
        os.replace(scl_path.with_name(scl_path.name + ".part"), scl_path)
    n = size * size
    return {"cloud_fraction": round(counts["cloud"] / n, 4),
            "shadow_fraction": round(counts["shadow"] / n, 4),
            "nodata_fraction": round(counts["nodata"] / n, 4),
            "snow_fraction": round(counts["snow"] / n, 4), "aerosol": round(aerosol, 3),
            "soil_wetness": round(wetness, 3)}


def _cell_components(kinds, canopy, t, wetness, snow, soil_factor):
    """Per-cell fractions and pure spectra at acquisition ``t``; cell 0 is roads and hedges.

    ``snow`` (cells - 1,) is the snow cover of open ground and ``soil_factor`` (cells - 1,) the
    soil brightness of each parcel or background cell."""
    n = len(kinds)
    frac = np.zeros((n, 4))  # green, senescent, flower-of-green, snow
    green = np.zeros((n, 10))
    sen = np.zeros((n, 10))
    soil = np.zeros((n, 10))
    wet_soil = spectra.SOIL_DRY * (1 - wetness) + spectra.SOIL_MOIST * wetness
    for i, kind in enumerate(kinds):
        if i == 0:
            frac[i] = (0.35, 0.05, 0.0, SNOW_SHOWING["road"] * float(snow.max(initial=0.0)))
            green[i], sen[i] = spectra.canopy_spectra("grass", 0.35, 0.5)
            soil[i] = spectra.URBAN
            continue
        g = float(canopy.green[i - 1, t])
        s = float(canopy.senescent[i - 1, t])
        f = float(canopy.flowering[i - 1, t])
        # Senescent material turns to dry straw as the green share vanishes.
        maturity = 1.0 - min(1.0, g / 0.3)
        if kind == "winter_rapeseed":
            spec_kind = "rapeseed"
        elif kind in ("forest", "christmas_trees"):
            spec_kind = "forest"
        elif kind in ("meadow", "fallow"):
            spec_kind = "grass"
        else:
            spec_kind = "crop"
        gs, sn = spectra.canopy_spectra(spec_kind, g, maturity)
        if f > 0:
            gs = gs * (1 - f) + spectra.RAPE_FLOWER * f
        green[i], sen[i] = gs, sn
        soil[i] = spectra.URBAN if kind == "urban" else wet_soil * soil_factor[i - 1]
        showing = SNOW_SHOWING.get(kind, 1.0 - 0.6 * g)
        frac[i] = (g, min(s, 1 - g), f, float(snow[i - 1]) * showing)
    return frac, green, sen, soil


def _noise(key: tuple[int, ...], r0: int, h: int, w: int, lead: tuple[int, ...] = ()) -> np.ndarray:
    """Standard normal noise for rows r0..r0+h, drawn per 256-row tile row so that the values
    do not depend on how many rows are computed at once."""
    parts = []
    for rr in range((r0 // NOISE_ROWS) * NOISE_ROWS, r0 + h, NOISE_ROWS):
        block = np.random.default_rng([*key, rr]).standard_normal((*lead, NOISE_ROWS, w))
        lo, hi = max(r0, rr) - rr, min(r0 + h, rr + NOISE_ROWS) - rr
        parts.append(block[..., lo:hi, :])
    return np.concatenate(parts, axis=-2)


def _strip(lab, r0, comp, fields, threshold, shadow_shift, swath, level, aerosol, dn_offset, pixel_seed, t):
    """DNs (10, h, w) uint16, SCL (h, w) uint8 and masked-pixel counts for one strip of rows."""
    frac, green, sen, soil = comp
    h, w = lab.shape
    rows = np.arange(r0, r0 + h, dtype=float)[:, None] * np.ones((1, w))
    cols = np.ones((h, 1)) * np.arange(w, dtype=float)[None, :]
    # Fixed within-parcel heterogeneity (soil patches, thinner stands): the same every date.
    het = 1.0 + 0.07 * _noise((pixel_seed, 3), r0, h, w)
    soil_b = 1.0 + 0.04 * _noise((pixel_seed, 4), r0, h, w)
    g = np.clip(frac[lab, 0] * het, 0, 1)
    s = np.clip(frac[lab, 1], 0, 1 - g)
    bare = 1.0 - g - s
    refl = np.empty((10, h, w), np.float32)
    for b in range(10):
        refl[b] = green[lab, b] * g + sen[lab, b] * s + soil[lab, b] * soil_b * bare
    refl *= (1.0 + 0.015 * _noise((pixel_seed, 2, t), r0, h, w, (10,))).astype(np.float32)
    snowy = frac[lab, 3]
    if snowy.any():
        refl = (refl * (1.0 - snowy) + spectra.SNOW[:, None, None] * snowy).astype(np.float32)

    if np.isfinite(threshold):
        alpha = _cloud_opacity(fields, rows, cols, threshold)
        shade = _cloud_opacity(fields, rows + shadow_shift[0], cols + shadow_shift[1], threshold)
    else:
        alpha = np.zeros((h, w))
        shade = alpha
    alpha = np.where(alpha < 0.05, 0.0, alpha)
    shadow = (shade > 0.3) & (alpha == 0)
    refl[:, shadow] *= 0.35
    cloudy = alpha > 0
    if cloudy.any():
        a = alpha[cloudy]
        refl[:, cloudy] = refl[:, cloudy] * (1 - a) + spectra.CLOUD[:, None] * a

    if level == "L1C":
        refl = spectra.to_toa(refl, aerosol)
    dn = np.clip(np.round(refl * 10000.0) + dn_offset, 1, 65535).astype(np.uint16)
    nodata = np.zeros((h, w), bool)
    if swath is not None:
        east, edge, slope = swath
        line = edge + slope * (rows - 0)
        nodata = cols > line if east else cols < (w - line)
        dn[:, nodata] = 0

    scl = np.where(spectra.ndvi(refl[2], refl[6]) > 0.35, SCL_VEGETATION, SCL_NOT_VEGETATED).astype(np.uint8)
    scl[snowy > 0.5] = SCL_SNOW
    scl[shadow] = SCL_SHADOW
    scl[(alpha > 0) & (alpha < 0.25)] = SCL_CIRRUS
    scl[(alpha >= 0.25) & (alpha < 0.6)] = SCL_CLOUD_MEDIUM
    scl[alpha >= 0.6] = SCL_CLOUD_HIGH
    scl[nodata] = SCL_NODATA
    counts = {"cloud": int((cloudy & ~nodata).sum()), "shadow": int((shadow & ~nodata).sum()),
              "nodata": int(nodata.sum()), "snow": int(((snowy > 0.5) & ~cloudy & ~nodata).sum())}
    return dn, scl, counts
