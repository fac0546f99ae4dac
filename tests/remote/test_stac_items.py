"""STAC search against a loopback STAC API, and items of each catalogue's layout as scenes."""

from __future__ import annotations

import pystac
import pytest

from thermocrop.core.errors import InputError, SceneError
from thermocrop.core.scenes.item_fields import dn_offset
from thermocrop.core.scenes.stac import (
    load_items,
    reader_for,
    save_items,
    scenes_from_items,
    search_items,
    summarize,
)


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_search_pages_through_next_links_and_filters_dates_and_clouds(published, tiny_region, method):
    server, items = published("earth-search", dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))
    found = search_items(tiny_region / "parcels.gpkg", start="2017-01-01", end="2017-12-31",
                         catalog=server.url + "/stac", max_cloud=60, method=method, page_size=2)
    # Independently: the published items whose cloud cover is at most 60.
    expected = sorted(i["id"] for i in items if i["properties"]["eo:cloud_cover"] <= 60)
    assert sorted(i.id for i in found) == expected and len(expected) == 4
    searches = server.catalog.searches
    assert len(searches) == 2 and {s["method"] for s in searches} == {method}  # 4 items, 2 a page
    assert searches[0]["query"] == {"eo:cloud_cover": {"lte": 60}}
    assert found.extra_fields["thermocrop:catalog"]["url"] == server.url + "/stac"

    # A narrower period keeps the items of its days only.
    days = sorted(i["properties"]["datetime"][:10] for i in items)
    narrow = search_items(tiny_region / "parcels.gpkg", start=days[1], end=days[2], catalog=server.url + "/stac",
                          max_cloud=100, method=method, page_size=2)
    assert sorted(str(s.date) for s in summarize(narrow)) == days[1:3]


def test_search_elsewhere_finds_nothing_and_a_dead_catalogue_is_named(published, tmp_path):
    server, _ = published("earth-search", dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))
    far = search_items((20.0, 60.0, 20.1, 60.1), season=2017, catalog=server.url + "/stac")
    assert len(far) == 0
    with pytest.raises(InputError, match="127.0.0.1:1"):
        search_items((20.0, 60.0, 20.1, 60.1), season=2017, catalog="http://127.0.0.1:1/stac", timeout=2)
    with pytest.raises(InputError, match="Unknown catalogue"):
        search_items((20.0, 60.0, 20.1, 60.1), season=2017, catalog="sentinel-hub")


def test_summaries_and_saved_items_keep_their_projection(published, tmp_path):
    server, items = published("earth-search", dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    summary = summarize(collection)
    assert [s.tile for s in summary] == ["31TCJ"] * 6
    assert [s.cloud_cover for s in summary] == [5, 70, 20, 90, 10, 40]
    assert all(s.level == "L2A" for s in summary)
    path = save_items(collection, tmp_path / "items.json")
    with pytest.raises(InputError, match="already exists"):
        save_items(collection, path)
    text = path.read_text()
    # pystac 1.15 writes the projection extension v2 key on save; both are read.
    assert '"proj:code"' in text or '"proj:epsg"' in text
    loaded = load_items(path)
    scenes = scenes_from_items(loaded, reader=reader_for(loaded, cache_dir=tmp_path / "cache"))
    grid = scenes[0].products[0].grid
    assert grid.crs.to_epsg() == 32631 and grid.resolution == 10.0


def _item(properties, assets):
    return pystac.Item.from_dict({"type": "Feature", "stac_version": "1.0.0", "id": "S2A_T_20230701_0_L2A",
                                  "geometry": None, "bbox": None, "properties": {"datetime": "2023-07-01T10:00:00Z",
                                                                                 **properties},
                                  "assets": assets, "links": []})


def test_dn_offset_rules_of_each_catalogue():
    raster = {"raster:bands": [{"scale": 0.0001, "offset": -0.1}]}
    # Earth Search: offset already taken out of the COGs although raster:bands still says -0.1.
    assert dn_offset(_item({"earthsearch:boa_offset_applied": True, "s2:processing_baseline": "05.09"}, {}),
                     {"red": raster})[0] == 0
    assert dn_offset(_item({"earthsearch:boa_offset_applied": False, "s2:processing_baseline": "04.00"}, {}),
                     {"red": raster})[0] == -1000
    # Planetary Computer: no raster extension, the baseline decides.
    assert dn_offset(_item({"s2:processing_baseline": "05.09"}, {}), {"B04": {}})[0] == -1000
    assert dn_offset(_item({"s2:processing_baseline": "02.05"}, {}), {"B04": {}})[0] == 0
    # Copernicus Data Space, STAC 1.1: raster:scale / raster:offset on the asset.
    assert dn_offset(_item({}, {}), {"B04_10m": {"raster:scale": 0.0001, "raster:offset": -0.1}})[0] == -1000
    with pytest.raises(SceneError, match="scale"):
        dn_offset(_item({}, {}), {"B04": {"raster:bands": [{"scale": 0.001, "offset": -0.1}]}})


@pytest.mark.parametrize("layout, expect_key", [("earth-search", "red"), ("planetary-computer", "B04"),
                                                ("cdse", "B04_10m")])
def test_each_catalogue_layout_maps_its_assets_to_the_bands(published, layout, expect_key, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "TESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    server, items = published(layout, dates=2)
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    from thermocrop.core.scenes.stac import _product_of

    product = _product_of(collection.items[0], reader_for(collection, cache_dir=tmp_path), None)
    assert product.assets["B04"].href == items[0]["assets"][expect_key]["href"]
    assert product.scl_asset is not None
    # The COG, not its JPEG 2000 twin; the 10 m file, not the 20 m one; no composite.
    assert not product.assets["B04"].href.endswith("B04.jp2")
    assert "_20m" not in product.assets["B04"].href
    assert all("TCI" not in a.href for a in product.all_assets())
