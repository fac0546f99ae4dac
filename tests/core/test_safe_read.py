"""Files made here the way a hostile source would make them: zip archives whose members climb
out of their folder or expand a thousandfold, JSON nested past any use, .npy headers that
declare more than the file holds or hold Python objects."""

import json
import os
import resource
import stat
import zipfile

import numpy as np
import pytest

from thermocrop.core.errors import InputError, WeatherError
from thermocrop.core.io.safe_read import (
    check_archive,
    extract_members,
    load_npy,
    member_path,
    npy_header,
    parse_json,
    read_json,
)


def _zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../escaped.nc", "a/../../escaped.nc", "/tmp/escaped.nc",
                                  "..\\escaped.nc", "C:/escaped.nc", "a/\r.nc"])
def test_member_names_that_leave_the_folder_write_nothing(tmp_path, name):
    archive = _zip(tmp_path / "download.zip", [("ok.nc", b"fine"), (name, b"hostile")])
    into = tmp_path / "deep" / "into"
    into.mkdir(parents=True)
    with pytest.raises(WeatherError, match="not a plain path inside its folder"):
        extract_members(archive, into, suffix=".nc", what="CDS download", error=WeatherError)
    assert list(into.iterdir()) == []  # checked before anything is written
    assert not (tmp_path / "deep" / "escaped.nc").exists() and not (tmp_path / "escaped.nc").exists()


def test_plain_members_are_unpacked_and_links_and_bombs_refused(tmp_path):
    archive = _zip(tmp_path / "ok.zip", [("a.nc", b"A" * 10), ("sub/b.nc", b"B"), ("notes.txt", b"x")])
    written = extract_members(archive, tmp_path / "out", suffix=".nc")
    assert written == [tmp_path / "out" / "a.nc", tmp_path / "out" / "sub" / "b.nc"]
    assert [p.read_bytes() for p in written] == [b"A" * 10, b"B"]

    link = zipfile.ZipInfo("link.nc")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(tmp_path / "link.zip", "w") as zf:
        zf.writestr(link, "/etc/passwd")
    with pytest.raises(InputError, match="symbolic link"):
        extract_members(tmp_path / "link.zip", tmp_path / "out2")

    bomb = _zip(tmp_path / "bomb.zip", [("big.nc", bytes(20 * 1024 * 1024))])
    assert os.path.getsize(bomb) < 100_000
    with pytest.raises(InputError, match="more than 200 times; it is refused as a zip bomb"):
        check_archive(bomb)
    with pytest.raises(InputError, match="unpacks to 30 bytes, more than the 20"):
        check_archive(_zip(tmp_path / "two.zip", [("a", b"1" * 15), ("b", b"2" * 15)]), max_bytes=20)
    assert member_path(tmp_path, "a/b.nc", source="x") == tmp_path / "a" / "b.nc"


def test_json_nesting_and_size_are_bounded(tmp_path):
    with pytest.raises(InputError, match="nests lists or mappings more than 32 deep"):
        parse_json("[" * 100_000 + "]" * 100_000, "deep.json")  # past the recursion limit
    nested = 1
    for _ in range(33):
        nested = [nested]
    with pytest.raises(InputError, match="more than 32 deep"):
        parse_json(json.dumps({"a": nested}), "x")  # 34 levels, within Python's own limit
    assert parse_json(json.dumps({"a": [[{"b": 1}]]}), "x") == {"a": [[{"b": 1}]]}
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 600 + "1]")
    with pytest.raises(InputError, match=r"is 1,203 bytes; ThermoCrop reads such files up to 1,000 bytes"):
        read_json(big, max_bytes=1000)
    with pytest.raises(InputError, match="is not valid JSON"):
        parse_json("{", "broken.json")


def test_npy_headers_are_checked_against_the_file(tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.arange(12, dtype=np.uint16).reshape(3, 4))
    assert npy_header(good)[:2] == ((3, 4), np.dtype(np.uint16))
    assert (load_npy(good) == np.arange(12).reshape(3, 4)).all()

    # The same file with its header saying (3, 10**9): 6 GB declared, 24 bytes held.
    data = good.read_bytes()
    end = data.index(b"\n") + 1  # magic, version and length take 10 bytes; the dict is padded
    text = data[10:end - 1].replace(b"(3, 4)", b"(3, 1000000000)").rstrip(b" ")
    huge = tmp_path / "huge.npy"
    huge.write_bytes(data[:10] + text.ljust(end - 11, b" ") + b"\n" + data[end:])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match=r"declares a uint16 array of shape \(3, 1000000000\) .* but the file holds"):
        load_npy(huge)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # kB: nothing allocated

    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="holds Python objects"):
        load_npy(objects)
    (tmp_path / "cut.npy").write_bytes(good.read_bytes()[:-3])
    with pytest.raises(InputError, match="truncated or damaged"):
        npy_header(tmp_path / "cut.npy")
