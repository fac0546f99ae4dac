"""The folder of a partitioned run: its plan and record (``open_run_folder``, which refuses to
resume a run of other inputs), the partitions' Parquet tables and cost records, and its removal
once the output is written.

A run interrupted as a whole (Ctrl-C, a killed client, a lost scheduler) keeps its run folder;
run again with ``resume=True`` and only the missing partitions are computed. The run folder
records the settings and a fingerprint of the content of every input file
(:func:`~.fingerprint.input_fingerprints`), and a resumed run refuses one made from other
inputs, naming the file that changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import OutputError, ThermoCropError
from ..io.output import check_output, cleanup_stale, staged_file, write_bytes, write_text
from .fingerprint import changed_files, input_fingerprints, same_inputs

log = logging.getLogger(__name__)

RUN_FORMAT = "thermocrop-run"
RUN_VERSION = 3
"""2: inputs are fingerprinted by content (:func:`input_fingerprints`), not by name and second;
3: a classification's partitions hold their parcel ids (the client no longer reads them)."""
RUN_SUFFIX = ".parts"
"""A run folder is named after the output: ``classified.gpkg.parts``."""

PathLike = Union[str, os.PathLike]


def default_run_folder(out: PathLike) -> Path:
    """``<out>.parts`` beside the output."""
    out = Path(os.path.abspath(os.fspath(out)))
    return out.with_name(out.name + RUN_SUFFIX)


def weather_fingerprint(weather: Any, weather_options: Optional[dict] = None) -> Any:
    """The weather file (and a separate maximum-temperature file) by content; temperatures
    already read, or a service, by kind."""
    if not isinstance(weather, (str, os.PathLike)):
        return str(type(weather))
    return input_fingerprints([weather, (weather_options or {}).get("tmax_path")])


@dataclass
class RunFolder:
    """The folder holding a partitioned run's plan and its finished partitions.

    ``run.json`` records the kind of run, a fingerprint of its inputs and settings and the
    number of partitions; ``plan.npy`` the partition of every parcel (-1: none). Partition
    ``i`` is ``part-{i:05d}<suffix>`` once finished (written whole, so a file that is there is
    complete), with ``part-{i:05d}.json`` beside it holding what it cost.
    """

    path: Path
    suffix: str

    def part(self, i: int) -> Path:
        return self.path / f"part-{i:05d}{self.suffix}"

    def stats_path(self, i: int) -> Path:
        return self.path / f"part-{i:05d}.json"

    def done(self, n: int) -> list[int]:
        return [i for i in range(n) if self.part(i).exists()]

    def written(self) -> int:
        """How many partitions the folder holds, counted from its files (not from a record)."""
        try:
            return sum(1 for entry in os.scandir(self.path)
                       if re.fullmatch(rf"part-\d{{5}}{re.escape(self.suffix)}", entry.name))
        except OSError:
            return 0

    def stats(self, n: int) -> list[dict]:
        """The partitions' cost records that read as records (a damaged one is left out)."""
        out = []
        for i in range(n):
            with contextlib.suppress(OSError, ValueError, RecursionError):
                record = json.loads(self.stats_path(i).read_text(encoding="utf-8"))
                if isinstance(record, dict):
                    out.append(record)
        return out


def _plan_array(chunks: Sequence[np.ndarray], n: int) -> np.ndarray:
    plan = np.full(n, -1, dtype=np.int32)
    for i, idx in enumerate(chunks):
        plan[idx] = i
    return plan


