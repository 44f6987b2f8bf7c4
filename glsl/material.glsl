// Helpers over set 2 (one material, render/material_table.py; declared in gen/scene.glsl): texture coordinates
// per slot and the base colour. Used by forward.frag and shadow_mask.frag.

// Column k of the KHR_texture_transform rows (material.uvXform0..2: 12 columns, slot i's are 2i and 2i + 1).
vec4 uvRow(int k) {
    return k < 4 ? material.uvXform0[k] : (k < 8 ? material.uvXform1[k - 4] : material.uvXform2[k - 8]);
}

// The slot's texture coordinates: TEXCOORD_0 or _1, then its texture transform (identity without one).
vec2 uvFor(int slot) {
    vec3 uv = vec3(mix(inTexcoords.xy, inTexcoords.zw, float((material.modes.y >> slot) & 1)), 1.0);
    return vec2(dot(uvRow(2 * slot).xyz, uv), dot(uvRow(2 * slot + 1).xyz, uv));
}

// Base colour x factor x vertex colour (linear RGBA).
vec4 baseColor() {
    return material.baseColor * texture(baseColorTex, uvFor(0)) * inColor;
}
