"""Writing a parcel layer back out with added fields, in any OGR format: checked before any work,
written beside the target, read back and counted, then moved into place whole.

The layer is copied feature by feature with OGR, so geometries keep their Z and M values and
their exact type; the added fields are appended (a field of the same name is replaced). A
GeoPackage (or SQLite) output that already exists keeps its other layers: only the named
layer is written or replaced, in a copy of the file that then replaces it in one rename.

The Processing algorithms let QGIS write into a :class:`VectorOutput`'s staging path and
commit it the same way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import InputError, OutputError
from .csv_cells import inert_feature
from .field_batches import FieldBatches, RowValues
from .gdal_messages import gdal_messages, said
from .geoparquet import PARQUET_SUFFIX, GeoParquetLayer, copy_to_geopackage, is_parquet, write_geoparquet
from .layer_columns import GEOPACKAGE_COLUMNS, SQLITE_COLUMNS, column_options, frame_to_geopackage
from .output import Staging, check_output, directory_lock, publish, publish_parts, same_file
from .source_layer import default_layer_name, first_feature_without_geometry, source_field_kinds
from .sqlite_files import check_sqlite, contents_order, keep_layer_order, settle_sqlite, snapshot_sqlite, sqlite_state

log = logging.getLogger(__name__)

OGR_DRIVERS = {
    ".gpkg": "GPKG",
    ".shp": "ESRI Shapefile",
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".fgb": "FlatGeobuf",
    ".sqlite": "SQLite",
    ".gml": "GML",
    ".csv": "CSV",
}

CONTAINER_DRIVERS = ("GPKG", "SQLite")
"""Formats holding several layers per file: writing one layer leaves the others alone."""

CASE_BLIND_DRIVERS = ("GPKG", "SQLite", "CSV")
"""Formats whose field names are one name whatever their case (``a`` and ``A`` cannot both be
written; a shapefile renames the second, FlatGeobuf and GeoJSON keep both)."""

_PARTS = {"ESRI Shapefile": (".shx", ".dbf", ".prj", ".cpg"), "GML": (".xsd",)}
"""Files a driver writes beside the main one; they belong to the output."""

_STALE_PARTS = {"ESRI Shapefile": (".qix", ".sbn", ".sbx", ".qpj", ".cpg", ".prj"), "GML": (".xsd",)}
"""Files of a replaced output that would describe the old one (an old spatial index): deleted
when the new output does not write them itself."""

_LAYER_OPTIONS = {"CSV": ["GEOMETRY=AS_WKT"], "SQLite": ["LAUNDER=NO"]}
"""Layer creation options a format needs: CSV drops geometry otherwise, SQLite lower-cases names."""

SHAPEFILE_NAME_BYTES = 10
"""dBase field names hold at most 10 bytes."""

PathLike = Union[str, os.PathLike]


def ogr_driver(out: PathLike) -> str:
    """The OGR driver for ``out``'s extension.

    Raises:
        OutputError: an extension no driver is known for.
    """
    driver = OGR_DRIVERS.get(Path(os.fspath(out).split("|")[0]).suffix.lower())
    if driver is None:
        raise OutputError(f"Cannot tell the format of {out} from its extension; use one of "
                          f"{', '.join(sorted(OGR_DRIVERS))}.")
    return driver


def written_field_name(driver: str, name: str) -> str:
    """The name ``driver`` stores for a field called ``name`` (shapefiles keep 10 bytes)."""
    if driver != "ESRI Shapefile":
        return name
    return name.encode("utf-8")[:SHAPEFILE_NAME_BYTES].decode("utf-8", "ignore")


def output_field_names(driver: str, names: Sequence[str]) -> dict[str, str]:
    """The names the fields ``names`` get in a ``driver`` file, by requested name.

    Raises:
        OutputError: an empty name, or two names that would be stored as one (case is not
            told apart by GeoPackage, SQLite and shapefiles).
    """
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        if not str(name).strip():
            raise OutputError("An output field needs a name; give a non-empty field name.")
        written = written_field_name(driver, name)
        other = seen.get(written.lower())
        if other is not None and other != name:
            cut = " (shapefile field names keep 10 characters)" if written != name else ""
            from ..result_columns import OPTIONAL_FIELDS  # here: result_columns reads parcels, which read this

            fixed = {other, name} <= set(OPTIONAL_FIELDS)  # no option renames these
            advice = ("write another format (.gpkg, .fgb), or leave out what adds these fields" if fixed
                      else "choose names that differ" + (" in their first 10 characters" if cut else ""))
            raise OutputError(f"The fields {other!r} and {name!r} would both be written as {written!r}{cut}; "
                              f"{advice}.")
        seen[written.lower()] = name
        out[name] = written
    return out


def date_field_names(dates: Sequence[Any], driver: Optional[str] = None) -> list[str]:
    """Field names for one value per date: ``gdd_YYYYMMDD``, or ``gYYYYMMDD`` in a shapefile,
    whose 10-byte names would make all dates of one month ``gdd_YYYYMM``."""
    stamps = [str(np.datetime64(d, "D")).replace("-", "") for d in dates]
    prefix = "g" if driver == "ESRI Shapefile" else "gdd_"
    return [prefix + s for s in stamps]


DATE_FIELD = re.compile(r"(gdd_|g)\d{8}", re.IGNORECASE)
"""A field named as :func:`date_field_names` names them."""


def earlier_date_fields(existing: Sequence[str], names: Sequence[str]) -> list[str]:
    """The fields among ``existing`` named as :func:`date_field_names` names them (``gdd_YYYYMMDD``,
    ``gYYYYMMDD``) that are not among this run's ``names`` (case aside): an earlier run's values, of
    other dates or another base temperature, which would sit unexplained beside this run's."""
    written = {name.lower() for name in names}
    return [name for name in existing
            if DATE_FIELD.fullmatch(name) and name.lower() not in written]


