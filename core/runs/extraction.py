"""Partitioned extraction on a Dask cluster: each partition writes a dataset folder of its own in
the run folder (:mod:`.partitions` runs them), and the partitions are merged into one dataset that
equals the one a one-process extraction writes, value for value.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ..errors import ExtractionError, OutputError, SceneError, ThermoCropError
from ..extract import chunk_groups, dataset_meta, say_missing_scl, scene_list_of
from ..parcels import ParcelFields, parcel_table, require_usable
from ..pixel_sampling import scene_grids, spatial_chunks
from ..pixel_sets import DatasetWriter, open_dataset
from ..scenes.seasons import select_season
from ..settings import ExtractionSettings
from ..thermal.gdd import day_of_season
from .cluster import ClusterOptions, EarlyClient, prestart_fork_server
from .fingerprint import file_fingerprint, input_fingerprints
from .folder import PathLike, RunFolder, check_partition, open_run_folder, weather_fingerprint, write_stats
from .layer_plan import LayerPlan, LayerSlice, id_hashes, plan_layer
from .partitions import (
    LazyArguments,
    PartitionListener,
    PartitionParcels,
    RunSummary,
    digest_of_ids,
    extract_stats,
    release_freed_memory,
    run_partitions,
    task_stats,
    weather_for,
)


def extract_partition(i: int, folder: RunFolder, parcels: Union[PartitionParcels, LayerSlice], weather: Any, *,
                      scenes: list, settings: Any, classes: tuple, meta: dict) -> None:
    """One partition of an extraction, written as the dataset folder ``part-i``."""
    wall, cpu = time.perf_counter(), time.process_time()
    table = parcels.table(classes)
    stats: dict = {}
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    with DatasetWriter(folder.part(i), n_parcels=len(table), dates=dates,
                       day_of_season=np.asarray(day_of_season(dates, settings.thermal.season_start), dtype=np.float32),
                       max_pixels=settings.sampling.max_pixels, classes=classes, meta=meta,
                       parcel_id_width=max(8, max(len(x) for x in table.parcel_ids))) as writer:
        for rows, ps in chunk_groups(table, np.arange(len(table)), scenes, weather, settings, classes, meta,
                                     full_slots=True, stats=stats):
            writer.write_rows(rows, ps)
    write_stats(folder, i, task_stats(i, parcels, wall, cpu, **extract_stats(stats)))


@dataclass
class ExtractionParcels:
    """The parcels of a partitioned extraction, as the client holds them: a layer file's
    :class:`LayerPlan` (labels, blocks and id hashes without geometries; each partition reads its
    own parcels from the file), or a ``ParcelTable`` sent to the partitions in pieces.

    Attributes:
        described: the plan or the table (its ``source``, ``classes`` and ``class_summary``).
        ids_digest: as ``LayerPlan.ids_digest``; id_width: the longest parcel id.
        id_hashes: ``(P,)`` ``layer_plan.id_hashes`` of the parcel ids.
    """

    described: Any
    ids_digest: str
    id_width: int
    id_hashes: np.ndarray

    @classmethod
    def of(cls, parcels: Any, fields: ParcelFields) -> "ExtractionParcels":
        """A layer file planned (``plan_layer`` with ``fields``), anything else read as a table."""
        if isinstance(parcels, (str, os.PathLike)):
            plan = plan_layer(parcels, fields=fields)
            return cls(plan, plan.ids_digest, plan.id_width, plan.attributes.id_hashes)
        table = parcel_table(parcels, fields)
        if len(table) == 0:
            raise ExtractionError(f"Parcel layer {table.source} holds no parcels.")
        return cls(table, digest_of_ids(table.parcel_ids), max(len(x) for x in table.parcel_ids),
                   id_hashes(table.parcel_ids))

    def __len__(self) -> int:
        return len(self.described)

    def chunks(self, chunk_size: int, grids: Sequence[Any]) -> list[np.ndarray]:
        """The chunks of a one-process run (a plan's bounding boxes are let go once they are made)."""
        if isinstance(self.described, LayerPlan):
            chunks = self.described.chunks(chunk_size, grids)
            self.described.bounds = self.described.usable = None
            release_freed_memory()  # what reading the layer left
            return chunks
        return spatial_chunks(self.described, chunk_size, grids)

    def inputs_of(self, idx: np.ndarray) -> Union[LayerSlice, PartitionParcels]:
        """What the partition of the parcels ``idx`` is sent."""
        if isinstance(self.described, LayerPlan):
            return self.described.slice(idx)
        return PartitionParcels.of(self.described, idx)


def extract_partitioned(
    parcels: Any,
    scenes: Any,
    weather: Any,
    out: PathLike,
    *,
    run_folder: PathLike,
    cluster: ClusterOptions,
    resume: bool = False,
    chunk_size: int = 20000,
    overwrite: bool = False,
    listener: Optional[PartitionListener] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    inputs: Sequence[PathLike] = (),
    **extraction: Any,
) -> tuple[Path, RunSummary, RunFolder]:
    """:func:`core.extract.extract_to_dataset` in partitions on a Dask cluster.

    Each partition is a dataset folder in the run folder; they are merged, partition by
    partition through memory maps, into the dataset ``out`` (written whole, as by
    ``extract_to_dataset``, whose arrays it equals value for value). A layer file is planned
    batch by batch (:class:`ExtractionParcels`): the client never holds its geometries. Arguments
    as ``extract_to_dataset`` and :func:`.partitions.classify_partitioned`; ``extraction`` holds
    ``extract_to_dataset``'s ``settings`` (an ``ExtractionSettings``) and ``fields`` (a
    ``ParcelFields``), each None or left out for the defaults.
    """
    prestart_fork_server(cluster)
    settings = extraction.pop("settings", None) or ExtractionSettings()
    fields = extraction.pop("fields", None) or ParcelFields()
    if extraction:
        raise TypeError(f"extract_partitioned() got unexpected keyword arguments {sorted(extraction)}")
    with EarlyClient(cluster, warm_up=("extract",)) as early:  # starts while the layer is read
        planned = ExtractionParcels.of(parcels, fields)
        described = planned.described
        scene_list = scene_list_of(scenes)
        if not scene_list:
            raise SceneError("No scenes were given.")
        select_season(scene_list, settings.thermal.season_start)  # refuses scenes of several seasons
        say_missing_scl(scene_list, settings)
        meta = dataset_meta(described, scene_list, weather, settings, fields.label_field)
        chunks = planned.chunks(chunk_size, scene_grids(scene_list))
        fingerprint = {
            "kind": "extract",
            "parcels": file_fingerprint(parcels) if isinstance(parcels, (str, os.PathLike)) else described.source,
            "parcel_ids": planned.ids_digest,
            "scenes": input_fingerprints(f for sc in scene_list for f in sc.files),
            "weather": weather_fingerprint(weather, settings.weather_options),
            "settings": repr(settings),
            "options": repr(fields),
            "classes": list(described.classes),
            "chunk_size": chunk_size,
        }
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=len(planned),
                                 suffix="", resume=resume, inputs=inputs)
        # Each partition's inputs are made as it is sent, not all at once.
        arguments = LazyArguments(len(chunks), lambda i: (planned.inputs_of(chunks[i]),
                                                           weather_for(weather, chunks[i])))
        summary = run_partitions(extract_partition, arguments, folder, early, listener=listener, cancelled=cancelled,
                                 shared={"scenes": scene_list, "settings": settings,
                                         "classes": tuple(described.classes), "meta": meta})
    merge_extraction(folder, chunks, planned, out, _extraction_writer(out, planned, scene_list, settings, meta,
                                                                       overwrite))
    return Path(out), summary, folder


