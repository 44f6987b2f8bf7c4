// Shared declarations of the graphics pipelines (skin.vert, static.vert, forward.frag, outline.frag,
// shadow_mask.frag). Set 0: per frame (shadow map, frame constants). Set 1: per item (skinning palette).
// Set 2: per material (render/material_table.py).
// The declarations are generated from vkmorph/gpu/interface.py (SCENE) into gen/scene.glsl.
#include "gen/scene.glsl"
