// Helpers over set 2 (one material, render/material_table.py; declared in gen/scene.glsl): texture coordinates
// per slot and the base colour. Used by forward.frag and shadow_mask.frag.

vec2 uvFor(int slot) {
    return mix(inTexcoords.xy, inTexcoords.zw, float((material.modes.y >> slot) & 1));
}

// Base colour x factor x vertex colour (linear RGBA).
vec4 baseColor() {
    return material.baseColor * texture(baseColorTex, uvFor(0)) * inColor;
}
