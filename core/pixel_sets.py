"""Pixel sets in memory and the training dataset format on disk.

A dataset is a folder holding one region's (or one extraction's) parcels as memory-mappable
``.npy`` arrays plus ``dataset.json``. Every parcel shares the dataset's acquisition dates;
``date_mask`` says which dates are usable for which parcel. Pixel values are reflectance
times 10000 as uint16, with any processing-baseline offset already removed, so that products
of every baseline and level compare directly.

Layout (P parcels, T dates, C bands, S pixel slots):

=================  ===========  ==========================================================
file               dtype        shape and meaning
=================  ===========  ==========================================================
pixels.npy         uint16       (P, T, C, S) reflectance x 10000, 0 where masked
pixel_mask.npy     bool         (P, T, S) True where the pixel slot holds a valid pixel
date_mask.npy      bool         (P, T) True where the date is usable for the parcel
gdd.npy            float32      (P, T) growing degree days at each date, from season start
labels.npy         int16        (P,) index into ``classes``, -1 where unlabelled
parcel_ids.npy     str          (P,) the parcel identifiers of the source layer
blocks.npy         int32        (P,) spatial block for train/val/test splits, -1 if none
status.npy         str          (P,) "ok" or why the parcel has no usable data
=================  ===========  ==========================================================

``dataset.json`` holds format and version, bands, ISO dates, day of season per date, season
start, class names, label field and provenance (source files, seeds, settings).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .errors import DatasetError, InputError, OutputError
from .io.output import Staging, check_output, publish
from .io.safe_read import npy_header, read_json
from .scenes.bands import S2_BANDS

log = logging.getLogger(__name__)

DATASET_FORMAT = "thermocrop-pixelsets"
DATASET_VERSION = 1
STATUS_OK = "ok"


def status_ok(status) -> np.ndarray:
    """``status == STATUS_OK`` element by element, as text: numpy 1.x, comparing an object array
    to a string, turns an exception raised inside the comparison (a Ctrl-C reaching it as
    ``KeyboardInterrupt``) into a warning and one ``False``, so an interrupted run failed later with
    a ``TypeError`` instead of stopping."""
    return np.asarray(status).astype(str) == STATUS_OK

_ARRAYS = ("pixels", "pixel_mask", "date_mask", "gdd", "labels", "parcel_ids", "blocks", "status")


@dataclass
class PixelSets:
    """Per-parcel pixel time series ready for a model, in memory or memory-mapped.

    Attributes:
        pixels: ``(P, T, C, S)`` uint16, reflectance x 10000, 0 where masked.
        pixel_mask: ``(P, T, S)`` bool, True for valid pixels.
        date_mask: ``(P, T)`` bool, True where the date is usable for the parcel.
        gdd: ``(P, T)`` float32 growing degree days since the season start.
        dates: ``(T,)`` datetime64[D] acquisition dates, ascending.
        day_of_season: ``(T,)`` float32 days since the season start.
        parcel_ids: ``(P,)`` parcel identifiers (str).
        status: ``(P,)`` str, ``"ok"`` or the reason the parcel cannot be classified.
        labels: ``(P,)`` int16 class index or -1.
        blocks: ``(P,)`` int32 spatial block or -1.
        classes: class names that ``labels`` index.
        bands: band names in channel order.
        meta: free-form provenance (source files, settings).
        source: where the pixel sets were read from (a dataset folder), for messages; not stored.
    """

    pixels: np.ndarray
    pixel_mask: np.ndarray
    date_mask: np.ndarray
    gdd: np.ndarray
    dates: np.ndarray
    day_of_season: np.ndarray
    parcel_ids: np.ndarray
    status: np.ndarray
    labels: Optional[np.ndarray] = None
    blocks: Optional[np.ndarray] = None
    classes: tuple[str, ...] = ()
    bands: tuple[str, ...] = S2_BANDS
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        n = len(self.parcel_ids)
        if self.labels is None:
            self.labels = np.full(n, -1, dtype=np.int16)
        if self.blocks is None:
            self.blocks = np.full(n, -1, dtype=np.int32)
        self.validate()

    def __len__(self) -> int:
        return len(self.parcel_ids)

    @property
    def n_dates(self) -> int:
        return len(self.dates)

    def validate(self) -> None:
        """Check that every array has the shape the layout promises."""
        p, t = len(self.parcel_ids), len(self.dates)
        expected = {
            "pixels": (p, t, len(self.bands)),
            "pixel_mask": (p, t),
            "date_mask": (p, t),
            "gdd": (p, t),
            "status": (p,),
            "labels": (p,),
            "blocks": (p,),
        }
        for name, prefix in expected.items():
            shape = getattr(self, name).shape
            if shape[: len(prefix)] != prefix:
                raise DatasetError(
                    f"Pixel sets are inconsistent: {name} has shape {shape}, "
                    f"expected {prefix} + ... for {p} parcels, {t} dates."
                )
        if self.pixels.shape[3] != self.pixel_mask.shape[2]:
            raise DatasetError(
                f"Pixel sets are inconsistent: pixels hold {self.pixels.shape[3]} pixel slots, "
                f"the pixel mask {self.pixel_mask.shape[2]}."
            )
        if len(self.day_of_season) != t:
            raise DatasetError("Pixel sets are inconsistent: day_of_season does not match dates.")

    def subset(self, index: Union[np.ndarray, slice]) -> "PixelSets":
        """The parcels selected by ``index`` (a slice, boolean mask or integer array)."""
        return PixelSets(
            pixels=self.pixels[index],
            pixel_mask=self.pixel_mask[index],
            date_mask=self.date_mask[index],
            gdd=self.gdd[index],
            dates=self.dates,
            day_of_season=self.day_of_season,
            parcel_ids=self.parcel_ids[index],
            status=self.status[index],
            labels=self.labels[index],
            blocks=self.blocks[index],
            classes=self.classes,
            bands=self.bands,
            meta=self.meta,
            source=self.source,
        )

    @property
    def name(self) -> str:
        """How messages name these pixel sets: the dataset folder, else the parcel layer."""
        return self.source or str((self.meta or {}).get("parcels") or "the pixel sets")

    def class_counts(self, usable_only: bool = True) -> dict[str, int]:
        """Labelled parcels per class, in ``classes`` order.

        Args:
            usable_only: count only parcels with status "ok".
        """
        labels = np.asarray(self.labels)
        keep = labels >= 0
        if usable_only:
            keep &= np.asarray(self.status) == STATUS_OK
        counts = np.bincount(labels[keep].astype(np.int64), minlength=len(self.classes))
        return {c: int(n) for c, n in zip(self.classes, counts)}

    def relabel(self, classes: Sequence[str], unseen: str = "error") -> "PixelSets":
        """The same parcels with labels indexing another class list (a model's).

        Labels of classes missing from ``classes`` are either refused (``unseen="error"``) or
        left out as unlabelled (``unseen="drop"``, logged per class). The arrays are shared,
        not copied, except the labels.

        Args:
            classes: the new class list.
            unseen: ``"error"`` or ``"drop"``.

        Raises:
            DatasetError: with ``unseen="error"``, parcels (status "ok") of classes not in
                ``classes``; the message names them.
        """
        if unseen not in ("error", "drop"):
            raise ValueError(f"unseen must be 'error' or 'drop', not {unseen!r}")
        classes = tuple(str(c) for c in classes)
        if classes == tuple(self.classes):
            return self
        labels = np.asarray(self.labels)
        bad = labels >= len(self.classes)
        if bad.any():
            raise DatasetError(f"{self.name}: labels up to {int(labels.max())} but only {len(self.classes)} "
                               "classes; the dataset is damaged, extract it again.")
        index = {c: i for i, c in enumerate(classes)}
        lookup = np.array([index.get(c, -1) for c in self.classes] + [-1], dtype=np.int16)
        outside = {c: n for c, n in self.class_counts().items() if n and c not in index}
        if outside and unseen == "error":
            listed = ", ".join(f"{c} ({n} parcels)" for c, n in outside.items())
            raise DatasetError(
                f"{self.name} has classes the model has never seen: {listed}. The model knows "
                f"{list(classes)}. Train with these classes, fold them into another class with a "
                "class map or --min-parcels, or leave their parcels out (--drop-unseen-classes).")
        if outside:
            log.info("%s: parcels of classes outside the class list are left out: %s", self.name,
                     ", ".join(f"{c} ({n})" for c, n in outside.items()))
        new = lookup[np.where(labels >= 0, labels, len(self.classes)).astype(np.int64)]
        return dataclasses.replace(self, labels=new, classes=classes)


def _header(ps: PixelSets) -> dict[str, Any]:
    return {
        "format": DATASET_FORMAT,
        "version": DATASET_VERSION,
        "n_parcels": len(ps),
        "n_dates": ps.n_dates,
        "max_pixels": int(ps.pixels.shape[3]),
        "bands": list(ps.bands),
        "dates": [str(d) for d in np.asarray(ps.dates, dtype="datetime64[D]")],
        "day_of_season": [float(x) for x in ps.day_of_season],
        "classes": list(ps.classes),
        "meta": ps.meta,
    }


class DatasetWriter:
    """Writes a dataset folder chunk by chunk, so that it never sits in memory whole.

    The folder appears only when :meth:`close` succeeds and the arrays read back; a failed,
    cancelled or killed run leaves nothing at ``path`` (the work happens in a staging folder
    beside it, see ``core.io.output``; a killed run's is removed by the next run writing there).
    Without ``overwrite`` an existing folder is never replaced, even one that appears during
    the run; with it, only a dataset folder (or an empty one) is. Rows go to the ``.npy``
    files through positioned writes of whole runs of parcels: filling a fresh memory map
    instead costs a page fault per 4 KiB and is tens of times slower at 300k parcels.

    Args:
        path: the dataset folder to create.
        n_parcels: P, the number of parcels that will be written.
        dates: ``(T,)`` acquisition dates.
        day_of_season: ``(T,)`` days since season start.
        max_pixels: S, pixel slots per parcel and date.
        classes: class names that labels index.
        bands: band names in channel order.
        meta: provenance to store in ``dataset.json``.
        overwrite: replace an existing dataset folder.
    """

    def __init__(
        self,
        path: Union[str, os.PathLike],
        n_parcels: int,
        dates: np.ndarray,
        day_of_season: np.ndarray,
        max_pixels: int,
        classes: Sequence[str] = (),
        bands: Sequence[str] = S2_BANDS,
        meta: Optional[dict[str, Any]] = None,
        overwrite: bool = False,
        parcel_id_width: int = 64,
        status_width: int = 32,
    ) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = check_output(path, what="dataset folder", kind="folder", overwrite=overwrite,
                                 replaceable_folder=is_dataset_folder)
        self._overwrite = overwrite
        self._staging = Staging(self.path)
        self._tmp = self._staging.path
        self._tmp.mkdir()
        self._files: dict[str, tuple[Any, np.dtype, int, int]] = {}
        p, t, c, s = n_parcels, len(dates), len(bands), max_pixels
        specs = {
            "pixels": (np.uint16, (p, t, c, s)),
            "pixel_mask": (np.bool_, (p, t, s)),
            "date_mask": (np.bool_, (p, t)),
            "gdd": (np.float32, (p, t)),
            "labels": (np.int16, (p,)),
            "parcel_ids": (f"<U{parcel_id_width}", (p,)),
            "blocks": (np.int32, (p,)),
            "status": (f"<U{status_width}", (p,)),
        }
        # name -> (open file, dtype, byte offset of row 0, bytes per row)
        try:
            for name, (dt, shape) in specs.items():
                file = self._tmp / f"{name}.npy"
                # open_memmap writes the .npy header and sizes the (sparse) file; rows come later.
                header = np.lib.format.open_memmap(file, mode="w+", dtype=dt, shape=shape)
                dtype, offset = header.dtype, header.offset
                del header
                row_bytes = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
                self._files[name] = (open(file, "r+b"), dtype, offset, row_bytes)
        except OSError as exc:
            self.abort()
            raise OutputError(f"Cannot create the dataset {self.path} ({exc.strerror or exc}); the disk may be "
                              "full. Nothing was written.") from exc
        except BaseException:
            self.abort()
            raise
        self._header = {
            "format": DATASET_FORMAT,
            "version": DATASET_VERSION,
            "n_parcels": p,
            "n_dates": t,
            "max_pixels": s,
            "bands": list(bands),
            "dates": [str(d) for d in np.asarray(dates, dtype="datetime64[D]")],
            "day_of_season": [float(x) for x in day_of_season],
            "classes": list(classes),
            "meta": dict(meta or {}),
        }
        self._n_parcels = p
        self._written = 0

    def write(self, start: int, chunk: PixelSets) -> None:
        """Store ``chunk`` as parcels ``start .. start + len(chunk)``."""
        self.write_rows(np.arange(start, start + len(chunk)), chunk)

    def write_rows(self, rows: np.ndarray, chunk: PixelSets) -> None:
        """Store ``chunk`` as the parcels at positions ``rows`` ``(len(chunk),)``, any order."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) != len(chunk):
            raise DatasetError(f"{len(rows)} row positions given for {len(chunk)} parcels.")
        if len(rows) == 0:
            return
        if rows.min() < 0 or rows.max() >= self._n_parcels:
            raise DatasetError(
                f"Row positions must lie in 0..{self._n_parcels - 1}; got {rows.min()}..{rows.max()}."
            )
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        breaks = np.flatnonzero(np.diff(sorted_rows) != 1) + 1
        starts, stops = np.r_[0, breaks], np.r_[breaks, len(rows)]
        for name in _ARRAYS:
            fh, dtype, offset, row_bytes = self._files[name]
            data = np.ascontiguousarray(getattr(chunk, name), dtype=dtype)
            for a, b in zip(starts, stops):
                picked = order[a:b]
                if picked[-1] - picked[0] == b - a - 1 and (b - a == 1 or (np.diff(picked) == 1).all()):
                    block = data[picked[0]:picked[-1] + 1]  # already in file order: no copy
                else:
                    block = data[picked]
                try:
                    fh.seek(offset + int(sorted_rows[a]) * row_bytes)
                    fh.write(block.reshape(-1).view(np.uint8).data)
                except OSError as exc:
                    raise OutputError(f"Writing the dataset {self.path} failed ({exc.strerror or exc}); the disk "
                                      "may be full. Nothing was written.") from exc
        self._written += len(chunk)

    def _close_files(self) -> None:
        files, self._files = list(self._files.values()), {}
        failure = None
        for fh, *_ in files:
            try:
                fh.close()  # flushes: a full disk may answer only now
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def close(self) -> Path:
        """Flush, write ``dataset.json``, read the folder back and move it into place.

        Raises:
            OutputError: writing failed (a full disk), the folder does not read back, or the
                target appeared meanwhile without ``overwrite``; nothing is left behind.
        """
        try:
            self._close_files()
            with open(self._tmp / "dataset.json", "w", encoding="utf-8") as fh:
                json.dump(self._header, fh, indent=1)
            try:
                back = open_dataset(self._tmp)
            except DatasetError as exc:
                raise OutputError(f"The dataset {self.path} does not read back after writing ({exc}); nothing "
                                  "was written.") from None
            del back
            publish(self._tmp, self.path, overwrite=self._overwrite, staging=self._staging)
        except OSError as exc:
            self.abort()
            raise OutputError(f"Writing the dataset {self.path} failed ({exc.strerror or exc}); the disk may be "
                              "full. Nothing was written.") from exc
        except BaseException:
            self.abort()
            raise
        self._staging.discard()
        log.info("Wrote dataset %s (%d parcels)", self.path, self._header["n_parcels"])
        return self.path

    def abort(self) -> None:
        """Discard everything written so far."""
        try:
            self._close_files()
        except OSError:
            pass
        self._staging.discard()

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def save_dataset(
    ps: PixelSets, path: Union[str, os.PathLike], overwrite: bool = False
) -> Path:
    """Write in-memory pixel sets as a dataset folder."""
    header = _header(ps)
    id_width = max(8, max((len(str(x)) for x in ps.parcel_ids), default=1))
    with DatasetWriter(
        path,
        n_parcels=len(ps),
        dates=ps.dates,
        day_of_season=ps.day_of_season,
        max_pixels=header["max_pixels"],
        classes=ps.classes,
        bands=ps.bands,
        meta=ps.meta,
        overwrite=overwrite,
        parcel_id_width=id_width,
    ) as writer:
        writer.write(0, ps)
    return Path(path)


def is_dataset_folder(path: Union[str, os.PathLike]) -> bool:
    """Whether ``path`` holds a ThermoCrop dataset and nothing else (which ``overwrite`` may
    replace: a file of the user's kept in the folder would go with it)."""
    try:
        header = read_json(Path(path) / "dataset.json", what="dataset header")
    except InputError:
        return False
    own = {"dataset.json", *(f"{name}.npy" for name in _ARRAYS)}
    if any(entry.name not in own for entry in Path(path).iterdir()):
        return False
    return isinstance(header, dict) and header.get("format") == DATASET_FORMAT


def open_dataset(path: Union[str, os.PathLike], mmap: bool = True) -> PixelSets:
    """Open a dataset folder, memory-mapping its arrays unless ``mmap`` is False.

    Raises:
        DatasetError: the folder is missing, of another format or version, or incomplete.
    """
    path = Path(path)
    header_path = path / "dataset.json"
    if not header_path.is_file():
        raise DatasetError(
            f"{path} is not a ThermoCrop dataset (no dataset.json); create one with "
            "'thermocrop extract'."
        )
    header = read_json(header_path, what="dataset header", error=DatasetError)
    found = header.get("format") if isinstance(header, dict) else None
    if found != DATASET_FORMAT:
        raise DatasetError(f"{path} holds format {found!r}, not {DATASET_FORMAT!r}.")
    if header.get("version") != DATASET_VERSION:
        raise DatasetError(
            f"{path} is dataset version {header.get('version')}; this ThermoCrop reads version "
            f"{DATASET_VERSION}. Extract it again with this version."
        )
    shapes = _expected_shapes(header, header_path)
    arrays = {}
    for name in _ARRAYS:
        file = path / f"{name}.npy"
        # Each array's header is checked against its file and the dataset's before it is read,
        # so a header naming a huge shape is refused before anything is allocated.
        shape, dtype, _ = npy_header(file, error=DatasetError)
        if shape != shapes[name] or dtype.kind != _KINDS[name]:
            raise DatasetError(f"{file} holds a {dtype} array of shape {shape}; {header_path} implies "
                               f"shape {shapes[name]}. The dataset is damaged: extract it again.")
        try:
            arrays[name] = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{file} is missing or damaged ({exc}); extract the dataset again.") from exc
    return PixelSets(
        source=str(path),
        dates=np.array(header["dates"], dtype="datetime64[D]"),
        day_of_season=np.array(header["day_of_season"], dtype=np.float32),
        classes=tuple(header["classes"]),
        bands=tuple(header["bands"]),
        meta=header.get("meta", {}),
        **arrays,
    )


_KINDS = {"pixels": "u", "pixel_mask": "b", "date_mask": "b", "gdd": "f", "labels": "i", "parcel_ids": "U",
          "blocks": "i", "status": "U"}


def _expected_shapes(header: dict[str, Any], source: Path) -> dict[str, tuple[int, ...]]:
    """The shape of every array of a dataset, from its checked ``dataset.json``."""
    def whole(key: str) -> int:
        value = header.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DatasetError(f"{source}: {key} must be a whole number, not {value!r}"[:200])
        return value

    p, t, s = whole("n_parcels"), whole("n_dates"), whole("max_pixels")
    for key, length in (("dates", t), ("day_of_season", t), ("bands", None), ("classes", None)):
        value = header.get(key)
        if not isinstance(value, list) or (length is not None and len(value) != length):
            raise DatasetError(f"{source}: {key} must be a list{f' of {length} entries' if length is not None else ''}")
    if not all(isinstance(v, str) for v in header["bands"] + header["classes"]):
        raise DatasetError(f"{source}: bands and classes must be names")
    c = len(header["bands"])
    return {"pixels": (p, t, c, s), "pixel_mask": (p, t, s), "date_mask": (p, t), "gdd": (p, t),
            "labels": (p,), "parcel_ids": (p,), "blocks": (p,), "status": (p,)}
