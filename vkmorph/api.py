"""The Python API for baking poses: open a model, pose it, bake a clip on the GPU, export the result.

>>> import numpy as np, vkmorph
>>> with vkmorph.open("RobotExpressive.glb") as m:
...     pose = m.pose(weights={"Surprised": 1.0}, clip="Dance", time=1.2, space="world")
...     head = pose["Head_4/0"]                       # positions, normals (V, 3), indices (I,)
...     bake = m.bake(clip="Dance", times=np.linspace(0, 1, 30))   # bake.positions: (30, V, 3)
...     bake.export("dance.glb")                      # glTF: morph-target frames + a weights animation

This module is the stable name of the API; each part lives in a module with one job:

- `vkmorph.model`: ``Model`` (``vkmorph.open``), ``Pose``, ``Primitive``; posing, spaces, ``Model(ctx=)``.
- `vkmorph.bake`: ``Bake``, the GPU baker (the morph compute pass of `vkmorph.render.morph_pass.MorphRuntime`,
  then ``glsl/bake.comp``, the skinning code of ``skin.vert``), ``bake_numpy`` (the numpy reference the tests
  compare against) and ``measure_bake_throughput``.
- `vkmorph.export`: writing a pose or a bake as .glb / .gltf / .obj / .ply.
"""

from __future__ import annotations

from .bake import Bake, bake_numpy, measure_bake_throughput
from .export import EXPORT_SUFFIXES, ExportSource, export
from .model import SPACES, Model, Pose, Primitive, open

__all__ = ["EXPORT_SUFFIXES", "SPACES", "Bake", "ExportSource", "Model", "Pose", "Primitive", "bake_numpy",
           "export", "measure_bake_throughput", "open"]
