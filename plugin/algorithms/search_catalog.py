"""``thermocrop:searchcatalog``: find the Sentinel-2 L2A items over a parcel layer in a STAC
catalogue and save them as an item collection (``thermocrop scenes search``)."""

from __future__ import annotations

from qgis.core import (
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterString,
)

from ..catalog import CATALOG_LABELS, CATALOGS, catalog_spec, describe_search, describe_summary
from ..i18n import tr
from ..layers import features_to_frame
from .base import ThermoCropAlgorithm


class SearchCatalog(ThermoCropAlgorithm):
    """Search a catalogue: the items over the parcels in a season, saved as a STAC ItemCollection."""

    NAME = "searchcatalog"
    DISPLAY = "Search a catalogue"
    CATALOG = "CATALOG"
    URL = "URL"
    COLLECTION = "COLLECTION"
    SEASON = "SEASON"
    START = "START"
    END = "END"
    MAX_CLOUD = "MAX_CLOUD"
    ITEMS = "ITEMS"
    DATES = "DATES"
    SUMMARY = ("Finds the Sentinel-2 L2A items of a STAC catalogue that cover the parcel layer in a season, "
               "keeps those with at most the given cloud cover, logs their dates, tiles and cloud cover and "
               "saves them as a STAC ItemCollection (.json). Classify parcels, Export training data and Growing "
               "degree days per parcel read the saved file as their scenes, fetching only the parts of the "
               "images that hold parcels.")
    HELP = {
        "INPUT": "Parcel polygons, any CRS: the search covers their bounding box.",
        "CATALOG": "Earth Search (public COGs on AWS), Planetary Computer (signed by ThermoCrop), the Copernicus "
                   "Data Space (JPEG 2000 in S3: reading needs S3 keys) or another STAC API given by its URL.",
        "URL": "The address of the STAC API when 'Another STAC API' is chosen, e.g. https://stac.example.org/v1.",
        "COLLECTION": "Collection id; empty for the catalogue's Sentinel-2 L2A collection (sentinel-2-l2a).",
        "SEASON": "Calendar year searched (1 January to 31 December); Start and End narrow or replace it.",
        "START": "First day searched, YYYY-MM-DD (optional).",
        "END": "Last day searched, YYYY-MM-DD (optional).",
        "MAX_CLOUD": "Largest cloud cover of an item (eo:cloud_cover), percent.",
        "OUTPUT": "The item collection to write (.json); it appears only once complete.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(self.INPUT, "Parcel layer", [QgsProcessing.TypeVectorPolygon]))
        self.add(QgsProcessingParameterEnum(self.CATALOG, "Catalogue", options=list(CATALOG_LABELS), defaultValue=0))
        self.add(QgsProcessingParameterString(self.URL, "STAC API URL (for another STAC API)", optional=True))
        self.add(QgsProcessingParameterString(self.COLLECTION, "Collection", optional=True))
        season = self.number(self.SEASON, "Season (year)", "season", 2024)
        season.setFlags(season.flags() | season.FlagOptional)
        self.add(season)
        self.add(QgsProcessingParameterString(self.START, "Start (YYYY-MM-DD)", optional=True))
        self.add(QgsProcessingParameterString(self.END, "End (YYYY-MM-DD)", optional=True))
        self.add(self.number(self.MAX_CLOUD, "Largest cloud cover (%)", "max_cloud", 60.0))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT, "Item collection",
                                                       fileFilter="STAC item collection (*.json)"))
        self.addOutput(QgsProcessingOutputNumber(self.ITEMS, "Items found"))
        self.addOutput(QgsProcessingOutputNumber(self.DATES, "Dates found"))

    def _search_options(self, parameters, context) -> dict:
        """Keyword arguments of ``core.scenes.stac.search_items`` (the catalogue, period and cloud limit)."""
        choice = CATALOGS[self.parameterAsEnum(parameters, self.CATALOG, context)]
        try:
            catalog = catalog_spec(choice, self.parameterAsString(parameters, self.URL, context))
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from None
        season = parameters.get(self.SEASON)
        return {"catalog": catalog,
                "collection": self.parameterAsString(parameters, self.COLLECTION, context).strip() or None,
                "season": None if season in (None, "") else self.parameterAsInt(parameters, self.SEASON, context),
                "start": self.parameterAsString(parameters, self.START, context).strip() or None,
                "end": self.parameterAsString(parameters, self.END, context).strip() or None,
                "max_cloud": self.parameterAsDouble(parameters, self.MAX_CLOUD, context)}

    def check_search(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: a known catalogue (or a STAC API URL) and a period that reads."""
        from ...core.errors import InputError
        from ...core.scenes.stac import resolve_catalog, season_period

        try:
            options = self._search_options(parameters, context)
            resolve_catalog(options["catalog"])
            season_period(options["season"], options["start"], options["end"])
        except (QgsProcessingException, InputError) as exc:
            return False, str(exc)
        return True, ""

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the item collection can be written there."""
        return self.check_output_file(self.parameterAsFileOutput(parameters, self.OUTPUT, context),
                                      what="item collection", suffixes=(".json", ".geojson"), overwrite=True)

    CHECKS = (check_search, ThermoCropAlgorithm.check_parcel_crs, check_output)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(tr("The parcel layer could not be read; check INPUT."))
        options = self._search_options(parameters, context)
        out = self.parameterAsFileOutput(parameters, self.OUTPUT, context)
        frame, _ = features_to_frame(source.getFeatures(), source.sourceCrs())
        feedback.pushInfo(tr("Searching {catalog} for {n} parcels, cloud cover at most {cloud:g} %").format(
            catalog=options["catalog"], n=len(frame), cloud=options["max_cloud"]))

        def search():
            from ...core.scenes.stac import resolve_catalog, save_items, search_items, summarize

            period = {k: options[k] for k in ("season", "start", "end", "max_cloud")}
            items = search_items(frame, catalog=resolve_catalog(options["catalog"], options["collection"]),
                                 progress=self.progress(feedback, 0.0, 0.9), **period)
            summaries = summarize(items)
            if summaries:
                save_items(items, out, overwrite=True)
            return summaries

        summaries = self.run_core(search)
        if not summaries:
            raise QgsProcessingException(tr("The search found no items; widen the period or the cloud limit, or "
                                            "check the catalogue and collection. Nothing was written."))
        for summary in summaries:
            feedback.pushInfo(f"  {describe_summary(summary)}  {summary.id}")
        feedback.pushInfo(describe_search(summaries))
        feedback.setProgress(100)
        return {self.OUTPUT: out, self.ITEMS: len(summaries), self.DATES: len({s.date for s in summaries})}