@dataclass
class VectorTarget:
    """A checked vector output: where, in which format, which layer, which field names."""

    path: Path
    driver: str
    layer: str
    fields: dict[str, str] = field(default_factory=dict)
    """Requested field name -> the name stored in this format."""
    overwrite: bool = False

    @property
    def container(self) -> bool:
        return self.driver in CONTAINER_DRIVERS

    def part_paths(self) -> list[Path]:
        """The files beside the main one that belong to this output."""
        return [self.path.with_suffix(s) for s in _PARTS.get(self.driver, ())]

    def source_string(self) -> str:
        """How GDAL and QGIS name the written layer: ``path|layername=...`` in a container."""
        return f"{self.path}|layername={self.layer}" if self.container else str(self.path)


def _is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def check_vector_output(
    out: PathLike,
    *,
    overwrite: bool = False,
    inputs: Iterable[PathLike] = (),
    replaceable: Iterable[PathLike] = (),
    layer: Optional[str] = None,
    fields: Sequence[str] = (),
    source_layer: Optional[str] = None,
) -> VectorTarget:
    """Preflight of a vector output (milliseconds, nothing written); see ``output.check_output``.

    Args:
        out: the output file; the format follows the extension.
        overwrite: allow replacing an existing file (in a GeoPackage: the named layer only).
        inputs: files the run reads (the parcels, the weather, the model): never the output.
        replaceable: those of ``inputs`` that ``overwrite`` may replace (the parcel layer).
        layer: output layer name; default: the source layer's name when writing into the
            parcels' own file, else the file name without extension (as GDAL and QGIS name it).
        fields: names of the fields that will be added.
        source_layer: name of the layer read from the parcel file, when known.

    Raises:
        OutputError: unknown format, unusable path, an input, an existing output without
            ``overwrite``, an existing GeoPackage that is not one, or clashing field names.
    """
    if is_parquet(out):  # written through pyarrow, not OGR (GDAL 3.6 has no Parquet driver)
        path = check_output(out, what="output", suffixes=(PARQUET_SUFFIX,), overwrite=overwrite, inputs=inputs)
        return VectorTarget(path=path, driver="Parquet", layer=layer or path.stem,
                            fields=output_field_names("Parquet", list(fields)), overwrite=overwrite)
    driver = ogr_driver(out)
    replaceable = [r for r in replaceable if r]
    candidate = Path(os.path.realpath(os.fspath(out)))
    parts = [candidate.with_suffix(s) for s in _PARTS.get(driver, ())]
    path = check_output(out, what="output", suffixes=tuple(OGR_DRIVERS), overwrite=overwrite, inputs=inputs,
                        replaceable=replaceable, parts=parts)
    if driver in CONTAINER_DRIVERS and path.exists() and not _is_sqlite_file(path):
        raise OutputError(f"{path} exists but is not a {driver} file; it is not replaced. Remove it or choose "
                          "another output.")
    if not layer:
        in_place = [r for r in replaceable if same_file(path, r)]
        if in_place and driver in CONTAINER_DRIVERS:
            layer = source_layer or default_layer_name(in_place[0], None)
    return VectorTarget(path=path, driver=driver, layer=layer or path.stem,
                        fields=output_field_names(driver, list(fields)), overwrite=overwrite)


