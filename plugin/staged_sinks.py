"""Processing outputs written whole: the algorithms' feature sinks go to a staging file that core
reads back, counts and moves into place (``core.io.output``, ``core.io.vector``).

QGIS writes a Processing sink itself, at the path the user gave; a failed or killed run would
leave half a file there, and a GeoPackage path would lose the file's other layers. Here the sink
is pointed at a staging file beside the target instead, and :meth:`StagedSink.commit` publishes
it only once it is complete: a new file appears in one rename, an existing GeoPackage gets only
the written layer, and the user's file is never a partial one. Memory and database outputs are
written by QGIS as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

from qgis.core import (
    QgsFeatureRequest,
    QgsFields,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingOutputLayerDefinition,
    QgsProcessingUtils,
    QgsProperty,
    QgsProviderRegistry,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QVariant

_NOT_FILES = ("memory:", "postgis:", "postgres:", "spatialite:", "mssql:", "oracle:", "hana:", "TEMPORARY_OUTPUT")

_KINDS = {QVariant.String: "string", QVariant.Double: "real", QVariant.Int: "integer",
          QVariant.LongLong: "integer", QVariant.UInt: "integer", QVariant.ULongLong: "integer"}


def field_kinds(fields: QgsFields) -> dict[str, str]:
    """Field name -> kind as ``core.io.vector.replaced_fields`` compares them."""
    return {f.name(): _KINDS.get(f.type(), QVariant.typeToName(f.type()) or "other") for f in fields}


def file_destination(destination: str) -> Optional[tuple[str, Optional[str]]]:
    """``(path, layer or None)`` of a file destination; None for memory and database outputs."""
    if not destination or destination.startswith(_NOT_FILES):
        return None
    if destination.startswith("ogr:"):
        from qgis.core import QgsDataSourceUri

        uri = QgsDataSourceUri(destination[4:])
        return uri.database(), uri.table() or None
    path, _, rest = destination.partition("|")
    layer = rest[len("layername="):] if rest.startswith("layername=") else None
    return path, layer


def destination_driver(algorithm, parameters: dict, context, key: str = "OUTPUT") -> Optional[str]:
    """The OGR driver a file destination will be written with; None for memory/database outputs
    or an unknown extension (which ``check_sink`` reports)."""
    from ..core.io.vector import OGR_DRIVERS

    found = file_destination(algorithm.parameterAsOutputLayer(parameters, key, context))
    return OGR_DRIVERS.get(Path(found[0]).suffix.lower()) if found else None


def layer_file(layer) -> Optional[str]:
    """The file a vector layer reads, or None (memory, database)."""
    if layer is None:
        return None
    parts = QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
    return parts.get("path") or None


def _ogr_uri(path: Path, layer: str) -> str:
    escaped = str(path).replace("\\", "\\\\").replace("'", "\\'")
    return f"ogr:dbname='{escaped}' table=\"{layer}\" (geom)"


def _target(destination: str, inputs: Sequence[Optional[str]], fields: Sequence[str], qgis_writes: bool = True):
    """The checked ``core.io.vector.VectorTarget`` of a destination (a plain one for non-files);
    ``qgis_writes``: QGIS's writer makes the file (a GeoParquet one it cannot make is refused)."""
    from ..core.errors import OutputError
    from ..core.io.vector import VectorTarget, check_vector_output, output_field_names

    found = file_destination(destination)
    if found is None:
        return VectorTarget(path=Path(), driver="Memory", layer="", fields=output_field_names("Memory", fields))
    path, layer = found
    if layer is None and Path(path).suffix.lower() == ".gpkg":
        layer = Path(path).name.split(".")[0]  # QGIS names a new file's layer after the name up to its first dot
    # Processing replaces existing outputs (the dialog asks first); never an input, though.
    target = check_vector_output(path, overwrite=True, inputs=[p for p in inputs if p], layer=layer, fields=fields)
    if target.driver == "Parquet" and qgis_writes:
        raise OutputError(f"QGIS 3.22 cannot write GeoParquet (its GDAL has no Parquet driver), so {target.path.name} "
                          "cannot be written from a QGIS layer. Write a GeoPackage (.gpkg) or FlatGeobuf (.fgb), or "
                          "give the parcels as a GeoParquet file, which ThermoCrop reads and writes itself.")
    return target


