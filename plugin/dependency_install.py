"""Installs missing packages into the plugin-owned folder: pip run with QGIS's own interpreter
(bootstrapped with ensurepip when it lacks pip), its output streamed and its progress parsed,
duplicates of the system's packages removed, every requirement imported in a new process before
the install counts as done, all in a ``QgsTask`` for the dock."""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..core.errors import DependencyError
from .dependencies import (
    MARKER_NAME,
    REQUIREMENTS,
    Requirement,
    activate_dependency_folder,
    import_failures,
    pip_options,
)
from .i18n import tr
from .python_interpreter import no_window, python_executable

log = logging.getLogger(__name__)

# -- pip -----------------------------------------------------------------------------------------

def pip_version(executable: str, timeout: float = 120.0) -> Optional[tuple[int, ...]]:
    """The version of ``executable -m pip``, or None when pip is not there."""
    try:
        proc = subprocess.run([executable, "-m", "pip", "--version"], capture_output=True, text=True,
                              timeout=timeout, **no_window())
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"pip (\d+(?:\.\d+)*)", proc.stdout.strip()) if proc.returncode == 0 else None
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def ensure_pip(executable: str, on_output: Optional[Callable[[str], None]] = None) -> tuple[int, ...]:
    """pip's version, bootstrapping pip with ``ensurepip`` (into the user's site folder, since
    QGIS's own folder is often read-only) when the interpreter lacks it.

    Raises:
        DependencyError: pip is missing and ensurepip cannot provide it.
    """
    version = pip_version(executable)
    if version is not None:
        return version
    say = on_output or (lambda line: None)
    output = []
    for extra in (["--user"], []):
        say(tr("pip is missing; running {command}").format(
            command=f"{executable} -m ensurepip {' '.join(extra)}".rstrip()))
        try:
            proc = subprocess.run([executable, "-m", "ensurepip", "--upgrade", *extra], capture_output=True,
                                  text=True, timeout=600, **no_window())
            output.append(proc.stdout + proc.stderr)
        except (OSError, subprocess.SubprocessError) as exc:
            output.append(str(exc))
            continue
        version = pip_version(executable)
        if version is not None:
            return version
    raise DependencyError(tr(
        "{python} has no pip and ensurepip could not install it ({output}). Windows: add the OSGeo4W package "
        "python3-pip; Debian/Ubuntu: apt install python3-pip.").format(python=executable,
                                                                      output=output[-1].strip()[-300:]))


IMPORT_FAILED = -3
""":func:`run_install`'s status when pip succeeded but a requirement does not import."""

RAW_PROGRESS = (24, 1)
"""pip versions from here on print 'Progress N of M' lines with ``--progress-bar raw``."""


def install_command(missing: Sequence[Requirement], folder: Path, gpu: Optional[bool] = None,
                    executable: Optional[str] = None, pip: Optional[tuple[int, ...]] = None
                    ) -> tuple[list[str], str]:
    """The pip command installing the pip-installable ``missing`` packages into ``folder``.

    numpy is pinned to the version QGIS already uses so that pip never replaces it.

    Returns:
        The command and the text of the constraints file it reads (``folder/constraints.txt``).
    """
    import numpy

    specs = list(dict.fromkeys(req.pip for req in missing if req.pip))
    constraints = folder / "constraints.txt"
    progress = ["--progress-bar", "raw"] if pip is not None and pip >= RAW_PROGRESS else []
    # --no-compile: Python compiles what QGIS imports on first use, instead of pip compiling all
    # of torch's thousands of modules, most of which ThermoCrop never imports.
    return [executable or python_executable(), "-m", "pip", "install", "--disable-pip-version-check",
            "--no-input", "--no-compile", "--upgrade-strategy", "only-if-needed", *progress, "--target", str(folder),
            "-c", str(constraints), *pip_options(missing, gpu), *specs], f"numpy=={numpy.__version__}\n"


