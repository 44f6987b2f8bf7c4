"""vkmorph: GPU morph targets and four-bone skinning on Vulkan.

The Python API for posing and baking is `vkmorph.open` (see `vkmorph.api`); embedding in your own Vulkan
renderer is `vkmorph.render.morph_pass.MorphRuntime`. Layers import one way: asset -> morph -> anim -> gpu ->
render -> app. Importing ``vkmorph`` (and the CPU layers) never loads ``vulkan``; GPU names load on first use.
"""

from __future__ import annotations

from .errors import AssetError, GpuError, UsageError, VkmorphError

__version__ = "0.1.0"
__all__ = ["AssetError", "GpuError", "UsageError", "VkmorphError", "load_scene", "open", "__version__"]


def load_scene(path=None, **options):
    """Import and validate a scene (glTF/FBX/... through Assimp); ``None`` loads the built-in default scene.

    Options (see ``vkmorph.asset.importer.load_scene``): ``isolate``, ``allow_external_uris``, ``validate``."""
    from .asset.importer import load_scene as _load

    return _load(path, **options)


def open(path=None, **kw):  # noqa: A001 - vkmorph.open is the API's entry point, like io.open
    """Open a model for posing and baking on the GPU: returns a `vkmorph.model.Model` (close it, or use ``with``).

    >>> with vkmorph.open("robot.glb") as m:
    ...     pose = m.pose(weights={"Surprised": 1.0}, clip="Dance", time=1.2)
    """
    from .model import Model

    return Model(path, **kw)
