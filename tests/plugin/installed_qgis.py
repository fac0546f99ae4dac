"""The plugin as analysts install it: the zip unpacked into a fresh QGIS profile and enabled in its
QGIS3.ini, its packages installed by the plugin's own installer (from a local wheel folder that
stands in for the package index), and QGIS started with nothing of the test environment: no
PYTHONPATH, no virtual environment, no QGIS_PLUGINPATH.

The wheel folder is filled once (``pip download`` by QGIS's interpreter, as the installer would
download) and kept between runs under ``$THERMOCROP_WHEELS`` or ``$XDG_CACHE_HOME/thermocrop/
wheels``; every run installs into a new profile.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import pytest

QGIS_INI = "[PythonPlugins]\nthermocrop=true\n\n[qgis]\nshowTips=false\ncheckVersion=false\n"
"""What *Install from ZIP* leaves in the profile's QGIS3.ini (the plugin enabled), and no start-up tips."""


def qgis_python() -> Path:
    """The interpreter the installer finds inside the QGIS desktop on this machine: QGIS's
    ``sys.prefix`` is the system Python's, whatever ``python3`` comes first on the PATH."""
    from thermocrop.plugin import python_interpreter as interpreter

    prefix = Path(sys.base_prefix)
    return interpreter.find_interpreter("Linux", Path("/usr/bin/qgis"), prefix, prefix, sys.version_info[:2], environ={})


