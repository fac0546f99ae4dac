"""What a door asks for: the inputs of a run (parcels, scenes, weather, where partitions run)
and one request per use case (classify, extract, growing degree days).

The command line fills these from its options, a Processing algorithm from its parameters and
the dock from its form; the run functions of :mod:`thermocrop.app.runs` take nothing else.
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..core.crops import UNKNOWN_CLASS
from ..core.errors import InputError
from ..core.limits import LIMITS
from ..core.model.calibration import DEFAULT_COVERAGE
from ..core.model.uncertainty import ENTROPY_FIELD, MARGIN_FIELD, PROBABILITY_PREFIX
from ..core.result_columns import DECIDED_FIELD, DECIDED_GDD_FIELD, SET_FIELD, SET_SIZE_FIELD
from ..core.settings import ExtractionSettings, PixelSampling, ThermalTime

DEFAULT_MAX_DISTANCE_KM = 25.0
"""How far a parcel may be from the grid cell it takes temperatures from, by default."""


@dataclass(frozen=True)
class ParcelsSpec:
    """The parcels of a run.

    Attributes:
        source: a vector file, or a GeoDataFrame a door read from its layer.
        name: how messages name the parcels (default: the file).
        id_field: the field holding parcel ids (None: ``parcel_id``, else the row number).
        selected_ids: classify only these ids (the others get status ``not_selected``).
    """

    source: Any
    name: Optional[str] = None
    id_field: Optional[str] = None
    selected_ids: Optional[tuple] = None

    def __post_init__(self) -> None:
        # A table a door read: the core's messages name it by its attrs["name"].
        attrs = getattr(self.source, "attrs", None)
        if self.name and isinstance(attrs, dict) and not attrs.get("name"):
            attrs["name"] = self.name

    @property
    def is_file(self) -> bool:
        """Whether ``source`` is a file path (its fields can be checked without reading features)."""
        return isinstance(self.source, (str, os.PathLike))

    def describe(self) -> str:
        return self.name or (str(self.source) if self.is_file else "the parcels")

    def check_selection(self, found: int) -> None:
        """Refuse a selection (``selected_ids``) of which no id is a parcel of the layer (``found``:
        the parcels read with it), instead of a run on nothing counted as "0 given".

        Raises:
            InputError: naming the layer and the ids.
        """
        if self.selected_ids is None or found:
            return
        if not self.selected_ids:
            raise InputError(f"{self.describe()}: the selection holds no parcel; select reference parcels, or none "
                             "to use them all.")
        shown = ", ".join(str(i) for i in self.selected_ids[:5]) + (", ..." if len(self.selected_ids) > 5 else "")
        raise InputError(f"{self.describe()}: none of the {len(self.selected_ids)} selected parcel ids ({shown}) is a "
                         f"parcel id of the layer (field {self.id_field or 'parcel_id, or the row number'}).")


@dataclass(frozen=True)
class ScenesSpec:
    """Where the Sentinel-2 scenes come from: exactly one of ``files`` (folders, globs or
    files, saved item collections among them), ``items`` (saved STAC item collections, read
    with ``credentials``), ``catalog`` (a STAC search over the parcels) or ``found`` (scenes a
    preflight already listed).

    Attributes:
        season: keep only this season's scenes (harvest year; with ``catalog`` also the year
            searched).
        collection, start, end, max_cloud: the catalogue search.
        band_order, level, offset: how files are read (``find_scenes``).
        cache: folder of fetched blocks; max_requests: assets read at the same time.
        credentials: keys for the items' assets (``core.scenes.stac.reader_for``); in memory only.
    """

    files: tuple = ()
    items: tuple = ()
    catalog: Optional[str] = None
    found: tuple = ()
    season: Optional[int] = None
    collection: Optional[str] = None
    start: Optional[str] = None
    end: Optional[str] = None
    max_cloud: float = 60.0
    band_order: Optional[tuple] = None
    level: Optional[str] = None
    offset: Optional[int] = None
    cache: Optional[str] = None
    max_requests: int = 8
    credentials: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def sources(self) -> list[str]:
        """The kinds of source given (``files``, ``items``, ``catalog``, ``found``)."""
        return [name for name in ("files", "items", "catalog", "found") if getattr(self, name)]

    def find_options(self) -> dict[str, Any]:
        """Keyword arguments of ``core.scenes.local.find_scenes``."""
        return {"band_order": list(self.band_order) if self.band_order else None, "level": self.level,
                "offset": self.offset}

    def local_files(self) -> list[str]:
        """The files and folders a run reads here (which an output may not be)."""
        return [str(p) for p in (*self.files, *self.items)]


@dataclass(frozen=True)
class WeatherSpec:
    """Where the daily temperatures come from: a file (``path``) or a weather service
    (``service``: ``open-meteo``, ``cds:e-obs``, ``cds:era5-land``) fetched into ``cache``.

    Attributes:
        tmin_var, tmax_var, date_var, tmax_path, max_distance_km: how the file is read
            (``core.thermal.weather.read_daily_temperature``).
        refresh: ask the service again instead of reusing cached temperatures.
    """

    path: Optional[str] = None
    service: Optional[str] = None
    cache: Optional[str] = None
    refresh: bool = False
    tmin_var: Optional[str] = None
    tmax_var: Optional[str] = None
    date_var: Optional[str] = None
    tmax_path: Optional[str] = None
    max_distance_km: float = DEFAULT_MAX_DISTANCE_KM

    def reader_options(self) -> dict[str, Any]:
        """Keyword arguments of ``read_daily_temperature`` (``max_distance_m`` in metres)."""
        return {"tmin_var": self.tmin_var, "tmax_var": self.tmax_var, "tmax_path": self.tmax_path,
                "max_distance_m": self.max_distance_km * 1000.0, "date_var": self.date_var}

    def local_files(self) -> list[Optional[str]]:
        """The temperature file read here (None for a service: its file is not known yet)."""
        return [None if self.service else self.path]


@dataclass(frozen=True)
class ClusterSpec:
    """Where the work runs: one process (the default), a Dask ``LocalCluster`` of ``workers``
    processes, or the cluster of the Dask ``scheduler``; ``run_folder`` holds the partitions
    (default: beside the output) and ``resume`` takes up an interrupted run's."""

    workers: int = 1
    scheduler: Optional[str] = None
    run_folder: Optional[str] = None
    resume: bool = False

    @property
    def partitioned(self) -> bool:
        """Whether the run goes through partitions (a cluster, a resume or a given run folder)."""
        return self.workers > 1 or bool(self.scheduler) or self.resume or bool(self.run_folder)

    def problem(self) -> Optional[str]:
        """What is wrong with these choices, as a message (None: nothing): a scheduler address
        that is not one, or local workers asked for beside a scheduler."""
        try:
            scheduler_address(self.scheduler)
        except InputError as exc:
            return str(exc)
        if self.scheduler and self.workers > 1:
            return (f"Give either the Dask scheduler {self.scheduler} or {self.workers} local workers, not both: "
                    "a scheduler's cluster has its own workers.")
        return None


