"""VRT scene files: read when they name files beside them, refused when they would make GDAL
read outside their folder or reach a host (checked against a loopback server that counts what
it is asked for)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from loopback import LoopbackServer
from rasterio.transform import from_origin
from rasterio.windows import Window

from thermocrop.core.errors import SceneError
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.core.scenes.local import find_scenes
from thermocrop.core.scenes.raster_files import check_scene_file

NAME = "S2A_MSIL1C_20170615T105031_N0205_R051_T32TMT_20170615T105031"
CRS = "EPSG:32632"
SIZE = 8


def _cube() -> np.ndarray:
    pixel = np.arange(SIZE * SIZE, dtype=np.uint16).reshape(SIZE, SIZE)
    return np.stack([1500 + 100 * c + pixel for c in range(len(S2_BANDS))]).astype(np.uint16)


def _write_tif(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _cube()
    with rasterio.open(path, "w", driver="GTiff", width=SIZE, height=SIZE, count=len(data), dtype="uint16",
                       crs=CRS, transform=from_origin(500000, 5300000, 10, 10), nodata=0) as ds:
        ds.write(data)
        for i, band in enumerate(S2_BANDS, start=1):
            ds.set_band_description(i, band)
    return path


def _vrt(source: str, relative: bool = False, extra: str = "") -> str:
    """A VRT of the ten bands of ``source`` (as GDAL writes one)."""
    bands = "".join(f"""
  <VRTRasterBand dataType="UInt16" band="{i}">
    <Description>{band}</Description>
    <NoDataValue>0</NoDataValue>{extra if i == 1 else ""}
    <SimpleSource>
      <SourceFilename relativeToVRT="{int(relative)}">{source}</SourceFilename>
      <SourceBand>{i}</SourceBand>
      <SrcRect xOff="0" yOff="0" xSize="{SIZE}" ySize="{SIZE}" />
      <DstRect xOff="0" yOff="0" xSize="{SIZE}" ySize="{SIZE}" />
    </SimpleSource>
  </VRTRasterBand>""" for i, band in enumerate(S2_BANDS, start=1))
    return (f'<VRTDataset rasterXSize="{SIZE}" rasterYSize="{SIZE}">\n  <SRS>{CRS}</SRS>\n'
            f"  <GeoTransform>500000, 10, 0, 5300000, 0, -10</GeoTransform>{bands}\n</VRTDataset>\n")


def test_a_vrt_naming_files_beside_it_is_read(tmp_path):
    scenes = tmp_path / "scenes"
    _write_tif(scenes / "data" / "bands.tif")
    vrt = scenes / f"{NAME}.vrt"
    vrt.write_text(_vrt("data/bands.tif", relative=True))
    (scene,) = find_scenes(vrt)
    (product,) = scene.products
    with product.open() as reader:
        dn, _ = reader.read(Window(0, 0, SIZE, SIZE))
    assert np.array_equal(dn, _cube())


@pytest.mark.parametrize("case", ["outside", "upwards", "cwd", "subdataset", "wms", "python"])
def test_a_vrt_that_reads_elsewhere_is_refused(tmp_path, case):
    secret = _write_tif(tmp_path / "elsewhere" / "secret.tif")
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    if case == "outside":
        text = _vrt(str(secret))
    elif case == "upwards":
        text = _vrt("../elsewhere/secret.tif", relative=True)
    elif case == "cwd":  # relativeToVRT="0": GDAL would look in the working folder
        text = _vrt("secret.tif")
    elif case == "subdataset":
        text = _vrt(f'GTIFF_DIR:1:{secret}')
    elif case == "wms":  # a file in the folder, but one that names a server
        (scenes / "wms.xml").write_text("<GDAL_WMS><Service name=\"TMS\"><ServerUrl>http://127.0.0.1:9/"
                                        "${z}/${x}/${y}.png</ServerUrl></Service></GDAL_WMS>")
        text = _vrt("wms.xml", relative=True)
    else:
        _write_tif(scenes / "bands.tif")
        text = _vrt("bands.tif", relative=True, extra="<PixelFunctionLanguage>Python</PixelFunctionLanguage>"
                                                      "<PixelFunctionCode>import os</PixelFunctionCode>")
    vrt = scenes / f"{NAME}.vrt"
    vrt.write_text(text)
    with pytest.raises(SceneError) as caught:
        find_scenes(scenes)
    assert str(vrt) in str(caught.value) and "refused" in str(caught.value)


def test_a_vrt_pointing_at_a_host_sends_it_nothing(tmp_path):
    """The hang a hostile folder caused: a VRT naming /vsicurl/ of a server that never
    answers. It is refused before GDAL opens anything, so the server is never asked."""
    served = tmp_path / "served"
    _write_tif(served / "secret.tif")
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    with LoopbackServer(served) as server:
        vrt = scenes / f"{NAME}.vrt"
        vrt.write_text(_vrt(f"/vsicurl/{server.url}/files/secret.tif"))
        with pytest.raises(SceneError, match="no local file path"):
            find_scenes(scenes)
        # The same XML under a GeoTIFF's name: GDAL goes by content, and so does the check.
        vrt.unlink()
        disguised = scenes / f"{NAME}.tif"
        disguised.write_text(_vrt(f"/vsicurl/{server.url}/files/secret.tif"))
        with pytest.raises(SceneError, match="no local file path"):
            check_scene_file(disguised)
        with pytest.raises(SceneError):
            find_scenes(scenes)
        assert server.requests_seen == []
