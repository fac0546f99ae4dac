"""Reading files other people made without trusting them: JSON of bounded size and nesting,
``.npy`` arrays whose header is checked against the file before anything is allocated, zip
archives whose members stay in their folder and within a size."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Optional, Union

import numpy as np

from ..errors import InputError

PathLike = Union[str, os.PathLike]

_DRIVE = re.compile(r"^[A-Za-z]:")

MAX_TEXT_BYTES = 64 * 1024 * 1024
"""The largest JSON or YAML file read (class maps, split tables, dataset headers are far smaller)."""

MAX_NESTING = 32
"""The deepest nesting of lists and mappings a JSON or YAML file may have (ThermoCrop's own
files nest at most five deep)."""

MAX_ARCHIVE_BYTES = 4 * 1024 ** 3
"""The most bytes an archive may unpack to (a CDS download, a spreadsheet's XML)."""

MAX_ARCHIVE_RATIO = 200
"""The highest ratio of unpacked to packed size a member may have (zip bombs reach millions;
NetCDF and spreadsheet XML stay below 100)."""


# --------------------------------------------------------------------------------------------
# Text files


def read_limited(path: PathLike, *, what: str, max_bytes: int = MAX_TEXT_BYTES,
                 error: type[InputError] = InputError) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, refused before reading otherwise."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise error(f"{what} {path} cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} {path} is not a regular file")
    if info.st_size > max_bytes:
        raise error(f"{what} {path} is {info.st_size:,} bytes; ThermoCrop reads such files up to "
                    f"{max_bytes:,} bytes. Is it the right file?")
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{what} {path} cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise error(f"{what} {path} grew past {max_bytes:,} bytes while it was read")
    return data


def check_nesting(value: Any, source: str, *, max_depth: int = MAX_NESTING,
                  error: type[InputError] = InputError) -> None:
    """Refuse lists and mappings nested deeper than ``max_depth`` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:
            raise error(f"{source} nests lists or mappings more than {max_depth} deep; no file "
                        "ThermoCrop reads needs that. Is it the right file?")
        stack.extend((child, depth + 1) for child in children)


def parse_json(text: Union[str, bytes], source: str, *, max_depth: int = MAX_NESTING,
               error: type[InputError] = InputError) -> Any:
    """JSON text as Python values, with nesting bounded; a named ``error`` for anything else."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(f"{source} nests lists or mappings more than {max_depth} deep; no file ThermoCrop "
                    "reads needs that. Is it the right file?") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{source} is not valid JSON ({exc})") from None
    check_nesting(value, source, max_depth=max_depth, error=error)
    return value


def read_json(path: PathLike, *, what: str = "JSON file", max_bytes: int = MAX_TEXT_BYTES,
              max_depth: int = MAX_NESTING, error: type[InputError] = InputError) -> Any:
    """A JSON file of bounded size and nesting (see ``read_limited`` and ``parse_json``)."""
    data = read_limited(path, what=what, max_bytes=max_bytes, error=error)
    return parse_json(data, f"{what} {path}", max_depth=max_depth, error=error)


# --------------------------------------------------------------------------------------------
# .npy arrays


def npy_header(path: PathLike, *, error: type[InputError] = InputError) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, data offset)`` of a ``.npy`` file, checked against the file.

    The header is parsed as literals only (numpy's own parser); object dtypes are refused (they
    would be unpickled) and the data the header declares must be exactly the bytes the file
    holds, so a header declaring terabytes is refused before anything is allocated.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"format version {version[0]}.{version[1]} is not read")
            offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, SyntaxError) as exc:
        raise error(f"{path} is missing or is not a .npy array ({exc})") from None
    if dtype.hasobject:
        raise error(f"{path} holds Python objects (dtype {dtype}); only plain numeric and text arrays "
                    "are read, objects would have to be unpickled")
    expected = offset + dtype.itemsize * int(np.prod(shape, dtype=object))
    if expected != size:
        raise error(f"{path} declares a {dtype} array of shape {tuple(shape)} ({expected:,} bytes with its "
                    f"header) but the file holds {size:,} bytes: it is truncated or damaged")
    return tuple(int(s) for s in shape), dtype, offset


