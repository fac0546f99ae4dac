"""The dependency installer: the interpreter QGIS runs on in the layouts of OSGeo4W, the macOS
bundle and Linux (fake folders, fake interpreters that really run), torch per Python and
platform, pip bootstrapping, the versioned folder, and pip streaming from a local index."""

from __future__ import annotations

import hashlib
import http.server
import importlib
import io
import json
import os
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from thermocrop.core.errors import DependencyError
from thermocrop.plugin import dependencies as deps
from thermocrop.plugin import dependency_install as installer
from thermocrop.plugin import python_interpreter as interpreter


def fake_python(path: Path, version: str = "3.9", body: str = "") -> Path:
    """A file at ``path`` that runs like an interpreter reporting ``version`` (a shell script)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}echo {version}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- the interpreter -------------------------------------------------------------------------------

def test_osgeo4w_layout_finds_apps_python(tmp_path):
    root = tmp_path / "OSGeo4W"
    qgis = root / "bin" / "qgis-bin.exe"
    qgis.parent.mkdir(parents=True)
    qgis.write_text("")
    python = fake_python(root / "apps" / "Python39" / "python.exe")
    # Inside QGIS on Windows sys.prefix is the apps\Python39 folder.
    found = interpreter.find_interpreter("Windows", qgis, root / "apps" / "Python39", root / "apps" / "Python39", (3, 9))
    assert found == python
    # Even with a prefix that does not lead there, the layout beside qgis-bin.exe does.
    found = interpreter.find_interpreter("Windows", qgis, tmp_path / "elsewhere", tmp_path / "elsewhere", (3, 9))
    assert found == python


def test_windows_store_stub_is_never_taken(tmp_path):
    stub = fake_python(tmp_path / "AppData" / "Local" / "Microsoft" / "WindowsApps" / "python.exe")
    program = tmp_path / "Program Files" / "QGIS 3.28.2"
    real = fake_python(program / "apps" / "Python39" / "python.exe")
    candidates = interpreter.interpreter_candidates("Windows", stub, stub.parent, stub.parent, (3, 9), environ={})
    assert stub not in candidates
    with pytest.raises(DependencyError, match="Python 3.9 interpreter"):
        interpreter.find_interpreter("Windows", stub, stub.parent, stub.parent, (3, 9), environ={})
    # OSGEO4W_ROOT (set by QGIS's launcher) leads to the real one.
    found = interpreter.find_interpreter("Windows", stub, stub.parent, stub.parent, (3, 9),
                                  environ={"OSGEO4W_ROOT": str(program)})
    assert found == real


def test_macos_bundle_layouts(tmp_path):
    contents = tmp_path / "QGIS-LTR.app" / "Contents"
    qgis = contents / "MacOS" / "QGIS"
    qgis.parent.mkdir(parents=True)
    qgis.write_text("")
    framework = contents / "Frameworks" / "Python.framework" / "Versions" / "3.9"
    python = fake_python(framework / "bin" / "python3.9")
    assert interpreter.find_interpreter("Darwin", qgis, framework, framework, (3, 9)) == python
    # A bundle whose prefix is Resources/python and whose interpreter sits in MacOS/bin.
    other = tmp_path / "QGIS.app" / "Contents"
    (other / "MacOS").mkdir(parents=True)
    (other / "MacOS" / "QGIS").write_text("")
    bin_python = fake_python(other / "MacOS" / "bin" / "python3")
    found = interpreter.find_interpreter("Darwin", other / "MacOS" / "QGIS", other / "Resources" / "python",
                                  other / "Resources" / "python", (3, 9))
    assert found == bin_python


def test_linux_prefers_the_exact_version_and_checks_it(tmp_path):
    usr = tmp_path / "usr"
    wrong = fake_python(usr / "bin" / "python3.11", version="3.10")   # a broken alternative
    right = fake_python(usr / "bin" / "python3", version="3.11")
    assert interpreter.find_interpreter("Linux", usr / "bin" / "qgis", usr, usr, (3, 11)) == right
    wrong.write_text("#!/bin/sh\nexit 1\n")
    right.unlink()
    with pytest.raises(DependencyError) as error:
        interpreter.find_interpreter("Linux", usr / "bin" / "qgis", usr, usr, (3, 11))
    assert "python3.11 (does not run)" in str(error.value)


def test_running_interpreter_is_found_here():
    found = interpreter.find_interpreter()
    assert interpreter.interpreter_version(found) == sys.version_info[:2]


def test_python_on_the_path_is_not_taken_for_qgis_own(tmp_path):
    # Embedded Python guesses sys.executable from the PATH: inside QGIS on Debian it can be a
    # pyenv shim running another Python of the same version. Only <prefix>/bin counts.
    shim = fake_python(tmp_path / ".pyenv" / "shims" / "python3", version="3.11")
    usr = tmp_path / "usr"
    real = fake_python(usr / "bin" / "python3.11", version="3.11")
    assert shim not in interpreter.interpreter_candidates("Linux", shim, usr, usr, (3, 11), environ={})
    assert interpreter.find_interpreter("Linux", shim, usr, usr, (3, 11), environ={}) == real
    real.unlink()
    with pytest.raises(DependencyError) as error:
        interpreter.find_interpreter("Linux", shim, usr, usr, (3, 11), environ={})
    assert "shims" not in str(error.value)
    # In a virtual environment sys.executable lies in the prefix and is taken.
    venv = fake_python(tmp_path / "venv" / "bin" / "python", version="3.11")
    assert interpreter.find_interpreter("Linux", venv, tmp_path / "venv", usr, (3, 11), environ={}) == venv


# -- torch per Python and platform -----------------------------------------------------------------

@pytest.mark.parametrize("python, system, machine, macos, expected", [
    ((3, 9), "Windows", "AMD64", None, "torch==2.8.0"),        # QGIS 3.22-3.34 on Windows
    ((3, 12), "Windows", "AMD64", None, "torch==2.13.0"),
    ((3, 11), "Linux", "x86_64", None, "torch==2.13.0"),
    ((3, 9), "Linux", "x86_64", None, "torch==2.8.0"),
    ((3, 9), "Darwin", "x86_64", None, "torch==2.2.2"),        # Intel Macs end at 2.2.2
    ((3, 12), "Darwin", "x86_64", None, "torch==2.2.2"),
    ((3, 12), "Darwin", "arm64", (13, 6), "torch==2.11.0"),    # newer wheels need macOS 14
    ((3, 12), "Darwin", "arm64", (14, 2), "torch==2.13.0"),
    ((3, 9), "Darwin", "arm64", (12, 0), "torch==2.8.0"),
])
def test_torch_with_wheels_for_the_python(python, system, machine, macos, expected):
    assert deps.torch_requirement(python, system, machine, macos) == expected


@pytest.mark.parametrize("python, system, machine, match", [
    ((3, 8), "Windows", "AMD64", "Python 3.9 or newer"),
    ((3, 13), "Darwin", "x86_64", "Intel Macs"),
    ((3, 12), "Windows", "ARM64", "Windows on ARM"),
])
def test_no_torch_for_the_python_is_said(python, system, machine, match):
    with pytest.raises(DependencyError, match=match):
        deps.torch_requirement(python, system, machine)
    # The requirement list then names the reason instead of a pip spec.
    torch = deps.requirements_for(system, python, machine)[0]
    assert torch.pip == "" and match in torch.system_hint


# -- the requirements come from pyproject.toml ------------------------------------------------------

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_requirements_are_pyprojects_dependencies():
    text = PYPROJECT.read_text()
    listed = deps.project_dependencies(text)
    # Read independently: the strings between `dependencies = [` and the closing bracket.
    block = text.split("\ndependencies = [", 1)[1].split("\n]", 1)[0]
    expected = [line.strip().split('"')[1] for line in block.splitlines() if line.strip().startswith('"')]
    assert listed == expected and "pystac-client==0.9.1" in listed
    # Every dependency but the command line's own is something the installer installs.
    pip = {r.pip for r in deps.REQUIREMENTS if r.pip}
    for spec in expected:
        name = spec.split("=")[0].split(">")[0].split("<")[0]
        assert (spec in pip) != (name in deps.COMMAND_LINE_ONLY), spec
    modules = [r.module for r in deps.REQUIREMENTS]
    assert modules[:2] == ["torch", "safetensors"]
    assert {"pystac", "pystac_client", "zarr", "pyarrow", "tqdm", "cdsapi"} <= set(modules)
    assert "dask" not in modules and deps.TESTED_TORCH == "2.13.0"


def test_pyproject_read_without_tomllib_agrees():
    text = PYPROJECT.read_text()
    assert deps._dependencies_by_hand(text) == deps.project_dependencies(text)
    tricky = ('[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "x"\ndependencies = [\n'
              '    # a comment with "quotes" and ] brackets\n    "a>=1", "b[extra]==2",  # trailing\n'
              '    "c; python_version < \'3.10\'",\n]\n\n[project.optional-dependencies]\ntest = ["d"]\n')
    assert deps._dependencies_by_hand(tricky) == deps.project_dependencies(tricky) == [
        "a>=1", "b[extra]==2", "c; python_version < '3.10'"]
    with pytest.raises(DependencyError, match="dependencies"):
        deps._dependencies_by_hand("[project]\nname = 'x'\n")
    assert deps.project_name("pystac_client==0.9.1") == "pystac-client"


def test_requirements_per_platform():
    windows = {r.module: r for r in deps.requirements_for("Windows", (3, 9), "AMD64")}
    linux = {r.module: r for r in deps.requirements_for("Linux", (3, 11), "x86_64")}
    # GDAL-linked packages never come from PyPI; pure or self-contained ones do on Windows/macOS.
    for module in ("rasterio", "geopandas"):
        assert windows[module].pip == "" and linux[module].pip == ""
    assert "python3-rasterio" in windows["rasterio"].system_hint and "OSGeo4W" in windows["rasterio"].system_hint
    assert "apt install python3-rasterio" in linux["rasterio"].system_hint
    assert windows["xarray"].pip and not linux["xarray"].pip
    text = deps.describe_missing([windows["torch"], windows["rasterio"]])
    assert "torch (pip: torch==2.8.0)" in text and "setup.bat -q -k -P python3-rasterio" in text


def test_the_install_command_pastes_into_a_shell(tmp_path):
    """The command the message gives ran ``>=0.4`` and ``<24`` as redirections in a shell, and named
    a ``python`` that Debian does not have: bash now runs it as words pip would be given."""
    folder = tmp_path / "deps folder"
    missing = [deps.Requirement("safetensors", "safetensors>=0.4"), deps.Requirement("pyarrow", "pyarrow>=14,<24")]
    text = deps.describe_missing(missing, folder)
    command = text.splitlines()[-1].split("QGIS's Python: ", 1)[1]
    # Replace the interpreter by one that prints its arguments, one per line.
    python, rest = command.split(" -m ", 1)
    assert Path(python.strip('"')).name.startswith("python")
    echo = tmp_path / "echo-args"
    echo.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    echo.chmod(0o755)
    out = subprocess.run(["bash", "-c", f"{echo} -m {rest}"], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.splitlines() == ["-m", "pip", "install", "--target", str(folder), "safetensors>=0.4",
                                       "pyarrow>=14,<24"]
    assert not [p.name for p in tmp_path.iterdir() if p.name not in ("deps folder", "echo-args")]


# -- pip -------------------------------------------------------------------------------------------

def test_ensure_pip_bootstraps_when_pip_is_missing(tmp_path):
    marker = tmp_path / "pip-installed"
    calls = tmp_path / "calls.txt"
    # A fake interpreter: '-m pip --version' works once the marker exists; 'ensurepip --user'
    # fails (a read-only user site), plain 'ensurepip' creates the marker.
    body = (f'echo "$@" >> {calls}\n'
            f'if [ "$2" = pip ]; then [ -f {marker} ] && echo "pip 23.0.1 from x (python 3.9)" && exit 0; exit 1; fi\n'
            f'if [ "$2" = ensurepip ]; then case "$*" in *--user*) exit 1;; esac; touch {marker}; exit 0; fi\n')
    python = fake_python(tmp_path / "python3", body=body)
    said = []
    assert installer.ensure_pip(str(python), said.append) == (23, 0, 1)
    assert [line.split()[:3] for line in calls.read_text().splitlines()] == [
        ["-m", "pip", "--version"], ["-m", "ensurepip", "--upgrade"], ["-m", "pip", "--version"],
        ["-m", "ensurepip", "--upgrade"], ["-m", "pip", "--version"]]
    assert "--user" in calls.read_text().splitlines()[1]
    assert any("pip is missing" in line for line in said)
    # Without any way to get pip, the error says what to install.
    never = fake_python(tmp_path / "python-nopip", body="exit 1\n")
    with pytest.raises(DependencyError, match="python3-pip"):
        installer.ensure_pip(str(never))


def test_pip_progress_lines():
    progress = installer.PipProgress()
    lines = ["Collecting torch==2.8.0", "  Downloading torch-2.8.0-cp39-cp39-win_amd64.whl (241.3 MB)",
             "Progress 0 of 1000", "Progress 500 of 1000", "Progress 1000 of 1000",
             "  Downloading sympy-1.13.3-py3-none-any.whl (6.2 MB)", "Progress 0 of 3000",
             "Progress 3000 of 3000", "Progress 0 of 0"]
    fractions = [progress.feed(line) for line in lines]
    assert fractions == [None, None, 0.0, 0.5, 1.0, None, 1000 / 4000, 1.0, 1.0]
    assert progress.files == ["torch-2.8.0-cp39-cp39-win_amd64.whl", "sympy-1.13.3-py3-none-any.whl"]
    assert installer.PipProgress.is_progress("Progress 1 of 2") and not installer.PipProgress.is_progress("Collecting")


def test_install_command_asks_raw_progress_from_new_pip(tmp_path):
    torch = deps.Requirement("torch", "torch==2.8.0")
    old, _ = installer.install_command([torch], tmp_path, gpu=True, executable="py", pip=(23, 0, 1))
    new, _ = installer.install_command([torch], tmp_path, gpu=True, executable="py", pip=(24, 2))
    assert "--progress-bar" not in old
    assert new[new.index("--progress-bar") + 1] == "raw"
    assert old[0] == new[0] == "py" and old[-1] == "torch==2.8.0"


# -- the versioned folder --------------------------------------------------------------------------

def test_folder_is_named_after_the_python(tmp_path):
    folder = deps.dependency_folder(str(tmp_path), (3, 9))
    assert folder == tmp_path / "python" / "thermocrop-packages" / "python3.9"
    here = deps.dependency_folder(str(tmp_path))
    assert here.name == f"python{sys.version_info[0]}.{sys.version_info[1]}"


def test_folder_of_another_python_is_not_used(tmp_path):
    folder = tmp_path / "pkgs"
    folder.mkdir()
    (folder / "tc_other_python_probe.py").write_text("VALUE = 1\n")
    (folder / deps.MARKER_NAME).write_text(json.dumps({"python": [3, 9, 5]}))
    if sys.version_info[:2] == (3, 9):
        pytest.skip("this interpreter is Python 3.9")
    assert not deps.activate_dependency_folder(folder)
    assert str(folder) not in sys.path


def test_leftovers_are_listed(tmp_path):
    root = tmp_path / "python" / "thermocrop-packages"
    current = deps.version_folder_name()
    for name in ("python3.9", current):
        (root / name).mkdir(parents=True)
        (root / name / "x.py").write_text("")
    (root / "torch").mkdir()                     # the unversioned layout of ThermoCrop 0.1
    (root / "python3.8").mkdir()                 # empty: nothing to delete
    assert [p.name for p in deps.other_dependency_folders(str(tmp_path))] == ["python3.9", "torch"]


# -- the folder goes before the system's packages ---------------------------------------------------

def test_folder_goes_before_the_first_site_packages():
    path = ["/usr/share/qgis/python", "/usr/lib/python3.11", "/usr/local/lib/python3.11/dist-packages",
            "/usr/lib/python3/dist-packages", "/profile/python"]
    site = {"/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"}
    placed = deps.place_before_site_packages(["/pkgs", "/pkgs/extra"], path + ["/pkgs"], site)
    assert placed == path[:2] + ["/pkgs", "/pkgs/extra"] + path[2:]
    assert deps.place_before_site_packages(["/pkgs"], ["/a"], site) == ["/a", "/pkgs"]


def test_activated_folder_wins_over_an_older_copy_in_site_packages(tmp_path):
    # As torch needs typing_extensions.deprecated, which Debian 12's copy lacks.
    folder = tmp_path / "pkgs"
    folder.mkdir()
    (folder / "tc_shadow_new.py").write_text("from tc_shadow_te import deprecated\n")
    (folder / "tc_shadow_te.py").write_text("def deprecated():\n    return 'new'\n")
    (folder / "tc_extra.pth").write_text("extra\n")
    (folder / "extra").mkdir()
    site_dir = next(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    before = list(sys.path)
    try:
        assert deps.activate_dependency_folder(folder)
        index = sys.path.index(str(folder))
        assert sys.path[index + 1] == str(folder / "extra")       # what its .pth file adds comes along
        assert index < sys.path.index(site_dir)
        assert deps.activate_dependency_folder(folder) and sys.path.count(str(folder)) == 1
    finally:
        sys.path[:] = before


def test_import_check_runs_in_a_new_process_with_the_given_path(tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    for folder, body in ((new, "def deprecated():\n    pass\n"), (old, "VERSION = 4.4\n")):
        folder.mkdir()
        (folder / "tc_check_te.py").write_text(body)
    (new / "tc_check_torch.py").write_text("from tc_check_te import deprecated\n")
    # A module this process already imported proves nothing: the check starts a new interpreter.
    sys.modules["tc_check_torch"] = object()
    try:
        failed = deps.import_failures(["tc_check_torch", "json"], path=[str(old), str(new), *sys.path])
        assert list(failed) == ["tc_check_torch"]
        assert failed["tc_check_torch"].startswith("ImportError: cannot import name 'deprecated'")
        assert str(old / "tc_check_te.py") in failed["tc_check_torch"]
        assert deps.import_failures(["tc_check_torch"], path=[str(new), str(old), *sys.path]) == {}
    finally:
        sys.modules.pop("tc_check_torch")


def test_nothing_missing_is_only_said_after_importing(tmp_path, monkeypatch):
    broken = tmp_path / "tc_broken_req.py"
    broken.write_text("raise ImportError('cannot import name deprecated')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert deps.missing_requirements([deps.Requirement("tc_broken_req", "tc-broken-req")]) == []
    text = deps.describe_missing([], requirements=[deps.Requirement("json"),
                                                   deps.Requirement("tc_broken_req", "tc-broken-req")])
    assert "do not import" in text and "tc_broken_req: ImportError: cannot import name deprecated" in text
    assert "All ThermoCrop requirements are installed" not in text
    fine = deps.describe_missing([], requirements=[deps.Requirement("json")])
    assert fine.startswith("All ThermoCrop requirements are installed: json import in a new Python process")


def _fake_distribution(site_dir: Path, name: str, version: str, files: dict[str, str]) -> None:
    info = site_dir / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for rel, text in files.items():
        if rel.startswith("../"):  # recorded outside the folder; the test puts it where pip moves it
            continue
        target = site_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    records = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in records))


def test_copies_of_what_qgis_has_in_the_same_version_are_removed(tmp_path):
    system, folder = tmp_path / "dist-packages", tmp_path / "pkgs"
    _fake_distribution(system, "tc_same", "1.24.2", {"tc_same/__init__.py": ""})
    _fake_distribution(system, "tc-older", "4.4.0", {"tc_older.py": ""})
    # pip --target put the scripts of ../../bin into <folder>/bin.
    _fake_distribution(folder, "tc-same", "1.24.2", {"tc_same/__init__.py": "", "tc_same/core/x.py": "",
                                                     "../../bin/tc-same-tool": ""})
    (folder / "bin").mkdir()
    (folder / "bin" / "tc-same-tool").write_text("")
    _fake_distribution(folder, "tc_older", "4.16.0", {"tc_older.py": ""})
    removed = installer.remove_duplicates(folder, [str(folder), str(system)])
    assert removed == ["tc-same 1.24.2"]
    # Its files, its script and the folders they leave empty are gone; the system's copy stays.
    assert sorted(p.name for p in folder.iterdir()) == ["tc_older-4.16.0.dist-info", "tc_older.py"]
    assert (system / "tc_same" / "__init__.py").is_file()


def test_install_outcomes_in_words():
    assert installer.describe_install(0, "").startswith("Packages installed; every requirement imports")
    failed = "Collecting x\npip finished, but these packages do not import in a new Python process with " \
             "QGIS's path:\n  - torch: ImportError: cannot import name 'deprecated'"
    text = installer.describe_install(installer.IMPORT_FAILED, failed)
    assert "some do not import" in text and "torch: ImportError" in text and "Collecting" not in text
    assert installer.describe_install(1, "ERROR: no matching distribution").startswith("pip failed (1)")


# -- pip streaming from a local index -------------------------------------------------------------

def _probe_wheel(init: bytes = b"VALUE = 7\n") -> bytes:
    """A small real wheel (tc-probe 1.0) of about 600 kB, so that pip reports its download."""
    buffer = io.BytesIO()
    blob = os.urandom(600_000)
    files = {"tc_probe/__init__.py": init, "tc_probe/blob.bin": blob,
             "tc_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tc-probe\nVersion: 1.0\n",
             "tc_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                              b"Tag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "tc_probe-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("tc_probe-1.0.dist-info/RECORD", record)
    return buffer.getvalue()


class _Index(http.server.BaseHTTPRequestHandler):
    """A PEP 503 simple index with one project; the wheel trickles out over about two seconds."""

    wheel = b""

    def do_GET(self):  # noqa: N802 (http.server API)
        name = "tc_probe-1.0-py3-none-any.whl"
        if self.path.rstrip("/") == "/simple/tc-probe":
            digest = hashlib.sha256(self.wheel).hexdigest()
            body = f'<html><body><a href="/files/{name}#sha256={digest}">{name}</a></body></html>'.encode()
            self._send(body, "text/html")
        elif self.path == f"/files/{name}":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(self.wheel)))
            self.end_headers()
            for start in range(0, len(self.wheel), 60_000):
                self.wfile.write(self.wheel[start:start + 60_000])
                self.wfile.flush()
                time.sleep(0.2)
        else:
            self.send_error(404)

    def _send(self, body, kind):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_install_streams_pip_from_a_local_index(tmp_path, monkeypatch):
    _Index.wheel = _probe_wheel()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)       # no other index or wheel folder
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple/")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    folder = tmp_path / "python" / "thermocrop-packages" / deps.version_folder_name()
    said, fractions = [], []
    start = time.monotonic()
    try:
        code, output = installer.run_install([deps.Requirement("tc_probe", "tc-probe==1.0")], folder,
                                        on_output=lambda line: said.append((time.monotonic(), line)),
                                        on_progress=fractions.append)
    finally:
        server.shutdown()
    end = time.monotonic()
    assert code == 0, output
    lines = [line for _, line in said]
    assert any("Collecting tc-probe==1.0" in line for line in lines)
    assert any("Successfully installed tc-probe-1.0" in line for line in lines)
    # Streamed: the first lines arrived while the wheel was still trickling in.
    collecting = next(t for t, line in said if "Collecting" in line)
    assert end - collecting > 1.0, (collecting - start, end - start)
    pip = installer.pip_version(sys.executable)
    if pip >= installer.RAW_PROGRESS:
        assert fractions and fractions[-1] == 1.0 and fractions == sorted(fractions)
    else:
        assert fractions == [] and not any(line.startswith("Progress ") for line in lines)
    marker = json.loads((folder / deps.MARKER_NAME).read_text())
    assert marker["python"][:2] == list(sys.version_info[:2]) and marker["packages"] == ["tc-probe==1.0"]
    try:
        assert deps.activate_dependency_folder(folder)
        assert importlib.import_module("tc_probe").VALUE == 7
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("tc_probe", None)


def test_install_whose_package_does_not_import_is_a_failure(tmp_path, monkeypatch):
    # pip succeeds, but the package needs a name its dependency lacks: the install is not reported
    # as done, and the import error is named.
    _Index.wheel = _probe_wheel(b"from json import tc_missing_name\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple/")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    folder = tmp_path / "pkgs"
    said = []
    try:
        code, output = installer.run_install([deps.Requirement("tc_probe", "tc-probe==1.0")], folder, on_output=said.append)
    finally:
        server.shutdown()
    assert code == installer.IMPORT_FAILED, output
    assert "Successfully installed tc-probe-1.0" in output
    assert "tc_probe: ImportError: cannot import name 'tc_missing_name' from 'json'" in output
    assert "All of them import." not in said
    text = installer.describe_install(code, output)
    assert "some do not import" in text and "tc_probe: ImportError" in text
