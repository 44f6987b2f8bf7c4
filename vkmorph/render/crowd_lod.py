"""Level of detail per crowd instance and pass (no Vulkan, numpy over instances).

The raster passes of a large crowd are bound by vertex and primitive throughput (10,000 RobotExpressives on an
H200: ~100 ms per pass, linear in N, ``bench/2026-12-02-h200-crowd-passes.md``), so far instances are drawn with
fewer triangles, as crowd renderers do (GPU Gems 3 ch. 2). The levels are index buffers into each primitive's
original vertices (``asset/lod.py``): every level draws the same morph / skinning output, so an instance's
vertices stay exact whatever level it is drawn at, and nothing is deformed per level.

``CrowdLod(thresholds=, shadow_thresholds=, ratios=, level=)``: per instance and pass, the projected diameter in
pixels of its posed bounding sphere (the culler's box: centre and half diagonal) picks the level: level k while
the diameter is below ``thresholds[k-1]`` and at least ``thresholds[k]``, so ``len(thresholds) == len(ratios)``
(descending pixels). The camera's pass uses the target's height, the shadow pass the shadow map's size
(``shadow_thresholds``, default the same). ``level=k`` forces level k for every instance and pass (0: the full
mesh, what ``lod=None`` draws, from the LOD index buffer). ``parse_lod`` turns ``SceneRenderer(lod=)`` into one.

Projected size from a view-projection matrix alone (``clip = M @ (x, 1)``): the clip-space y per world unit is
``|M[1, :3]|`` (a perspective's focal scale over a unit rotation row; an orthographic one's 2 / height), the
divisor is the sphere's nearest depth ``w - r |M[3, :3]|`` (perspective: view depth minus the radius; ortho:
w = 1), so the diameter in pixels is ``2 r |M[1, :3]| (pixels / 2) / near``; a sphere reaching the eye's plane
(near <= 0) is infinitely large: level 0. Conservative: the nearest point, not the centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..asset.lod import DEFAULT_RATIOS, check_ratios, float_tuple
from ..errors import UsageError

DEFAULT_THRESHOLDS = (192.0, 64.0, 24.0)    # px of projected bounding-sphere diameter: below each, one level more


@dataclass(frozen=True)
class CrowdLod:
    """LOD options of a crowd renderer (module docstring); keyword-only."""

    thresholds: tuple = DEFAULT_THRESHOLDS
    shadow_thresholds: tuple | None = None
    ratios: tuple = DEFAULT_RATIOS
    level: int | None = None

    def __init__(self, *, thresholds=DEFAULT_THRESHOLDS, shadow_thresholds=None, ratios=DEFAULT_RATIOS,
                 level: int | None = None):
        ratios = check_ratios(ratios)
        th = _thresholds(thresholds, len(ratios), "thresholds")
        sh = None if shadow_thresholds is None else _thresholds(shadow_thresholds, len(ratios), "shadow_thresholds")
        if level is not None and (isinstance(level, bool) or not isinstance(level, (int, np.integer))
                                  or not 0 <= int(level) <= len(ratios)):
            raise UsageError(f"LOD level must be an integer in 0..{len(ratios)}, got {level!r}")
        object.__setattr__(self, "thresholds", th)
        object.__setattr__(self, "shadow_thresholds", sh)
        object.__setattr__(self, "ratios", ratios)
        object.__setattr__(self, "level", None if level is None else int(level))

    @property
    def levels(self) -> int:
        """Levels including the full mesh (level 0)."""
        return 1 + len(self.ratios)

    def select(self, boxes: np.ndarray, view_proj: np.ndarray, pixels: float, *, shadow: bool = False) -> np.ndarray:
        """(instances,) int8 levels of the instances with world boxes ``boxes`` (N, 2, 3) seen through
        ``view_proj`` on a target ``pixels`` high (the camera) or a ``pixels`` shadow map (``shadow=True``)."""
        if self.level is not None:
            return np.full(len(boxes), self.level, np.int8)
        th = self.shadow_thresholds if shadow and self.shadow_thresholds is not None else self.thresholds
        d = projected_diameter(boxes, view_proj, pixels)
        # thresholds descend: the count of thresholds above the diameter is the level
        return (d[:, None] < np.asarray(th)[None, :]).sum(axis=1).astype(np.int8)


def _thresholds(th, n: int, what: str) -> tuple:
    t = float_tuple(th, what)
    if len(t) != n or any(not np.isfinite(x) or x < 0 for x in t) or any(b > a for a, b in zip(t, t[1:])):
        raise UsageError(f"LOD {what} must be {n} non-increasing pixel sizes (one per ratio), got {th!r}")
    return t


def projected_diameter(boxes: np.ndarray, view_proj: np.ndarray, pixels: float) -> np.ndarray:
    """(instances,) diameter in pixels of each box's bounding sphere through ``view_proj`` (module docstring)."""
    b = np.asarray(boxes, np.float64)
    m = np.asarray(view_proj, np.float64)
    c, r = (b[:, 0] + b[:, 1]) / 2, np.linalg.norm(b[:, 1] - b[:, 0], axis=1) / 2
    w = c @ m[3, :3] + m[3, 3]
    near = w - r * np.linalg.norm(m[3, :3])
    s = np.linalg.norm(m[1, :3])
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(near > 1e-9, r * s * float(pixels) / np.maximum(near, 1e-9), np.inf)
    return d


def parse_lod(lod) -> CrowdLod | None:
    """``SceneRenderer(lod=)``: None / False / "off" (no LOD), True / "on" (defaults), an int (that level forced)
    or a ``CrowdLod``."""
    if lod is None or lod is False or lod == "off":
        return None
    if lod is True or lod == "on":
        return CrowdLod()
    if isinstance(lod, CrowdLod):
        return lod
    if isinstance(lod, (int, np.integer)):
        return CrowdLod(level=int(lod))
    raise UsageError(f"lod must be None, 'off', 'on', a level (int) or a CrowdLod, got {lod!r}")
