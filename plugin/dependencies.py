"""The Python packages ThermoCrop needs, which are missing, and the plugin-owned folder they are
installed into (``dependency_install.py`` installs them; ``python_interpreter.py`` finds QGIS's Python).

The pip-installable requirements are the ``[project] dependencies`` of the plugin folder's
``pyproject.toml`` (shipped in the zip), so the plugin, ``make setup`` and the command line
install from one list. Nothing here touches the network until the user asks for the installer;
the check at start only looks for importable modules, so QGIS starts fast even without torch.
The installer runs pip with the interpreter QGIS itself runs on (found from ``sys.prefix`` and
the known layouts of OSGeo4W, the macOS bundle and Linux packages, never from the PATH), into a
folder named after that Python's version that goes on ``sys.path`` before the system's
site-packages, and then imports every requirement in a new interpreter with that path before
it says the packages are installed. See docs/install.md for what goes where per platform.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import platform
import re
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from ..core.errors import DependencyError
from .i18n import tr
from .python_interpreter import no_window, python_executable

log = logging.getLogger(__name__)

DEPENDENCY_FOLDER_NAME = "thermocrop-packages"
MARKER_NAME = "thermocrop-install.json"
MIN_PYTHON = (3, 9)
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
"""The project file in the plugin folder; its ``[project] dependencies`` are what pip installs."""

COMMAND_LINE_ONLY = ("dask", "distributed", "bokeh")
"""Dependencies of partitioned runs (``thermocrop ... --workers``), which only the command line
starts; the installer leaves them out."""
MODEL_PACKAGES = ("torch", "safetensors")
"""Listed first: without them nothing classifies."""
IMPORT_NAMES = {"pystac-client": ("pystac_client", "pystac")}
"""Modules checked for a project whose import name differs from its project name, or which
brings another module ThermoCrop imports itself (pystac comes with pystac-client)."""


# -- the project's dependencies -------------------------------------------------------------------

_STRING_OR_COMMENT = re.compile(r'"((?:[^"\\]|\\.)*)"|#[^\n]*')


def _dependencies_by_hand(text: str) -> list[str]:
    # Pythons before 3.11 have no tomllib; the dependencies array is a list of double-quoted
    # strings, with comments between them.
    section = re.search(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    array = section and re.search(r"^dependencies\s*=\s*\[(.*?)^\]", section.group(1), re.M | re.S)
    if not array:
        raise DependencyError(tr("pyproject.toml has no [project] dependencies list."))
    return [m.group(1) for m in _STRING_OR_COMMENT.finditer(array.group(1)) if m.group(1) is not None]


def project_dependencies(text: str) -> list[str]:
    """The ``[project] dependencies`` of a ``pyproject.toml`` text, in their order.

    Raises:
        DependencyError: the text has no such list.
    """
    try:
        import tomllib
    except ImportError:  # Python 3.9 and 3.10 (QGIS 3.22-3.34 on Windows)
        return _dependencies_by_hand(text)
    try:
        return list(tomllib.loads(text)["project"]["dependencies"])
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise DependencyError(tr("pyproject.toml has no readable [project] dependencies list: {error}").format(
            error=exc)) from exc


def project_name(spec: str) -> str:
    """The normalised project name of a pip requirement (``pystac-client==0.9.1`` -> ``pystac-client``)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    if not match:
        raise DependencyError(tr("{spec!r} in pyproject.toml is not a pip requirement.").format(spec=spec))
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def read_project_dependencies(path: Path = PYPROJECT) -> list[str]:
    """The dependencies of the plugin folder's ``pyproject.toml``.

    Raises:
        DependencyError: the file is missing or holds no dependencies list.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DependencyError(tr("{path} cannot be read ({error}); reinstall the ThermoCrop plugin.").format(
            path=path, error=exc)) from exc
    return project_dependencies(text)


PROJECT_DEPENDENCIES: tuple[str, ...] = tuple(read_project_dependencies())


def _pinned_version(name: str, dependencies: Sequence[str] = PROJECT_DEPENDENCIES) -> str:
    for spec in dependencies:
        if project_name(spec) == name:
            match = re.search(r"==\s*([^\s,;]+)", spec)
            if match:
                return match.group(1)
    raise DependencyError(tr("pyproject.toml pins no version of {name}.").format(name=name))


# -- torch for this Python -----------------------------------------------------------------------

TESTED_TORCH = _pinned_version("torch")
"""The torch version the project is developed and tested with (pinned in pyproject.toml)."""

# The newest torch with CPython wheels on PyPI per case, where it is older than TESTED_TORCH
# (looked up with `pip index versions torch --python-version X --platform Y`): torch 2.8.0 is the
# last release for Python 3.9 (QGIS 3.22-3.30 on Windows ship Python 3.9); Intel Macs end at
# torch 2.2.2 (Python 3.9-3.12); for Apple silicon, wheels after 2.11.0 need macOS 14.
TORCH_PYTHON39 = "2.8.0"
TORCH_MACOS_INTEL = "2.2.2"
TORCH_MACOS_BEFORE_14 = "2.11.0"


def torch_requirement(python: tuple[int, int] = sys.version_info[:2], system: Optional[str] = None,
                      machine: Optional[str] = None, macos: Optional[tuple[int, int]] = None) -> str:
    """The pip requirement of a torch with wheels for this interpreter and platform.

    Args:
        python: (major, minor) of the interpreter pip runs on.
        system: ``platform.system()`` (Windows, Darwin, Linux); default: this machine's.
        machine: ``platform.machine()`` (AMD64, x86_64, arm64, aarch64); default: this machine's.
        macos: (major, minor) of macOS; default: this machine's when on macOS.

    Raises:
        DependencyError: no torch wheels exist for this Python and platform.
    """
    system = system or platform.system()
    machine = (machine or platform.machine()).lower()
    if python < MIN_PYTHON:
        raise DependencyError(tr("ThermoCrop needs Python 3.9 or newer; this QGIS runs Python {version}. "
                                 "Install QGIS 3.22 or newer.").format(version=f"{python[0]}.{python[1]}"))
    if system == "Windows" and machine in ("arm64", "aarch64"):
        raise DependencyError(tr("PyTorch publishes no wheels for Windows on ARM; run QGIS for x86-64 "
                                 "(it runs emulated on Windows on ARM)."))
    if system == "Darwin":
        if machine == "x86_64":
            if python > (3, 12):
                raise DependencyError(tr("PyTorch's last release for Intel Macs (torch {torch}) has no wheels "
                                         "for Python {version}.").format(torch=TORCH_MACOS_INTEL,
                                                                         version=f"{python[0]}.{python[1]}"))
            return f"torch=={TORCH_MACOS_INTEL}"
        if macos is None:
            release = platform.mac_ver()[0]
            macos = tuple(int(p) for p in release.split(".")[:2]) if release else (14, 0)
            macos = macos if len(macos) == 2 else (macos[0], 0)
        if python == (3, 9):
            return f"torch=={TORCH_PYTHON39}"
        if macos < (14, 0):
            return f"torch=={TORCH_MACOS_BEFORE_14}"
    if python == (3, 9):
        return f"torch=={TORCH_PYTHON39}"
    return f"torch=={TESTED_TORCH}"


@dataclass(frozen=True)
class Requirement:
    """One Python package the plugin needs.

    Attributes:
        module: the name to import.
        pip: the pip requirement, or "" when it must come from QGIS's installer or the system
            (packages linked to GDAL must use QGIS's own GDAL).
        system_hint: how to get it when pip is not the way.
    """

    module: str
    pip: str = ""
    system_hint: str = ""


def _system_hint(module: str, system: str) -> str:
    """How to get a GDAL-linked package (or one QGIS ships) on this platform."""
    osgeo4w = {"rasterio": "python3-rasterio", "geopandas": "python3-geopandas",
               "numpy": "python3-numpy", "matplotlib": "python3-matplotlib",
               "netCDF4": "python3-netcdf4"}
    debian = {"rasterio": "python3-rasterio", "geopandas": "python3-geopandas", "numpy": "python3-numpy",
              "xarray": "python3-xarray", "netCDF4": "python3-netcdf4", "matplotlib": "python3-matplotlib"}
    if system == "Windows":
        return tr("install the OSGeo4W package {package} (built on QGIS's GDAL) with the OSGeo4W setup of your "
                  "QGIS: run its bin\\setup.bat (or the OSGeo4W network installer, Advanced Install) as "
                  "administrator, e.g. setup.bat -q -k -P {package}").format(
            package=osgeo4w.get(module, "python3-" + module.lower()))
    if system == "Darwin":
        return tr("it comes with the official QGIS macOS package; reinstall QGIS from qgis.org (a QGIS built "
                  "with Homebrew or MacPorts needs its own package, e.g. {package})").format(
            package="py3-" + module.lower())
    return tr("Debian/Ubuntu: apt install {package}").format(package=debian.get(module, "python3-" + module.lower()))


def requirements_for(system: Optional[str] = None, python: tuple[int, int] = sys.version_info[:2],
                     machine: Optional[str] = None,
                     dependencies: Sequence[str] = PROJECT_DEPENDENCIES) -> tuple[Requirement, ...]:
    """What ThermoCrop needs on ``system``: the pip requirements of ``pyproject.toml`` (torch as
    :func:`torch_requirement` finds for this Python; the command line's own left out), then the
    platform's route for packages that link GDAL (rasterio, geopandas) or that QGIS ships (numpy)."""
    system = system or platform.system()
    try:
        torch = torch_requirement(python, system, machine)
    except DependencyError as exc:
        torch_req = Requirement("torch", "", str(exc))
    else:
        torch_req = Requirement("torch", torch)
    from_pip = []
    names = [project_name(spec) for spec in dependencies]
    for name, spec in sorted(zip(names, dependencies), key=lambda item: item[0] not in MODEL_PACKAGES):
        if name in COMMAND_LINE_ONLY:
            continue
        if name == "torch":
            from_pip.append(torch_req)
            continue
        for module in IMPORT_NAMES.get(name, (name.replace("-", "_"),)):
            from_pip.append(Requirement(module, spec.strip()))
    # On Windows and macOS xarray, netCDF4 (self-contained wheels) and matplotlib install from
    # PyPI when QGIS lacks them; on Linux the distribution's packages match its libraries.
    pip_ok = system in ("Windows", "Darwin")
    return (
        *from_pip,
        Requirement("numpy", "", tr("numpy comes with QGIS; reinstall QGIS")),
        Requirement("rasterio", "", _system_hint("rasterio", system)),
        Requirement("geopandas", "", _system_hint("geopandas", system)),
        Requirement("xarray", "xarray>=0.20" if pip_ok else "", _system_hint("xarray", system)),
        Requirement("netCDF4", "netCDF4>=1.5" if pip_ok else "", _system_hint("netCDF4", system)),
        Requirement("matplotlib", "matplotlib>=3.3" if pip_ok else "", _system_hint("matplotlib", system)),
    )


REQUIREMENTS: tuple[Requirement, ...] = requirements_for()


def _importable(module: str) -> bool:
    # find_spec does not run the module, so the check costs milliseconds even for torch.
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        # ValueError: a module blocked in sys.modules (set to None) or half-imported.
        return False


def missing_requirements(requirements: Sequence[Requirement] = REQUIREMENTS) -> list[Requirement]:
    """The requirements that cannot be imported right now."""
    return [req for req in requirements if sys.modules.get(req.module, 0) is None
            or not _importable(req.module)]


GEO_STACK = ("numpy", "rasterio", "geopandas", "xarray", "netCDF4")
"""What every Processing algorithm reads its inputs with."""


def missing_for_processing(runs_model: bool,
                           requirements: Sequence[Requirement] = REQUIREMENTS) -> list[Requirement]:
    """What a Processing algorithm cannot start without: the geo stack, and torch and safetensors
    where it runs a model. The packages of single features (catalogue search, CDS weather, Parquet
    and TimeMatch files, progress bars) are named when the feature is used and fails to import."""
    needed = GEO_STACK + (MODEL_PACKAGES if runs_model else ())
    return missing_requirements([req for req in requirements if req.module in needed])


# -- the package folder --------------------------------------------------------------------------

def version_folder_name(python: tuple[int, int] = sys.version_info[:2]) -> str:
    """``python3.9``: the sub-folder for one Python version."""
    return f"python{python[0]}.{python[1]}"


def dependency_root(profile_dir: Optional[str] = None) -> Path:
    """``<profile>/python/thermocrop-packages`` (holds one folder per Python version)."""
    if profile_dir is None:
        from qgis.core import QgsApplication

        profile_dir = QgsApplication.qgisSettingsDirPath()
    return Path(profile_dir) / "python" / DEPENDENCY_FOLDER_NAME


def dependency_folder(profile_dir: Optional[str] = None,
                      python: tuple[int, int] = sys.version_info[:2]) -> Path:
    """The plugin-owned package folder for this Python inside the QGIS profile (not created here):
    ``<profile>/python/thermocrop-packages/python3.X``."""
    return dependency_root(profile_dir) / version_folder_name(python)


def other_dependency_folders(profile_dir: Optional[str] = None) -> list[Path]:
    """What this QGIS does not use under ``thermocrop-packages`` and may be deleted: the folders of
    other Python versions, and files installed straight into ``thermocrop-packages`` by ThermoCrop
    0.1 (before the folders were named after the Python version)."""
    root = dependency_root(profile_dir)
    if not root.is_dir():
        return []
    current = version_folder_name()
    return [p for p in sorted(root.iterdir())
            if p.name != current and not (p.is_dir() and re.fullmatch(r"python\d+\.\d+", p.name)
                                          and not any(p.iterdir()))]


def _site_folders() -> set[str]:
    folders = set(site.getsitepackages()) if hasattr(site, "getsitepackages") else set()
    folders.add(site.getusersitepackages())
    return {os.path.normcase(os.path.abspath(f)) for f in folders}


def place_before_site_packages(entries: Sequence[str], path: Sequence[str],
                               site_folders: Optional[set[str]] = None) -> list[str]:
    """``path`` with ``entries`` moved (or added) just before its first site-packages folder.

    The installer's copies (torch's newer typing_extensions, say) must win over older ones in
    the system's site-packages (Debian's dist-packages), so the folder cannot go at the end
    where ``site.addsitedir`` puts it. Without any site-packages folder on ``path`` the entries
    go at its end.
    """
    site_folders = _site_folders() if site_folders is None else site_folders
    rest = [p for p in path if p not in entries]
    index = next((i for i, p in enumerate(rest) if os.path.normcase(os.path.abspath(p or ".")) in site_folders),
                 len(rest))
    return rest[:index] + list(entries) + rest[index:]


def activate_dependency_folder(folder: Optional[Path] = None) -> bool:
    """Make packages installed by the installer importable, ahead of the system's; True when the
    folder exists and is used.

    ``site.addsitedir`` adds the folder and runs its ``.pth`` files (setuptools' and others' rely
    on them); the folder and what its ``.pth`` files added are then moved before the first
    site-packages folder of ``sys.path``. A folder whose marker names another Python version is
    not used.
    """
    folder = folder or dependency_folder()
    if not folder.is_dir():
        return False
    marker = folder / MARKER_NAME
    if marker.is_file():
        try:
            installed_for = tuple(json.loads(marker.read_text())["python"][:2])
        except (ValueError, KeyError, TypeError):
            installed_for = None
        if installed_for and installed_for != tuple(sys.version_info[:2]):
            log.warning("%s holds packages for Python %s, not %s; it is not used.", folder,
                        ".".join(map(str, installed_for)), platform.python_version())
            return False
    before = list(sys.path)
    if str(folder) in before:
        added = [str(folder)]
    else:
        site.addsitedir(str(folder))
        added = [p for p in sys.path if p not in before]
    sys.path[:] = place_before_site_packages(added, sys.path)
    importlib.invalidate_caches()
    return True


def search_path(folder: Path, path: Optional[Sequence[str]] = None) -> list[str]:
    """``sys.path`` (or ``path``) as it is once ``folder`` is activated (its ``.pth`` files aside)."""
    path = list(sys.path if path is None else path)
    return place_before_site_packages([str(folder)], path)


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's own index of CPU-only wheels (PyPI's Linux wheels carry several GB of CUDA)."""


def has_nvidia_gpu() -> bool:
    """Whether an NVIDIA driver is loaded (Linux) or its tool is on the PATH."""
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def pip_options(missing: Sequence[Requirement], gpu: Optional[bool] = None) -> list[str]:
    """Extra pip options: on Linux without an NVIDIA GPU, torch from its CPU-only index."""
    if gpu is None:
        gpu = has_nvidia_gpu()
    wants_torch = any(req.module == "torch" and req.pip for req in missing)
    if wants_torch and sys.platform.startswith("linux") and not gpu:
        return ["--extra-index-url", TORCH_CPU_INDEX]
    return []


def describe_missing(missing: Sequence[Requirement], folder: Optional[Path] = None,
                     requirements: Sequence[Requirement] = REQUIREMENTS) -> str:
    """A message saying what is missing and how to install it.

    With nothing missing (every module is found), ``requirements`` are imported in a new Python
    process with this ``sys.path`` (:func:`import_failures`) and the message says what that
    found: only a clean import is reported as everything installed.
    """
    if not missing:
        return describe_imports([req.module for req in requirements])
    lines = [tr("ThermoCrop needs these Python packages, which are missing:")]
    pip_specs = []
    for req in missing:
        if req.pip:
            lines.append(f"  - {req.module} (pip: {req.pip})")
            pip_specs.append(req.pip)
        else:
            lines.append(f"  - {req.module}: {req.system_hint}")
    pip_specs = list(dict.fromkeys(pip_specs))
    if pip_specs:
        try:
            python = python_executable()
        except DependencyError:
            python = "python3" if os.name != "nt" else "python"
        words = [python, "-m", "pip", "install", *(["--target", str(folder)] if folder else []),
                 *pip_options(missing), *pip_specs]
        lines.append(tr("Install them from the ThermoCrop dock ('Install missing packages'), or run with "
                        "QGIS's Python: {command}").format(command=command_line(words)))
    return "\n".join(lines)


def command_line(words: Sequence[str]) -> str:
    """``words`` as one line to paste into a shell (bash, cmd or PowerShell): a word holding
    anything but letters, digits and ``_ . / : = @ + -`` (a space, ``>=``, ``<``, a comma) in double
    quotes, which none of those shells reads as a redirection or a separator."""
    return " ".join(w if re.fullmatch(r"[A-Za-z0-9_./:=@+-]+", w) else f'"{w}"' for w in words)


# -- checking that the packages import ------------------------------------------------------------

_IMPORT_CHECK = """
import importlib, json, site, sys
path, folder, modules = json.loads(sys.stdin.read())
sys.path[:] = path
if folder:
    site.addsitedir(folder)
failed = {}
for name in modules:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed[name] = "%s: %s" % (type(exc).__name__, exc)
sys.stdout.write("\\nTHERMOCROP-IMPORTS " + json.dumps(failed) + "\\n")
"""


def import_failures(modules: Sequence[str], folder: Optional[Path] = None, executable: Optional[str] = None,
                    path: Optional[Sequence[str]] = None, timeout: float = 600.0) -> dict[str, str]:
    """The ``modules`` that do not import in a new Python process, with their errors.

    The process is QGIS's interpreter (:func:`python_executable`) started in isolated mode with
    this ``sys.path`` (or ``path``), ``folder`` placed as :func:`activate_dependency_folder`
    places it and its ``.pth`` files run: a module left half-imported in QGIS, or a copy QGIS
    loaded before the installer ran, cannot make the check pass or fail.

    Raises:
        DependencyError: the check itself could not run (no interpreter, a crash, a time-out).
    """
    executable = executable or python_executable()
    search = search_path(folder, path) if folder is not None else list(sys.path if path is None else path)
    request = json.dumps([search, str(folder) if folder is not None else "", list(modules)])
    try:
        proc = subprocess.run([executable, "-I", "-c", _IMPORT_CHECK], input=request, capture_output=True,
                              text=True, timeout=timeout, encoding="utf-8", errors="replace", **no_window())
    except (OSError, subprocess.SubprocessError) as exc:
        raise DependencyError(tr("Could not check the packages with {python}: {error}").format(
            python=executable, error=exc)) from exc
    found = re.search(r"^THERMOCROP-IMPORTS (.*)$", proc.stdout, re.M)
    if proc.returncode != 0 or not found:
        raise DependencyError(tr("Checking the packages with {python} stopped (exit code {code}): {output}").format(
            python=executable, code=proc.returncode, output=(proc.stderr or proc.stdout).strip()[-600:]))
    return json.loads(found.group(1))


def describe_imports(modules: Sequence[str], folder: Optional[Path] = None) -> str:
    """Whether ``modules`` import in a new Python process (:func:`import_failures`), in words."""
    try:
        failed = import_failures(modules, folder)
    except DependencyError as exc:
        return tr("ThermoCrop could not check that its packages import: {error}").format(error=exc)
    if failed:
        lines = [tr("These Python packages are installed but do not import (checked in a new Python process "
                    "with QGIS's path):")]
        lines += [f"  - {module}: {error}" for module, error in failed.items()]
        return "\n".join(lines)
    return tr("All ThermoCrop requirements are installed: {modules} import in a new Python process with QGIS's "
              "path. If this QGIS session still fails to import one, it loaded an older copy before they were "
              "installed: restart QGIS.").format(modules=", ".join(modules))
