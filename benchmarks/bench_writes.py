"""What the checked, atomic writer costs: ``core.io.vector.write_with_fields`` (OGR copy of the
features plus the new fields, every feature read back and counted, one rename) against the
unchecked baseline it replaced (the layer read into geopandas, the fields added, ``to_file``).

Both write the same parcel layer with the same three fields, alternated and best of three, in
one process, so that the ratio holds under a busy machine.

    python benchmarks/bench_writes.py [--parcels 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def make_layer(path: Path, n: int) -> Path:
    from osgeo import ogr, osr

    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    layer = ds.CreateLayer("parcels", srs, ogr.wkbPolygon)
    for name, kind in (("parcel_id", ogr.OFTString), ("crop", ogr.OFTString), ("area_ha", ogr.OFTReal)):
        layer.CreateField(ogr.FieldDefn(name, kind))
    ds.StartTransaction()
    for i in range(n):
        x, y = 400000.0 + (i % 300) * 50.0, 5500000.0 + (i // 300) * 50.0
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("parcel_id", f"p{i}")
        f.SetField("crop", "winter_wheat")
        f.SetField("area_ha", 0.16)
        f.SetGeometry(ogr.CreateGeometryFromWkt(
            f"POLYGON (({x} {y},{x + 40} {y},{x + 40} {y + 40},{x + 20} {y + 45},{x} {y + 40},{x} {y}))"))
        layer.CreateFeature(f)
    ds.CommitTransaction()
    ds = None
    return path


def baseline(source: Path, fields: dict, out: Path) -> None:
    import geopandas as gpd

    gdf = gpd.read_file(source)
    for name, values in fields.items():
        gdf[name] = values
    with warnings.catch_warnings():  # geopandas warns that shapefile names are cut
        warnings.simplefilter("ignore", UserWarning)
        gdf.to_file(out, driver={".gpkg": "GPKG", ".geojson": "GeoJSON", ".shp": "ESRI Shapefile"}[out.suffix])


def checked(source: Path, fields: dict, out: Path) -> None:
    from thermocrop.core.io.vector import write_with_fields

    write_with_fields(source, fields, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = make_layer(tmp / "parcels.gpkg", args.parcels)
        rng = np.random.default_rng(0)
        fields = {"crop_pred": np.where(rng.random(args.parcels) < 0.1, None, "maize").astype(object),
                  "crop_conf": rng.random(args.parcels),
                  "crop_status": np.full(args.parcels, "ok", dtype=object)}
        print(f"{args.parcels} parcels, 3 added fields; best of {args.repeats}, alternated")
        print(f"{'format':<10}{'baseline s':>12}{'checked s':>12}{'ratio':>8}")
        for suffix in (".gpkg", ".geojson", ".shp"):
            best = {"baseline": np.inf, "checked": np.inf}
            for r in range(args.repeats):
                for name, write in (("baseline", baseline), ("checked", checked)):
                    out = tmp / f"{name}{r}{suffix}"
                    t0 = time.perf_counter()
                    write(source, fields, out)
                    best[name] = min(best[name], time.perf_counter() - t0)
            print(f"{suffix:<10}{best['baseline']:>12.2f}{best['checked']:>12.2f}"
                  f"{best['checked'] / best['baseline']:>8.2f}")


if __name__ == "__main__":
    main()
