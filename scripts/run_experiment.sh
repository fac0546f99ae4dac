#!/usr/bin/env bash
# Leave-one-region-out experiment on the four synthetic regions at a CPU-feasible scale:
# synth -> extract (scripts/prepare_regions.py) -> thermocrop experiment.
# Usage: scripts/run_experiment.sh [OUT_DIR] (default runs/experiment).
set -euo pipefail
OUT=${1:-runs/experiment}
PY=${PY:-.venv/bin/python}
$PY scripts/prepare_regions.py "$OUT" --parcels "${PARCELS:-500}" --seed 0 --max-pixels 32
[ "${DATA_ONLY:-0}" = 1 ] && exit 0
$PY -m thermocrop.cli.main experiment \
    --regions "$OUT"/datasets/AT1 "$OUT"/datasets/DK1 "$OUT"/datasets/FR1 "$OUT"/datasets/FR2 \
    --variants all --out "$OUT/results" --epochs "${EPOCHS:-20}" \
    --steps-per-epoch "${STEPS:-25}" --batch-size "${BATCH:-64}" \
    --sample-pixels "${S:-16}" --sample-dates "${T:-24}" --seed 0 --jobs "${JOBS:-2}"