def file_output(algorithm, parameters: dict, context, name: str, key: str = "OUTPUT") -> tuple[str, Optional[str]]:
    """The file and layer an algorithm writes with ThermoCrop's own writers rather than through a
    QGIS sink (a GeoParquet input): the destination's, or a new GeoPackage ``name.gpkg`` in
    Processing's temporary folder for a temporary output (QGIS has no GeoParquet memory layer)."""
    found = file_destination(algorithm.parameterAsOutputLayer(parameters, key, context))
    if found is None:
        return QgsProcessingUtils.generateTempFilename(f"{name}.gpkg"), None
    return found


def load_on_completion(parameters: dict, context, dest_id: str, name: str, key: str = "OUTPUT") -> bool:
    """Have the layer ``dest_id``, written without a QGIS sink, loaded into the project when the run
    ends, as Processing does with a sink's (only where the destination asks for it and QGIS can
    open the file: not a GeoParquet one). Returns whether it will be loaded."""
    from ..core.io.geoparquet import is_parquet

    # Asking for the destination (parameterAsOutputLayer) registered it for loading under the name
    # QGIS gave it ("memory:..." for a temporary output): only the file written stays registered.
    registered = context.layersToLoadOnCompletion()
    context.setLayersToLoadOnCompletion({layer: details for layer, details in registered.items()
                                         if details.outputName != key})
    original = parameters.get(key)
    if not isinstance(original, QgsProcessingOutputLayerDefinition) or original.destinationProject is None:
        return False
    if is_parquet(dest_id):
        return False
    details = QgsProcessingContext.LayerDetails(original.destinationName or name, original.destinationProject, key)
    context.addLayerToLoadOnCompletion(dest_id, details)
    return True


def check_sink(algorithm, parameters: dict, context, *, inputs: Sequence[Optional[str]],
               kinds: Mapping[str, str], source=None, key: str = "OUTPUT",
               qgis_writes: bool = True) -> tuple[bool, str]:
    """Preflight of a sink output for ``checkParameterValues``: ``(ok, message)``.

    Args:
        inputs: files the algorithm reads (the parcel layer's file, the weather, the model).
        kinds: the added fields, name -> ``"string"``/``"real"``/``"integer"``.
        source: the input (a ``QgsFeatureSource``), or None: an existing field of the same name
            must be of the same kind (it is then replaced), and a format that drops features
            without a geometry (FlatGeobuf) is refused where the input has one.
        qgis_writes: the output goes through a QGIS sink (False: ThermoCrop writes it, from a
            GeoParquet input, and checks it itself).
    """
    from ..core.errors import ThermoCropError
    from ..core.io.vector import GEOMETRY_REQUIRED_DRIVERS, geometry_required_message, replaced_fields

    destination = algorithm.parameterAsOutputLayer(parameters, key, context)
    try:
        target = _target(destination, inputs, list(kinds), qgis_writes)
        if source is not None:
            replaced_fields(field_kinds(source.fields()), target, kinds)
    except ThermoCropError as exc:
        return False, str(exc)
    if source is not None and target.driver in GEOMETRY_REQUIRED_DRIVERS:
        first = first_feature_without_geometry(source)
        if first is not None:
            return False, geometry_required_message(target, f"The parcel layer {source.sourceName()}".strip(), first)
    return True, ""


def first_feature_without_geometry(source) -> Optional[str]:
    """"feature id N" of the first feature of ``source`` without a geometry or with an empty one,
    None where every feature has one (only the geometries are read)."""
    for feature in source.getFeatures(QgsFeatureRequest().setNoAttributes()):
        if not feature.hasGeometry() or feature.geometry().isEmpty():
            return f"feature id {feature.id()}"
    return None


