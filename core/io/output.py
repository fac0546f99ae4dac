"""Outputs that appear whole or not at all: a preflight check, a staging folder, a checked publish.

Every file or folder ThermoCrop writes for the user goes through three steps:

1. :func:`check_output` answers in milliseconds, before any scene is read: the format is known,
   the folder exists and can be written, the path is not a folder, a device or under ``/proc``,
   it is none of the inputs, and it does not exist unless replacing it was allowed.
2. The output is written into a :class:`Staging` folder beside the target (same file system,
   so that the last step is a rename) and checked there by whoever wrote it.
3. :func:`publish` moves it into place with one rename that either fails when the target
   appeared meanwhile (``renameat2(RENAME_NOREPLACE)``, or ``link`` for files) or replaces it
   atomically. A killed run leaves the target as it was; its staging folder, named
   ``.thermocrop-partial.<pid>.<start>.<token>.<host>`` and signed inside with its token, is
   removed by the next run that writes into the same folder once its process is gone. An
   existing SQLite file (a GeoPackage) is replaced only while no other program is changing it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import secrets
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

from ..errors import OutputError
from .sqlite_files import busy_message, is_sqlite_file, sqlite_activity, sqlite_writers_held

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

STAGING_PREFIX = ".thermocrop-partial."
"""Name prefix of staging folders (and of the probe file of :func:`check_output`)."""

STAGING_MARKER = ".thermocrop-staging"
"""File inside every staging folder holding the token its name ends with: only a folder that holds
it is ever removed as a staging folder, so a user's file or folder whose name merely starts with
:data:`STAGING_PREFIX` is left alone."""

STAGED_NAME_MARGIN = len("merged-") + len("-journal")
"""Bytes that names written beside an output while it is staged add to its name (a GeoPackage
copy ``merged-<name>`` and SQLite's ``<name>-journal``)."""

DEFAULT_NAME_MAX = 255
DEFAULT_PATH_MAX = 4096

FOREIGN_STAGING_AGE_S = 24 * 3600.0
"""Staging folders of another host are removed only once this old (their owner cannot be asked)."""

LOCK_TIMEOUT_S = 600.0

_PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM)


def _libc():
    try:
        lib = ctypes.CDLL(None, use_errno=True)
        return lib if hasattr(lib, "renameat2") else None
    except OSError:  # pragma: no cover - not on Linux
        return None


_LIBC = _libc()


def _renameat2(src: Path, dst: Path, flags: int) -> None:
    """``renameat2(src, dst, flags)``; raises OSError (ENOSYS where the call is unavailable)."""
    if _LIBC is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if _LIBC.renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(dst))


