// Lighting shared by forward.frag and ground.frag: the shadowed directional light (3x3 PCF), the hemisphere
// ambient and the Khronos PBR Neutral tone mapper. Needs scene.glsl (frame constants, shadow map) included first.

const float PI = 3.14159265359;

// 3x3 PCF of the directional light's shadow map; 1 outside the map. Every texture in these shaders is sampled in
// uniform control flow (no loop, branch or early return around a sample), as implicit derivatives need. Values
// of push constants and material constants pick results with selects, never branches: lavapipe (Mesa 22.3)
// specializes a shader variant per value of a uniform that a branch depends on and keeps it, which grew memory
// by ~1 MB per draw here.
float shadowFactor(vec3 world, float ndotl) {
    vec4 lp = frame.lightViewProj * vec4(world, 1.0);
    vec3 ndc = lp.xyz / lp.w;
    vec2 uv = ndc.xy * 0.5 + 0.5;
    float bias = SHADOW_BIAS * (1.0 + 2.0 * (1.0 - ndotl));
    vec3 c = vec3(uv, ndc.z - bias);
    float lit = textureOffset(shadowMap, c, ivec2(-1, -1)) + textureOffset(shadowMap, c, ivec2(0, -1))
              + textureOffset(shadowMap, c, ivec2(1, -1)) + textureOffset(shadowMap, c, ivec2(-1, 0))
              + texture(shadowMap, c) + textureOffset(shadowMap, c, ivec2(1, 0))
              + textureOffset(shadowMap, c, ivec2(-1, 1)) + textureOffset(shadowMap, c, ivec2(0, 1))
              + textureOffset(shadowMap, c, ivec2(1, 1));
    bool outside = any(lessThan(uv, vec2(0.0))) || any(greaterThan(uv, vec2(1.0))) || ndc.z > 1.0;
    return outside ? 1.0 : lit / 9.0;
}

vec3 hemisphere(vec3 dir) {
    return mix(frame.ground.rgb, frame.sky.rgb, 0.5 + 0.5 * dir.y);
}

// Khronos PBR Neutral tone mapper (https://github.com/KhronosGroup/ToneMapping), linear in, linear out.
vec3 pbrNeutral(vec3 color) {
    const float startCompression = 0.8 - 0.04;
    const float desaturation = 0.15;
    float x = min(color.r, min(color.g, color.b));
    float offset = x < 0.08 ? x - 6.25 * x * x : 0.04;
    color -= offset;
    float peak = max(color.r, max(color.g, color.b));
    if (peak < startCompression) return color;
    const float d = 1.0 - startCompression;
    float newPeak = 1.0 - d * d / (peak + d - startCompression);
    color *= newPeak / peak;
    float g = 1.0 - 1.0 / (desaturation * (peak - newPeak) + 1.0);
    return mix(color, vec3(newPeak), g);
}
