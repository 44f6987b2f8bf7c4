// Set 2 of the forward pipeline (and of the alpha-tested shadow pipeline): one material (render/material_table.py).

layout(std140, set = 2, binding = 0) uniform Material {
    vec4 baseColor;       // linear RGBA factor
    vec4 emissive;        // rgb: emissive factor, a: normal scale
    vec4 params;          // x: metallic, y: roughness, z: occlusion strength, w: alpha cutoff
    ivec4 modes;          // x: alpha mode (0 opaque, 1 mask, 2 blend), y: bit i set = texture slot i reads
                          // TEXCOORD_1, z: 1 = has a normal map
} material;
layout(set = 2, binding = 1) uniform sampler2D baseColorTex;           // sRGB
layout(set = 2, binding = 2) uniform sampler2D metallicRoughnessTex;   // linear: g roughness, b metallic
layout(set = 2, binding = 3) uniform sampler2D normalTex;              // linear, tangent space
layout(set = 2, binding = 4) uniform sampler2D occlusionTex;           // linear: r
layout(set = 2, binding = 5) uniform sampler2D emissiveTex;            // sRGB

const int ALPHA_MASK = 1;
const int ALPHA_BLEND = 2;

vec2 uvFor(int slot) {
    return ((material.modes.y >> slot) & 1) != 0 ? inTexcoords.zw : inTexcoords.xy;
}

// Base colour x factor x vertex colour (linear RGBA).
vec4 baseColor() {
    return material.baseColor * texture(baseColorTex, uvFor(0)) * inColor;
}
