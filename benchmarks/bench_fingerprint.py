"""What fingerprinting a run's inputs costs: ``core.runs.fingerprint.input_fingerprints`` (size,
nanosecond modification time and SHA-256 of 16 sampled 4 KiB blocks of every file over 1 MiB)
against a SHA-256 of every byte, on scene-sized files written here.

Both run on the same files, alternated and best of three, in one process; the files were just
written, so both read from the page cache and the ratio is the hashing work alone (on a cold
disk the sampled fingerprint reads 64 KiB per file, the full hash every byte).

    python benchmarks/bench_fingerprint.py [--files 8] [--mb 64]
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

import numpy as np


def full_hashes(paths: list[Path]) -> dict[str, str]:
    out = {}
    for path in paths:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[str(path)] = digest.hexdigest()
    return out


def best_of(call, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    from thermocrop.core.runs.fingerprint import input_fingerprints

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=int, default=64, help="size of each file in MiB")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i in range(args.files):
            path = Path(folder) / f"scene-{i}.tif"
            path.write_bytes(rng.integers(0, 255, size=args.mb << 20, dtype=np.uint8).tobytes())
            paths.append(path)
        times = {"sampled": [], "full": []}
        for _ in range(3):  # alternated, so that both meet the same machine
            times["sampled"].append(best_of(lambda: input_fingerprints(paths), 1))
            times["full"].append(best_of(lambda: full_hashes(paths), 1))
        sampled, full = min(times["sampled"]), min(times["full"])
        print(f"{args.files} files of {args.mb} MiB: sampled fingerprint {sampled * 1000:.1f} ms, "
              f"full SHA-256 {full * 1000:.1f} ms, ratio {sampled / full:.4f}")


if __name__ == "__main__":
    main()
