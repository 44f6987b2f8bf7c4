#version 450
#extension GL_GOOGLE_include_directive : require
// Skinning capture: the same skinning code as skin.vert, run over the morph output vertex buffer, writing
// model-space position / normal / tangent so tests and `vkmorph morph --skinned` read what the GPU computes.
// src.words: the vertex buffer as raw 32-bit words (joints are uint); dst.values: 3 vec4 per vertex.
#include "gen/skin_capture.glsl"
#include "skinning.glsl"

float f(uint o) { return uintBitsToFloat(src.words[o]); }
vec3 read3(uint o) { return vec3(f(o), f(o + 1), f(o + 2)); }

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertexCount) return;
    uint base = v * pc.strideWords;
    vec3 p = read3(base + pc.positionOffset);
    vec3 n = read3(base + pc.normalOffset);
    vec3 t = read3(base + pc.tangentOffset);
    uint jo = base + pc.jointsOffset;
    uvec4 j = uvec4(src.words[jo], src.words[jo + 1], src.words[jo + 2], src.words[jo + 3]);
    uint wo = base + pc.weightsOffset;
    vec4 w = vec4(f(wo), f(wo + 1), f(wo + 2), f(wo + 3));
    mat4 skin = blendJoints(palette.joints[j.x], palette.joints[j.y], palette.joints[j.z], palette.joints[j.w], w);
    skinVertex(skin, p, n, t);
    dst.values[3 * v] = vec4(p, 1.0);
    dst.values[3 * v + 1] = vec4(n, 0.0);
    dst.values[3 * v + 2] = vec4(t, 0.0);
}
