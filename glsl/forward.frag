#version 450
#extension GL_GOOGLE_include_directive : require
// Forward pass: Lambert diffuse + normalized Blinn-Phong specular with Schlick Fresnel (dielectric, F0 = 0.04),
// hemisphere ambient, and a 3x3 PCF lookup of the directional light's shadow map. Writes linear colour into an
// sRGB attachment (the hardware encodes).
#include "scene.glsl"

layout(location = 0) in vec3 inWorld;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec2 inTexcoord;
layout(location = 3) in float inHeat;

layout(location = 0) out vec4 outColor;

float shadowFactor(vec3 world, float ndotl) {
    vec4 lp = frame.lightViewProj * vec4(world, 1.0);
    vec3 ndc = lp.xyz / lp.w;
    vec2 uv = ndc.xy * 0.5 + 0.5;
    if (any(lessThan(uv, vec2(0.0))) || any(greaterThan(uv, vec2(1.0))) || ndc.z > 1.0) return 1.0;
    float bias = SHADOW_BIAS * (1.0 + 2.0 * (1.0 - ndotl));
    vec2 texel = 1.0 / vec2(textureSize(shadowMap, 0));
    float lit = 0.0;
    for (int y = -1; y <= 1; ++y)
        for (int x = -1; x <= 1; ++x)
            lit += texture(shadowMap, vec3(uv + vec2(x, y) * texel, ndc.z - bias));
    return lit / 9.0;
}

void main() {
    vec3 n = normalize(inNormal);
    if (!gl_FrontFacing) n = -n;
    vec3 l = normalize(-frame.lightDir.xyz);
    vec3 v = normalize(frame.cameraPos.xyz - inWorld);
    vec3 h = normalize(l + v);
    float ndotl = max(dot(n, l), 0.0);
    vec3 base = item.baseColor.rgb;
    if (item.heatJoint >= 0) base = mix(vec3(0.05, 0.1, 0.8), vec3(0.95, 0.15, 0.05), clamp(inHeat, 0.0, 1.0));
    float shininess = 64.0;
    float fresnel = 0.04 + 0.96 * pow(1.0 - max(dot(h, v), 0.0), 5.0);
    float spec = (shininess + 8.0) / 25.1327 * pow(max(dot(n, h), 0.0), shininess) * fresnel;
    float shadow = ndotl > 0.0 ? shadowFactor(inWorld, ndotl) : 0.0;
    vec3 sky = frame.ambient.rgb * (0.6 + 0.4 * n.y);
    vec3 color = base * sky + (base * ndotl + spec * ndotl) * frame.lightDir.w * shadow;
    outColor = vec4(color, item.baseColor.a);
}
