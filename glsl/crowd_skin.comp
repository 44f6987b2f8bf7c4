#version 450
#extension GL_GOOGLE_include_directive : require
// Crowd compute skinning ("skin once, draw many"): every instance's vertices of one primitive skinned once per
// frame by its own palette, written in the STATIC_VERTEX layout (position, normal, tangent with w, texcoord) so
// the shadow, forward and outline passes draw them as plain vertices instead of skinning them again each.
// The skinning code is skin.vert's (skinning.glsl). Workgroup row y = instance pc.firstInstance + y. With
// pc.motion, the instance's previous positions too (render/crowd_skin.py states when they are valid).
#include "gen/crowd_skin.glsl"
#include "skinning.glsl"

float f(uint o) { return uintBitsToFloat(src.words[o]); }
vec3 read3(uint o) { return vec3(f(o), f(o + 1u), f(o + 2u)); }

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertexCount) return;
    uint inst = pc.firstInstance + gl_WorkGroupID.y;
    uint base = pc.srcFirstWord + inst * pc.srcInstanceWords + v * pc.strideWords;
    vec3 p = read3(base + pc.positionOffset);
    vec3 n = read3(base + pc.normalOffset);
    vec3 t = read3(base + pc.tangentOffset);
    float tw = f(base + pc.tangentOffset + 3u);
    vec2 uv = vec2(f(base + pc.texcoordOffset), f(base + pc.texcoordOffset + 1u));
    uint jo = base + pc.jointsOffset;
    uvec4 j = uvec4(src.words[jo], src.words[jo + 1u], src.words[jo + 2u], src.words[jo + 3u]);
    uint wo = base + pc.weightsOffset;
    vec4 w = vec4(f(wo), f(wo + 1u), f(wo + 2u), f(wo + 3u));
    uint pb = pc.paletteFirst + inst * pc.paletteInstance;
    mat4 skin = blendJoints(palette.joints[pb + j.x], palette.joints[pb + j.y], palette.joints[pb + j.z],
                            palette.joints[pb + j.w], w);
    skinVertex(skin, p, n, t);
    uint o = pc.dstFirstVec4 + inst * pc.dstInstanceVec4 + 3u * v;
    if (pc.motion != 0u) {   // before dst is written: with one slot, last is dst (the previous frame's vertex)
        vec3 before = fromLast[inst] != 0u ? last.values[o].xyz : p;   // 0: first frame / unchanged: no motion
        prev.values[pc.prevFirstVec4 + inst * pc.vertexCount + v] = vec4(before, 1.0);
    }
    dst.values[o] = vec4(p, n.x);
    dst.values[o + 1u] = vec4(n.yz, t.xy);
    dst.values[o + 2u] = vec4(t.z, tw, uv);
}