FIELD_KINDS = ("string", "real", "integer")
"""What :func:`~.field_batches.field_kind` says a field holds."""


def _named_by_us(name: str) -> bool:
    """Whether the output field ``name`` is one whose name no option sets: the optional result
    fields (sets, decision dates, margin, entropy), ``p_<class>`` and ``gdd_YYYYMMDD``
    (:data:`DATE_FIELD`)."""
    from ..model.uncertainty import PROBABILITY_PREFIX
    from ..result_columns import OPTIONAL_FIELDS

    lower = name.lower()
    return (lower in {f.lower() for f in OPTIONAL_FIELDS} or lower.startswith(PROBABILITY_PREFIX)
            or DATE_FIELD.fullmatch(name) is not None)


def replaced_fields(existing: Mapping[str, str], target: VectorTarget, kinds: Mapping[str, str],
                    source: Any = "the parcel layer", through_geopackage: bool = False,
                    fid_kept_as_field: bool = False) -> list[str]:
    """The fields of the input that the added fields replace (same name as stored in the output
    format, case aside), checking that each is of the same kind.

    Args:
        existing: the input's field names -> kind (``"string"``, ``"real"``, ``"integer"`` or
            another word for other types).
        target: the checked output (its ``fields`` give the stored names).
        kinds: requested field name -> kind of the values to write.
        source: how messages name the input.
        through_geopackage: the input reaches an OGR output through a GeoPackage copy (a
            GeoParquet layer, a GeoDataFrame), which holds no two names that differ in case.
        fid_kept_as_field: the writer keeps a field 'fid' as a field of any kind in a GeoPackage
            (:func:`write_with_fields` names the feature id column otherwise); QGIS's writer takes
            it for the feature ids.

    Raises:
        OutputError: a field of the same name holds another kind of value, two fields of the
            input whose names differ only in case go to a format that cannot tell them apart, or
            a field 'fid' that holds no integers goes to a GeoPackage without ``fid_kept_as_field``,
            or a field named OGC_FID goes to a SQLite file (GDAL reads that column as its feature ids).
    """
    copied = through_geopackage and target.driver != "Parquet"
    if target.driver in CASE_BLIND_DRIVERS or copied:
        seen: dict[str, str] = {}
        for name in existing:
            other = seen.setdefault(name.lower(), name)
            if other != name:
                where = ("the GeoPackage it is copied through on its way to the output" if copied
                         else f"a {target.driver} file")
                advice = "a GeoParquet output (.parquet)" if copied else "another format (.fgb, .shp)"
                raise OutputError(f"{source} has the fields {other!r} and {name!r}, whose names differ only in case; "
                                  f"{where} cannot hold both. Rename one, or write {advice}.")
    fid = next((name for name in existing if name.lower() == "fid"), None)
    if fid is not None and existing[fid] != "integer" and target.driver == "GPKG" and not fid_kept_as_field:
        raise OutputError(f"{source} has a {existing[fid]} field {fid!r}; a GeoPackage keeps its feature ids under "
                          "that name and takes no other kind of field there. Rename it, or write another format "
                          "(.fgb, .shp).")
    if target.driver == "SQLite":
        hidden = [n for n in [*existing, *target.fields.values()] if n.lower() == SQLITE_COLUMNS[1].lower()]
        if hidden:
            raise OutputError(f"A field {hidden[0]!r} would be written to the SQLite file {target.path}, but GDAL "
                              "takes a column of that name in a SQLite file for its feature ids and hides it when "
                              "the file is read: its values would be lost to QGIS and ThermoCrop. Rename the "
                              "field, or write a GeoPackage (.gpkg) or another format.")
    stored = {w.lower(): name for name, w in target.fields.items()}
    stored.update({name.lower(): name for name in target.fields})
    out = []
    for name, kind in existing.items():
        ours = stored.get(written_field_name(target.driver, name).lower())
        if ours is None:
            continue
        if kinds.get(ours) != kind:
            # Only the class, confidence and status fields take a name of the user's; the others
            # (sets, decision dates, probabilities) are named by ThermoCrop.
            fix = ("remove or rename that field in the layer, or leave out what writes it" if _named_by_us(ours)
                   else "choose another output field name (or remove or rename that field)")
            raise OutputError(f"{source} already has a field {name!r} of type {kind}, where the {kinds.get(ours)} "
                              f"field {target.fields[ours]!r} would be written; {fix}.")
        out.append(name)
    return out


