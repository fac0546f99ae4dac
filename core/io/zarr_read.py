"""Zarr format 2 arrays read without trusting their metadata.

A zarr store names the codec that decodes its chunks, and zarr looks that name up in a
registry that includes ``pickle`` (which runs code) and codecs that yield Python objects. So
ThermoCrop reads stores itself: ``.zarray`` is checked first (plain numeric dtype, a
compressor from a fixed list, only the ``delta`` and ``shuffle`` filters, a bounded size),
every chunk the shape implies must be present (zarr would fill a missing one with its
``fill_value`` in silence), and each chunk must decompress to exactly its declared size,
never more (a small file that unpacks to gigabytes is refused while it unpacks).
"""

from __future__ import annotations

import bz2
import itertools
import lzma
import math
import re
import zlib
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import InputError
from .safe_read import inside, read_json

COMPRESSORS = ("zlib", "gzip", "bz2", "lzma", "blosc", "zstd", "lz4")
"""Compressors a store may name (or none): each only turns bytes into bytes."""

FILTERS = ("delta", "shuffle")
"""Filters a store may name: both turn numbers into numbers of a plain dtype. Every other
filter is refused, among them ``pickle``, ``msgpack2``, ``json2``, ``vlen-*`` and
``categorize``, which build Python objects."""

_PLAIN_DTYPE = re.compile(r"^[<>|][biuf][1248]$")
_MAX_HEADER_BYTES = 1024 * 1024

MAX_CHUNKS = 100_000
"""The most chunk files one array may be split into (a pixel set is stored in one)."""
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class ZarrError(InputError):
    """A zarr store is of a kind ThermoCrop does not read, or is incomplete or damaged."""


def _dtype(value: Any, source: str, key: str) -> np.dtype:
    if not isinstance(value, str) or not _PLAIN_DTYPE.match(value):
        raise ZarrError(f"{source}: {key} {value!r} is not a plain numeric dtype (such as '<u2'); object, "
                        "text and structured arrays are refused")
    try:
        return np.dtype(value)
    except TypeError:  # kind and size that exist separately but not together, e.g. '<f1'
        raise ZarrError(f"{source}: {key} {value!r} is not a dtype numpy knows") from None


def _whole_numbers(value: Any, source: str, key: str, minimum: int) -> tuple[int, ...]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value)):
        raise ZarrError(f"{source}: {key} must be a list of whole numbers of at least {minimum}, not {value!r}"[:300])
    return tuple(value)