def geometry_type(source) -> tuple[int, bool]:
    """The type to declare for ``source``'s features and whether single parts must be made multi
    (a layer declared Polygon that holds MultiPolygons is written as MultiPolygon)."""
    declared = source.wkbType()
    if QgsWkbTypes.isMultiType(declared) or QgsWkbTypes.geometryType(declared) not in (
            QgsWkbTypes.PointGeometry, QgsWkbTypes.LineGeometry, QgsWkbTypes.PolygonGeometry):
        return declared, False
    request = QgsFeatureRequest().setNoAttributes()
    for feature in source.getFeatures(request):
        if feature.hasGeometry() and QgsWkbTypes.isMultiType(feature.geometry().wkbType()):
            return QgsWkbTypes.multiType(declared), True
    return declared, False


class StagedSink:
    """An algorithm's feature sink that reaches a file output only whole.

    Args:
        algorithm: the running algorithm.
        parameters, context: its ``processAlgorithm`` arguments.
        inputs: files the algorithm reads (never the output).
        fields: names of the fields the algorithm adds (``field_names`` gives them as stored).
        key: the sink parameter.
    """

    def __init__(self, algorithm, parameters: dict, context, *, inputs: Sequence[Optional[str]],
                 fields: Sequence[str], key: str = "OUTPUT") -> None:
        from ..core.errors import ThermoCropError
        from ..core.io.vector import VectorOutput

        self.algorithm, self.parameters, self.context, self.key = algorithm, parameters, context, key
        destination = algorithm.parameterAsOutputLayer(parameters, key, context)
        try:
            self.target = _target(destination, inputs, fields)
            self.output = VectorOutput(self.target) if self.target.driver != "Memory" else None
        except ThermoCropError as exc:
            raise QgsProcessingException(str(exc)) from exc
        self.dest_id: Optional[str] = None

    @property
    def field_names(self) -> dict[str, str]:
        """Requested name -> the name stored in the output's format."""
        return self.target.fields

    @property
    def driver(self) -> Optional[str]:
        return self.output and self.target.driver

    def create(self, fields: QgsFields, wkb_type: int, crs):
        """``parameterAsSink`` on the staging file; returns ``(sink, dest_id)``."""
        parameters = dict(self.parameters)
        if self.output is not None:
            staged = self.output.path
            uri = (_ogr_uri(staged, self.target.layer)
                   if self.target.container and self.target.layer != staged.name.split(".")[0] else str(staged))
            original = self.parameters.get(self.key)
            definition = QgsProcessingOutputLayerDefinition(uri)
            if isinstance(original, QgsProcessingOutputLayerDefinition):
                definition.destinationProject = original.destinationProject
                definition.destinationName = original.destinationName
                definition.createOptions = original.createOptions
            definition.sink = QgsProperty.fromValue(uri)
            parameters[self.key] = definition
        sink, self.dest_id = self.algorithm.parameterAsSink(parameters, self.key, self.context, fields, wkb_type, crs)
        if sink is None:
            raise QgsProcessingException(f"The output layer could not be created; check {self.key}.")
        return sink, self.dest_id

    def commit(self, features: int) -> str:
        """Check the written file and move it into place; returns the output's layer id.

        Call it after the sink is deleted (which closes the file).
        """
        if self.output is None:
            return self.dest_id
        from ..core.errors import ThermoCropError

        try:
            path = self.output.commit(features, list(self.target.fields.values()))
        except ThermoCropError as exc:
            raise QgsProcessingException(str(exc)) from exc
        final = self.target.source_string() if self.target.container and self._other_layers(path) else str(path)
        layers = self.context.layersToLoadOnCompletion()
        if self.dest_id in layers:
            layers[final] = layers.pop(self.dest_id)
            self.context.setLayersToLoadOnCompletion(layers)
        self.dest_id = final
        return final

    def _other_layers(self, path: Path) -> bool:
        from ..core.io.vector import layer_names

        # The styles table a run stored its style in is no layer of the user's: a re-run names
        # the output as the first run did.
        return len([name for name in layer_names(path, self.target.driver) if name != "layer_styles"]) > 1

    def discard(self) -> None:
        if self.output is not None:
            self.output.discard()

    def __enter__(self) -> "StagedSink":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