def remove_duplicates(folder: Path, path: Sequence[str]) -> list[str]:
    """Delete from ``folder`` the distributions that come first on the rest of ``path`` in the same
    version, and return their names.

    ``pip install --target`` installs every dependency again, even one the system has; the copy
    QGIS already imports in that version (its numpy, held there by the constraints file) stays
    the only one, so that QGIS and the packages in ``folder`` share it.
    """
    from importlib import metadata

    own = os.path.normcase(os.path.abspath(folder))
    others = [p for p in path if os.path.normcase(os.path.abspath(p or ".")) != own]
    present: dict[str, str] = {}
    for dist in metadata.distributions(path=others):
        name = dist.metadata["Name"]
        if name:
            present.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
    removed = []
    root = folder.resolve()
    for dist in list(metadata.distributions(path=[str(folder)])):
        name, version = dist.metadata["Name"] or "", dist.version
        if not name or present.get(re.sub(r"[-_.]+", "-", name).lower()) != version:
            continue
        folders = set()
        for entry in dist.files or ():
            parts = Path(str(entry)).parts
            # --target moves the scripts pip wrote to ../../bin into <folder>/bin.
            file = root.joinpath("bin", *parts[3:]) if parts[:3] == ("..", "..", "bin") else (root / entry).resolve()
            if root in file.parents and file.is_file():
                file.unlink()
                folders.add(file.parent)
        for sub in sorted(folders, key=lambda f: len(f.parts), reverse=True):
            while sub != root and sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
                sub = sub.parent
        removed.append(f"{name} {version}")
    return removed


_PROGRESS_RE = re.compile(r"^Progress (\d+) of (\d+)$")
_DOWNLOAD_RE = re.compile(r"^\s*Downloading (\S+)")


class PipProgress:
    """Turns pip's output lines into a fraction: each download's 'Progress N of M' lines (pip 24.1+
    with ``--progress-bar raw``) move it, weighted by the sizes seen so far."""

    def __init__(self) -> None:
        self.done_bytes = 0
        self.current = (0, 0)
        self.files: list[str] = []

    @staticmethod
    def is_progress(line: str) -> bool:
        return _PROGRESS_RE.match(line.strip()) is not None

    def feed(self, line: str) -> Optional[float]:
        """The fraction of the bytes of the downloads seen so far after ``line``; None for lines
        that move nothing (other lines, or a download of unknown size)."""
        match = _PROGRESS_RE.match(line.strip())
        if match:
            current, total = int(match.group(1)), int(match.group(2))
            if current < self.current[0]:  # the next download started
                self.done_bytes += self.current[1]
            self.current = (current, total)
            seen = self.done_bytes + total
            return (self.done_bytes + current) / seen if seen else None
        download = _DOWNLOAD_RE.match(line)
        if download:
            self.files.append(download.group(1))
        return None