def open_run_folder(path: PathLike, *, fingerprint: dict, chunks: Sequence[np.ndarray], n_parcels: int,
                    suffix: str, resume: bool, inputs: Sequence[PathLike] = ()) -> RunFolder:
    """Create the run folder, or with ``resume`` take up the one an interrupted run left.

    Raises:
        OutputError: the folder exists without ``resume`` (an interrupted run: say how to go
            on), it holds a run of other inputs or settings, or it cannot be created.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    folder = RunFolder(path, suffix)
    plan = _plan_array(chunks, n_parcels)
    header = {"format": RUN_FORMAT, "version": RUN_VERSION, "partitions": len(chunks),
              "fingerprint": json.loads(json.dumps(fingerprint, default=str))}
    run_json = path / "run.json"
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()  # an empty folder given as --run-folder: used as it is
    if path.exists():
        try:
            old = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # nested too deep for the parser
            old = None
        if not isinstance(old, dict) or old.get("format") != RUN_FORMAT:
            raise OutputError(f"{path} exists and is not a ThermoCrop run folder; remove it or give another "
                              "run folder.")
        if not resume:
            total = old.get("partitions")
            of = f" of {total}" if isinstance(total, int) and not isinstance(total, bool) else ""
            raise OutputError(f"{path} holds an interrupted run ({folder.written()}{of} partitions written); "
                              "continue it with --resume, or remove that folder to start again.")
        if old.get("version") != RUN_VERSION:
            raise OutputError(f"The run in {path} was made by another version of ThermoCrop; it cannot be resumed. "
                              "Start afresh: remove that folder and run again without --resume.")
        old_fingerprint = old.get("fingerprint", {})
        if not isinstance(old_fingerprint, dict):
            raise OutputError(f"The record {run_json} of the run in {path} is damaged (its fingerprint is no "
                              "mapping); it cannot be resumed. Remove that folder and run again without --resume.")
        changed = [k for k in sorted(set(header["fingerprint"]) | set(old_fingerprint))
                   if not same_inputs(old_fingerprint.get(k), header["fingerprint"].get(k))]
        files = [f for k in changed for f in changed_files(old_fingerprint.get(k), header["fingerprint"].get(k))]
        if files:
            raise OutputError(f"Input files changed since the interrupted run in {path} began: {'; '.join(files)}. "
                              "Resuming would mix results of the old and the new files. Start afresh: remove that "
                              "folder and run again without --resume (or put the files back as they were).")
        old_plan = None
        with contextlib.suppress(OSError, ValueError):
            old_plan = np.load(path / "plan.npy", allow_pickle=False)
        if changed or old_plan is None or not np.array_equal(old_plan, plan):
            what = ", ".join(changed) if changed else "the partitions"
            raise OutputError(f"The run in {path} was made with other inputs or settings ({what} differ); it cannot "
                              "be resumed with these. Remove that folder to start again, or run with the same "
                              "inputs.")
        log.info("Resuming the run in %s: %d of %d partitions already written", path,
                 len(folder.done(len(chunks))), len(chunks))
        return folder
    if resume:
        log.info("No interrupted run in %s; starting a new one", path)
    check_output(path, what="run folder", kind="folder", inputs=inputs)
    try:
        path.mkdir()
    except OSError as exc:
        raise OutputError(f"Cannot create the run folder {path} ({exc.strerror or exc}); choose a folder you can "
                          "write to (--run-folder).") from None
    plan_bytes = io.BytesIO()
    np.save(plan_bytes, plan)
    write_bytes(path / "plan.npy", plan_bytes.getvalue(), what="run plan")
    write_text(path / "run.json", json.dumps(header, indent=1), what="run record")  # last: marks the folder whole
    return folder


def write_stats(folder: RunFolder, i: int, stats: dict) -> None:
    """Record what partition ``i`` cost beside it (for the cost model; not needed to resume)."""
    with contextlib.suppress(OSError, OutputError):
        with staged_file(folder.stats_path(i), what="partition record") as tmp:
            tmp.write_text(json.dumps(stats), encoding="utf-8")


_RUN_ENTRY = re.compile(r"(plan\.npy|run\.json|part-\d{5}(\.json|\.parquet)?)")


def remove_run_folder(folder: RunFolder) -> None:
    """Remove a finished run's folder (its result is in the output now).

    Only what runs write there goes (the plan, the record, the partitions and their records,
    staging folders of killed partitions); anything else someone put in the folder is left,
    and so is the folder then.
    """
    cleanup_stale(folder.path)
    try:
        entries = list(os.scandir(folder.path))
    except OSError:
        return
    for entry in entries:
        if not _RUN_ENTRY.fullmatch(entry.name):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    try:
        folder.path.rmdir()
    except OSError:
        log.warning("The run folder %s holds files this run did not write; it was left with them", folder.path)


# -- Parquet tables of partition results --------------------------------------------------------

def write_table(path: Path, columns: dict[str, np.ndarray], what: str = "partition",
                row_group_size: Optional[int] = None) -> None:
    """Write ``columns`` as one Parquet table at ``path``, atomically (it appears whole or not at
    all), in row groups of ``row_group_size`` rows (None: pyarrow's default)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({k: pa.array(v) for k, v in columns.items()})

    def rows_back(tmp: Path) -> None:
        if pq.ParquetFile(str(tmp)).metadata.num_rows != table.num_rows:
            raise OutputError(f"The {what} {path.name} does not read back after writing; the disk may be full.")

    with staged_file(path, what=what, verify=rows_back) as tmp:
        pq.write_table(table, str(tmp), row_group_size=row_group_size)


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A partition's Parquet table as numpy arrays by column."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # pyarrow's own errors
        raise OutputError(f"The partition {path} cannot be read ({exc}); remove it and run again with --resume.") \
            from None
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def check_partition(folder: RunFolder, i: int, rows: np.ndarray, got: np.ndarray) -> None:
    if not np.array_equal(np.asarray(got, dtype=np.int64), rows):
        raise ThermoCropError(f"Partition {folder.part(i)} holds other parcels than the run's plan; remove the run "
                              f"folder {folder.path} and run again.")
