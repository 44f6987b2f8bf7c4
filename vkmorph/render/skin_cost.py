"""The byte cost model that picks vertex-shader or compute skinning per primitive (no Vulkan: ``vkmorph info``
states the choice without a device; render/crowd_skin.py applies it).

Per vertex and frame: vertex-shader skinning reads the vertex and four palette matrices in every pass that
draws it, ``passes x (stride + 4 x 64)``; compute skinning reads them once, writes the 48-byte skinned vertex,
and every pass reads that: ``stride + 4 x 64 + 48 + passes x 48``. Stated, not yet measured on a device.
"""

from __future__ import annotations

from ..asset.model import STATIC_VERTEX
from ..errors import UsageError

PATHS = ("auto", "vertex", "compute")
CROWD_PASSES = 3                # shadow, forward, outline: what `vkmorph info` states the choice for
PALETTE_READ_BYTES = 4 * 64     # four joints' mat4 per vertex
SKINNED_OUT_BYTES = STATIC_VERTEX.itemsize


def skinning_cost(stride: int, passes: int) -> dict[str, int]:
    """Bytes per vertex per frame of each path for a vertex of ``stride`` bytes drawn by ``passes`` passes."""
    return {"vertex": passes * (stride + PALETTE_READ_BYTES),
            "compute": stride + PALETTE_READ_BYTES + SKINNED_OUT_BYTES + passes * SKINNED_OUT_BYTES}


def choose_path(stride: int, passes: int, path: str = "auto") -> str:
    if path not in PATHS:
        raise UsageError(f"skinning path must be one of {PATHS}, got {path!r}")
    if path != "auto":
        return path
    cost = skinning_cost(stride, passes)
    return "compute" if cost["compute"] < cost["vertex"] else "vertex"