def run_install(missing: Sequence[Requirement], folder: Path, cancelled=lambda: False,
                on_output: Optional[Callable[[str], None]] = None,
                on_progress: Optional[Callable[[float], None]] = None,
                executable: Optional[str] = None) -> tuple[int, str]:
    """Run pip into ``folder``, passing each output line to ``on_output`` as it comes and download
    fractions to ``on_progress``; polls ``cancelled`` and stops pip when it returns True.

    After pip succeeded, what QGIS's Python already has in the same version is removed from
    ``folder`` again (:func:`remove_duplicates`), and every pip requirement is imported in a new
    Python process with ``folder`` placed as at QGIS's start (:func:`import_failures`).

    Returns:
        pip's exit status (-1 when cancelled, -2 when no interpreter or pip could be found,
        ``IMPORT_FAILED`` when pip succeeded but a requirement does not import) and the output.
    """
    folder.mkdir(parents=True, exist_ok=True)
    say = on_output or (lambda line: None)
    try:
        executable = executable or python_executable()
        version = ensure_pip(executable, say)
    except DependencyError as exc:
        say(str(exc))
        return -2, str(exc)
    command, constraints = install_command(missing, folder, executable=executable, pip=version)
    (folder / "constraints.txt").write_text(constraints)
    env = dict(os.environ, PIP_NO_WARN_SCRIPT_LOCATION="1", PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    log.info("Installing %s", " ".join(command))
    say("$ " + " ".join(command))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            encoding="utf-8", errors="replace", bufsize=1, **no_window())
    lines: "queue.Queue[Optional[str]]" = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\r\n"))
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    output, progress, finished = [], PipProgress(), False
    while not finished:
        try:
            line = lines.get(timeout=0.25)
        except queue.Empty:
            line = ""
        if line is None:
            finished = True
        elif line:
            fraction = progress.feed(line)
            if progress.is_progress(line):
                if fraction is not None and on_progress is not None:
                    on_progress(fraction)
            else:
                output.append(line)
                say(line)
        if cancelled() and proc.poll() is None:
            proc.kill()
            proc.wait()
            reader.join(timeout=5)
            return -1, "\n".join(output)
    returncode = proc.wait()
    reader.join(timeout=5)
    if returncode != 0:
        return returncode, "\n".join(output)
    shared = remove_duplicates(folder, sys.path)
    if shared:
        say(tr("Already in QGIS's Python in the same version, removed from {folder}: {names}").format(
            folder=folder, names=", ".join(shared)))
    (folder / MARKER_NAME).write_text(json.dumps({
        "python": list(sys.version_info[:3]), "interpreter": executable,
        "packages": list(dict.fromkeys(req.pip for req in missing if req.pip)), "shared_with_qgis": shared,
        "installed": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=2))
    modules = list(dict.fromkeys([req.module for req in REQUIREMENTS if req.pip]
                                 + [req.module for req in missing if req.pip]))
    say(tr("Checking that {modules} import in a new Python process …").format(modules=", ".join(modules)))
    try:
        failed = import_failures(modules, folder, executable)
    except DependencyError as exc:
        failed = {tr("(the check)"): str(exc)}
    if failed:
        output.append(tr("pip finished, but these packages do not import in a new Python process with QGIS's "
                         "path:"))
        output += [f"  - {module}: {error}" for module, error in failed.items()]
        say("\n".join(output[-len(failed) - 1:]))
        return IMPORT_FAILED, "\n".join(output)
    say(tr("All of them import."))
    return 0, "\n".join(output)


def describe_install(code: int, output: str) -> str:
    """What the dock says when :func:`run_install` ended with ``code`` (``output`` is its output)."""
    if code == 0:
        return tr("Packages installed; every requirement imports in a new Python process with QGIS's path.")
    if code == IMPORT_FAILED:
        return tr("The packages were installed, but some do not import:\n{tail}").format(
            tail=output[output.rfind(tr("pip finished")):][-900:])
    if code == -1:
        return tr("Installation cancelled.")
    return tr("pip failed ({code}); its output is in the ThermoCrop log:\n{tail}").format(code=code,
                                                                                       tail=output[-600:])


def make_install_task(missing: Sequence[Requirement], folder: Path, on_done=None):
    """A ``QgsTask`` running :func:`run_install` in the background.

    ``on_done(returncode, output)`` is called in the main thread when it ends; set the task's
    ``on_done`` attribute to None to stop that (a closing dock does). While pip runs, every line
    it prints goes to the task's ``outputLine(str)`` signal and the QGIS message log ("ThermoCrop"),
    and download progress (pip 24.1+) to ``progressChanged``.
    """
    from qgis.core import Qgis, QgsMessageLog, QgsTask
    from qgis.PyQt.QtCore import pyqtSignal

    class InstallTask(QgsTask):
        outputLine = pyqtSignal(str)  # noqa: N815 (Qt naming)

        def __init__(self) -> None:
            super().__init__(tr("Installing ThermoCrop packages"), QgsTask.CanCancel)
            self.returncode, self.output = None, ""
            self.on_done = on_done

        def _line(self, line: str) -> None:
            QgsMessageLog.logMessage(line, "ThermoCrop", Qgis.Info)
            self.outputLine.emit(line)

        def run(self) -> bool:
            self.returncode, self.output = run_install(missing, folder, self.isCanceled, on_output=self._line,
                                                       on_progress=lambda f: self.setProgress(100.0 * f))
            return self.returncode == 0

        def finished(self, ok: bool) -> None:
            if ok:
                activate_dependency_folder(folder)
            if self.on_done is not None:
                self.on_done(self.returncode, self.output)

    return InstallTask()