def load_npy(path: PathLike, *, mmap_mode: Optional[str] = None,
             error: type[InputError] = InputError) -> np.ndarray:
    """A ``.npy`` array whose header was checked by ``npy_header``, never unpickled."""
    npy_header(path, error=error)
    try:
        return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise error(f"{path} is missing or damaged ({exc})") from None


# --------------------------------------------------------------------------------------------
# Names from data used as file names


def member_path(folder: PathLike, name: str, *, source: str,
                error: type[InputError] = InputError) -> Path:
    """``folder / name`` for a relative name taken from data, refused when it could leave
    ``folder`` (absolute, ``..``, a drive, a backslash, a control character)."""
    text = str(name)
    parts = PurePosixPath(text).parts
    if (not text or text.startswith(("/", "\\")) or "\\" in text or _DRIVE.match(text) or ".." in parts
            or any(ord(ch) < 32 for ch in text) or not parts):
        raise error(f"{source} names {text[:200]!r}, which is not a plain path inside its folder (it could "
                    "leave it); it was refused")
    return Path(folder).joinpath(*parts)


def inside(folder: PathLike, path: PathLike, *, source: str,
           error: type[InputError] = InputError) -> Path:
    """``path`` resolved (symbolic links followed), refused unless it lies inside ``folder``."""
    root = Path(folder).resolve()
    real = Path(path).resolve()
    if real != root and root not in real.parents:
        raise error(f"{source}: {path} leads outside {folder} (to {real}); a link inside a dataset must "
                    "stay inside it. Copy the files in instead of linking them")
    return real


# --------------------------------------------------------------------------------------------
# Zip archives


def _is_link(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def check_archive(path: PathLike, *, what: str = "archive", max_bytes: int = MAX_ARCHIVE_BYTES,
                  max_ratio: int = MAX_ARCHIVE_RATIO, error: type[InputError] = InputError) -> list[zipfile.ZipInfo]:
    """The members of a zip archive (an ``.xlsx`` is one), refused when they would unpack to more
    than ``max_bytes``, one member expands more than ``max_ratio`` times, or a name would leave
    the folder it is unpacked into."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise error(f"{what} {path} is not a readable zip archive ({exc})") from None
    total = 0
    for info in members:
        member_path(".", info.filename.rstrip("/") or ".", source=f"{what} {path}", error=error)
        if _is_link(info):
            raise error(f"{what} {path}: member {info.filename!r} is a symbolic link; links in archives "
                        "are refused")
        total += info.file_size
        if info.file_size > max_ratio * max(info.compress_size, 1024):
            raise error(f"{what} {path}: member {info.filename!r} unpacks {info.compress_size:,} bytes to "
                        f"{info.file_size:,}, more than {max_ratio} times; it is refused as a zip bomb")
    if total > max_bytes:
        raise error(f"{what} {path} unpacks to {total:,} bytes, more than the {max_bytes:,} ThermoCrop "
                    "unpacks; it is refused")
    return members


def extract_members(archive: PathLike, into: PathLike, *, suffix: Optional[str] = None,
                    what: str = "archive", max_bytes: int = MAX_ARCHIVE_BYTES,
                    error: type[InputError] = InputError) -> list[Path]:
    """Unpack the files of a zip archive (those ending in ``suffix``) into ``into``.

    Every name is checked before anything is written (``check_archive``); files are created
    new (an existing file is never replaced) and written no larger than their declared size.

    Returns:
        The paths written, in archive order.
    """
    into = Path(into)
    members = [m for m in check_archive(archive, what=what, max_bytes=max_bytes, error=error)
               if not m.is_dir() and (suffix is None or m.filename.endswith(suffix))]
    targets = [member_path(into, m.filename, source=f"{what} {archive}", error=error) for m in members]
    written = []
    with zipfile.ZipFile(archive) as zf:
        for info, target in zip(members, targets):
            target.parent.mkdir(parents=True, exist_ok=True)
            inside(into, target.parent, source=f"{what} {archive}", error=error)
            try:
                with zf.open(info) as src, open(target, "xb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except FileExistsError:
                raise error(f"{what} {archive} holds {info.filename!r} twice (or a name that differs only "
                            "in ways the file system ignores); it was refused") from None
            except (zipfile.BadZipFile, EOFError, ValueError) as exc:
                raise error(f"{what} {archive}: member {info.filename!r} is damaged ({exc})") from None
            written.append(target)
    return written
