"""Zarr format 2 stores written here with zarr and every codec the reader accepts, read back
without zarr value by value; stores naming anything else are refused before a chunk is read."""

import json

import numcodecs
import numpy as np
import pytest
import zarr

from thermocrop.core.io.zarr_read import COMPRESSORS, ZarrError, read_zarr_array

VALUES = (np.arange(7 * 10 * 13, dtype=np.int64).reshape(7, 10, 13) * 37 % 60000).astype("<u2")


@pytest.mark.parametrize("options", [
    {"compressor": None},
    {"compressor": numcodecs.Zlib(level=5)},
    {"compressor": numcodecs.GZip()},
    {"compressor": numcodecs.BZ2()},
    {"compressor": numcodecs.LZMA()},
    {"compressor": numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.BITSHUFFLE)},
    {"compressor": numcodecs.Zstd()},
    {"compressor": numcodecs.LZ4()},
    {"compressor": numcodecs.Zlib(), "filters": [numcodecs.Delta(dtype="<u2", astype="<i4")]},
    {"compressor": numcodecs.Zlib(), "filters": [numcodecs.Shuffle(elementsize=2)]},
    {"compressor": numcodecs.Zlib(), "order": "F", "chunks": (3, 4, 5)},
    {"compressor": numcodecs.Zlib(), "chunks": (3, 4, 5), "dimension_separator": "/"},
], ids=lambda o: "-".join(f"{k}={getattr(v, 'codec_id', v)}" for k, v in o.items()))
def test_every_accepted_codec_reads_what_zarr_wrote(tmp_path, options):
    store = tmp_path / "a.zarr"
    zarr.open(str(store), mode="w", shape=VALUES.shape, dtype=VALUES.dtype, **options)[...] = VALUES
    got = read_zarr_array(store, max_bytes=1 << 20, expected=(7, 10, None))
    assert got.dtype == np.uint16 and got.shape == VALUES.shape
    assert (got == VALUES).all()


def test_the_compressor_list_is_what_the_docs_say():
    assert set(COMPRESSORS) == {"zlib", "gzip", "bz2", "lzma", "blosc", "zstd", "lz4"}


@pytest.mark.parametrize("compressor", [{"id": "pickle"}, {"id": "zlib2"}, "zlib", {"level": 1}])
def test_unknown_compressors_are_refused_before_any_chunk_is_read(tmp_path, compressor):
    store = tmp_path / "a.zarr"
    zarr.open(str(store), mode="w", shape=(2, 3), dtype="<u2")[...] = 5
    meta = json.loads((store / ".zarray").read_text())
    meta["compressor"] = compressor
    (store / ".zarray").write_text(json.dumps(meta))
    (store / "0.0").write_bytes(b"\x80\x02cos\nsystem\nq\x00.")  # never looked at
    with pytest.raises(ZarrError, match="names the codec"):
        read_zarr_array(store, max_bytes=1 << 20)


def test_metadata_that_is_not_zarr_2_is_refused(tmp_path):
    store = tmp_path / "a.zarr"
    store.mkdir()
    for text, message in (('{"zarr_format": 3}', "not zarr format 2"),
                          ("[" * 100 + "]" * 100, "nests"),
                          ('{"zarr_format": 2, "shape": [2], "chunks": [0], "dtype": "<u2"}', "chunks must be"),
                          ('{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<u2", "order": "X"}', "order")):
        (store / ".zarray").write_text(text)
        with pytest.raises(ZarrError, match=message):
            read_zarr_array(store, max_bytes=1 << 20)


@pytest.mark.parametrize("codec, cut", [(numcodecs.Blosc(), 10), (numcodecs.Blosc(), -5), (numcodecs.LZ4(), -5),
                                        (numcodecs.Zstd(), -5), (numcodecs.BZ2(), -5), (numcodecs.LZMA(), -5),
                                        (numcodecs.Zlib(), -2), (numcodecs.GZip(), -3)])
def test_cut_chunks_of_every_codec_are_named_as_damaged(tmp_path, codec, cut):
    store = tmp_path / "a.zarr"
    zarr.open(str(store), mode="w", shape=VALUES.shape, dtype=VALUES.dtype, compressor=codec)[...] = VALUES
    chunk = store / "0.0.0"
    chunk.write_bytes(chunk.read_bytes()[:cut])
    with pytest.raises(ZarrError, match="chunk 0.0.0 is damaged"):
        read_zarr_array(store, max_bytes=1 << 20)
