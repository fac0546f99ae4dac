"""Fingerprints of input files by content, to tell later whether a run's inputs changed.

A partitioned run (``core.runs.partitions``) and a training checkpoint record the fingerprints of
their inputs; a resumed run compares them and refuses, naming the file, when one changed.
"""

from __future__ import annotations

import glob
import hashlib
import os
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from ..errors import InputError

PathLike = Union[str, os.PathLike]


FULL_HASH_BYTES = 1 << 20
"""Files up to this size are hashed whole in a run's fingerprint."""
SAMPLE_BLOCKS = 16
SAMPLE_BLOCK_BYTES = 4096
"""Larger files are hashed in SAMPLE_BLOCKS blocks of this size, evenly spaced from the first
byte to the last (64 KiB read per file, however large)."""


def content_fingerprint(path: PathLike) -> list:
    """``[size, mtime_ns, sha256]`` of a file, to tell later whether it changed.

    The hash covers the whole file up to :data:`FULL_HASH_BYTES` and a bounded sample of larger
    ones (:data:`SAMPLE_BLOCKS` blocks spread over the file), so a run over hundreds of scene
    files reads a few megabytes. A file rewritten in place almost always changes its size or
    its modification time in nanoseconds; the sample also catches a rewrite that keeps both
    (a copy with ``cp -p``, a clock set back) wherever it changed a sampled block, which a
    re-encoded or recompressed raster does throughout.
    """
    st = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if st.st_size <= FULL_HASH_BYTES:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        else:
            last = st.st_size - SAMPLE_BLOCK_BYTES
            for k in range(SAMPLE_BLOCKS):
                fh.seek(last * k // (SAMPLE_BLOCKS - 1))
                digest.update(fh.read(SAMPLE_BLOCK_BYTES))
    return [st.st_size, st.st_mtime_ns, digest.hexdigest()]


def _companions(path: Path) -> list[Path]:
    """The files that hold a layer or raster's content with ``path``: a shapefile's other parts,
    a SQLite file's write-ahead log, GDAL's side files (``.aux.xml``, ``.ovr``)."""
    found = [path]
    if path.suffix.lower() == ".shp":
        found += sorted(p for p in path.parent.glob(glob.escape(path.stem) + ".*") if p != path)
    for suffix in ("-wal", ".aux.xml", ".ovr"):
        extra = Path(f"{path}{suffix}")
        if extra.is_file():
            found.append(extra)
    return found


def input_fingerprints(sources: Iterable[Any]) -> dict[str, Any]:
    """File -> :func:`content_fingerprint` of every local file among ``sources`` (files, folders,
    layer sources with ``|layername=``), with the files that hold their content beside them;
    a source that is not a local file (a URL, a service name) is recorded by name (None)."""
    out: dict[str, Any] = {}
    for source in sources:
        if source is None:
            continue
        text = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
        path = Path(text.split("|")[0])
        if path.is_dir():
            files = sorted(f for f in path.rglob("*") if f.is_file())
        elif path.is_file():
            files = _companions(path)
        else:
            out[text] = None
            continue
        for f in files:
            key = str(f.resolve())
            try:
                out[key] = content_fingerprint(f)
            except OSError as exc:
                raise InputError(f"Cannot read the input {f} ({exc.strerror or exc}).") from None
    return out


def file_fingerprint(path: Optional[PathLike]) -> Optional[dict]:
    """:func:`input_fingerprints` of one file or folder (None for None)."""
    return None if path is None else input_fingerprints([path])


def _with_content(fingerprints: dict) -> dict:
    """``fingerprints`` without empty write-ahead logs: SQLite creates one beside a file in WAL
    mode whenever the file is opened, even only to be read, and it holds no change."""
    return {name: value for name, value in fingerprints.items()
            if not (name.endswith("-wal") and isinstance(value, list) and value and value[0] == 0)}


def changed_files(old: Any, new: Any) -> list[str]:
    """The files whose fingerprints differ between two :func:`input_fingerprints` (or lists of them);
    an empty write-ahead log counts as none."""
    if isinstance(old, dict) and isinstance(new, dict):
        old, new = _with_content(old), _with_content(new)
        return [f"{name} ({'gone' if name not in new else 'new' if name not in old else 'changed'})"
                for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
    return []


def same_inputs(old: Any, new: Any) -> bool:
    """Whether two entries of a run's fingerprint agree: file fingerprints by
    :func:`changed_files` (an empty write-ahead log aside), anything else by equality."""
    if isinstance(old, dict) and isinstance(new, dict):
        return not changed_files(old, new)
    return old == new
