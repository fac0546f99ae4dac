"""Per-parcel tables of mean reflectance per date (Google Earth Engine, Sentinel Hub, WorldCrops
exports) -> a ThermoCrop dataset with one "pixel" per parcel and date (S = 1).

Two layouts are read from CSV, Parquet or Excel:

- long: one row per parcel and date, with a parcel id, a date and one column per band
  (``B2``, ``B02``, ``B2_mean``, ``mean_B02``, ...);
- wide: one row per parcel, one column per band and date (``B02_2018-03-15``,
  ``20180315_B2``, ...).

Labels, blocks and locations come from columns of the table or from a vector layer joined by
id or by feature number; GDD from a weather file at each parcel's location.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.errors import InputError
from ...core.io.safe_read import check_archive
from ...core.parcels import STATUS_NO_CLEAR_DATE, STATUS_NO_WEATHER
from ...core.pixel_sets import STATUS_OK, PixelSets, save_dataset
from ...core.scenes.bands import QUANTIFICATION_VALUE, S2_BANDS
from .common import (
    ClassesAndBlocks,
    ImportWeather,
    Locations,
    ParcelLayer,
    PathLike,
    assign_labels,
    check_parcel_ids,
    code_key,
    grid_blocks,
    join_layer,
    locations_from_geometries,
    locations_from_lonlat,
    read_layer,
    thermal_time,
)

log = logging.getLogger(__name__)

ID_COLUMNS = ("parcel_id", "id", "field_id", "fid")
DATE_COLUMNS = ("date", "time", "acquisition_date", "system:time_start")

MAX_SERIES_BYTES = 4 * 1024 ** 3
"""The most memory the parcels x dates x bands values of the tables may take (float64): 500,000
parcels x 100 dates, say."""

_DATE_TOKEN = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_.]?(0[1-9]|1[0-2])[-_.]?(0[1-9]|[12]\d|3[01])(?!\d)")


# --------------------------------------------------------------------------------------------
# Reading


def read_table(path: PathLike, sheet: Optional[str] = None):
    """One table file (CSV / TSV, Parquet, Excel) as a pandas DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise InputError(f"table {path} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt", ".tsv"):
            with open(path, encoding="utf-8-sig", errors="replace") as fh:
                head = fh.readline()
            sep = max((",", ";", "\t"), key=head.count)
            return pd.read_csv(path, sep=sep, encoding="utf-8-sig")
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".xlsx", ".xlsm", ".xls"):
            # openpyxl reads cached cell values (no formula, macro or external link is evaluated)
            # and parses the XML with defusedxml; the archive's sizes are checked first.
            if suffix != ".xls":
                check_archive(path, what="spreadsheet")
            return pd.read_excel(path, sheet_name=sheet if sheet is not None else 0)
    except InputError:
        raise
    except Exception as exc:  # each reader raises its own errors
        raise InputError(f"cannot read table {path}: {exc}") from None
    raise InputError(f"table {path}: unknown format {suffix!r}; give a .csv, .parquet or .xlsx file")


def _band_token(band: str) -> re.Pattern:
    """Pattern of one band's name inside a column name (``B02`` matches b2, b02, B02_mean)."""
    number = band[1:].lower()  # "02", "8a", "11"
    body = f"0?{number[1:]}" if number.startswith("0") else number
    return re.compile(rf"(?<![a-z0-9])b{body}(?![a-z0-9])")


def _match_band(name: str, band: str) -> Optional[str]:
    """What is left of a column name once the band is taken out, or None if it is not there."""
    lower = name.lower()
    match = _band_token(band).search(lower)
    if match is None:
        return None
    return (lower[:match.start()] + lower[match.end():]).strip("_ -.")


