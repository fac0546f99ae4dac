"""A partitioned classification's output written while its partitions run, against written once
they have all finished: how long the output takes after the last partition is in.

A run folder of ``--parcels`` parcels in ``--partitions`` partitions of consecutive parcels is
made here (random probabilities, no model), with a GeoPackage layer of as many squares. "after"
writes the output from the complete run folder (what a run did before); "while" starts the
writer first and lets a partition finish every ``after / partitions`` seconds, as partitions
that take as long as the whole write would, and times the output from the last partition's
finish. Both outputs are compared feature by feature.

    python benchmarks/bench_output_while_running.py [--parcels 40000] [--partitions 8]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from thermocrop.core.io.vector import write_with_fields
from thermocrop.core.runs.folder import open_run_folder, write_table
from thermocrop.core.runs.result_stream import FinishedPartitions, PartitionedResult

CLASSES = ("maize", "wheat", "sunflower", "barley")
NAMES = {"label_field": "crop_pred", "conf_field": "crop_conf", "status_field": "crop_status"}


def make_run(root: Path, parcels: int, partitions: int):
    """The run folder's plan and the partition tables (written later, one by one)."""
    import geopandas as gpd
    from shapely.geometry import box

    rng = np.random.default_rng(1)
    chunks = np.array_split(np.arange(parcels), partitions)
    status = np.where(rng.random(parcels) < 0.05, "too_small", "ok")
    probabilities = rng.dirichlet(np.ones(len(CLASSES)), size=parcels).astype(np.float32)
    probabilities[status != "ok"] = np.nan
    tables = []
    for idx in chunks:
        columns = {"row": idx, "parcel_id": np.array([f"p{r}" for r in idx]), "status": status[idx]}
        columns.update({f"p{k}": probabilities[idx, k] for k in range(len(CLASSES))})
        tables.append(columns)
    side = int(np.ceil(np.sqrt(parcels)))
    geoms = [box(500000 + 20 * (k % side), 4800000 - 20 * (k // side), 500015 + 20 * (k % side),
                 4800015 - 20 * (k // side)) for k in range(parcels)]
    layer = root / "parcels.gpkg"
    gpd.GeoDataFrame({"name": [f"n{k}" for k in range(parcels)]}, geometry=geoms, crs="EPSG:32631").to_file(layer)
    return chunks, tables, layer


def result_of(root: Path, name: str, chunks) -> PartitionedResult:
    folder = open_run_folder(root / name, fingerprint={"kind": "bench"}, chunks=chunks,
                             n_parcels=sum(len(c) for c in chunks), suffix=".parquet", resume=False)
    return PartitionedResult(folder, chunks, np.concatenate(chunks), CLASSES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=40000)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        chunks, tables, layer = make_run(root, args.parcels, args.partitions)

        after = result_of(root, "after", chunks)
        for i, columns in enumerate(tables):
            write_table(after.folder.part(i), columns, row_group_size=1024)
        start = time.perf_counter()
        write_with_fields(layer, after.columns(args.parcels, **NAMES), root / "after.gpkg")
        write_s = time.perf_counter() - start

        running = result_of(root, "while", chunks)
        running.finished = FinishedPartitions()
        done = {}

        def write() -> None:
            write_with_fields(layer, running.columns(args.parcels, **NAMES), root / "while.gpkg")
            done["at"] = time.perf_counter()

        writer = threading.Thread(target=write)
        writer.start()
        for i, columns in enumerate(tables):  # partitions finishing one after the other
            time.sleep(write_s / args.partitions)
            write_table(running.folder.part(i), columns, row_group_size=1024)
            running.finished.finish(i)
        last = time.perf_counter()
        running.finished.end()  # the run ended well: the output may be published
        writer.join()
        tail_s = done["at"] - last

        import geopandas as gpd

        same = gpd.read_file(root / "after.gpkg").equals(gpd.read_file(root / "while.gpkg"))
    print(f"{args.parcels} parcels in {args.partitions} partitions, GeoPackage output (same features: {same})")
    print(f"{'output written':<44}{'after the last partition (s)':>30}")
    print(f"{'after every partition finished (before)':<44}{write_s:>30.2f}")
    print(f"{'while the partitions run (now)':<44}{tail_s:>30.2f}")
    print(f"ratio now / before: {tail_s / write_s:.2f}")


if __name__ == "__main__":
    main()
