"""Generate and extract the four synthetic regions for training (synth -> extract with each
region's weather.nc); finished steps are skipped.

Usage: python scripts/prepare_regions.py OUT_DIR [--parcels N] [--seed S] [--max-pixels M]
                                          [--level L1C|L2A]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thermocrop.training.experiment import prepare_regions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-pixels", type=int, default=32)
    parser.add_argument("--level", choices=("L1C", "L2A"), default="L1C",
                        help="processing level of the synthetic scenes (default L1C)")
    args = parser.parse_args()
    for p in prepare_regions(args.out, args.parcels, args.seed, args.max_pixels, args.level):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