def find_band_columns(columns: Sequence[str], explicit: Optional[Mapping[str, str]] = None,
                      source: str = "the table") -> dict[str, str]:
    """The column holding each of the ten bands (long layout).

    A band matched by several columns prefers the one that is the band alone or the band's
    ``mean``; anything else ambiguous is an error asking for ``band_columns``.
    """
    explicit = dict(explicit or {})
    out: dict[str, str] = {}
    problems = []
    for band in S2_BANDS:
        if band in explicit:
            if explicit[band] not in columns:
                raise InputError(f"{source} has no column {explicit[band]!r} (given for {band})")
            out[band] = explicit[band]
            continue
        hits = [(c, rest) for c in columns if (rest := _match_band(str(c), band)) is not None]
        if len(hits) > 1:
            hits = [h for h in hits if h[1] in ("", "mean")] or hits
        if len(hits) == 1:
            out[band] = hits[0][0]
        elif not hits:
            problems.append(f"{band}: no column")
        else:
            problems.append(f"{band}: several columns ({', '.join(str(c) for c, _ in hits)})")
    if problems:
        raise InputError(f"{source}: cannot tell which columns hold the ten bands ({'; '.join(problems)}). "
                         "Name them with band_columns, e.g. --band-columns B02=blue,B03=green,...")
    return out


def find_wide_columns(columns: Sequence[str], source: str = "the table"
                      ) -> dict[tuple[str, np.datetime64], str]:
    """``(band, date) -> column`` of a wide table (one column per band and date)."""
    out: dict[tuple[str, np.datetime64], str] = {}
    for c in columns:
        match = _DATE_TOKEN.search(str(c))
        if match is None:
            continue
        rest = (str(c)[:match.start()] + "_" + str(c)[match.end():]).strip("_ -.")
        bands = [b for b in S2_BANDS if _match_band(rest, b) is not None]
        if len(bands) != 1:
            continue
        date = np.datetime64(f"{match.group(1)}-{match.group(2)}-{match.group(3)}", "D")
        key = (bands[0], date)
        if key in out:
            raise InputError(f"{source}: columns {out[key]!r} and {c!r} both hold {bands[0]} of {date}")
        out[key] = str(c)
    return out


def parse_dates(values, column: str, source: str, date_format: Optional[str] = None) -> np.ndarray:
    """A date column as datetime64[D]: dates, ISO text, ``YYYYMMDD`` numbers or text, Excel
    serial day numbers, epoch milliseconds (Earth Engine's ``system:time_start``), or text in
    ``date_format`` (strftime codes)."""
    import pandas as pd

    series = pd.Series(values)
    if series.isna().any():
        row = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise InputError(f"{source}: {column} is empty in data row {row + 1}; every row needs a date")
    if date_format:
        try:
            return pd.to_datetime(series.astype(str), format=date_format).to_numpy().astype("datetime64[D]")
        except (ValueError, TypeError) as exc:
            raise InputError(f"{source}: {column} does not match --date-format {date_format!r} ({exc})") from None
    if np.issubdtype(series.dtype, np.datetime64):
        return series.to_numpy().astype("datetime64[D]")
    if np.issubdtype(series.dtype, np.number):
        v = series.to_numpy(dtype=np.float64)
        if np.all((v >= 19000101) & (v <= 21001231) & (v == np.round(v))):
            return np.array([f"{int(x):08d}"[:4] + "-" + f"{int(x):08d}"[4:6] + "-" + f"{int(x):08d}"[6:]
                             for x in v], dtype="datetime64[D]")
        if np.all((v > 1e11) & (v < 1e14)):
            return (v // 86_400_000).astype(np.int64).astype("datetime64[D]")
        if np.all((v > 0) & (v < 100_000)):
            # Excel's day 0 is 1899-12-30 (it counts a 29 February 1900 that never was).
            return np.datetime64("1899-12-30", "D") + np.floor(v).astype(np.int64)
        raise InputError(f"{source}: cannot read the numbers in {column} as dates (they are neither "
                         "YYYYMMDD, Excel day numbers nor epoch milliseconds); give --date-format")
    text = series.astype(str).str.strip().to_numpy()
    try:
        return np.array(text, dtype="datetime64").astype("datetime64[D]")
    except ValueError:
        pass
    if all(re.fullmatch(r"\d{8}", t) for t in text):
        return np.array([f"{t[:4]}-{t[4:6]}-{t[6:]}" for t in text], dtype="datetime64[D]")
    bad = next(t for t in text if not re.fullmatch(r"\d{4}-\d\d-\d\d.*", t))
    raise InputError(f"{source}: cannot read {column} value {bad!r} as a date; write dates as "
                     "YYYY-MM-DD or give --date-format (e.g. %d.%m.%Y)")


def _pick_column(columns: Sequence[str], given: Optional[str], defaults: Sequence[str], what: str,
                 source: str, required: bool = True) -> Optional[str]:
    if given is not None:
        if given not in columns:
            raise InputError(f"{source} has no {what} column {given!r} (columns: "
                             f"{', '.join(map(str, columns))})")
        return given
    lower = {str(c).lower(): c for c in columns}
    for name in defaults:
        if name in lower:
            return lower[name]
    if required:
        raise InputError(f"{source}: no {what} column found (looked for {', '.join(defaults)}); "
                         f"name it with --{what.replace(' ', '-')}-column")
    return None


# --------------------------------------------------------------------------------------------
# Shaping


@dataclass
class ParcelSeries:
    """The table's content as arrays, before scaling and thermal time.

    Attributes:
        parcel_ids: ``(P,)`` str, in order of first appearance.
        dates: ``(T,)`` datetime64[D], ascending.
        values: ``(P, T, 10)`` float64 band values in the table's units, NaN where missing.
        attributes: per-parcel values of other columns (label, block, lon, lat) ``(P,)``.
    """

    parcel_ids: np.ndarray
    dates: np.ndarray
    values: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)