_SCHEDULER_ADDRESS = re.compile(r"(?:tcp://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
                                r":([0-9]{1,5})/?")


def scheduler_address(text: Optional[str]) -> Optional[str]:
    """The Dask scheduler address ``text`` (``tcp://HOST:PORT`` or ``HOST:PORT``) as
    ``tcp://HOST:PORT``; None where it is empty.

    Raises:
        InputError: ``text`` is not such an address (another protocol, no port, a port above
            65535, spaces).
    """
    if text is None or not text.strip():
        return None
    match = _SCHEDULER_ADDRESS.fullmatch(text.strip())
    if match is None or not 0 < int(match.group(2)) <= 65535:
        raise InputError(f"The Dask scheduler address {text!r} is not tcp://HOST:PORT or HOST:PORT (e.g. "
                         "tcp://10.0.0.5:8786, the address 'dask scheduler' prints as it starts); correct it, or "
                         "leave it empty to run here.")
    return f"tcp://{match.group(1)}:{int(match.group(2))}"


@dataclass(frozen=True)
class ClassificationOutput:
    """A new vector file holding every feature of the parcels with the result's columns.

    Attributes:
        path: the file; layer: its layer name in a GeoPackage.
        overwrite: an existing file (or layer) may be replaced.
        features: the features copied into the file, when they are not the parcels themselves
            (the dock's attribute table beside the geometries it classifies).
        inputs: files the run reads, which ``path`` may not be.
    """

    path: str
    layer: Optional[str] = None
    overwrite: bool = False
    features: Any = field(default=None, compare=False, repr=False)
    inputs: tuple = ()


