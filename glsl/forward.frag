#version 450
#extension GL_GOOGLE_include_directive : require
// Forward pass: glTF 2.0 metallic-roughness materials (base colour texture x factor x vertex colour,
// metallic-roughness texture, normal map with the interpolated tangent and its handedness, occlusion, emissive,
// alpha OPAQUE / MASK / BLEND; KHR_texture_transform per slot, KHR_materials_unlit), lit by the BRDF of the glTF spec's appendix B (GGX distribution, height-correlated
// Smith visibility, Schlick Fresnel) under the shadowed directional light (3x3 PCF), plus an image-free hemisphere
// ambient (diffuse irradiance and a Karis analytic split-sum specular). Khronos PBR Neutral tone mapping, then the
// sRGB attachment encodes.
#include "scene.glsl"

#include "gen/scene_varyings_in.glsl"
#include "material.glsl"

#include "gen/scene_target_out.glsl"

#include "lighting.glsl"

// Karis, "Physically Based Shading on Mobile": analytic fit of the split-sum environment BRDF.
vec2 envBRDF(float ndotv, float roughness) {
    const vec4 c0 = vec4(-1.0, -0.0275, -0.572, 0.022);
    const vec4 c1 = vec4(1.0, 0.0425, 1.04, -0.04);
    vec4 r = roughness * c0 + c1;
    float a004 = min(r.x * r.x, exp2(-9.28 * ndotv)) * r.x + r.y;
    return vec2(-1.04, 1.04) * a004 + r.zw;
}

void main() {
    // all material textures first, unconditionally (see shadowFactor)
    vec4 base = baseColor();
    vec4 mr = texture(metallicRoughnessTex, uvFor(1));
    vec3 tn = texture(normalTex, uvFor(2)).xyz * 2.0 - 1.0;
    float occlusion = texture(occlusionTex, uvFor(3)).r;
    vec3 emissiveTexel = texture(emissiveTex, uvFor(4)).rgb;

    float roughness = clamp(material.params.y * mr.g, 0.03, 1.0);
    float metallic = clamp(material.params.x * mr.b, 0.0, 1.0);
    float heatMap = float(item.heatJoint >= 0);   // arithmetic, not a branch (see shadowFactor)
    base.rgb = mix(base.rgb, mix(vec3(0.05, 0.1, 0.8), vec3(0.95, 0.15, 0.05), clamp(inHeat, 0.0, 1.0)), heatMap);
    metallic *= 1.0 - heatMap;

    vec3 ng = normalize(inNormal);
    vec3 t = inTangent.xyz - ng * dot(ng, inTangent.xyz);
    t = dot(t, t) > 1e-12 ? normalize(t) : vec3(1.0, 0.0, 0.0);
    vec3 b = cross(ng, t) * (inTangent.w < 0.0 ? -1.0 : 1.0);
    if (!gl_FrontFacing) { ng = -ng; t = -t; b = -b; }
    tn.xy *= material.emissive.a;
    vec3 mapped = mat3(t, b, ng) * tn;
    vec3 n = normalize(mix(ng, mapped, float(material.modes.z != 0) * step(1e-12, dot(mapped, mapped))));

    vec3 v = normalize(frame.cameraPos.xyz - inWorld);
    vec3 l = normalize(-frame.lightDir.xyz);
    vec3 h = normalize(l + v);
    float ndotl = clamp(dot(n, l), 0.0, 1.0);
    float ndotv = clamp(abs(dot(n, v)), 1e-4, 1.0);
    float ndoth = clamp(dot(n, h), 0.0, 1.0);
    float vdoth = clamp(dot(v, h), 0.0, 1.0);
    float lit = shadowFactor(inWorld, max(dot(ng, l), 0.0));

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
    float shadow = ndotl > 0.0 ? lit : 0.0;

    float ao = 1.0 + material.params.z * (occlusion - 1.0);
    vec2 ab = envBRDF(ndotv, roughness);
    vec3 ambient = (cDiff * hemisphere(n) + hemisphere(reflect(-v, n)) * (f0 * ab.x + ab.y)) * ao;
    vec3 emissive = material.emissive.rgb * emissiveTexel;

    vec3 color = direct * frame.lightDir.w * shadow + ambient + emissive;
    color = pbrNeutral(color * frame.cameraPos.w);
    color = mix(color, base.rgb, float(material.modes.w != 0));   // KHR_materials_unlit: the base colour as is
    if (base.a < mix(-1.0, material.params.w, float(material.modes.x == ALPHA_MASK))) discard;
    outColor = vec4(color, mix(1.0, base.a, float(material.modes.x == ALPHA_BLEND)));
}
