# ThermoCrop: setup, tests, demo and benchmarks on Debian 12 (run as root).
SHELL := /bin/bash
VENV := .venv
PY := $(CURDIR)/$(VENV)/bin/python
STAMP_APT := $(VENV)/.stamp-apt
STAMP_PIP := $(VENV)/.stamp-pip

DEBIAN_PACKAGES := qgis python3-qgis qgis-providers python3-gdal python3-rasterio python3-geopandas \
	python3-xarray python3-netcdf4 python3-scipy python3-matplotlib python3-yaml python3-openpyxl \
	python3-dask python3-distributed python3-venv xvfb

# What QGIS, Qt and pyproj need when run from the venv and headless.
export QT_QPA_PLATFORM := offscreen
export PROJ_DATA := /usr/share/proj
export QGIS_PLUGINPATH := $(CURDIR)/.qgis-plugins
export XDG_RUNTIME_DIR := /tmp/runtime-thermocrop
# Debian's qgis_process wrapper passes an option QGIS 3.22 rejects; the binary does not.
export QGIS_PROCESS := /usr/bin/qgis_process.bin

.PHONY: setup test demo bench default-model experiment clean-venv

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

# pytest's exit code 5 (no test collected) fails the target like a failing test.
test: setup
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
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

clean-venv:
	rm -rf $(VENV) $(QGIS_PLUGINPATH)
