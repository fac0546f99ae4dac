"""Importers: other projects' crop-type datasets and model weights as ThermoCrop datasets and
bundles.

- ``table``: per-parcel mean reflectances per date (CSV, Parquet, Excel; long or wide), S = 1.
- ``timematch``: the TimeMatch tiles (zarr pixel sets, pickled metadata and weather) of the
  thermal positional encoding paper.
- ``psetae``: the PSE-TAE pixel-set folders (``DATA/<id>.npy``, ``META/labels.json``,
  ``META/dates.json``).
- ``weights``: state dicts of the reference PSE+LTAE as model bundles.
"""
