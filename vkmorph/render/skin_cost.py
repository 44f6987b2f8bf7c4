"""The byte cost model that picks vertex-shader or compute skinning per primitive (no Vulkan: ``vkmorph info``
states the choice without a device; render/crowd_skin.py applies it).

Per vertex and frame: vertex-shader skinning reads the vertex and four palette matrices in every pass that
draws it, ``passes x (stride + 4 x 64)``; compute skinning reads them once, writes the 48-byte skinned vertex,
and every pass reads that: ``stride + 4 x 64 + 48 + passes x 48``. Stated, not yet measured on a device.

The byte model alone predicts compute everywhere (480 against 672 B per 80-byte vertex in two passes: 1.4x), but
on an H200 the vertex-shader path cost only ~1.2x the compute path (bench/2026-12-02c-h200-crowd-passes.md), and
on lavapipe 0.78-1.06x (bench/2026-12-02-lavapipe-crowd-lod.md, LOD off): the raster work per
drawn vertex (vertex fetch, primitive assembly, rasterization: the same in both paths) dilutes the difference,
and most of a crowd's vertices may not be skinned at all (RobotExpressive: 4 of 19 primitives). ``pass_model``
is a time model (no Vulkan, keyword inputs) per frame:

* compute path: the skinning dispatch moves ``stride + 256 + 48`` bytes per skinned vertex (every vertex, whatever
  level of detail draws it), then each pass reads 48 bytes per drawn vertex plus ``raster_ns``;
* vertex-shader path: each pass reads ``stride + 256`` bytes per drawn skinned vertex plus ``raster_ns``;
* other drawn vertices (rigid, morphed or not): 48 bytes plus ``raster_ns`` per pass in both;

bytes at ``bandwidth_gbs`` (1 GB/s = 1 byte/ns). ``calibrate`` solves both constants from the compute path's
measured skinning and raster milliseconds (``crowd_bench --passes`` does, per row), and the model then predicts
the vertex path: the bench prints predicted against measured vertex / compute. With levels of detail, the
drawn skinned vertices fall below the skinned ones and the vertex path can win (``choose_time(...,
drawn_fraction=)``: for an 80-byte vertex in two passes below ~2/3 of the vertices drawn).
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


def pass_model(*, passes: int, stride: int, skinned_vertices: float, skinned_drawn: float, other_drawn: float,
               bandwidth_gbs: float, raster_ns: float) -> dict[str, float]:
    """Modelled GPU ms per frame of each path (module docstring): ``skinned_vertices`` skinned per frame,
    ``skinned_drawn`` / ``other_drawn`` vertices drawn per pass (summed over instances), ``raster_ns`` per drawn
    vertex and pass, bytes at ``bandwidth_gbs``. Keys: "compute", "vertex", "compute_skin", "compute_raster"."""
    if bandwidth_gbs <= 0 or raster_ns < 0:
        raise UsageError(f"pass_model: bandwidth_gbs must be > 0 and raster_ns >= 0, got {bandwidth_gbs}, {raster_ns}")
    bw, out = float(bandwidth_gbs), SKINNED_OUT_BYTES
    other = passes * other_drawn * (out / bw + raster_ns)
    skin = skinned_vertices * (stride + PALETTE_READ_BYTES + out) / bw
    raster_c = passes * skinned_drawn * (out / bw + raster_ns) + other
    raster_v = passes * skinned_drawn * ((stride + PALETTE_READ_BYTES) / bw + raster_ns) + other
    return {"compute": (skin + raster_c) * 1e-6, "vertex": raster_v * 1e-6, "compute_skin": skin * 1e-6,
            "compute_raster": raster_c * 1e-6}


def calibrate(*, passes: int, stride: int, skinned_vertices: float, skinned_drawn: float, other_drawn: float,
              skin_ms: float, raster_ms: float) -> dict[str, float]:
    """``bandwidth_gbs`` and ``raster_ns`` of ``pass_model`` from the compute path's measured skinning dispatch
    (``skin_ms``) and shadow + forward (``raster_ms``) of one frame."""
    if skin_ms <= 0 or raster_ms <= 0 or skinned_vertices <= 0 or skinned_drawn + other_drawn <= 0:
        raise UsageError("calibrate: needs positive skinning and raster ms and vertex counts")
    bw = skinned_vertices * (stride + PALETTE_READ_BYTES + SKINNED_OUT_BYTES) / (skin_ms * 1e6)
    per_vertex = raster_ms * 1e6 / (passes * (skinned_drawn + other_drawn))
    return {"bandwidth_gbs": bw, "raster_ns": max(0.0, per_vertex - SKINNED_OUT_BYTES / bw)}


def choose_time(stride: int, passes: int, *, bandwidth_gbs: float, raster_ns: float,
                drawn_fraction: float = 1.0) -> str:
    """The time model's pick for one skinned primitive whose vertices are drawn at ``drawn_fraction`` of its
    count per pass (levels of detail: below 1)."""
    m = pass_model(passes=passes, stride=stride, skinned_vertices=1.0, skinned_drawn=float(drawn_fraction),
                   other_drawn=0.0, bandwidth_gbs=bandwidth_gbs, raster_ns=raster_ns)
    return "compute" if m["compute"] < m["vertex"] else "vertex"
