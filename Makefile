# ThermoCrop: setup, tests, demo and benchmarks on Debian 12 (run as root).
SHELL := /bin/bash
VENV := .venv
PY := $(CURDIR)/$(VENV)/bin/python
STAMP_APT := $(VENV)/.stamp-apt
STAMP_PIP := $(VENV)/.stamp-pip

DEBIAN_PACKAGES := qgis python3-qgis qgis-providers python3-gdal python3-rasterio python3-geopandas \
	python3-xarray python3-netcdf4 python3-scipy python3-matplotlib python3-yaml python3-openpyxl \
	python3-dask python3-distributed python3-venv python3-pip xvfb pyqt5-dev-tools qttools5-dev-tools

# What QGIS, Qt and pyproj need when run from the venv and headless.
export QT_QPA_PLATFORM := offscreen
export PROJ_DATA := /usr/share/proj
export QGIS_PLUGINPATH := $(CURDIR)/.qgis-plugins
export XDG_RUNTIME_DIR := /tmp/runtime-thermocrop
# Debian's qgis_process wrapper passes an option QGIS 3.22 rejects; the binary does not.
export QGIS_PROCESS := /usr/bin/qgis_process.bin

.PHONY: setup test demo bench default-model experiment translations screenshots package clean-venv

setup: $(STAMP_PIP) $(QGIS_PLUGINPATH)/thermocrop

$(STAMP_APT):
	@if ! dpkg -s $(DEBIAN_PACKAGES) >/dev/null 2>&1; then \
		echo "Installing QGIS 3.22 and the Debian geo stack"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_PACKAGES); \
	fi
	@test -x $(PY) || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	@touch $@

$(STAMP_PIP): $(STAMP_APT) pyproject.toml
	@echo "numpy==$$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')" > $(VENV)/constraints.txt
	$(PY) -m pip install -q --disable-pip-version-check -c $(VENV)/constraints.txt -e '.[test]'
	@touch $@

$(QGIS_PLUGINPATH)/thermocrop:
	@mkdir -p $(QGIS_PLUGINPATH)
	@ln -sfn $(CURDIR) $@

# ruff first (configured in pyproject.toml): any finding fails the target before the tests run.
# pytest's exit code 5 (no test collected) fails the target like a failing test.
test: setup
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	@$(PY) -m ruff check . || { echo "make test: ruff found problems (see above)" >&2; exit 1; }
	@$(PY) -m pytest -q -p no:cacheprovider tests; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; exit $$rc

demo: setup
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	$(PY) scripts/demo.py --out demo-output

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

default-model: setup
	$(PY) scripts/default_model.py

experiment: setup
	PY=$(PY) scripts/run_experiment.sh runs/experiment

# The translation template i18n/thermocrop.ts from every tr() text (pylupdate5 files bare tr()
# calls under @default; at run time they are looked up in the ThermoCrop context), then one .qm
# per translation i18n/thermocrop_<lang>.ts.
translations: setup
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	$(PY) scripts/i18n_strings.py i18n/algorithm_strings.py
	pylupdate5 -noobsolete plugin/*.py plugin/dock/*.py plugin/algorithms/*.py i18n/algorithm_strings.py \
		-ts i18n/thermocrop.ts $(wildcard i18n/thermocrop_*.ts)
	sed -i 's|<name>@default</name>|<name>ThermoCrop</name>|' i18n/thermocrop*.ts
	@for ts in $(wildcard i18n/thermocrop_*.ts); do lrelease -silent $$ts -qm $${ts%.ts}.qm || exit 1; done

# The dock and dialog pictures of docs/img/, from real runs on a synthetic region, taken from the
# plugin installed from its zip into a fresh QGIS profile (packages by its own installer).
screenshots: setup
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	$(PY) scripts/dock_screenshot.py

# The installable plugin zip (stdlib only, no setup needed). For an upload to plugins.qgis.org give
# the project's public URLs and address: make package REPOSITORY=... TRACKER=... EMAIL=... RELEASE=1
DIST ?= dist
package:
	@python3 scripts/package_plugin.py --out "$(DIST)" $(if $(EMAIL),--email "$(EMAIL)") \
		$(if $(REPOSITORY),--repository "$(REPOSITORY)") $(if $(TRACKER),--tracker "$(TRACKER)") \
		$(if $(HOMEPAGE),--homepage "$(HOMEPAGE)") $(if $(RELEASE),--release)

clean-venv:
	rm -rf $(VENV) $(QGIS_PLUGINPATH)