GEOMETRY_REQUIRED_DRIVERS = frozenset({"FlatGeobuf"})
"""Formats whose GDAL writer drops a feature without a geometry (or with an empty one)."""


def check_geometries_for(target: "VectorTarget", parcels: Any, layer: Optional[str] = None,
                         source: Any = "The parcel layer") -> None:
    """Refuse, before any work, a layer with a feature without a geometry for an output format
    that would drop it (FlatGeobuf).

    Raises:
        OutputError: naming the feature and what to do.
    """
    if target.driver not in GEOMETRY_REQUIRED_DRIVERS:
        return
    first = first_feature_without_geometry(parcels, layer)
    if first is not None:
        raise OutputError(geometry_required_message(target, source, first))


def geometry_required_message(target: "VectorTarget", source: Any, first: str) -> str:
    return (f"{source} has features without a geometry (the first at {first}), which a {target.driver} file "
            f"cannot hold: {target.path.name} would lose them. Write a GeoPackage (.gpkg) or GeoParquet "
            "(.parquet) output, or remove those features.")


@functools.lru_cache(maxsize=None)
def measures_supported(driver: str) -> bool:
    """Whether ``driver`` stores M (measure) values (GeoJSON and GML do not)."""
    from osgeo import gdal, ogr

    ext = {v: k for k, v in OGR_DRIVERS.items()}.get(driver, ".dat")
    path = f"/vsimem/thermocrop_measures_probe{ext}"
    with gdal_messages():
        ds = gdal.GetDriverByName(driver).Create(path, 0, 0, 0, gdal.GDT_Unknown)
        try:
            layer = ds.CreateLayer("probe", geom_type=ogr.wkbPolygonM, options=_LAYER_OPTIONS.get(driver, []))
            return bool(layer.TestCapability(ogr.OLCMeasuredGeometries))
        finally:
            layer = ds = None
            gdal.GetDriverByName(driver).Delete(path)