@dataclass(frozen=True)
class ResultFields:
    """The names of the result's columns, whether the probability columns are written, the
    coverage of the prediction sets (``crop_set``, ``crop_set_size``; None: no sets) and the
    confidence a decided label keeps (``decided``: ``crop_decided``, ``crop_decided_gdd``; None:
    not asked, see ``core.inseason``)."""

    label: str = "crop_pred"
    confidence: str = "crop_conf"
    status: str = "crop_status"
    probabilities: bool = False
    coverage: Optional[float] = DEFAULT_COVERAGE
    decided: Optional[float] = None

    def __post_init__(self) -> None:
        for name, value, what in (("coverage", self.coverage, "The prediction sets' coverage"),
                                  ("decided_threshold", self.decided, "The confidence a decided label keeps")):
            problem = None if value is None else LIMITS[name].problem(value)
            if problem:
                raise InputError(f"{what} {problem}.")
        roles = {"class": self.label, "confidence": self.confidence, "status": self.status}
        if self.coverage is not None:
            roles.update({"prediction set": SET_FIELD, "set size": SET_SIZE_FIELD})
        if self.decided is not None:
            roles.update({"decision date": DECIDED_FIELD, "decision GDD": DECIDED_GDD_FIELD})
        if self.probabilities:
            roles.update({"probability margin": MARGIN_FIELD, "probability entropy": ENTROPY_FIELD})
            for role in ("class", "confidence", "status"):
                if str(roles[role]).lower().startswith(PROBABILITY_PREFIX):
                    raise InputError(f"The output field {roles[role]!r} for the {role} begins like the class "
                                     f"probabilities' fields ({PROBABILITY_PREFIX}<class>), which are written too; "
                                     "give it another name.")
        seen: dict[str, str] = {}
        for role, name in roles.items():
            other = seen.setdefault(str(name).lower(), role)
            if other != role:
                raise InputError(f"The output field {name!r} is named for both the {other} and the {role}; "
                                 "give each its own name.")

    def kinds(self) -> dict[str, str]:
        """Field name -> kind (``string`` / ``real`` / ``integer``) of the main columns."""
        kinds = {self.label: "string", self.confidence: "real", self.status: "string"}
        if self.coverage is not None:
            kinds.update({SET_FIELD: "string", SET_SIZE_FIELD: "integer"})
        if self.decided is not None:
            kinds.update({DECIDED_FIELD: "string", DECIDED_GDD_FIELD: "real"})
        return kinds


@dataclass(frozen=True)
class ClassifyRequest:
    """Classify parcels with a model bundle.

    Attributes:
        model: a bundle path, a loaded ``ModelBundle``, or None for the model shipped for the
            scenes' processing level (its thermal time settings come with it).
        sampling: which pixels are read (``min_pixels``, ``missing_scl`` are the ones doors set).
        output: the file to write, or None where the door writes the result itself.
        as_of: classify as of this date: the scenes after it are left out (None: every scene).
        class_shares: a CSV file of the crops' shares in the area (``core.class_shares``): the
            probabilities are brought to them before labels and sets are made (None: as the
            model gives them).
    """

    parcels: ParcelsSpec
    scenes: ScenesSpec
    weather: WeatherSpec
    model: Any = None
    fields: ResultFields = field(default_factory=ResultFields)
    sampling: PixelSampling = field(default_factory=PixelSampling)
    chunk_size: int = 20000
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    output: Optional[ClassificationOutput] = None
    as_of: Optional[datetime.date] = None
    class_shares: Optional[str] = None


