"""Fixtures of the remote-data tests: a synthetic region published through loopback servers."""

from __future__ import annotations

import pytest
from loopback import LoopbackServer, StacCatalog, publish_region


@pytest.fixture(scope="session")
def published(tiny_region, tmp_path_factory):
    """Factory ``published(layout, **options) -> (server, items)``: the tiny region's first
    scenes as remote assets of a catalogue of that layout, served until the session ends.
    Tests that add faults must remove them (``server.faults.clear()``)."""
    servers: dict = {}
    stack = []

    def make(layout: str = "earth-search", **options):
        key = (layout, tuple(sorted(options.items())))
        if key not in servers:
            root = tmp_path_factory.mktemp(f"remote-{layout}")
            server = LoopbackServer(root, s3_key_id="TESTKEY" if layout == "cdse" else None,
                                    require_sas=layout == "planetary-computer").__enter__()
            stack.append(server)
            items = publish_region(tiny_region, root, server.url, layout=layout, **options)
            server.catalog = StacCatalog(items, page_size=2)
            servers[key] = (server, items)
        server, items = servers[key]
        server.faults.clear()
        server.reset_counters()
        server.catalog.searches.clear()
        return server, items

    yield make
    for server in stack:
        server.__exit__(None, None, None)