def _declared_geometry_type(layer) -> tuple[int, bool]:
    """The geometry type to declare for ``layer``'s features, and whether to make them multi.

    A layer declared ``Polygon`` may hold ``MultiPolygon`` features (shapefiles do, and files
    written by tools that do not check); declaring what is stored means the multi type.
    """
    from osgeo import ogr

    declared = layer.GetGeomType()
    if ogr.GT_Flatten(declared) not in (ogr.wkbPoint, ogr.wkbLineString, ogr.wkbPolygon):
        return declared, False
    multi = ogr.GT_GetCollection(declared)
    defn = layer.GetLayerDefn()
    layer.SetIgnoredFields([defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())])
    layer.ResetReading()
    found = False
    try:
        for feature in layer:
            geometry = feature.GetGeometryRef()
            if geometry is not None and ogr.GT_Flatten(geometry.GetGeometryType()) == ogr.GT_Flatten(multi):
                found = True
                break
    finally:
        layer.SetIgnoredFields([])
        layer.ResetReading()
    return (multi, True) if found else (declared, False)


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _copy_with_fields(source: PathLike, source_layer: Optional[str], target: VectorTarget, dst_path: Path,
                      fields: FieldBatches) -> int:
    """Write the features of ``source`` plus ``fields`` (asked for batch by batch, in layer
    order) into a new ``dst_path``; returns the count."""
    from osgeo import gdal, ogr

    with gdal_messages() as messages:
        src = gdal.OpenEx(os.fspath(source), gdal.OF_VECTOR | gdal.OF_READONLY)
        if src is None:
            raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
        layer = src.GetLayerByName(source_layer) if source_layer else src.GetLayer(0)
        if layer is None:
            names = [src.GetLayer(i).GetName() for i in range(src.GetLayerCount())]
            raise InputError(f"{source} has no layer {source_layer!r}; its layers are {names}.")
        count = layer.GetFeatureCount(force=1)
        for name, length in fields.lengths().items():
            if length != count:
                raise InputError(f"Field {name} holds {length} values but the layer has {count} features; "
                                 "compute it for this layer again.")
        geom_type, promote = _declared_geometry_type(layer)
        options = list(_LAYER_OPTIONS.get(target.driver, []))
        keep_fid = target.container and bool(layer.GetFIDColumn())
        if target.container:  # the source's column names (GeoPackage) or GDAL's, but none a field has
            defn = layer.GetLayerDefn()
            names = [defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())]
            geometry, fid = GEOPACKAGE_COLUMNS if target.driver == "GPKG" else SQLITE_COLUMNS
            if target.driver == "GPKG":
                geometry, fid = layer.GetGeometryColumn() or geometry, layer.GetFIDColumn() or fid
            options += column_options([*names, *target.fields.values()], geometry, fid)
        dst = gdal.GetDriverByName(target.driver).Create(str(dst_path), 0, 0, 0, gdal.GDT_Unknown)
        if dst is None:
            raise OutputError(f"Cannot create {target.path} ({target.driver}): {said(messages)}")
        out = dst.CreateLayer(target.layer, srs=layer.GetSpatialRef(), geom_type=geom_type, options=options)
        if out is None:
            raise OutputError(f"Cannot create layer {target.layer} in {target.path}: {said(messages)}")

        # The input's fields, but those the added ones replace (compared as stored in this format).
        ours = {w.lower() for w in target.fields.values()} | {n.lower() for n in target.fields}
        src_defn = layer.GetLayerDefn()
        field_map = []
        for i in range(src_defn.GetFieldCount()):
            src_field = src_defn.GetFieldDefn(i)
            if written_field_name(target.driver, src_field.GetName()).lower() in ours:
                log.info("Field %s of %s is replaced by the new values", src_field.GetName(), source)
                field_map.append(-1)
                continue
            if out.CreateField(src_field, 1) != 0:
                raise OutputError(f"Cannot create field {src_field.GetName()} in {target.path}: "
                                  f"{said(messages)}")
            field_map.append(out.GetLayerDefn().GetFieldCount() - 1)
        added = []
        kinds = fields.kinds()
        for name in fields.names:
            written = target.fields.get(name, written_field_name(target.driver, name))
            kind = kinds[name]
            definition = ogr.FieldDefn(written, {"real": ogr.OFTReal, "integer": ogr.OFTInteger64,
                                                 "string": ogr.OFTString}[kind])
            if kind == "string" and target.driver == "ESRI Shapefile":
                # Declared fields are made as they are written: as wide as they can be, narrowed
                # once written to their longest text, as a scan before writing would make them.
                definition.SetWidth(_dbf_width(fields.widest(name) if fields.declared else fields.longest(name)))
            if out.CreateField(definition) != 0:
                raise OutputError(f"Cannot create field {written} in {target.path}: {said(messages)}")
            index = out.GetLayerDefn().GetFieldCount() - 1
            stored = out.GetLayerDefn().GetFieldDefn(index).GetName()
            if stored != written:
                raise OutputError(f"{target.driver} stored field {written!r} as {stored!r}; choose another field "
                                  "name.")
            added.append((index, kind, name))
        values = RowValues(fields)  # a batch of values held at a time, not the whole fields

        transaction = dst.TestCapability(ogr.ODsCTransactions) and dst.StartTransaction() == 0
        out_defn = out.GetLayerDefn()
        measured = False
        written_count = 0
        layer.ResetReading()
        for row, feature in enumerate(layer):
            new = ogr.Feature(out_defn)
            new.SetFromWithMap(feature, 1, field_map)
            geometry = feature.GetGeometryRef()
            if target.driver in GEOMETRY_REQUIRED_DRIVERS and (geometry is None or geometry.IsEmpty()):
                raise OutputError(geometry_required_message(target, "The parcel layer", f"row {row}")
                                  + " Nothing was written.")
            if geometry is not None:
                measured = measured or bool(geometry.IsMeasured())
                if promote and ogr.GT_Flatten(geometry.GetGeometryType()) != ogr.GT_Flatten(geom_type):
                    new.SetGeometry(ogr.ForceTo(geometry.Clone(), geom_type))
            if keep_fid:
                new.SetFID(feature.GetFID())
            row_values = values.row(row) if added else {}
            for index, kind, name in added:
                value = row_values[name]
                if _is_null(value):
                    new.SetFieldNull(index)
                elif kind == "real":
                    new.SetField(index, float(value))
                elif kind == "integer":
                    new.SetField(index, int(value))
                else:
                    new.SetField(index, str(value))
            if target.driver == "CSV":
                inert_feature(new)  # text from the layer or the model must not run in a spreadsheet
            if out.CreateFeature(new) != 0:
                raise OutputError(f"Writing feature {row} to {target.path} failed ({said(messages)}); the "
                                  "disk may be full. Nothing was written.")
            written_count += 1
        if transaction and dst.CommitTransaction() != 0:
            raise OutputError(f"Writing {target.path} failed ({said(messages)}); the disk may be full. "
                              "Nothing was written.")
        if fields.declared and target.driver == "ESRI Shapefile":
            _narrow_text_fields(out, [(index, name) for index, kind, name in added if kind == "string"], fields,
                                target)
        if measured and not out.TestCapability(ogr.OLCMeasuredGeometries):
            log.warning("The M (measure) values of %s are not written: %s files cannot hold them. Write a "
                        ".gpkg, .shp, .fgb or .csv file to keep them.", source, target.driver)
        out = layer = None
        dst.FlushCache()
        dst = src = None  # closing writes what is left; failures show up in messages
        if messages:
            raise OutputError(f"Writing {target.path} ({target.driver}) failed ({said(messages)}); the disk "
                              "may be full. Nothing was written.")
    return written_count


