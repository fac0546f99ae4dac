"""SQLite files (GeoPackages) as outputs: whether another program is changing one, its integrity
after writing, settling its write-ahead log, a consistent copy to add a layer to, and the order
of its layers."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import sqlite3
import struct
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

from ..errors import OutputError

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]


def _path_text(path: PathLike) -> str:
    """A path given as text, without a ``|layername=`` suffix (QGIS and GDAL layer sources)."""
    return os.fspath(path).split("|")[0]


# -- other programs' SQLite transactions -------------------------------------------------------
#
# SQLite (and so every program writing a GeoPackage: QGIS, GDAL, sqlite3) announces what it does
# with POSIX byte-range locks on fixed bytes: in the database file PENDING, RESERVED (an open write
# transaction) and the SHARED range (EXCLUSIVE while a change is written); in WAL mode, in the
# ``-shm`` file, the write lock, the checkpoint and recovery locks, the read marks and the "dead man
# switch" every open connection holds. Replacing the file while any of these is held would lose
# that program's commit: it goes on writing to the old file, or to a ``-wal`` that would then be
# replayed into the new one. Locks are tested and taken as open file description locks, which
# conflict with SQLite's own even inside this process and are released only with our descriptor.

SQLITE_HEADER = b"SQLite format 3\x00"
_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # a rollback journal that still holds a change
_PENDING_BYTE = 0x40000000
_RESERVED_BYTE = _PENDING_BYTE + 1
_SHARED_FIRST = _PENDING_BYTE + 2
_SHARED_SIZE = 510
_WAL_WRITE_LOCK = 120
_WAL_LOCKS = 8  # write, checkpoint, recover, five read marks
_WAL_DMS = _WAL_WRITE_LOCK + _WAL_LOCKS
_LINUX = sys.platform.startswith("linux")
_FLOCK = "hhqqi4x" if _LINUX else "qqihh"  # struct flock: Linux type, whence, start, len, pid; BSD/macOS
_GETLK = getattr(fcntl, "F_OFD_GETLK", fcntl.F_GETLK)
_SETLK = getattr(fcntl, "F_OFD_SETLK", fcntl.F_SETLK)


def is_sqlite_file(path: PathLike) -> bool:
    """Whether ``path`` is an existing SQLite database (GeoPackage, SpatiaLite, MBTiles...)."""
    try:
        with open(_path_text(path), "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _flock(kind: int, start: int, length: int) -> bytes:
    if _LINUX:
        return struct.pack(_FLOCK, kind, os.SEEK_SET, start, length, 0)
    return struct.pack(_FLOCK, start, length, 0, kind, os.SEEK_SET)


def _lock_held(fd: int, start: int, length: int = 1, *, others_only: bool = False) -> Optional[int]:
    """The kind of lock (``F_RDLCK``, which is 0 on Linux, or ``F_WRLCK``) another holder has on
    bytes ``start..``, or None when there is none. With ``others_only``, a lock this process holds
    (SQLite's own locks, as QGIS holds them for a layer loaded in the project) counts as none."""
    try:
        answer = fcntl.fcntl(fd, _GETLK, _flock(fcntl.F_WRLCK, start, length))
    except OSError as exc:
        log.debug("Cannot test the locks of a SQLite file (%s)", exc)
        return None
    fields = struct.unpack(_FLOCK, answer)
    kind, pid = (fields[0], fields[4]) if _LINUX else (fields[3], fields[2])
    if kind == fcntl.F_UNLCK or (others_only and pid == os.getpid()):
        return None
    return kind


def _take_lock(fd: int, start: int, length: int) -> bool:
    """Take a write lock on bytes ``start..start+length`` without waiting; False when another holds one."""
    try:
        fcntl.fcntl(fd, _SETLK, _flock(fcntl.F_WRLCK, start, length))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        log.debug("Cannot lock a SQLite file (%s); going on without", exc)
    return True


def _wal_activity(shm: Path) -> Optional[str]:
    try:
        fd = os.open(shm, os.O_RDONLY)
    except OSError:
        return None
    try:
        if _lock_held(fd, _WAL_WRITE_LOCK) is not None:
            return "holds an open write transaction on it (WAL mode)"
        if _lock_held(fd, _WAL_WRITE_LOCK + 1, _WAL_LOCKS - 1) is not None:
            return "is reading or checkpointing it (WAL mode)"
        # This process's own connection (a layer of the QGIS project the run belongs to) is the
        # run's own business: only another program's open connection could commit unseen.
        if _lock_held(fd, _WAL_DMS, others_only=True) is not None:
            return "has it open (WAL mode), and could commit a change to it at any moment"
    finally:
        os.close(fd)
    return None


def sqlite_activity(path: PathLike) -> Optional[str]:
    """What another program is doing with the SQLite file ``path`` that replacing it would break,
    as words ("holds an open write transaction on it"), or None when nothing.

    A reader of a file in rollback-journal mode is not counted: it loses nothing when the file
    is replaced. A ``-journal`` beside the file that still holds a change (its header is not
    zeroed, as ``journal_mode=PERSIST`` leaves it after a commit) is: it is an unfinished change
    that SQLite would roll back into whatever file then has that name.
    """
    path = Path(_path_text(path))
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if _lock_held(fd, _PENDING_BYTE) is not None or _lock_held(fd, _RESERVED_BYTE) is not None:
            return "holds an open write transaction on it (RESERVED or PENDING lock)"
        if _lock_held(fd, _SHARED_FIRST, _SHARED_SIZE) == fcntl.F_WRLCK:
            return "is writing a change into it (EXCLUSIVE lock)"
    finally:
        os.close(fd)
    busy = _wal_activity(Path(f"{path}-shm"))
    if busy:
        return busy
    if _hot_journal(path):
        return _HOT_JOURNAL
    return None


_HOT_JOURNAL = "left an unfinished change in its -journal file (a program stopped while writing)"


def _hot_journal(path: Path) -> bool:
    """Whether a ``-journal`` beside ``path`` still holds a change (its header is not zeroed)."""
    try:
        with open(f"{path}-journal", "rb") as fh:
            return fh.read(len(_JOURNAL_MAGIC)) == _JOURNAL_MAGIC
    except OSError:
        return False


def busy_message(path: Path, busy: str) -> str:
    """What to tell the user when another program is changing ``path`` (``busy`` says how)."""
    return (f"{path} is in use: another program {busy}. Replacing the file now would lose that program's change; "
            "it was left as it is. Save or discard the edits there (in QGIS: stop editing the layer, or remove it "
            "from the project) and run again.")


@contextlib.contextmanager
def sqlite_writers_held(path: PathLike) -> Iterator[None]:
    """Keep other programs from starting a change to the SQLite file ``path`` while the block runs.

    Checks :func:`sqlite_activity`, then holds the locks a writer needs (PENDING and RESERVED;
    in WAL mode the write, checkpoint, recovery and read locks), so nobody can begin a transaction between
    the check and the replacement. Readers of rollback-journal files are not blocked.

    Raises:
        OutputError: another program is in the middle of a change or, in WAL mode, has the file open.
    """
    path = Path(_path_text(path))
    busy = sqlite_activity(path)
    if busy:
        raise OutputError(busy_message(path, busy))
    held: list[int] = []
    try:
        for name, start, length in ((path, _PENDING_BYTE, 2), (Path(f"{path}-shm"), _WAL_WRITE_LOCK, _WAL_LOCKS)):
            try:
                fd = os.open(name, os.O_RDWR)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.debug("Cannot open %s to lock it (%s)", name, exc)
                continue
            held.append(fd)
            if not _take_lock(fd, start, length):
                raise OutputError(busy_message(path, "began a change to it just now"))
        if _hot_journal(path):  # a program that stopped before the locks were ours
            raise OutputError(busy_message(path, _HOT_JOURNAL))
        yield
    finally:
        for fd in held:
            os.close(fd)


def check_sqlite(path: Path) -> None:
    """Raise :class:`OutputError` when SQLite's quick check finds ``path`` damaged."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            answer = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        answer = str(exc)
    if answer != "ok":
        raise OutputError(f"{path.name} is damaged after writing ({answer}); the disk may be full. Nothing was "
                          "written.")


def sqlite_state(path: Path) -> tuple:
    """What tells whether a SQLite file changed: the main file's and its write-ahead log's stat
    (an empty log, which merely opening a file in WAL mode creates, counts as none)."""
    state = []
    for p in (path, Path(f"{path}-wal")):
        try:
            st = p.stat()
            state.append((st.st_ino, st.st_size, st.st_mtime_ns) if st.st_size or p == path else None)
        except FileNotFoundError:
            state.append(None)
    return tuple(state)


def settle_sqlite(path: Path) -> None:
    """Move everything in ``path``'s write-ahead log into the file, so the file alone is whole.

    Raises:
        OutputError: another program holds the file open in the middle of a change.
    """
    wal = Path(f"{path}-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        return
    try:
        with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
            busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        raise OutputError(f"{path} is in use by another program ({exc}); close it there and run again.") from None
    if busy:
        raise OutputError(f"{path} is being changed by another program; close it there and run again.")


def contents_order(path: Path) -> list[str]:
    """The tables of a GeoPackage in the order GDAL lists them (``gpkg_contents`` row order)."""
    with contextlib.closing(sqlite3.connect(str(path))) as db:
        return [row[0] for row in db.execute("SELECT table_name FROM gpkg_contents ORDER BY rowid")]


def keep_layer_order(path: Path, order: Sequence[str]) -> None:
    """Give a replaced layer its old place in the GeoPackage's list of layers.

    GDAL replaces a layer by deleting and creating it, which moves it to the end of the list,
    and the first layer is the one programs read when none is named.
    """
    with contextlib.closing(sqlite3.connect(str(path))) as db, db:
        now = [row[0] for row in db.execute("SELECT table_name FROM gpkg_contents ORDER BY rowid")]
        wanted = [t for t in order if t in now] + [t for t in now if t not in order]
        if wanted == now:
            return
        db.execute("UPDATE gpkg_contents SET rowid = -rowid - 1")
        for position, table in enumerate(wanted, start=1):
            db.execute("UPDATE gpkg_contents SET rowid = ? WHERE table_name = ?", (position, table))


def snapshot_sqlite(path: Path, copy: Path) -> None:
    """A consistent copy of the SQLite file ``path`` (its write-ahead log included)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as src, \
                contextlib.closing(sqlite3.connect(str(copy))) as dst:
            src.backup(dst)
    except sqlite3.Error as exc:
        raise OutputError(f"Cannot copy {path} to add the layer to it ({exc}); the disk may be full. It is left as "
                          "it is.") from None