def _per_parcel(values: np.ndarray, inverse: np.ndarray, n: int, column: str, ids: np.ndarray,
                source: str) -> np.ndarray:
    """One value per parcel from a per-row column; differing values within a parcel are an
    error naming it."""
    out = np.full(n, None, dtype=object)
    for row, p in enumerate(inverse):
        v = values[row]
        if code_key(v) is None:
            continue
        if out[p] is None:
            out[p] = v
        elif code_key(out[p]) != code_key(v):
            raise InputError(f"{source}: parcel {ids[p]} has two values of {column} "
                             f"({out[p]!r} and {v!r}); a parcel's {column} must not change from row to row")
    return out


def _check_series_size(parcels: int, dates: int, source: str) -> None:
    need = parcels * dates * len(S2_BANDS) * 8
    if need > MAX_SERIES_BYTES:
        raise InputError(f"{source}: {parcels:,} parcels x {dates:,} dates would take {need / 1e9:.1f} GB in memory, "
                         f"more than the {MAX_SERIES_BYTES / 1e9:.1f} GB an import holds; split the table by "
                         "region or season, or check its date column")


def long_series(df, *, id_column: str, date_column: str, band_columns: Mapping[str, str],
                attribute_columns: Mapping[str, str], source: str,
                date_format: Optional[str] = None) -> ParcelSeries:
    """Arrays of a long table (one row per parcel and date)."""
    raw_ids = df[id_column].to_numpy()
    keys = np.array([code_key(v) for v in raw_ids], dtype=object)
    if any(k is None for k in keys):
        row = int(np.flatnonzero([k is None for k in keys])[0])
        raise InputError(f"{source}: {id_column} is empty in data row {row + 1}; every row needs a parcel id")
    ids, first, inverse = np.unique(keys.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # parcels in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ids, inverse = ids[order], rank[inverse]
    row_dates = parse_dates(df[date_column].to_numpy(), date_column, source, date_format)
    dates, t_index = np.unique(row_dates, return_inverse=True)
    n, t = len(ids), len(dates)
    _check_series_size(n, t, source)
    table = np.column_stack([np.asarray(df[band_columns[b]], dtype=np.float64) for b in S2_BANDS]) \
        if len(df) else np.zeros((0, len(S2_BANDS)))
    values = np.full((n, t, len(S2_BANDS)), np.nan)
    flat = inverse * t + t_index
    counts = np.bincount(flat, minlength=n * t)
    if (counts > 1).any():
        p, d = divmod(int(np.flatnonzero(counts > 1)[0]), t)
        log.warning("%s: %d parcel-dates occur in several rows (e.g. parcel %s on %s); their band "
                    "values are averaged", source, int((counts > 1).sum()), ids[p], dates[d])
        sums = np.zeros((n * t, len(S2_BANDS)))
        seen = np.zeros((n * t, len(S2_BANDS)))
        ok = np.isfinite(table)
        np.add.at(sums, flat, np.where(ok, table, 0.0))
        np.add.at(seen, flat, ok)
        with np.errstate(invalid="ignore"):
            values = (sums / seen).reshape(n, t, len(S2_BANDS))
    else:
        values.reshape(n * t, len(S2_BANDS))[flat] = table
    attributes = {role: _per_parcel(df[col].to_numpy(), inverse, n, col, ids, source)
                  for role, col in attribute_columns.items()}
    return ParcelSeries(ids, dates, values, attributes)


def wide_series(df, *, id_column: Optional[str], wide_columns: Mapping[tuple, str],
                attribute_columns: Mapping[str, str], source: str) -> ParcelSeries:
    """Arrays of a wide table (one row per parcel, one column per band and date)."""
    if id_column is not None:
        keys = [code_key(v) for v in df[id_column].to_numpy()]
        if any(k is None for k in keys):
            raise InputError(f"{source}: {id_column} is empty in some rows; every row needs a parcel id")
        if len(set(keys)) != len(keys):
            raise InputError(f"{source}: parcel ids repeat in {id_column}; a wide table has one row per parcel")
        ids = np.array(keys, dtype=str)
    else:
        ids = np.array([str(i) for i in range(len(df))])
    dates = np.array(sorted({d for _, d in wide_columns}), dtype="datetime64[D]")
    _check_series_size(len(df), len(dates), source)
    missing = [f"{b} {d}" for d in dates for b in S2_BANDS if (b, d) not in wide_columns]
    if missing:
        log.warning("%s: %d band-date columns are absent (e.g. %s); those dates count as missing "
                    "where a band lacks", source, len(missing), ", ".join(missing[:5]))
    values = np.full((len(df), len(dates), len(S2_BANDS)), np.nan)
    for (band, date), col in wide_columns.items():
        values[:, int(np.searchsorted(dates, date)), S2_BANDS.index(band)] = np.asarray(df[col], dtype=np.float64)
    attributes = {role: np.array(df[col].to_numpy(), dtype=object) for role, col in attribute_columns.items()}
    return ParcelSeries(ids, dates, values, attributes)


def to_dn(values: np.ndarray, value_scale: Optional[float], offset: float = 0.0,
          source: str = "the table") -> tuple[np.ndarray, float]:
    """Band values -> uint16 reflectance x 10000 (rounded half up, clipped to 0..65535).

    Args:
        values: band values in the table's units, NaN where missing.
        value_scale: the value a reflectance of 1 is written as (10000 for Sentinel-2 digital
            numbers, 1 for reflectance); None guesses from the largest value (1 when it is
            below 2, else 10000).
        offset: added to the values before scaling (e.g. -1000 for digital numbers of
            processing baseline 04.00 and later that still carry the offset).

    Returns:
        ``(dn uint16 of the same shape, value_scale used)``.
    """
    finite = np.isfinite(values)
    if value_scale is None:
        top = float(np.nanmax(values)) if finite.any() else 0.0
        value_scale = 1.0 if top < 2.0 else float(QUANTIFICATION_VALUE)
        log.info("%s: band values up to %.4g, read as reflectance x %g (set value_scale to override)",
                 source, top, value_scale)
    if not value_scale > 0:
        raise InputError(f"the value scale must be positive, not {value_scale}")
    dn = np.where(finite, (values + offset) * (QUANTIFICATION_VALUE / value_scale), 0.0)
    low, high = int((dn[finite] < -0.5).sum()), int((dn[finite] > 65535.5).sum())
    if low or high:
        log.warning("%s: %d band values below reflectance 0 and %d above 6.5535 are clipped", source,
                    low, high)
    # Halves round up (not to even): 1286.5 -> 1287, as a reader of the table would expect.
    return np.clip(np.floor(dn + 0.5), 0, 65535).astype(np.uint16), float(value_scale)


# --------------------------------------------------------------------------------------------
# The importer


@dataclass(frozen=True)
class TableColumns:
    """How per-parcel tables are laid out and what their values are.

    Attributes:
        layout: ``"long"``, ``"wide"`` or ``"auto"`` (long when a date column exists).
        sheet: Excel sheet name (default the first).
        id_column, date_column: default ``parcel_id``/``id``/... and ``date``/``time``/...
        date_format: strftime format of text dates that are not ISO.
        band_columns: band name -> column, for columns not recognised by name.
        label_column, block_column: per-parcel label (crop code or class) and block columns.
        lon_column, lat_column: parcel locations in WGS 84 degrees.
        value_scale, offset: see ``to_dn``.
        level: processing level of the source reflectances (``L1C`` or ``L2A``), recorded.
    """

    layout: str = "auto"
    sheet: Optional[str] = None
    id_column: Optional[str] = None
    date_column: Optional[str] = None
    date_format: Optional[str] = None
    band_columns: Optional[Mapping[str, str]] = None
    label_column: Optional[str] = None
    block_column: Optional[str] = None
    lon_column: Optional[str] = None
    lat_column: Optional[str] = None
    value_scale: Optional[float] = None
    offset: float = 0.0
    level: Optional[str] = None


def table_pixel_sets(
    tables: Union[PathLike, Sequence[PathLike]],
    *,
    weather: Union[ImportWeather, PathLike],
    columns: Optional[TableColumns] = None,
    layer: Optional[ParcelLayer] = None,
    grouping: Optional[ClassesAndBlocks] = None,
) -> PixelSets:
    """Read per-parcel tables into pixel sets with one pixel slot per parcel and date.

    Args:
        tables: one or more files (CSV, Parquet, xlsx) of the same layout; rows are appended.
        weather: the temperatures and thermal time (:class:`ImportWeather`), or a weather file
            (E-OBS / CF NetCDF or station CSV) with the default thermal time.
        columns: the tables' layout, columns and values (:class:`TableColumns`).
        layer: a vector layer for locations, labels and blocks, joined by ``join_field`` or
            ``join_by_row`` (:class:`ParcelLayer`; its ``point`` is not used).
        grouping: class map, class list and grid blocks (:class:`ClassesAndBlocks`).

    Returns:
        PixelSets ``(P, T, 10, 1)``; status ``no_clear_date`` for parcels without a date
        holding all ten bands, ``no_weather`` for parcels without temperatures.
    """
    import pandas as pd

    from ...core.thermal.gdd import day_of_season

    c, lay, grp = columns or TableColumns(), layer or ParcelLayer(), grouping or ClassesAndBlocks()
    weather = ImportWeather.of(weather)
    layout, sheet, id_column, date_column, date_format = c.layout, c.sheet, c.id_column, c.date_column, c.date_format
    band_columns, label_column, block_column = c.band_columns, c.label_column, c.block_column
    lon_column, lat_column, value_scale, offset, level = c.lon_column, c.lat_column, c.value_scale, c.offset, c.level
    parcels, parcels_layer, join_field, join_by_row = lay.path, lay.layer, lay.join_field, lay.join_by_row
    label_field, block_field = lay.label_field, lay.block_field
    class_map, classes, block_size_m = grp.class_map, grp.classes, grp.block_size_m
    thermal = weather.thermal
    paths = [Path(tables)] if isinstance(tables, (str, Path)) else [Path(t) for t in tables]
    if not paths:
        raise InputError("no table given")
    source = ", ".join(str(p) for p in paths)
    frames = [read_table(p, sheet) for p in paths]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    columns = [str(c) for c in df.columns]
    df.columns = columns
    if layout not in ("auto", "long", "wide"):
        raise InputError(f"layout must be long, wide or auto, not {layout!r}")
    if date_column is None and layout != "wide":
        date_column = _pick_column(columns, None, DATE_COLUMNS, "date", source, required=layout == "long")
    if layout == "auto":
        layout = "long" if date_column is not None else "wide"
    season = thermal.season_start

    attribute_columns = {role: col for role, col in (("label", label_column), ("block", block_column),
                                                     ("lon", lon_column), ("lat", lat_column)) if col}
    for role, col in attribute_columns.items():
        if col not in columns:
            raise InputError(f"{source} has no {role} column {col!r} (columns: {', '.join(columns)})")
    if layout == "long":
        id_col = _pick_column(columns, id_column, ID_COLUMNS, "id", source)
        bands = find_band_columns(columns, band_columns, source)
        series = long_series(df, id_column=id_col, date_column=date_column, band_columns=bands,
                             attribute_columns=attribute_columns, source=source, date_format=date_format)
        origin = {"layout": "long", "id_column": id_col, "date_column": date_column, "band_columns": bands}
    else:
        id_col = _pick_column(columns, id_column, ID_COLUMNS, "id", source, required=False)
        wide = find_wide_columns(columns, source)
        if not wide:
            raise InputError(f"{source}: neither a date column (long layout) nor band-and-date columns such "
                             "as B02_2018-03-15 (wide layout) were found; name the date column with --date-column")
        series = wide_series(df, id_column=id_col, wide_columns=wide, attribute_columns=attribute_columns,
                             source=source)
        origin = {"layout": "wide", "id_column": id_col, "band_date_columns": len(wide)}
    n = len(series.parcel_ids)
    if n == 0:
        raise InputError(f"{source} holds no parcels")
    check_parcel_ids(series.parcel_ids, source)

    gdf, rows = None, None
    if parcels is not None:
        if join_field is None and not join_by_row:
            raise InputError("a parcel layer needs a join: the field holding the table's parcel ids "
                             "(--join-field) or --join-by-row")
        gdf = read_layer(parcels, parcels_layer)
        rows, _ = join_layer(gdf, series.parcel_ids, join_field=join_field, by_row=join_by_row,
                             source=str(parcels))
    for name, what in ((label_field, "label"), (block_field, "block")):
        if name is not None and gdf is None:
            raise InputError(f"a {what} field needs the parcel layer (--parcels)")
        if name is not None and name not in gdf.columns:
            raise InputError(f"{parcels} has no field {name!r} (fields: "
                             f"{', '.join(c for c in gdf.columns if c != 'geometry')})")

    def layer_values(name: str) -> np.ndarray:
        values = gdf[name].to_numpy()
        out = np.full(n, None, dtype=object)
        out[rows >= 0] = values[rows[rows >= 0]]
        return out

    locations: Optional[Locations] = None
    if "lon" in series.attributes or "lat" in series.attributes:
        if not ("lon" in series.attributes and "lat" in series.attributes):
            raise InputError("give both --lon-column and --lat-column")
        locations = locations_from_lonlat(np.array(series.attributes["lon"], dtype=np.float64),
                                          np.array(series.attributes["lat"], dtype=np.float64))
    elif gdf is not None:
        geometry = gdf.geometry.iloc[np.maximum(rows, 0)].reset_index(drop=True)
        geometry[rows < 0] = None
        locations = locations_from_geometries(geometry)

    label_values = series.attributes.get("label")
    label_source = f"{source} column {label_column}"
    if label_field is not None:
        label_values, label_source = layer_values(label_field), f"{parcels} field {label_field}"
    if label_values is not None:
        labels, classes, label_summary = assign_labels(label_values, class_map=class_map, classes=classes,
                                                       source=label_source)
    else:
        labels, classes, label_summary = np.full(n, -1, dtype=np.int16), tuple(classes or ()), {}

    blocks = np.full(n, -1, dtype=np.int32)
    block_values = layer_values(block_field) if block_field is not None else series.attributes.get("block")
    if block_values is not None:
        keys = [code_key(v) for v in block_values]
        try:
            blocks = np.array([int(float(k)) if k is not None else -1 for k in keys], dtype=np.int32)
        except ValueError:
            names = sorted({k for k in keys if k is not None})
            blocks = np.array([names.index(k) if k is not None else -1 for k in keys], dtype=np.int32)
    elif block_size_m is not None:
        if locations is None:
            raise InputError("grid blocks need the parcels' locations (a parcel layer or lon/lat columns)")
        blocks = grid_blocks(locations, block_size_m)

    dn, scale = to_dn(series.values, value_scale, offset, source)
    date_mask = np.isfinite(series.values).all(axis=2)
    status = np.full(n, STATUS_OK, dtype=object)
    status[~date_mask.any(axis=1)] = STATUS_NO_CLEAR_DATE
    gdd = thermal_time(weather.path, locations, series.dates, series.parcel_ids, season_start=season,
                       t_base=thermal.t_base, t_cap=thermal.t_cap, method=thermal.method,
                       weather_options=weather.options)
    no_weather = ~np.isfinite(gdd).all(axis=1) & (status == STATUS_OK)
    status[no_weather] = STATUS_NO_WEATHER
    gdd[~np.isfinite(gdd)] = 0.0
    date_mask &= (status == STATUS_OK)[:, None]
    pixels = np.where(date_mask[:, :, None], dn, 0).astype(np.uint16)[..., None]
    counts = {s: int((status == s).sum()) for s in np.unique(status)}
    log.info("%s: %d parcels x %d dates (%s)", source, n, len(series.dates),
             ", ".join(f"{k} {v}" for k, v in counts.items()))
    meta = {
        "importer": "table", "source": source, **origin, "value_scale": scale, "offset": offset,
        "parcels": str(parcels) if parcels is not None else None,
        "label_field": label_field or label_column, "class_map": None if class_map is None or
        isinstance(class_map, Mapping) else str(class_map), "labels": label_summary,
        "weather": str(weather.path), "levels": [level] if level else [],
        "season_start": str(season), "t_base": thermal.t_base, "t_cap": thermal.t_cap, "gdd_method": thermal.method,
        "max_pixels": 1, "pixels": "per-parcel mean (S = 1)",
    }
    return PixelSets(
        pixels=pixels, pixel_mask=date_mask[:, :, None].copy(), date_mask=date_mask,
        gdd=gdd.astype(np.float32), dates=series.dates,
        day_of_season=np.asarray(day_of_season(series.dates, season), dtype=np.float32),
        parcel_ids=series.parcel_ids.astype(str), status=status.astype(str), labels=labels,
        blocks=blocks, classes=tuple(classes), bands=S2_BANDS, meta=meta)


def import_table(tables: Union[PathLike, Sequence[PathLike]], out: PathLike, *, overwrite: bool = False,
                 **options: Any) -> Path:
    """``table_pixel_sets(tables, **options)`` written as a dataset folder at ``out`` (``options``:
    ``weather``, ``columns``, ``layer``, ``grouping`` as :func:`table_pixel_sets` takes them)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise InputError(f"{out} already exists; choose another output or allow overwriting")
    return save_dataset(table_pixel_sets(tables, **options), out, overwrite=overwrite)