def _extraction_writer(out: PathLike, planned: ExtractionParcels, scenes: list, settings: Any, meta: dict,
                       overwrite: bool) -> DatasetWriter:
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    season_days = np.asarray(day_of_season(dates, settings.thermal.season_start), dtype=np.float32)
    return DatasetWriter(out, n_parcels=len(planned), dates=dates, day_of_season=season_days,
                         max_pixels=settings.sampling.max_pixels, classes=planned.described.classes, meta=meta,
                         overwrite=overwrite, parcel_id_width=max(8, planned.id_width))


def merge_extraction(folder: RunFolder, chunks: Sequence[np.ndarray], planned: ExtractionParcels, out: PathLike,
                     writer: DatasetWriter) -> None:
    """Write the partitions' datasets into ``writer`` (the dataset ``out``) partition by partition,
    each checked to hold the parcels planned for it; statuses are only counted."""
    status: Counter = Counter()
    with writer:
        for i, idx in enumerate(chunks):
            try:
                part = open_dataset(folder.part(i))
            except ThermoCropError as exc:
                raise OutputError(f"The partition {folder.part(i)} cannot be read ({exc}); remove it and run again "
                                  "with --resume.") from None
            if len(part.parcel_ids) != len(idx) or not np.array_equal(id_hashes(part.parcel_ids),
                                                                      planned.id_hashes[idx]):
                check_partition(folder, i, idx, np.full(len(idx), -1))
            writer.write_rows(idx, part)
            names, counts = np.unique(np.asarray(part.status, dtype=str), return_counts=True)
            status.update(dict(zip(names.tolist(), counts.tolist())))
            del part
        require_usable(status, "extracted", planned.described.source)  # raising here leaves no dataset