def _dbf_width(longest: int) -> int:
    """A shapefile text field's width for values of at most ``longest`` UTF-8 bytes."""
    return min(max(longest, 1), 254)


def _narrow_text_fields(out: Any, added: Sequence[tuple[int, str]], fields: FieldBatches, target: VectorTarget) -> None:
    """Narrow the written shapefile's text fields ``(index, name)`` to their longest value (the
    same table, byte for byte, as one written at that width)."""
    from osgeo import ogr

    for index, name in added:
        longest = fields.longest(name)
        defn = out.GetLayerDefn().GetFieldDefn(index)
        if longest > defn.GetWidth():
            raise OutputError(f"Field {name} got a value of {longest} bytes, wider than the {defn.GetWidth()} its "
                              f"source declared; nothing was written to {target.path}.")
        if _dbf_width(longest) == defn.GetWidth():
            continue
        narrow = ogr.FieldDefn(defn.GetName(), defn.GetType())
        narrow.SetWidth(_dbf_width(longest))
        if out.AlterFieldDefn(index, narrow, ogr.ALTER_WIDTH_PRECISION_FLAG) != 0:
            raise OutputError(f"Cannot set the width of field {defn.GetName()} in {target.path}; nothing was "
                              "written.")


def _layer_counts(path: Path, driver: str, skip: Optional[str] = None, count: bool = True) -> dict[str, int]:
    from osgeo import gdal

    with gdal_messages():
        ds = gdal.OpenEx(str(path), gdal.OF_VECTOR | gdal.OF_READONLY, allowed_drivers=[driver])
        if ds is None:
            return {}
        out = {}
        for i in range(ds.GetLayerCount()):
            layer = ds.GetLayer(i)
            if layer.GetName() != skip:
                out[layer.GetName()] = layer.GetFeatureCount(force=1) if count else -1
        layer = ds = None
    return out


def layer_names(path: PathLike, driver: Optional[str] = None) -> list[str]:
    """The layer names of a vector file (empty when it cannot be opened)."""
    return list(_layer_counts(Path(path), driver or ogr_driver(path), count=False))