def _path_text(path: PathLike) -> str:
    """A path given as text, without a ``|layername=`` suffix (QGIS and GDAL layer sources)."""
    return os.fspath(path).split("|")[0]


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when both paths name one existing file (another path, a symlink or a hard link)."""
    try:
        return os.path.samefile(_path_text(a), _path_text(b))
    except OSError:
        return False


def _under_pseudo_filesystem(path: str) -> Optional[str]:
    for root in _PSEUDO_FILESYSTEMS:
        if path == root or path.startswith(root + os.sep):
            return root
    return None


# -- name lengths ---------------------------------------------------------------------------

def _limit(folder: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(folder, name))
    except (OSError, ValueError):
        return default


def _existing_ancestor(path: Path) -> Path:
    for folder in path.parents:
        try:
            if folder.is_dir():
                return folder
        except OSError:  # a component too long to stat: look further up
            continue
    return Path(os.sep)


def check_name_lengths(path: PathLike, *, what: str = "output", parts: Sequence[PathLike] = ()) -> None:
    """Refuse an output whose name, or whose staged copies' paths, the file system cannot hold.

    Each path component may have at most ``NAME_MAX`` bytes (255 on most file systems, fewer
    on some encrypted ones) and a whole path ``PATH_MAX`` bytes (4096). An output is written
    as ``<folder>/<staging folder>/<name>`` and may get companions up to
    :data:`STAGED_NAME_MARGIN` bytes longer, so those are what must fit.

    Raises:
        OutputError: naming the output, its length and the limit.
    """
    given = Path(os.path.abspath(os.fspath(path)))
    folder = _existing_ancestor(given)
    name_max = _limit(folder, "PC_NAME_MAX", DEFAULT_NAME_MAX)
    path_max = _limit(folder, "PC_PATH_MAX", DEFAULT_PATH_MAX)
    for component in given.parent.parts[1:]:
        size = len(os.fsencode(component))
        if size > name_max:
            raise OutputError(f"The folder name {component[:60]}... in the {what} path is {size} bytes long; this "
                              f"file system takes names of at most {name_max} bytes. Choose a shorter folder name.")
    staging_name = f"{_staging_prefix()}{'0' * 16}{_host_suffix()}"
    for part in [given, *(Path(os.path.abspath(os.fspath(p))) for p in parts)]:
        size = len(os.fsencode(part.name))
        if size + STAGED_NAME_MARGIN > name_max:
            raise OutputError(
                f"The name of the {what} {part.name[:60]}... is {size} bytes long; this file system takes names of at "
                f"most {name_max} bytes, and ThermoCrop needs {STAGED_NAME_MARGIN} more for the files it writes beside "
                f"it while writing. Choose a name of at most {name_max - STAGED_NAME_MARGIN} bytes.")
        staged = os.fsencode(str(part.parent / staging_name / f"merged-{part.name}-journal"))
        if len(staged) >= path_max:
            raise OutputError(
                f"The path of the {what} {part} is {len(os.fsencode(str(part)))} bytes long; with the staging folder "
                f"ThermoCrop writes it in, it would pass the file system's limit of {path_max} bytes. Choose a "
                "shorter path.")


def check_distinct_outputs(outputs: Sequence[tuple[str, Optional[PathLike]]]) -> None:
    """Refuse two outputs of one run that are one file under any names.

    Args:
        outputs: ``(label, path)`` pairs (labels as the user gave them, e.g. ``"--html"``);
            None paths are skipped.

    Raises:
        OutputError: naming both outputs.
    """
    seen: list[tuple[str, str, Optional[tuple[int, int]]]] = []
    for label, path in outputs:
        if path is None or not str(os.fspath(path)).strip():
            continue
        text = _path_text(path)
        real = os.path.realpath(os.path.abspath(text))
        try:
            st = os.stat(real)
            identity: Optional[tuple[int, int]] = (st.st_dev, st.st_ino)
        except OSError:
            identity = None
        for other_label, other_real, other_identity in seen:
            if real == other_real or (identity is not None and identity == other_identity):
                raise OutputError(f"{label} {text} and {other_label} are the same file (under this or another "
                                  "name); one would overwrite the other. Give each output its own name.")
        seen.append((label, real, identity))


# -- preflight ------------------------------------------------------------------------------

def check_output(
    path: PathLike,
    *,
    what: str = "output",
    kind: str = "file",
    suffixes: Optional[Sequence[str]] = None,
    overwrite: bool = False,
    inputs: Iterable[PathLike] = (),
    replaceable: Iterable[PathLike] = (),
    parts: Sequence[PathLike] = (),
    replaceable_folder: Optional[Callable[[Path], bool]] = None,
) -> Path:
    """Check, without writing anything there, that ``path`` can receive an output.

    Args:
        path: the file or folder to write.
        what: how messages name it ("output", "model bundle", "dataset folder", ...).
        kind: ``"file"`` or ``"folder"``.
        suffixes: accepted extensions (lower case, with the dot); None accepts any.
        overwrite: replacing an existing output is allowed.
        inputs: files the run reads; the output may be none of them.
        replaceable: those of ``inputs`` that ``overwrite`` allows to replace (writing in place).
        parts: further files that belong to the output (a shapefile's ``.dbf``, ``.shx``, ...).
        replaceable_folder: for folders, whether an existing non-empty folder may be replaced
            with ``overwrite`` (e.g. it holds a dataset); without it only empty folders are.

    Returns:
        The path to write: absolute, through a symlink to where the link points.

    Raises:
        OutputError: naming the path and what to do.
    """
    text = os.fspath(path) if path is not None else ""
    if not str(text).strip():
        raise OutputError(f"No {what} path was given; give the file or folder to write.")
    check_name_lengths(text, what=what, parts=parts)
    given = Path(os.path.abspath(text))
    target = Path(os.path.realpath(given))
    for shown in (given, target):
        root = _under_pseudo_filesystem(str(shown))
        if root:
            raise OutputError(f"The {what} {text} is under {root}, a system folder that holds no files; "
                              "choose a folder on a disk.")
    if suffixes is not None and target.suffix.lower() not in suffixes:
        raise OutputError(f"Cannot tell the format of the {what} {text} from its extension "
                          f"{target.suffix or '(none)'}; use one of {', '.join(sorted(suffixes))}.")
    folder = target.parent
    if not folder.exists():
        raise OutputError(f"The folder {folder} of the {what} {text} does not exist; create it first or "
                          "correct the path.")
    if not folder.is_dir():
        raise OutputError(f"{folder} is not a folder, so the {what} {text} cannot be written in it.")
    _probe_writable(folder, what, text)

    replaceable = [p for p in replaceable if p]
    for source in inputs:
        if not source:
            continue
        source_text = _path_text(source)
        clash = [p for p in [target, *(Path(q) for q in parts)] if same_file(p, source_text)]
        if kind == "folder" and os.path.exists(source_text) and target.is_dir():
            inside = os.path.realpath(source_text).startswith(str(target) + os.sep)
            clash += [target] if inside else []
        if not clash:
            continue
        in_place = kind == "file" and any(same_file(source_text, r) for r in replaceable)
        if in_place and overwrite:
            continue
        if in_place:
            raise OutputError(f"The {what} {text} is the input {source_text} itself (under this or another name); "
                              "choose another output, or allow writing into the input in place (--overwrite on "
                              "the command line).")
        raise OutputError(f"The {what} {text} is the input {source_text} (the same file"
                          f"{' or folder' if kind == 'folder' else ''}, under this or another name); writing "
                          "it would destroy the input. Choose another output.")
    if kind == "folder":
        if target.exists() and not target.is_dir():
            raise OutputError(f"The {what} {text} is a file; give the name of a folder to create.")
        if target.is_dir() and any(target.iterdir()):
            if not overwrite:
                raise OutputError(f"The {what} {text} already exists; choose another name, or allow replacing "
                                  "it (--overwrite on the command line).")
            if replaceable_folder is None or not replaceable_folder(target):
                raise OutputError(f"The {what} {text} holds files that are not a ThermoCrop {what}; it is not "
                                  "replaced. Choose another name.")
    else:
        for part in [target, *(Path(p) for p in parts)]:
            if part.is_dir():
                raise OutputError(f"The {what} {part} is a folder; give a file name (e.g. "
                                  f"{part / ('result' + (suffixes[0] if suffixes else ''))}).")
            if part.exists() and not part.is_file():
                raise OutputError(f"The {what} {part} exists and is not a regular file (a device or a pipe); "
                                  "choose a file name.")
            if part.exists() and not overwrite:
                raise OutputError(f"The {what} {part} already exists; choose another name, or allow replacing "
                                  "it (--overwrite on the command line).")
            if part.exists() and not part.stat().st_mode & 0o222:
                raise OutputError(f"The {what} {part} is read-only, so it is not replaced; choose another name, "
                                  "or make the file writable first if it should be.")
        if overwrite and is_sqlite_file(target):
            busy = sqlite_activity(target)
            if busy:
                raise OutputError(busy_message(target, busy))
    return target


def _probe_writable(folder: Path, what: str, text: str) -> None:
    """Create and remove a file in ``folder``: the only test that read-only mounts, permissions
    and special folders all answer truthfully (``os.access`` says yes to root on a read-only
    mount). The file has no name where the file system allows (``O_TMPFILE``), so a run killed
    here leaves nothing behind."""
    try:
        if hasattr(os, "O_TMPFILE"):
            try:
                os.close(os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600))
                return
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                    raise
        fd, name = tempfile.mkstemp(prefix=".thermocrop-probe.", dir=folder)
    except OSError as exc:
        raise OutputError(f"Cannot write in the folder {folder} of the {what} {text} ({exc.strerror}); "
                          "choose a folder you can write to.") from None
    os.close(fd)
    os.unlink(name)


# -- staging folders --------------------------------------------------------------------------

def _start_time(pid: int) -> Optional[str]:
    """The start time of process ``pid`` (clock ticks since boot), None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[19]


def _staging_prefix() -> str:
    return f"{STAGING_PREFIX}{os.getpid()}.{_start_time(os.getpid()) or 0}."


def _host_suffix() -> str:
    return "." + (socket.gethostname() or "localhost").replace(os.sep, "_")


def _staging_token(name: str) -> Optional[str]:
    """The token in a staging folder's name (``<prefix><pid>.<start>.<token>.<host>``), or None."""
    fields = name[len(STAGING_PREFIX):].split(".", 3) if name.startswith(STAGING_PREFIX) else []
    return fields[2] if len(fields) == 4 and fields[2] else None


def _made_by_a_run(entry: os.DirEntry) -> bool:
    """Whether ``entry`` is a staging folder a ThermoCrop run made: a real folder (not a link)
    holding :data:`STAGING_MARKER` with the token its name ends with."""
    token = _staging_token(entry.name)
    if token is None or not entry.is_dir(follow_symlinks=False):
        return False
    try:
        fd = os.open(os.path.join(entry.path, STAGING_MARKER), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return os.read(fd, 256).decode("ascii", "replace").strip() == token
    finally:
        os.close(fd)


def _owner_gone(name: str, mtime: float) -> bool:
    """Whether the run that made staging folder ``name`` has ended (its process is gone)."""
    try:
        pid_text, start, _random, host = name[len(STAGING_PREFIX):].split(".", 3)
        pid = int(pid_text)
    except ValueError:
        return time.time() - mtime > FOREIGN_STAGING_AGE_S
    if "." + host != _host_suffix():
        return time.time() - mtime > FOREIGN_STAGING_AGE_S
    now = _start_time(pid)
    if now is not None:
        return now != start
    if os.path.isdir("/proc/self"):
        return True
    try:  # no /proc: ask the process itself
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def cleanup_stale(folder: PathLike) -> list[Path]:
    """Remove the staging folders in ``folder`` that ended runs left (killed runs).

    Only folders that prove a run made them are removed (:func:`_made_by_a_run`); nothing is
    chosen by its name alone, so the user's files and folders that happen to start with
    :data:`STAGING_PREFIX` stay.

    Returns:
        What was removed.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or not _made_by_a_run(entry):
            continue
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if not _owner_gone(entry.name, mtime):
            continue
        path = Path(entry.path)
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            log.info("Removed %s, left by a run that was stopped while writing", path)
            removed.append(path)
    return removed


class Staging:
    """A private folder beside ``target`` in which an output is written and checked.

    It lies in the target's folder so that publishing is a rename on one file system. Use it
    as a context manager: the folder and whatever is still in it are removed on exit, whether
    the output was published or not. Creating one first removes the staging folders of ended
    runs in the same folder.
    """

    def __init__(self, target: PathLike) -> None:
        self.target = Path(target)
        cleanup_stale(self.target.parent)
        self.folder = self._make_folder()

    def _make_folder(self) -> Path:
        """Create the folder and sign it with :data:`STAGING_MARKER` (see :func:`cleanup_stale`)."""
        for _ in range(100):
            token = secrets.token_hex(8)
            folder = self.target.parent / f"{_staging_prefix()}{token}{_host_suffix()}"
            try:
                folder.mkdir(mode=0o700)
            except FileExistsError:
                continue
            except OSError as exc:
                raise OutputError(f"Cannot write in the folder {self.target.parent} ({exc.strerror}); choose a "
                                  "folder you can write to.") from None
            try:
                (folder / STAGING_MARKER).write_text(token + "\n", encoding="ascii")
            except OSError as exc:
                shutil.rmtree(folder, ignore_errors=True)
                raise OutputError(f"Cannot write in the folder {self.target.parent} ({exc.strerror}); the disk may "
                                  "be full. Nothing was written.") from None
            return folder
        raise OutputError(f"Cannot create a staging folder in {self.target.parent}; remove the folders named "
                          f"{STAGING_PREFIX}* there that no run is using.")

    @property
    def path(self) -> Path:
        """Where to write the output: the target's name inside the staging folder."""
        return self.folder / self.target.name

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


# -- publishing -------------------------------------------------------------------------------

def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF):  # file systems without fsync on folders
            raise
    finally:
        os.close(fd)


def _fsync_tree(path: Path) -> None:
    if path.is_dir():
        for child in path.rglob("*"):
            if child.is_file():
                _fsync(child)
    _fsync(path)


@contextlib.contextmanager
def directory_lock(folder: PathLike, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` itself (no lock file is left behind).

    ThermoCrop runs writing into the same folder take turns at publishing; where the file
    system has no ``flock`` (some network shares) the step runs unlocked.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + timeout
        locked = False
        while not locked:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OutputError(f"Another ThermoCrop run has been writing in {folder} for over "
                                      f"{timeout:.0f} s; wait for it to finish and run again.") from None
                time.sleep(0.05)
            except OSError as exc:
                log.debug("No lock on %s (%s); publishing unlocked", folder, exc)
                break
        yield
    finally:
        os.close(fd)


def _appeared(target: Path) -> OutputError:
    return OutputError(f"{target} appeared while this run was writing it (another run writing the same output?); "
                       "it was left as it is and this run's result was not written. Choose another output, or "
                       "allow replacing it.")


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``, failing with :func:`_appeared` when ``dst`` exists."""
    try:
        _renameat2(src, dst, _RENAME_NOREPLACE)
        return
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise _appeared(dst) from None
        if exc.errno not in _UNSUPPORTED:
            raise
    if src.is_dir():  # no atomic no-replace rename here: check and rename under the folder lock
        if os.path.lexists(dst):
            raise _appeared(dst)
        os.rename(src, dst)
        return
    try:
        os.link(src, dst)
    except FileExistsError:
        raise _appeared(dst) from None
    os.unlink(src)


def _replace_folder(src: Path, dst: Path, trash: Path) -> Path:
    """Put folder ``src`` in the place of folder ``dst``; returns where the old one now is."""
    try:
        _renameat2(src, dst, _RENAME_EXCHANGE)  # one step: dst is never missing
        return src
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
    os.rename(dst, trash)
    os.rename(src, dst)
    return trash


def publish(staged: PathLike, target: PathLike, *, overwrite: bool, staging: Optional[Staging] = None,
            locked: bool = False) -> Path:
    """Move the complete, checked ``staged`` file or folder to ``target``.

    Without ``overwrite`` the move fails (``OutputError``) when ``target`` exists, even when
    it appeared after the preflight: the check and the move are one system call. With
    ``overwrite`` an existing file is replaced by one rename; an existing folder is exchanged
    with the new one and then removed. An empty folder at ``target`` (as Processing creates
    for folder outputs) counts as absent.

    Args:
        staged: the finished output, inside ``staging``'s folder.
        target: where it goes.
        overwrite: allow replacing an existing target.
        staging: the staging area (receives a replaced folder before it is deleted).
        locked: the caller holds :func:`directory_lock` on the target's folder already.

    Raises:
        OutputError: the target exists without ``overwrite``, or the move failed.
    """
    staged, target = Path(staged), Path(target)
    _fsync_tree(staged)
    try:
        with contextlib.nullcontext() if locked else directory_lock(target.parent):
            if staged.is_dir() and target.is_dir() and not any(target.iterdir()):
                with contextlib.suppress(OSError):
                    target.rmdir()
            if not os.path.lexists(target):
                _rename_noreplace(staged, target)
            elif not overwrite:
                raise _appeared(target)
            elif staged.is_dir():
                if not target.is_dir():
                    raise OutputError(f"{target} is a file; a folder cannot replace it.")
                trash = (staging.folder if staging else staged.parent) / f"replaced-{target.name}"
                shutil.rmtree(_replace_folder(staged, target, trash), ignore_errors=True)
            else:
                if target.is_dir():
                    raise OutputError(f"{target} is a folder; a file cannot replace it.")
                with sqlite_writers_held(target) if is_sqlite_file(target) else contextlib.nullcontext():
                    os.replace(staged, target)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"Could not move the finished output into place at {target} ({exc.strerror}); "
                          "nothing there was changed.") from None
    _fsync(target.parent)
    return target


def publish_parts(pairs: Sequence[tuple[PathLike, PathLike]], *, overwrite: bool,
                  stale: Sequence[PathLike] = ()) -> None:
    """Publish the files of a multi-file output (a shapefile's .shp, .shx, .dbf, ...) together.

    Without ``overwrite`` each part is moved with a no-replace rename and the parts already
    moved are taken back when one fails. With ``overwrite`` the parts are replaced one by one
    (the main file last) and ``stale`` files of the old output that the new one lacks (e.g. an
    old spatial index) are deleted. All of it happens under the folder lock, so two runs
    never interleave their parts.
    """
    pairs = [(Path(a), Path(b)) for a, b in pairs]
    for src, _ in pairs:
        _fsync(src)
    folder = pairs[0][1].parent
    try:
        with directory_lock(folder):
            if not overwrite:
                done: list[Path] = []
                try:
                    for src, dst in pairs:
                        _rename_noreplace(src, dst)
                        done.append(dst)
                except BaseException:
                    for dst in done:
                        with contextlib.suppress(OSError):
                            dst.unlink()
                    raise
            else:
                for src, dst in pairs[1:] + pairs[:1]:
                    os.replace(src, dst)
                for old in stale:
                    with contextlib.suppress(FileNotFoundError):
                        Path(old).unlink()
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"Could not move the finished output into place at {pairs[0][1]} ({exc.strerror}).") \
            from None
    _fsync(folder)


def _check_written(path: Path, what: str) -> None:
    if not path.is_file():
        raise OutputError(f"Writing the {what} {path.name} produced no file; nothing was written.")
    if path.stat().st_size == 0:
        raise OutputError(f"Writing the {what} {path.name} produced an empty file; nothing was written.")


@contextlib.contextmanager
def staged_file(path: PathLike, *, overwrite: bool = True, what: str = "output",
                verify: Optional[Callable[[Path], None]] = None) -> Iterator[Path]:
    """Yield a temporary path to write ``path``'s content to; publish it when the block ends.

    The file is checked (it exists, is not empty, ``verify(tmp)`` passes) and then renamed to
    ``path``; on any error nothing at ``path`` changes and the temporary file is removed.
    Errors of the operating system while writing (a full disk, a size limit) become
    ``OutputError``.

    Example::

        with staged_file(out / "metrics.json") as tmp:
            tmp.write_text(text)
    """
    target = Path(path)
    if not overwrite and os.path.lexists(target):  # there before this run: not a race (``_appeared``)
        raise OutputError(f"The {what} {target} already exists; it was left as it is and nothing was written. "
                          "Choose another output, or allow replacing it.")
    with Staging(target) as staging:
        try:
            yield staging.path
            _check_written(staging.path, what)
            if verify is not None:
                verify(staging.path)
        except OSError as exc:
            raise OutputError(f"Writing the {what} {target} failed ({exc.strerror or exc}); the disk may be full. "
                              "Nothing was written there.") from exc
        publish(staging.path, target, overwrite=overwrite, staging=staging)


def write_bytes(path: PathLike, data: bytes, *, overwrite: bool = True, what: str = "output") -> Path:
    """Write ``data`` to ``path`` through :func:`staged_file`, checking the bytes that landed."""

    def same_bytes(tmp: Path) -> None:
        if tmp.stat().st_size != len(data) or tmp.read_bytes() != data:
            raise OutputError(f"The {what} {path} did not read back as written; nothing was written.")

    with staged_file(path, overwrite=overwrite, what=what, verify=same_bytes) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def write_text(path: PathLike, text: str, *, overwrite: bool = True, what: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`write_bytes`."""
    return write_bytes(path, text.encode("utf-8"), overwrite=overwrite, what=what)
