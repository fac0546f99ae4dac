"""The loopback catalogue of ``tests/remote/loopback.py`` in a process of its own, for QGIS tests.

GDAL holds Python's interpreter lock in some of the calls rasterio makes on remote files; a
Python HTTP server in the same process then cannot answer them, and a run in a ``QgsTask`` can
hang. Served from here, the catalogue answers whatever the test process does.

Usage: ``python catalogue_server.py REGION ROOT [CLOUD ...]``: publishes the region's first
scenes (one per cloud cover given) as Earth Search-style items and COGs under ROOT, prints the
server's URL, then answers lines on stdin: ``bytes PREFIX`` / ``requests PREFIX`` (what was
served under that path), ``reset`` (the counters); it stops at the end of stdin.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _loopback():
    """``tests/remote/loopback.py``, loaded from its file (this script is not in a test package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("loopback", Path(__file__).resolve().parents[1] / "remote"
                                                  / "loopback.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["loopback"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    loopback = _loopback()
    LoopbackServer, StacCatalog, publish_region = loopback.LoopbackServer, loopback.StacCatalog, loopback.publish_region
    region, root = Path(argv[0]), Path(argv[1])
    clouds = [float(c) for c in argv[2:]] or None
    with LoopbackServer(root) as server:
        items = publish_region(region, root, server.url, layout="earth-search", dates=len(clouds or [0] * 6),
                               cloud_cover=clouds)
        server.catalog = StacCatalog(items, page_size=2)
        print(server.url, flush=True)
        for line in sys.stdin:
            command, _, prefix = line.strip().partition(" ")
            if command == "bytes":
                print(server.counters.total_bytes(prefix), flush=True)
            elif command == "requests":
                print(server.counters.total_requests(prefix), flush=True)
            elif command == "reset":
                server.reset_counters()
                print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