def verify_layer(path: PathLike, driver: str, layer: Optional[str], features: int,
                 fields: Sequence[str] = ()) -> None:
    """Read a written file back: it opens, ``layer`` holds ``features`` features and ``fields``.

    Every feature is read, so a file cut short by a full disk fails here even when the
    writer did not notice. GeoPackage and SQLite files also pass SQLite's ``quick_check``.

    Raises:
        OutputError: the file is not what was written.
    """
    from osgeo import gdal

    path = Path(path)
    with gdal_messages() as messages:
        ds = gdal.OpenEx(str(path), gdal.OF_VECTOR | gdal.OF_READONLY, allowed_drivers=[driver])
        if ds is None:
            raise OutputError(f"{path.name} cannot be read back after writing ({said(messages)}); the disk may "
                              "be full. Nothing was written.")
        lyr = ds.GetLayerByName(layer) if layer else ds.GetLayer(0)
        if lyr is None:
            raise OutputError(f"{path.name} has no layer {layer} after writing; nothing was written.")
        names = [lyr.GetLayerDefn().GetFieldDefn(i).GetName() for i in range(lyr.GetLayerDefn().GetFieldCount())]
        count = sum(1 for _ in lyr)
        lyr = ds = None
    if messages:
        raise OutputError(f"{path.name} cannot be read back after writing ({said(messages)}); the disk may be "
                          "full. Nothing was written.")
    if count != features:
        raise OutputError(f"{path.name} holds {count} features after writing instead of {features}; the disk may be "
                          "full. Nothing was written.")
    missing = [f for f in fields if f not in names]
    if missing:
        raise OutputError(f"{path.name} lacks the fields {missing} after writing (it has {names}); nothing was "
                          "written.")
    if driver in CONTAINER_DRIVERS:
        check_sqlite(path)


class VectorOutput:
    """A vector output written in a staging folder and published whole by :meth:`commit`.

    Use as a context manager; whoever writes puts a complete file at :attr:`path` (layer
    :attr:`layer` for GeoPackage/SQLite, any other name being ignored for single-layer
    formats), then calls :meth:`commit`. Leaving the block without committing removes it all.
    """

    def __init__(self, target: VectorTarget) -> None:
        self.target = target
        self.staging = Staging(target.path)

    @property
    def path(self) -> Path:
        """Where to write the output (the target's name inside the staging folder)."""
        return self.staging.path

    @property
    def layer(self) -> str:
        return self.target.layer

    def commit(self, features: int, fields: Sequence[str] = ()) -> Path:
        """Check the staged file and move it into place.

        Args:
            features: how many features were written.
            fields: field names the written layer must have.

        Returns:
            The output path.

        Raises:
            OutputError: the staged file is not whole, or the target exists without
                ``overwrite`` (also when it appeared during the run), or it changed meanwhile.
        """
        t = self.target
        verify_layer(self.path, t.driver, t.layer if t.container else None, features, fields)
        if t.container:
            settle_sqlite(self.path)
            with directory_lock(t.path.parent):
                if t.path.exists():
                    if not t.overwrite:
                        raise OutputError(f"{t.path} appeared while this run was writing it (another run writing "
                                          "the same output?); it was left as it is and this run's result was not "
                                          "written. Choose another output, or allow replacing it.")
                    self._merge(features, fields)
                else:
                    publish(self.path, t.path, overwrite=False, staging=self.staging, locked=True)
            return t.path
        produced = sorted(p for p in self.staging.folder.iterdir()
                          if p.is_file() and p.name.startswith(t.path.stem + ".") and p != self.path)
        pairs = [(self.path, t.path)] + [(p, t.path.parent / p.name) for p in produced]
        stale = [t.path.with_suffix(s) for s in _STALE_PARTS.get(t.driver, ())
                 if not (self.staging.folder / (t.path.stem + s)).exists()]
        publish_parts(pairs, overwrite=t.overwrite, stale=stale)
        return t.path

    def _merge(self, features: int, fields: Sequence[str]) -> None:
        """Write the staged layer into a copy of the existing file and put the copy in its place."""
        from osgeo import gdal

        t = self.target
        if not _is_sqlite_file(t.path):
            raise OutputError(f"{t.path} exists but is not a {t.driver} file; it is not replaced.")
        settle_sqlite(t.path)
        before = sqlite_state(t.path)
        merged = self.staging.folder / f"merged-{t.path.name}"
        snapshot_sqlite(t.path, merged)
        others = _layer_counts(merged, t.driver, skip=t.layer)
        order = contents_order(merged) if t.driver == "GPKG" else []
        with gdal_messages() as messages:
            options = gdal.VectorTranslateOptions(accessMode="overwrite", layerName=t.layer, layers=[t.layer],
                                                  options=["-preserve_fid"])
            done = gdal.VectorTranslate(str(merged), str(self.path), options=options)
            ok = done is not None
            done = None
        if not ok or messages:
            raise OutputError(f"Writing layer {t.layer} into {t.path} failed ({said(messages)}); the disk may be "
                              "full. The file is left as it was.")
        verify_layer(merged, t.driver, t.layer, features, fields)
        after = _layer_counts(merged, t.driver, skip=t.layer)
        if after != others:
            raise OutputError(f"Writing layer {t.layer} into {t.path} changed its other layers ({others} before, "
                              f"{after} after); the file is left as it was.")
        if t.driver == "GPKG":
            keep_layer_order(merged, order)
        settle_sqlite(merged)
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{merged}{suffix}").unlink()
        if sqlite_state(t.path) != before:
            raise OutputError(f"{t.path} was changed by another program while this run was writing into it; it is "
                              "left as it is. Run again.")
        publish(merged, t.path, overwrite=True, staging=self.staging, locked=True)
        log.info("Layer %s written into %s; its other layers %s are unchanged", t.layer, t.path, sorted(others))

    def discard(self) -> None:
        self.staging.discard()

    def __enter__(self) -> "VectorOutput":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