def wheel_folder() -> Path:
    if os.environ.get("THERMOCROP_WHEELS"):
        return Path(os.environ["THERMOCROP_WHEELS"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "thermocrop" / "wheels"


def fill_wheels(folder: Path, python: Path) -> float:
    """Download the wheels of every pip requirement the installer would install into ``folder``,
    unless the folder already holds them for the same list; the seconds it took."""
    import numpy

    from thermocrop.plugin import dependencies as deps

    specs = list(dict.fromkeys(r.pip for r in deps.REQUIREMENTS if r.pip))
    wanted = "\n".join(specs + [f"numpy=={numpy.__version__}"]) + "\n"
    stamp = folder / "requirements.txt"
    if stamp.is_file() and stamp.read_text() == wanted:
        return 0.0
    folder.mkdir(parents=True, exist_ok=True)
    constraints = folder / "constraints.txt"
    constraints.write_text(f"numpy=={numpy.__version__}\n")
    start = time.monotonic()
    proc = subprocess.run([str(python), "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
                           "--only-binary=:all:", "--dest", str(folder), "-c", str(constraints), *specs],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"pip download failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    stamp.write_text(wanted)
    return time.monotonic() - start


def analyst_environment(wheels: Optional[Path] = None, **extra: str) -> dict[str, str]:
    """This process's environment without what the test set-up adds (PYTHON*, the virtual
    environment and its PATH entry, QGIS_PLUGINPATH, pip settings), on a real X display; pip
    reads only ``wheels`` when given."""
    venv_bins = {str(Path(sys.prefix) / "bin")}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "PIP_", "QGIS_")) and k not in ("VIRTUAL_ENV", "PYTEST_CURRENT_TEST")}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p not in venv_bins)
    env["QT_QPA_PLATFORM"] = "xcb"
    env["XDG_RUNTIME_DIR"] = os.environ.get("XDG_RUNTIME_DIR") or "/tmp/runtime-thermocrop"
    Path(env["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, exist_ok=True)
    if wheels is not None:
        # The wheel folder is the package index: no configuration file, no other index.
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
                   PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(extra)
    return env


def install_zip(plugin_zip: Path, profiles: Path) -> Path:
    """Unpack the zip as *Install from ZIP* does into ``<profiles>/profiles/default`` and enable the
    plugin there; the profile folder."""
    profile = profiles / "profiles" / "default"
    plugins = profile / "python" / "plugins"
    plugins.mkdir(parents=True)
    with zipfile.ZipFile(plugin_zip) as archive:
        archive.extractall(plugins)
    (profile / "QGIS").mkdir(parents=True)
    (profile / "QGIS" / "QGIS3.ini").write_text(QGIS_INI)
    return profile


def run_qgis(profiles: Path, code: str, env: dict[str, str], work: Path, timeout: float = 900,
             size: str = "1366x768") -> dict:
    """Start the QGIS desktop under Xvfb on ``profiles`` with ``code`` as its start-up script; the
    JSON report the script writes to ``$THERMOCROP_REPORT``."""
    if shutil.which("xvfb-run") is None or shutil.which("qgis") is None:
        raise AssertionError("the QGIS desktop and xvfb are missing; make setup installs them")
    work.mkdir(parents=True, exist_ok=True)
    script, report = work / "script.py", work / "report.json"
    script.write_text(code)
    report.unlink(missing_ok=True)
    proc = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", "qgis", "--nologo", "--noversioncheck",
                           "--profiles-path", str(profiles), "--code", str(script)],
                          env=dict(env, THERMOCROP_REPORT=str(report)), timeout=timeout, capture_output=True,
                          text=True)
    if not report.is_file():
        raise AssertionError(f"QGIS did not run the script (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    result = json.loads(report.read_text())
    if "error" in result:
        raise AssertionError(result["error"])
    return result


SCRIPT_HEAD = r'''
import json, os, sys, time, traceback
from qgis.core import QgsApplication
from qgis.PyQt.QtCore import QTimer
from qgis.utils import iface, plugins

OUT = os.environ["THERMOCROP_REPORT"]


def wait_for(condition, timeout):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("gave up waiting")
        QgsApplication.processEvents()
        time.sleep(0.05)


def finish(report):
    with open(OUT, "w") as f:
        json.dump(report, f)
    # QGIS 3.22 may hang or crash on a scripted exit; the report is written, so leave at once.
    os._exit(0)
'''

INSTALL_SCRIPT = SCRIPT_HEAD + r'''

def install():
    report = {}
    try:
        plugin = plugins["thermocrop"]
        report["missing_at_start"] = [r.module for r in plugin.missing]
        report["executable"] = sys.executable
        plugin.action.setChecked(True)
        dock = plugin.dock
        report["install_offered"] = dock.install_button.isVisibleTo(dock)
        report["model_card_before"] = dock.model_card.text()
        start = time.monotonic()
        dock.install_button.click()
        wait_for(lambda: dock.install_task is None, 1500)
        report["install_seconds"] = time.monotonic() - start
        report["message"] = dock.message.text()
        report["model_card_after"] = dock.model_card.text()
        import torch
        report["torch_in_session"] = torch.__file__
        from thermocrop.plugin import dependencies as deps
        report["folder"] = str(deps.dependency_folder())
        report["missing_after"] = [r.module for r in deps.missing_requirements()]
        report["sys_path"] = list(sys.path)
    except Exception:
        report["error"] = traceback.format_exc()
    finish(report)


QTimer.singleShot(1000, install)
'''


def _packager():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "package_plugin.py"
    spec = importlib.util.spec_from_file_location("package_plugin", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def installed_profile(tmp_path_factory):
    """A fresh QGIS profile with the zip installed and enabled, after the dock's *Install missing
    packages* ran in the QGIS desktop (once per test session): a namespace with ``profiles``
    (for ``--profiles-path``), ``profile``, ``plugin`` (the unpacked plugin folder), ``folder``
    (the installer's package folder), ``install`` (what the install script saw), ``wheels`` and
    ``timings`` (seconds of the zip install and of *Install missing packages*)."""
    if shutil.which("xvfb-run") is None or shutil.which("qgis") is None:
        pytest.fail("the QGIS desktop and xvfb are missing; make setup installs them")
    work = tmp_path_factory.mktemp("analyst")
    profiles = work / "qgis"
    start = time.monotonic()
    profile = install_zip(_packager().build_package(work / "dist"), profiles)
    timings = {"build the zip and install it into the profile": time.monotonic() - start}
    wheels = wheel_folder()
    fill_wheels(wheels, qgis_python())
    start = time.monotonic()
    install = run_qgis(profiles, INSTALL_SCRIPT, analyst_environment(wheels), work / "install", timeout=600)
    timings["desktop session of Install missing packages"] = time.monotonic() - start
    timings["Install missing packages (button to done)"] = install["install_seconds"]
    return SimpleNamespace(profiles=profiles, profile=profile, plugin=profile / "python" / "plugins" / "thermocrop",
                           folder=Path(install["folder"]), install=install, wheels=wheels, work=work,
                           timings={k: round(v, 2) for k, v in timings.items()})