class ArrayMeta:
    """The checked content of a ``.zarray``.

    Attributes:
        shape, chunks: the array's and one chunk's shape.
        dtype: the array's dtype; ``order`` ``"C"`` or ``"F"`` inside a chunk.
        compressor: the compressor's id or None; ``filters`` the filter configs in encoding order.
        separator: ``"."`` or ``"/"`` between chunk indices in chunk file names.
    """

    def __init__(self, data: Any, source: str) -> None:
        if not isinstance(data, dict) or data.get("zarr_format") != 2:
            raise ZarrError(f"{source} is not zarr format 2 array metadata")
        self.shape = _whole_numbers(data.get("shape"), source, "shape", 0)
        self.chunks = _whole_numbers(data.get("chunks"), source, "chunks", 1)
        if len(self.chunks) != len(self.shape):
            raise ZarrError(f"{source}: chunks {self.chunks} and shape {self.shape} differ in dimensions")
        self.dtype = _dtype(data.get("dtype"), source, "dtype")
        self.order = data.get("order", "C")
        if self.order not in ("C", "F"):
            raise ZarrError(f"{source}: order {self.order!r} is neither 'C' nor 'F'")
        self.separator = data.get("dimension_separator", ".")
        if self.separator not in (".", "/"):
            raise ZarrError(f"{source}: dimension_separator {self.separator!r} is neither '.' nor '/'")
        compressor = data.get("compressor")
        if compressor is not None and (not isinstance(compressor, dict) or compressor.get("id") not in COMPRESSORS):
            name = compressor.get("id") if isinstance(compressor, dict) else compressor
            raise ZarrError(f"{source} names the codec {name!r}; ThermoCrop decodes only {', '.join(COMPRESSORS)} "
                            "(or none), never a codec that could run code or build objects. The store was "
                            "refused and nothing in it was decoded")
        if compressor is not None and compressor["id"] == "lzma" and compressor.get("format", 1) not in (1, 2):
            raise ZarrError(f"{source}: lzma format {compressor.get('format')!r} is not read (only xz and alone)")
        self.compressor: Optional[str] = None if compressor is None else compressor["id"]
        filters = data.get("filters") or []
        if not isinstance(filters, list):
            raise ZarrError(f"{source}: filters must be a list, not {filters!r}"[:300])
        self.filters = []
        for f in filters:
            fid = f.get("id") if isinstance(f, dict) else f
            if fid not in FILTERS:
                raise ZarrError(f"{source} names the filter {fid!r}; ThermoCrop applies only {', '.join(FILTERS)}, "
                                "never a filter that could run code or build objects. The store was refused "
                                "and nothing in it was decoded")
            if fid == "delta":
                dtype = _dtype(f.get("dtype"), source, "delta dtype")
                astype = _dtype(f.get("astype", f.get("dtype")), source, "delta astype")
                self.filters.append(("delta", dtype, astype))
            else:
                size = f.get("elementsize")
                if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 16:
                    raise ZarrError(f"{source}: shuffle elementsize {size!r} must be 1..16")
                self.filters.append(("shuffle", size, None))

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize * int(np.prod(self.shape, dtype=object))

    @property
    def n_chunks(self) -> int:
        return math.prod(-(-s // c) for s, c in zip(self.shape, self.chunks))

    def chunk_grid(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(-(-s // c)) for s, c in zip(self.shape, self.chunks))))

    def encoded_chunk_bytes(self) -> int:
        """Bytes a chunk holds between the compressor and the filters."""
        itemsize = self.dtype.itemsize
        for kind, _, astype in self.filters:
            if kind == "delta":
                itemsize = astype.itemsize
        return itemsize * int(np.prod(self.chunks, dtype=object))


def _inflate(decompressor: Any, data: bytes, size: int) -> bytes:
    out = decompressor.decompress(data, size + 1)
    if len(out) > size:
        raise ValueError(f"it decompresses to more than the {size:,} bytes a chunk holds")
    if not decompressor.eof:  # cut short: the stream's end and checksum are missing
        raise ValueError("its compressed stream ends early")
    return out


def _zstd_content_size(data: bytes) -> Optional[int]:
    """The decompressed size a zstd frame declares in its header (None when it declares none)."""
    if len(data) < 6 or data[:4] != _ZSTD_MAGIC:
        raise ValueError("it is not a zstd frame")
    descriptor = data[4]
    fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0:
        return None
    if len(data) < pos + width:
        raise ValueError("its zstd header is cut short")
    value = int.from_bytes(data[pos:pos + width], "little")
    return value + 256 if width == 2 else value


def _decompress(compressor: Optional[str], data: bytes, size: int) -> bytes:
    """One chunk's bytes, refused when they are not exactly ``size`` bytes once unpacked."""
    if compressor is None:
        return data
    if compressor == "zlib":
        return _inflate(zlib.decompressobj(), data, size)
    if compressor == "gzip":
        return _inflate(zlib.decompressobj(wbits=31), data, size)
    if compressor == "bz2":
        return _inflate(bz2.BZ2Decompressor(), data, size)
    if compressor == "lzma":
        return _inflate(lzma.LZMADecompressor(), data, size)
    # The remaining codecs come from numcodecs; each header's declared size is checked first.
    import numcodecs

    if compressor == "blosc":
        from numcodecs.blosc import cbuffer_sizes

        if len(data) < 16:
            raise ValueError("its blosc header is cut short")
        declared, packed, _ = cbuffer_sizes(data)
        if packed != len(data):  # blosc would read past the buffer the header overstates
            raise ValueError(f"its blosc header declares {packed:,} packed bytes, the file holds {len(data):,}")
        codec = numcodecs.Blosc()
    elif compressor == "lz4":
        if len(data) < 4:
            raise ValueError("its lz4 header is cut short")
        declared = int.from_bytes(data[:4], "little")
        codec = numcodecs.LZ4()
    else:
        declared = _zstd_content_size(data)
        codec = numcodecs.Zstd()
    if declared != size:
        raise ValueError(f"its header declares {declared} bytes where a chunk holds {size:,}")
    return bytes(codec.decode(data))


def _unfilter(filters: Sequence[tuple], data: bytes) -> np.ndarray:
    """Undo the filters (the last applied first) on a chunk's bytes."""
    buf = np.frombuffer(data, dtype=np.uint8)
    for kind, a, b in reversed(filters):
        if kind == "shuffle":
            size = a
            whole = len(buf) - len(buf) % size
            head = buf[:whole].reshape(size, whole // size).T.reshape(-1)
            buf = np.concatenate([head, buf[whole:]])
        else:  # delta: a = dtype of the values, b = dtype stored
            buf = np.cumsum(buf.view(b), dtype=a).view(np.uint8)
    return buf


def read_array_meta(store: Path, *, what: str) -> ArrayMeta:
    """The checked ``.zarray`` of ``store``, read before any chunk."""
    path = inside(store, store / ".zarray", source=what, error=ZarrError)
    data = read_json(path, what=what, max_bytes=_MAX_HEADER_BYTES, error=ZarrError)
    return ArrayMeta(data, f"{what} ({path})")


def read_zarr_array(store: Path, *, what: str = "zarr array", max_bytes: int,
                    expected: Optional[Sequence[Optional[int]]] = None) -> np.ndarray:
    """A whole zarr format 2 array, read chunk by chunk without zarr.

    Args:
        store: the store folder (holding ``.zarray`` and the chunk files).
        what: how messages name it (e.g. ``parcel 12 (data/12.zarr)``).
        max_bytes: the largest array accepted, checked on the metadata before anything is
            allocated.
        expected: the shape it must have; None for a dimension of any length.

    Raises:
        ZarrError: a codec, filter or dtype outside the lists, a shape other than expected or
            above ``max_bytes``, a missing chunk, or a chunk that does not unpack to its size.
    """
    store = Path(store)
    meta = read_array_meta(store, what=what)
    if expected is not None and (len(expected) != len(meta.shape)
                                 or any(e is not None and e != s for e, s in zip(expected, meta.shape))):
        want = tuple("any" if e is None else e for e in expected)
        raise ZarrError(f"{what} ({store}) holds an array of shape {meta.shape}; expected {want}")
    if meta.nbytes > max_bytes:
        raise ZarrError(f"{what} ({store}) declares an array of shape {meta.shape} ({meta.nbytes:,} bytes), more "
                        f"than the {max_bytes:,} bytes ThermoCrop reads for one; it was not read")
    if meta.n_chunks > MAX_CHUNKS:
        raise ZarrError(f"{what} ({store}) is split into {meta.n_chunks:,} chunks of {meta.chunks}; ThermoCrop reads "
                        f"arrays of up to {MAX_CHUNKS:,} chunks")
    grid = meta.chunk_grid()
    names = [meta.separator.join(str(i) for i in index) for index in grid]
    missing = [n for n in names if not (store / n).is_file()]
    if missing:
        raise ZarrError(f"{what} ({store}) lacks chunk {missing[0]}: its shape {meta.shape} and chunks "
                        f"{meta.chunks} need {len(names)} chunk files and {len(names) - len(missing)} are "
                        "present. A missing chunk would read as zeros; the store is incomplete, download it again")
    out = np.empty(meta.shape, dtype=meta.dtype)
    chunk_bytes = meta.encoded_chunk_bytes()
    for index, name in zip(grid, names):
        path = inside(store, store / name, source=what, error=ZarrError)
        try:
            # Compressed data is never much larger than the raw chunk: a bigger file is not one.
            if path.stat().st_size > 2 * chunk_bytes + 65536:
                raise ValueError(f"the file holds {path.stat().st_size:,} bytes for a chunk of {chunk_bytes:,}")
            raw = path.read_bytes()
            decoded = _unfilter(meta.filters, _decompress(meta.compressor, raw, chunk_bytes))
            if decoded.nbytes != meta.dtype.itemsize * int(np.prod(meta.chunks)):
                raise ValueError(f"it holds {decoded.nbytes:,} bytes where a chunk holds "
                                 f"{meta.dtype.itemsize * int(np.prod(meta.chunks)):,}")
            chunk = decoded.view(meta.dtype).reshape(meta.chunks, order=meta.order)
        except ZarrError:
            raise
        except Exception as exc:  # zlib, bz2, lzma and numcodecs raise their own kinds
            raise ZarrError(f"{what} ({store}): chunk {name} is damaged ({exc}); download the store again") from None
        region = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, meta.chunks, meta.shape))
        out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
    return out
