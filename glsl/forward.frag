#version 450
#extension GL_GOOGLE_include_directive : require
// Forward pass: glTF 2.0 metallic-roughness materials (base colour texture x factor x vertex colour,
// metallic-roughness texture, normal map with the interpolated tangent and its handedness, occlusion, emissive,
// alpha OPAQUE / MASK / BLEND), lit by the BRDF of the glTF spec's appendix B (GGX distribution, height-correlated
// Smith visibility, Schlick Fresnel) under the shadowed directional light (3x3 PCF), plus an image-free hemisphere
// ambient (diffuse irradiance and a Karis analytic split-sum specular). Khronos PBR Neutral tone mapping, then the
// sRGB attachment encodes.
#include "scene.glsl"

#include "varyings.glsl"
#include "material.glsl"

layout(location = 0) out vec4 outColor;

const float PI = 3.14159265359;

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

vec3 hemisphere(vec3 dir) {
    return mix(frame.ground.rgb, frame.sky.rgb, 0.5 + 0.5 * dir.y);
}

// Karis, "Physically Based Shading on Mobile": analytic fit of the split-sum environment BRDF.
vec2 envBRDF(float ndotv, float roughness) {
    const vec4 c0 = vec4(-1.0, -0.0275, -0.572, 0.022);
    const vec4 c1 = vec4(1.0, 0.0425, 1.04, -0.04);
    vec4 r = roughness * c0 + c1;
    float a004 = min(r.x * r.x, exp2(-9.28 * ndotv)) * r.x + r.y;
    return vec2(-1.04, 1.04) * a004 + r.zw;
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

void main() {
    vec4 base = baseColor();
    if (material.modes.x == ALPHA_MASK && base.a < material.params.w) discard;
    float metallic = material.params.x;
    float roughness = material.params.y;
    vec4 mr = texture(metallicRoughnessTex, uvFor(1));
    roughness = clamp(roughness * mr.g, 0.03, 1.0);
    metallic = clamp(metallic * mr.b, 0.0, 1.0);
    if (item.heatJoint >= 0) {
        base.rgb = mix(vec3(0.05, 0.1, 0.8), vec3(0.95, 0.15, 0.05), clamp(inHeat, 0.0, 1.0));
        metallic = 0.0;
    }

    vec3 ng = normalize(inNormal);
    vec3 t = inTangent.xyz - ng * dot(ng, inTangent.xyz);
    t = dot(t, t) > 1e-12 ? normalize(t) : vec3(1.0, 0.0, 0.0);
    vec3 b = cross(ng, t) * (inTangent.w < 0.0 ? -1.0 : 1.0);
    if (!gl_FrontFacing) { ng = -ng; t = -t; b = -b; }
    vec3 n = ng;
    if (material.modes.z != 0) {
        vec3 tn = texture(normalTex, uvFor(2)).xyz * 2.0 - 1.0;
        tn.xy *= material.emissive.a;
        vec3 mapped = mat3(t, b, ng) * tn;
        n = dot(mapped, mapped) > 1e-12 ? normalize(mapped) : ng;
    }

    vec3 v = normalize(frame.cameraPos.xyz - inWorld);
    vec3 l = normalize(-frame.lightDir.xyz);
    vec3 h = normalize(l + v);
    float ndotl = clamp(dot(n, l), 0.0, 1.0);
    float ndotv = clamp(abs(dot(n, v)), 1e-4, 1.0);
    float ndoth = clamp(dot(n, h), 0.0, 1.0);
    float vdoth = clamp(dot(v, h), 0.0, 1.0);

    vec3 cDiff = mix(base.rgb, vec3(0.0), metallic);
    vec3 f0 = mix(vec3(0.04), base.rgb, metallic);
    float a = roughness * roughness;
    float a2 = a * a;
    vec3 F = f0 + (1.0 - f0) * pow(1.0 - vdoth, 5.0);
    float dd = ndoth * ndoth * (a2 - 1.0) + 1.0;
    float D = a2 / (PI * dd * dd);
    float vis = 0.5 / max(ndotl * sqrt(ndotv * ndotv * (1.0 - a2) + a2)
                          + ndotv * sqrt(ndotl * ndotl * (1.0 - a2) + a2), 1e-6);
    vec3 direct = ((1.0 - F) * cDiff / PI + F * D * vis) * ndotl;
    float shadow = ndotl > 0.0 ? shadowFactor(inWorld, max(dot(ng, l), 0.0)) : 0.0;

    float ao = 1.0 + material.params.z * (texture(occlusionTex, uvFor(3)).r - 1.0);
    vec2 ab = envBRDF(ndotv, roughness);
    vec3 ambient = (cDiff * hemisphere(n) + hemisphere(reflect(-v, n)) * (f0 * ab.x + ab.y)) * ao;
    vec3 emissive = material.emissive.rgb * texture(emissiveTex, uvFor(4)).rgb;

    vec3 color = direct * frame.lightDir.w * shadow + ambient + emissive;
    color = pbrNeutral(color * frame.cameraPos.w);
    outColor = vec4(color, material.modes.x == ALPHA_BLEND ? base.a : 1.0);
}