def write_with_fields(
    parcels: Any,
    fields: Union[Mapping[str, np.ndarray], FieldBatches],
    out: PathLike,
    *,
    overwrite: bool = False,
    layer: Optional[str] = None,
    out_layer: Optional[str] = None,
    inputs: Iterable[PathLike] = (),
) -> Path:
    """Write every feature and attribute of ``parcels`` plus ``fields``, format by extension.

    Args:
        parcels: a vector file or a GeoDataFrame.
        fields: field name -> one value per feature of the layer, in layer order, or the same
            as :class:`~.field_batches.FieldBatches` made batch by batch as the layer is
            copied; a field of the same name (as stored in the output format) is replaced.
            ``None`` and NaN are written as NULL.
        out: output file.
        overwrite: allow replacing an existing output, the parcel file included; in a
            GeoPackage only the written layer is replaced.
        layer: layer name inside a multi-layer input file (default: its first layer).
        out_layer: output layer name (see ``check_vector_output``).
        inputs: other files the run read, which ``out`` must not be.

    Returns:
        The output path.

    Raises:
        OutputError: see ``check_vector_output``; the write or its check failed (the target
            is left as it was).
        InputError: an unreadable input, fields that do not fit the layer.
    """
    import geopandas as gpd

    fields = FieldBatches.of(fields)
    if is_parquet(out):
        return write_geoparquet(parcels, fields, out, overwrite=overwrite, layer=layer, inputs=inputs)
    frame = parcels if isinstance(parcels, gpd.GeoDataFrame) else None
    source = None if frame is not None else Path(parcels)
    source_layer = layer
    if source is not None and same_file(out, source):
        source_layer = default_layer_name(source, layer)
    target = check_vector_output(out, overwrite=overwrite, inputs=[*([source] if source else []), *inputs],
                                 replaceable=[source] if source else [], layer=out_layer, fields=fields.names,
                                 source_layer=source_layer)
    kinds = fields.kinds()
    replaced_fields(source_field_kinds(frame if frame is not None else source, source_layer), target, kinds,
                    source=f"The parcel layer {source if frame is None else ''}".rstrip(),
                    through_geopackage=frame is not None or is_parquet(source), fid_kept_as_field=True)
    check_geometries_for(target, frame if frame is not None else source, source_layer,
                         source=f"The parcel layer {source if frame is None else ''}".rstrip())
    with VectorOutput(target) as output:
        if frame is not None or is_parquet(source):
            # GDAL here has no Parquet driver: a GeoParquet layer is copied row group by row
            # group into a GeoPackage beside the output, and the output made from that.
            (output.staging.folder / "in").mkdir()
            staged, source_layer = output.staging.folder / "in" / "parcels.gpkg", "parcels"
            if frame is not None:
                frame_to_geopackage(frame, staged, source_layer)
            else:
                copy_to_geopackage(GeoParquetLayer(source), staged, source_layer)
            source = staged
        try:
            count = _copy_with_fields(source, source_layer, target, output.path, fields)
        except OSError as exc:
            raise OutputError(f"Writing {target.path} failed ({exc.strerror or exc}); the disk may be full. Nothing "
                              "was written.") from exc
        fields.complete()
        output.commit(count, list(target.fields.values()))
    log.info("Wrote %d features to %s (layer %s)", count, target.path, target.layer)
    return target.path
