"""Runs ThermoCrop's algorithms through ``qgis_process`` (no GUI), with torch visible to QGIS.

Used by ``make demo`` and the tests; it imports nothing from QGIS, it only starts the program.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Sequence

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def qgis_process_program() -> str:
    """The qgis_process executable: ``$QGIS_PROCESS``, else Debian's ``qgis_process.bin``.

    Debian's ``qgis_process`` wrapper passes an option that QGIS 3.22 rejects; the binary does not.
    """
    for candidate in (os.environ.get("QGIS_PROCESS"), shutil.which("qgis_process.bin"),
                      shutil.which("qgis_process")):
        if candidate:
            return candidate
    raise FileNotFoundError("qgis_process was not found; install QGIS 3.22 or later (Debian: apt install qgis).")


def qgis_process_env(profile_dir: Path, plugin_path: Path | None = None) -> dict[str, str]:
    """Environment for qgis_process: a private profile, the plugin folder and this Python's packages.

    Args:
        profile_dir: QGIS configuration folder to use (the user's own profile stays untouched).
        plugin_path: folder holding a ``thermocrop`` plugin folder or link; default: the
            project's ``.qgis-plugins``.
    """
    plugin_path = plugin_path or Path(os.environ.get("QGIS_PLUGINPATH", PLUGIN_ROOT / ".qgis-plugins"))
    # torch and safetensors live in the virtual environment, which QGIS's Python does not see.
    site_packages = sysconfig.get_paths()["purelib"]
    python_path = os.pathsep.join(p for p in (site_packages, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, QGIS_CUSTOM_CONFIG_PATH=str(profile_dir), QGIS_PLUGINPATH=str(plugin_path),
               PYTHONPATH=python_path)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.setdefault("PROJ_DATA", "/usr/share/proj")
    return env


def enable_plugin(profile_dir: Path, timeout: float = 300) -> None:
    """Enable the ThermoCrop plugin in ``profile_dir`` so that qgis_process loads it."""
    profile_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([qgis_process_program(), "plugins", "enable", "thermocrop"], env=qgis_process_env(
        profile_dir), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 and "already enabled" not in proc.stdout + proc.stderr:
        raise RuntimeError(f"qgis_process could not enable the plugin:\n{proc.stdout}\n{proc.stderr}")


def run_algorithm(algorithm: str, parameters: Sequence[tuple[str, str]], profile_dir: Path,
                  timeout: float = 3600) -> dict:
    """Run ``thermocrop:<algorithm>`` with ``KEY=VALUE`` pairs (repeat a key for lists).

    Returns:
        qgis_process's JSON answer (``results`` holds the outputs).

    Raises:
        RuntimeError: qgis_process failed; the message holds its output.
    """
    enable_plugin(profile_dir)
    command = [qgis_process_program(), "--json", "run", algorithm, "--"]
    command += [f"{key}={value}" for key, value in parameters]
    proc = subprocess.run(command, env=qgis_process_env(profile_dir), capture_output=True, text=True,
                          timeout=timeout)
    start = proc.stdout.find("{")
    if proc.returncode != 0 or start < 0:
        # The command line lists every scene; the tail of the output says what went wrong.
        said = [line for line in (proc.stdout + proc.stderr).splitlines()
                if line.strip() and "DeprecationWarning" not in line]
        raise RuntimeError(f"qgis_process {algorithm} failed ({proc.returncode}): " + "\n".join(said[-10:]))
    return json.loads(proc.stdout[start:])