@dataclass(frozen=True)
class ExtractRequest:
    """Extract the pixel sets of parcels into a dataset folder (``out``).

    Attributes:
        label_field, class_map, min_parcels: the labels of training data.
        block_field: the spatial blocks' field; block_size_km: blocks from a square grid instead.
        settings: sampling and thermal time (``core.settings.ExtractionSettings``).
        inputs: files the run reads besides the parcels and weather, which ``out`` may not be.
        unmapped_as: the class of codes ``class_map`` does not map (training data: ``unknown``);
            None leaves them unlabelled (reference parcels to calibrate or score against).
    """

    parcels: ParcelsSpec
    scenes: ScenesSpec
    weather: WeatherSpec
    out: str
    label_field: Optional[str] = None
    class_map: Any = None
    min_parcels: int = 0
    block_field: Optional[str] = "block"
    block_size_km: Optional[float] = None
    settings: ExtractionSettings = field(default_factory=ExtractionSettings)
    chunk_size: int = 20000
    overwrite: bool = False
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    unmapped_as: Optional[str] = UNKNOWN_CLASS


@dataclass(frozen=True)
class GddRequest:
    """Growing degree days of every parcel at ``dates``, or at the dates of ``scenes`` (read
    from the items without opening images), or at the end of the weather record.

    Attributes:
        thermal: season start, base and cap temperatures, method.
        out: a ``.csv`` table or a vector file, or None where the door writes the values itself.
        out_layer: the output's layer name in a GeoPackage.
    """

    parcels: ParcelsSpec
    weather: WeatherSpec
    dates: Optional[tuple] = None
    scenes: Optional[ScenesSpec] = None
    thermal: ThermalTime = field(default_factory=ThermalTime)
    out: Optional[str] = None
    out_layer: Optional[str] = None
    overwrite: bool = False
    chunk_size: int = 20000
    cluster: ClusterSpec = field(default_factory=ClusterSpec)


def as_tuple(values: Optional[Sequence[Any]]) -> tuple:
    """``values`` as a tuple (None and empty: ``()``), for a frozen request."""
    return tuple(values) if values else ()


@dataclass(frozen=True)
class CalibrateRequest:
    """Fit a model's calibration on labelled reference parcels, extracted on the fly from the
    same scenes and weather, and write the model with it as a new bundle.

    Attributes:
        reference: the labelled parcels (``ParcelsSpec``; its selection is honoured).
        label_field: their label field (class names, or crop codes with ``class_map``).
        out: the new bundle's path.
        model: the bundle to calibrate (None: the shipped model).
        class_map: codes -> classes (a preset name or a class map file), or None.
        overwrite: replace an existing ``out``.
        method: ``"temperature"`` (one divisor) or ``"vector"`` (a divisor and one bias per class),
            ``core.model.calibration.CALIBRATION_METHODS``.
        gdd_floor: the GDD floor of the calibrated model (``core.model.season_floor``: the
            acquisitions it leaves out early in the season), with which the calibration is
            fitted; None keeps the model's, 0 removes it.
    """

    reference: ParcelsSpec
    label_field: str
    scenes: ScenesSpec
    weather: WeatherSpec
    out: str
    model: Any = None
    class_map: Any = None
    overwrite: bool = False
    sampling: PixelSampling = field(default_factory=PixelSampling)
    method: str = "temperature"
    gdd_floor: Optional[float] = None


@dataclass(frozen=True)
class SeasonAccuracyRequest:
    """Score a model through the season on labelled reference parcels, extracted on the fly from
    the scenes and weather: OA, macro F1 and per-class F1 as of each acquisition, written as
    ``inseason.csv``, ``inseason_classes.csv`` and ``inseason.png`` into the folder ``out``.

    Attributes:
        reference: the labelled parcels (``ParcelsSpec``).
        label_field: their label field (class names, or crop codes with ``class_map``).
        out: the folder of the tables and the figure.
        model: the bundle to score (None: the shipped model for the scenes' level).
        class_map: codes -> classes (a preset name or a class map file), or None.
        overwrite: replace the files of an earlier run in ``out``.
    """

    reference: ParcelsSpec
    label_field: str
    scenes: ScenesSpec
    weather: WeatherSpec
    out: str
    model: Any = None
    class_map: Any = None
    overwrite: bool = False
    sampling: PixelSampling = field(default_factory=PixelSampling)
