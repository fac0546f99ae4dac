"""The Python interpreter QGIS runs on, found from ``sys.prefix`` and the known layouts of OSGeo4W,
the macOS bundle and Linux packages (never from the PATH): the one the installer runs pip with and
the import check starts."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ..core.errors import DependencyError
from .i18n import tr


def _is_store_stub(path: Path) -> bool:
    # The Microsoft Store's python.exe placeholders live in ...\Microsoft\WindowsApps.
    return any(part.lower() == "windowsapps" for part in path.parts)


def interpreter_candidates(system: str, executable: Path, prefix: Path, base_prefix: Path,
                           python: tuple[int, int], environ: Optional[dict] = None) -> list[Path]:
    """Where the interpreter of the embedded Python can be, most likely first.

    Inside QGIS ``sys.executable`` is QGIS itself (``qgis-bin.exe``, ``QGIS.app/Contents/MacOS/
    QGIS``) or, where embedded Python guesses it, the first ``python3`` on the PATH (a pyenv shim,
    another Python altogether); ``sys.prefix`` still points at QGIS's Python: OSGeo4W's
    ``<root>\\apps\\Python39``, the bundle's ``Python.framework/Versions/3.9`` (or
    ``Contents/Resources/python``), ``/usr`` on Linux. So ``sys.executable`` is only taken when
    it lies in the prefix (``<prefix>`` or ``<prefix>/bin``), as in a virtual environment.
    """
    major, minor = python
    environ = os.environ if environ is None else environ
    candidates: list[Path] = []
    homes = {root / sub for root in (prefix, base_prefix) for sub in ("", "bin", "Scripts")}
    if executable.name.lower().startswith("python") and executable.parent in homes:
        candidates.append(executable)
    if system == "Windows":
        roots = [prefix, base_prefix]
        # OSGeo4W / the standalone installers: <root>\bin\qgis-bin.exe and <root>\apps\Python39.
        qgis_root = executable.parent.parent
        roots.append(qgis_root / "apps" / f"Python{major}{minor}")
        if environ.get("OSGEO4W_ROOT"):
            roots.append(Path(environ["OSGEO4W_ROOT"]) / "apps" / f"Python{major}{minor}")
        for root in roots:
            candidates += [root / "python.exe", root / f"python{major}.exe"]
    elif system == "Darwin":
        roots = [prefix, base_prefix]
        contents = next((p for p in [executable, *executable.parents] if p.name == "Contents"), None)
        if contents is not None:
            roots += [contents / "Frameworks" / "Python.framework" / "Versions" / f"{major}.{minor}",
                      contents / "MacOS"]
        for root in roots:
            candidates += [root / "bin" / f"python{major}.{minor}", root / "bin" / f"python{major}"]
    else:
        for root in (prefix, base_prefix):
            candidates += [root / "bin" / f"python{major}.{minor}", root / "bin" / f"python{major}"]
    seen, unique = set(), []
    for path in candidates:
        if path not in seen and not _is_store_stub(path):
            seen.add(path)
            unique.append(path)
    return unique


def interpreter_version(executable: Path, timeout: float = 60.0) -> Optional[tuple[int, int]]:
    """(major, minor) reported by running ``executable``, or None when it does not run."""
    try:
        proc = subprocess.run([str(executable), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=timeout, **no_window())
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)", proc.stdout) if proc.returncode == 0 else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def find_interpreter(system: Optional[str] = None, executable: Optional[Path] = None,
                     prefix: Optional[Path] = None, base_prefix: Optional[Path] = None,
                     python: Optional[tuple[int, int]] = None, environ: Optional[dict] = None) -> Path:
    """The Python interpreter QGIS runs on, checked to report the embedded Python's version.

    Raises:
        DependencyError: no candidate exists or none runs as the same Python version.
    """
    system = system or platform.system()
    executable = Path(executable or sys.executable)
    prefix = Path(prefix or sys.prefix)
    base_prefix = Path(base_prefix or sys.base_prefix)
    python = tuple(python or sys.version_info[:2])
    tried = []
    for candidate in interpreter_candidates(system, executable, prefix, base_prefix, python, environ):
        if not candidate.is_file():
            continue
        found = interpreter_version(candidate)
        if found == python:
            return candidate
        tried.append(f"{candidate} ({tr('does not run') if found is None else 'Python %d.%d' % found})")
    detail = tr("; tried {candidates}").format(candidates=", ".join(tried)) if tried else \
        tr(" under {prefix}").format(prefix=prefix)
    raise DependencyError(tr("Cannot find the Python {version} interpreter QGIS runs on{detail}. Install the "
                             "packages by hand (see docs/install.md).").format(
        version=f"{python[0]}.{python[1]}", detail=detail))


def python_executable() -> str:
    """The interpreter QGIS runs on (see :func:`find_interpreter`)."""
    return str(find_interpreter())


def use_for_worker_processes() -> None:
    """Start the processes of a local Dask cluster (multiprocessing's spawn and fork server start
    ``sys.executable``) with the interpreter QGIS runs on (:func:`find_interpreter`).

    Inside QGIS ``sys.executable`` is QGIS itself or the first ``python3`` on the PATH: under
    ``qgis_process`` here a pyenv shim, whose workers failed on the first partition with "numpy.dtype
    size changed" (another Python's numpy under QGIS's packages).

    Raises:
        DependencyError: the interpreter cannot be found.
    """
    import multiprocessing

    multiprocessing.set_executable(python_executable())


def no_window() -> dict:
    # On Windows a console window would flash up for every subprocess started from QGIS.
    if sys.platform == "win32":
        return {"creationflags": getattr(subprocess, "CREATE_NO_WINDOW", 0)}
    return {}
