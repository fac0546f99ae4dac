"""``thermocrop:parcelgdd``: growing degree days of every parcel at given dates or scene dates."""

from __future__ import annotations

import numpy as np
from qgis.core import (
    QgsFeature,
    QgsFeatureSink,
    QgsField,
    QgsFields,
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingParameterDefinition,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterString,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QVariant

from ... import app
from ...app import GddRequest, ParcelsSpec, WeatherSpec
from ...core.settings import ThermalTime
from ..i18n import tr
from ..layers import features_to_frame
from ..staged_sinks import (
    StagedSink,
    check_sink,
    destination_driver,
    field_kinds,
    file_output,
    geometry_type,
    layer_file,
    load_on_completion,
)
from .base import ThermoCropAlgorithm
from .request_parts import (
    CLUSTER_HELP,
    ProcessingRun,
    add_cluster_parameters,
    check_cluster,
    cluster_spec,
    run_request,
    scenes_spec,
    weather_spec,
)

METHODS = ("paper", "average")


class ParcelGDD(ThermoCropAlgorithm):
    """Adds one GDD field per date (``gdd_YYYYMMDD``) to the parcels."""

    NAME = "parcelgdd"
    SCENES_REQUIRED = False  # DATES may give the dates instead
    DATES = "DATES"
    SEASON_START = "SEASON_START"
    T_BASE = "T_BASE"
    T_CAP = "T_CAP"
    METHOD = "METHOD"
    MAX_DISTANCE_KM = "MAX_DISTANCE_KM"
    DISPLAY = "Growing degree days per parcel"
    READS_GEOPARQUET = True
    SUMMARY = ("Accumulates growing degree days (GDD) from the season start at each parcel's "
               "centroid, from daily temperatures, and adds one field per date.")
    HELP = {
        "INPUT": "Parcel polygons, any CRS."
                 " Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: "
                 "ThermoCrop reads it by row groups and writes the output itself (a temporary output "
                 "becomes a GeoPackage).",
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV; or leave it empty "
                   "and choose a weather service below.",
        "DATES": "Dates as YYYY-MM-DD separated by commas. Leave empty to use the scene dates.",
        "SCENES": "Sentinel-2 scenes whose acquisition dates are used when DATES is empty.",
        "SCENE_FOLDER": "A folder of scenes whose dates are used when DATES is empty.",
        "STAC_ITEMS": "Or a STAC item collection saved by 'Search a catalogue', whose dates are used when DATES is "
                      "empty (no image is read).",
        "SEASON_START": "Season start as MM-DD, or MM-DD/-1 for the previous year (e.g. 09-01/-1).",
        "T_BASE": "Base temperature (°C) below which no growth is counted.",
        "T_CAP": "Cap temperature (°C) above which no extra growth is counted.",
        "METHOD": "paper: clip daily min/max then average; average: average then clip at the base.",
        "MAX_DISTANCE_KM": "How far a parcel may be from the grid cell (or station) it takes its temperatures "
                           "from; farther parcels get no GDD.",
        **CLUSTER_HELP,
        "OUTPUT": "The parcels with one field gdd_YYYYMMDD per date.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(self.INPUT, "Parcel layer", [QgsProcessing.TypeVectorPolygon]))
        self.add_weather_parameters(self.HELP["WEATHER"])
        self.add(QgsProcessingParameterString(self.DATES, "Dates", optional=True))
        self.add_scene_parameters("Scenes (for their dates)", auth=False)
        self.add(QgsProcessingParameterString(self.SEASON_START, "Season start", defaultValue="01-01"))
        self.add(self.number(self.T_BASE, "Base temperature", "t_base", 0.0))
        self.add(self.number(self.T_CAP, "Cap temperature", "t_cap", 30.0))
        self.add(QgsProcessingParameterEnum(self.METHOD, "Method", options=list(METHODS), defaultValue=0))
        distance = self.number(self.MAX_DISTANCE_KM, "Largest distance to a weather cell (km)", "max_distance_km",
                               WeatherSpec.max_distance_km)
        distance.setFlags(distance.flags() | QgsProcessingParameterDefinition.FlagOptional)
        self.add(distance)
        add_cluster_parameters(self)
        self.add(QgsProcessingParameterFeatureSink(self.OUTPUT, "Parcels with GDD", QgsProcessing.TypeVectorPolygon))

    def _dates(self, parameters, context) -> np.ndarray:
        text = self.parameterAsString(parameters, self.DATES, context).strip()
        if text:
            try:
                return np.array(sorted({np.datetime64(d.strip(), "D") for d in text.split(",") if d.strip()}))
            except ValueError as exc:
                raise QgsProcessingException(tr("Cannot read the dates {text!r}: write them as YYYY-MM-DD, "
                                                "separated by commas.").format(text=text)) from exc
        scenes = self.scenes(parameters, context)
        stac = self.stac_items(parameters, context)

        def dates():
            if stac:  # the items' dates, without opening their images
                from ...core.scenes.stac import load_items, summarize

                return np.array(sorted({np.datetime64(s.date, "D") for s in summarize(load_items(stac))}))
            from ...core.scenes.local import find_scenes

            return np.array(sorted({np.datetime64(s.date, "D") for s in find_scenes(scenes)}))

        return self.run_core(dates)

    def _dates_given(self, parameters, context) -> bool:
        return bool(self.parameterAsString(parameters, self.DATES, context).strip())

    def check_dates_or_scenes(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: dates are given, or scenes whose dates can be used."""
        if self._dates_given(parameters, context):
            return True, ""
        ok, message = self.check_scenes(parameters, context)
        if not ok:
            return False, tr("Give either DATES or scenes, so that there are dates to compute GDD at.") + " " \
                + message
        return True, ""

    def check_temperatures(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the cap temperature is above the base temperature."""
        if self.parameterAsDouble(parameters, self.T_CAP, context) <= self.parameterAsDouble(parameters, self.T_BASE,
                                                                                              context):
            return False, tr("The cap temperature must be above the base temperature.")
        return True, ""

    def check_season_start(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the season start reads as MM-DD or MM-DD/-1."""
        from ...core.thermal.gdd import SeasonStart

        try:
            SeasonStart.parse(self.parameterAsString(parameters, self.SEASON_START, context))
        except ValueError as exc:
            return False, str(exc)
        return True, ""

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the output, before any file is read: format, folder, not the input, and the
        fields of given dates (scene dates are known only when the scenes are listed)."""
        names = []
        if self._dates_given(parameters, context):
            try:
                names = self._field_names(self._dates(parameters, context), parameters, context)
            except QgsProcessingException as exc:
                return False, str(exc)
        parquet = self.geoparquet_input(parameters, context)  # checked by the run, as QGIS cannot read it
        source = None if parquet else self.parameterAsSource(parameters, self.INPUT, context)
        return check_sink(self, parameters, context, inputs=self._inputs(parameters, context),
                          kinds=dict.fromkeys(names, "real"),
                          source=source, qgis_writes=not parquet)

    CHECKS = (ThermoCropAlgorithm.check_weather, check_dates_or_scenes, check_temperatures, check_season_start,
              ThermoCropAlgorithm.check_parcel_crs, check_cluster, check_output)

    def _inputs(self, parameters, context) -> list:
        """The files this run reads, which the output may not be."""
        return [self.geoparquet_input(parameters, context)
                or layer_file(self.parameterAsVectorLayer(parameters, self.INPUT, context)),
                self.parameterAsFile(parameters, self.WEATHER, context), self.stac_items(parameters, context)]

    def _field_names(self, dates, parameters, context) -> list[str]:
        from ...core.io.vector import date_field_names

        return date_field_names(dates, destination_driver(self, parameters, context))

    def request(self, parameters, context, parcels: ParcelsSpec, **output) -> GddRequest:
        """The GDD the parameters ask for, of ``parcels``; ``output``: ``GddRequest``'s ``out``,
        ``out_layer`` and ``overwrite`` where ThermoCrop writes the values (none where the
        algorithm writes them)."""
        text = self.parameterAsString(parameters, self.DATES, context).strip()
        thermal = ThermalTime(season_start=self.parameterAsString(parameters, self.SEASON_START, context),
                              t_base=self.parameterAsDouble(parameters, self.T_BASE, context),
                              t_cap=self.parameterAsDouble(parameters, self.T_CAP, context),
                              method=METHODS[self.parameterAsEnum(parameters, self.METHOD, context)])
        return GddRequest(
            parcels=parcels, **output,
            weather=weather_spec(self, parameters, context,
                                 self.parameterAsDouble(parameters, self.MAX_DISTANCE_KM, context)),
            dates=tuple(self._dates(parameters, context)) if text else None,
            scenes=None if text else scenes_spec(self, parameters, context), thermal=thermal,
            chunk_size=self.parameterAsInt(parameters, self.CHUNK_SIZE, context),
            cluster=cluster_spec(self, parameters, context))

    def _gdd_of_file(self, path: str, parameters, context, feedback) -> dict:
        """GDD of a GeoParquet layer (``geoparquet_input``) as the command line computes them: read
        by row groups and written by ThermoCrop's writers."""
        out, layer = file_output(self, parameters, context, "gdd")
        request = self.request(parameters, context, ParcelsSpec(path), out=out, out_layer=layer, overwrite=True)
        run = run_request(self, lambda: app.run_gdd(request, ProcessingRun(feedback)), request.cluster, feedback)
        lost = int(np.count_nonzero(run.missing))
        if lost:
            feedback.pushWarning(tr("{n} parcels have no usable temperatures; their GDD fields stay empty.").format(
                n=lost))
        feedback.pushInfo(tr("Wrote {path}: GDD of {n} parcels at {dates} dates from {weather}").format(
            path=run.written, n=len(run.gdd), dates=len(run.dates), weather=run.weather))
        dest_id = f"{run.written}|layername={layer}" if layer else str(run.written)
        load_on_completion(parameters, context, dest_id, self.parameterDefinition("OUTPUT").description())
        return {"OUTPUT": dest_id}

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        parquet = self.geoparquet_input(parameters, context)
        if parquet is not None:
            return self._gdd_of_file(parquet, parameters, context, feedback)
        source = self.parameterAsSource(parameters, self.INPUT, context)
        features = list(source.getFeatures())
        frame, _ = features_to_frame(features, source.sourceCrs())
        request = self.request(parameters, context, ParcelsSpec(frame, name=source.sourceName()))
        run = run_request(self, lambda: app.run_gdd(request, ProcessingRun(feedback)), request.cluster, feedback)
        gdd, dates = run.gdd, run.dates
        crs = source.sourceCrs()
        feedback.pushInfo(tr("GDD of {n} parcels at {dates} dates from {weather}").format(
            n=len(features), dates=len(dates), weather=run.weather))
        feedback.setProgress(50)
        lost = [str(features[i].id()) for i in np.flatnonzero(run.missing)]
        if lost:
            feedback.pushWarning(tr("{n} parcels have no usable temperatures (no grid cell with data within {km} km, "
                                    "or a gap of more than 3 days); their GDD fields stay empty. Features: "
                                    "{features}").format(n=len(lost), km=f"{request.weather.max_distance_km:g}",
                                                         features=", ".join(lost[:10])
                                                         + (" ..." if len(lost) > 10 else "")))
        from ...core.io.vector import earlier_date_fields, measures_supported, replaced_fields

        names = self._field_names(dates, parameters, context)
        earlier = set(earlier_date_fields(source.fields().names(), names))
        if earlier:  # of other dates or another base temperature
            feedback.pushInfo(tr("Fields {fields} of the input came from an earlier run and this run does not make "
                                 "them: they are written empty.").format(fields=", ".join(sorted(earlier))))
        with StagedSink(self, parameters, context, inputs=self._inputs(parameters, context), fields=names) as staged:
            stored = [staged.field_names[n] for n in names]
            replaced = set(self.run_core(lambda: replaced_fields(field_kinds(source.fields()), staged.target,
                                                                 dict.fromkeys(names, "real"))))
            kept = [i for i, f in enumerate(source.fields()) if f.name() not in replaced]
            emptied = [source.fields().at(k).name() in earlier for k in kept]
            fields = QgsFields()
            for i in kept:
                fields.append(source.fields().at(i))
            for name in stored:
                fields.append(QgsField(name, QVariant.Double))
            wkb_type, make_multi = geometry_type(source)
            if QgsWkbTypes.hasM(wkb_type) and staged.driver and not measures_supported(staged.driver):
                feedback.pushWarning(self.measures_dropped(staged.driver))
            sink, _ = staged.create(fields, wkb_type, crs)
            for i, feature in enumerate(features):
                if feedback.isCanceled():
                    del sink
                    raise QgsProcessingException(tr("Cancelled: nothing was written."))
                out = QgsFeature(fields)
                geometry = feature.geometry()
                if make_multi and not geometry.isNull():
                    geometry.convertToMultiType()
                out.setGeometry(geometry)
                attributes = feature.attributes()
                out.setAttributes([None if empty else attributes[k] for k, empty in zip(kept, emptied)]
                                  + [float(v) if np.isfinite(v) else None for v in gdd[i]])
                if not sink.addFeature(out, QgsFeatureSink.FastInsert):
                    raise QgsProcessingException(self.write_failed(feature.id(), sink.lastError()))
            del sink  # closes a file output before it is checked and published
            dest_id = staged.commit(len(features))
        feedback.setProgress(100)
        return {"OUTPUT": dest_id}
