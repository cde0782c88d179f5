"""The README's picture: drawn by ``mlpl-lab course figure``, kept small because it lives in git."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

from mlpl_lab.course.figures import FRONT, front_figure


def _ihdr(path: Path) -> tuple[int, int, int]:
    """Width, height and colour type, read from the PNG's header chunk by hand (PNG spec §11.2.2)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height, _depth, colour_type = struct.unpack(">IIBB", data[16:26])
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], "IHDR checksum is wrong"
    return width, height, colour_type


def test_the_front_figure_is_a_small_palette_png_of_the_scenes(tmp_path):
    path = front_figure(tmp_path / "front.png")
    width, height, colour_type = _ihdr(path)
    assert colour_type == 3, "the picture should be saved with a palette (PNG colour type 3)"
    assert width > 600 and height > 500, (width, height)
    assert path.stat().st_size < 120_000, path.stat().st_size
    from PIL import Image

    colours = Image.open(path).convert("RGB").getcolors(1 << 16)
    assert colours is not None and len(colours) > 100, "eight noisy scenes need many colours"


def test_the_tracked_front_figure_is_the_palette_form():
    width, height, colour_type = _ihdr(FRONT)
    assert colour_type == 3 and FRONT.stat().st_size < 120_000, "run: mlpl-lab course figure"
