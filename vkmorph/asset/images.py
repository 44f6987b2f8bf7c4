"""Decoding a texture image within a pixel budget (Pillow), for hostile input.

A 1 KB PNG can declare 30,000 x 30,000 pixels (Pillow raises ``DecompressionBombError`` at ``open``), and a real
12,000 x 12,000 PNG costs 2 GB to decode as RGBA. ``decode_image`` reads only the header first (``Image.open`` is
lazy) and decides from the declared size, before any pixel is decoded:

* within the ``image_pixels`` limit (``VKMORPH_MAX_IMAGE_PIXELS``) and ``max_dimension``: decoded as it is;
* JPEG over either: decoded reduced by the JPEG decoder itself (``Image.draft``: 1/2, 1/4 or 1/8 scale), never
  in full; then ``Image.reduce`` to the exact bound;
* any other format over the pixel budget (PNG cannot be decoded reduced): left out, with the reason;
* within the budget but wider or taller than ``max_dimension`` (the device's maximum texture size): decoded,
  then reduced (``Image.reduce``, a box filter) before it goes further.

An image file is read only if it is a regular file and at most 4 bytes per pixel of the budget (+1 MiB) long.
Every failure (unreadable or non-regular file, unknown format, damaged data, decompression bomb, MemoryError)
raises ``materials.MaterialDataError`` with one short reason; the renderer reports it as the documented material
warning and renders without that texture.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from pathlib import Path

import numpy as np

from . import limits
from .files import FileProblem, read_regular
from .materials import MaterialDataError


def reduction(width: int, height: int, budget: int, max_dimension: int | None) -> int:
    """The smallest integer factor that brings ``width`` x ``height`` within ``budget`` pixels and
    ``max_dimension`` on each side (1: none needed)."""
    f = 1
    if width * height > budget:
        f = math.ceil(math.sqrt(width * height / budget))
        while math.ceil(width / f) * math.ceil(height / f) > budget:
            f += 1
    if max_dimension:
        f = max(f, math.ceil(max(width, height) / max_dimension))
    return f


def decode_image(data: bytes | None, path: Path | None, max_dimension: int | None = None) -> np.ndarray:
    """(H, W, 4) uint8 RGBA of the encoded ``data`` (or of the file at ``path``), within the limits above."""
    from PIL import Image, UnidentifiedImageError

    budget = limits.value("image_pixels")
    if data is None:
        most = 4 * budget + (1 << 20)     # an encoded image within the pixel budget is smaller than its RGBA
        try:
            data, size = read_regular(path, limit=most)
        except FileProblem as exc:
            raise MaterialDataError(f"cannot read {path}: {exc}") from None
        if size > most:
            raise MaterialDataError(f"{path} has {size} bytes, more than an image within the pixel limit needs "
                                    f"({most}; raise it with {limits.LIMITS['image_pixels'].env}=N)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the budget below decides
            im = Image.open(io.BytesIO(data))
        with im:
            return _decode(im, budget, max_dimension)
    except Image.DecompressionBombError as exc:
        m = re.search(r"\((\d+) pixels\)", str(exc))
        pixels = int(m.group(1)) if m else budget + 1
        raise MaterialDataError(f"declares {_too_many(pixels)} (Pillow decodes at most "
                                f"{2 * Image.MAX_IMAGE_PIXELS} in any case)") from None
    except UnidentifiedImageError:
        raise MaterialDataError(f"cannot decode {len(data)} bytes: not an image format Pillow reads") from None
    except MemoryError:
        raise MaterialDataError("not enough memory to decode it") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:  # truncated or damaged data
        raise MaterialDataError(f"cannot decode ({str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__})"
                                ) from None


def _too_many(pixels: int) -> str:
    return limits.exceeded("image_pixels", pixels, "pixels") or f"{pixels} pixels"


def _decode(im, budget: int, max_dimension: int | None) -> np.ndarray:
    w, h = im.size
    if w < 1 or h < 1:
        raise MaterialDataError("empty image")
    f = reduction(w, h, budget, max_dimension)
    if f > 1 and im.format == "JPEG":
        scale = min(8, 1 << (f - 1).bit_length())     # the JPEG decoder scales by 1/2, 1/4 or 1/8
        im.draft(im.mode if im.mode in ("RGB", "L") else "RGB", (max(1, w // scale), max(1, h // scale)))
    dw, dh = im.size
    if dw * dh > budget:
        raise MaterialDataError(f"{w}x{h} image: {_too_many(dw * dh)}; left out")
    im.load()
    rest = reduction(dw, dh, budget, max_dimension)
    out = im.reduce(rest) if rest > 1 else im
    rgba = out.convert("RGBA") if out.mode != "RGBA" else out
    for done in {id(x): x for x in (im, out) if x is not rgba}.values():
        done.close()                                  # the decoded pixels go before the array copy is made
    arr = np.asarray(rgba, np.uint8)
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise MaterialDataError("empty image")
    return arr
