"""Checks the Python packages ThermoCrop needs and installs missing ones into a plugin-owned folder.

Nothing here touches the network until the user asks for the installer; the check only looks
for importable modules, so QGIS starts fast even without torch.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

log = logging.getLogger(__name__)

DEPENDENCY_FOLDER_NAME = "thermocrop-packages"


@dataclass(frozen=True)
class Requirement:
    """One Python package the plugin needs.

    Attributes:
        module: the name to import.
        pip: the pinned pip requirement, or "" when it must come from the system (QGIS's GDAL).
        system_hint: how to get it when pip is not the way.
    """

    module: str
    pip: str = ""
    system_hint: str = ""


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("torch", "torch==2.13.0"),
    Requirement("safetensors", "safetensors>=0.4"),
    Requirement("numpy", "", "numpy comes with QGIS"),
    Requirement("rasterio", "", "install rasterio built on QGIS's GDAL (Debian: apt install python3-rasterio)"),
    Requirement("geopandas", "", "Debian: apt install python3-geopandas"),
    Requirement("xarray", "", "Debian: apt install python3-xarray"),
    Requirement("netCDF4", "", "Debian: apt install python3-netcdf4"),
    Requirement("matplotlib", "", "Debian: apt install python3-matplotlib"),
)


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


def dependency_folder(profile_dir: Optional[str] = None) -> Path:
    """The plugin-owned package folder inside the QGIS profile (not created here)."""
    if profile_dir is None:
        from qgis.core import QgsApplication

        profile_dir = QgsApplication.qgisSettingsDirPath()
    return Path(profile_dir) / "python" / DEPENDENCY_FOLDER_NAME


def activate_dependency_folder(folder: Optional[Path] = None) -> bool:
    """Make packages installed by :class:`InstallTask` importable; True when the folder exists.

    ``site.addsitedir`` is the standard way to add a package folder (it also honours ``.pth``
    files that torch's wheels rely on); it is only done for the plugin's own folder.
    """
    folder = folder or dependency_folder()
    if not folder.is_dir():
        return False
    if str(folder) not in sys.path:
        site.addsitedir(str(folder))
        importlib.invalidate_caches()
    return True


def python_executable() -> str:
    """The Python interpreter QGIS runs on (inside QGIS ``sys.executable`` may be QGIS itself)."""
    exe = Path(sys.executable)
    if exe.name.startswith("python"):
        return str(exe)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in (version, "python3"):
        found = shutil.which(name)
        if found:
            return found
    return str(Path(sys.base_prefix) / "bin" / "python3")


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


def install_command(missing: Sequence[Requirement], folder: Path,
                    gpu: Optional[bool] = None) -> tuple[list[str], str]:
    """The pip command installing the pip-installable ``missing`` packages into ``folder``.

    numpy is pinned to the version QGIS already uses so that pip never replaces it.

    Returns:
        The command and the text of the constraints file it reads (``folder/constraints.txt``).
    """
    import numpy

    specs = [req.pip for req in missing if req.pip]
    constraints = folder / "constraints.txt"
    return [python_executable(), "-m", "pip", "install", "--disable-pip-version-check",
            "--no-input", "--upgrade-strategy", "only-if-needed", "--target", str(folder),
            "-c", str(constraints), *pip_options(missing, gpu), *specs], f"numpy=={numpy.__version__}\n"


def describe_missing(missing: Sequence[Requirement], folder: Optional[Path] = None) -> str:
    """A message saying what is missing and how to install it."""
    if not missing:
        return "All ThermoCrop requirements are installed."
    lines = ["ThermoCrop cannot classify yet; these Python packages are missing:"]
    pip_specs = []
    for req in missing:
        if req.pip:
            lines.append(f"  - {req.module} (pip: {req.pip})")
            pip_specs.append(req.pip)
        else:
            lines.append(f"  - {req.module}: {req.system_hint}")
    if pip_specs:
        target = f" --target {folder}" if folder else ""
        options = "".join(f" {o}" for o in pip_options(missing))
        lines.append("Install them from the ThermoCrop dock ('Install missing packages'), or run: "
                     f"python3 -m pip install{target}{options} {' '.join(pip_specs)}")
    return "\n".join(lines)


def run_install(missing: Sequence[Requirement], folder: Path, cancelled=lambda: False) -> tuple[int, str]:
    """Run pip into ``folder``; polls ``cancelled`` and stops pip when it returns True.

    Returns:
        pip's exit status (-1 when cancelled) and its combined output.
    """
    folder.mkdir(parents=True, exist_ok=True)
    command, constraints = install_command(missing, folder)
    (folder / "constraints.txt").write_text(constraints)
    env = dict(os.environ, PIP_NO_WARN_SCRIPT_LOCATION="1")
    log.info("Installing %s", " ".join(command))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    while True:
        try:
            output, _ = proc.communicate(timeout=0.5)
            return proc.returncode, output
        except subprocess.TimeoutExpired:
            if cancelled():
                proc.kill()
                output, _ = proc.communicate()
                return -1, output


def make_install_task(missing: Sequence[Requirement], folder: Path, on_done=None):
    """A ``QgsTask`` running :func:`run_install` in the background.

    ``on_done(returncode, output)`` is called in the main thread when it ends; set the task's
    ``on_done`` attribute to None to stop that (a closing dock does).
    """
    from qgis.core import QgsTask

    class InstallTask(QgsTask):
        def __init__(self) -> None:
            super().__init__("Installing ThermoCrop packages", QgsTask.CanCancel)
            self.returncode, self.output = None, ""
            self.on_done = on_done

        def run(self) -> bool:
            self.returncode, self.output = run_install(missing, folder, self.isCanceled)
            return self.returncode == 0

        def finished(self, ok: bool) -> None:
            if ok:
                activate_dependency_folder(folder)
            if self.on_done is not None:
                self.on_done(self.returncode, self.output)

    return InstallTask()
