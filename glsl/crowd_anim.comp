#version 450
#extension GL_GOOGLE_include_directive : require
// Crowd animation on the GPU (GPU Gems 3, ch. 2 "Animated Crowd Rendering"): one thread per instance samples
// its clip's channels at its own time (phase + speed x the crowd's clock, wrapped by the clip's duration),
// composes each node's local TRS (the rest pose where no channel drives it), walks the hierarchy parents first
// (nodes are stored in that order, so a parent's world matrix is ready before its children's) and writes the
// instance's palette: world[joint] x inverse bind, world space, the instance transform entering at the roots.
// Same formulas as vkmorph/anim/sampler.py and pose_batch.py (the CPU reference), in float32.
#include "gen/crowd_anim.glsl"

const uint STEP = 0u, LINEAR = 1u, CUBIC = 2u, QUATERNION = 16u, ROOT = 0xFFFFFFFFu, NO_CLIP = 0xFFFFFFFFu;

// the segment [times[i], times[i + 1]] holding t and the fraction a (0 at and beyond the ends), as _locate
void locate(uint first, uint count, float t, out uint i, out float a) {
    i = 0u;
    a = 0.0;
    if (count <= 1u || t <= times[first]) return;
    if (t >= times[first + count - 1u]) { i = count - 1u; return; }
    uint lo = 0u, hi = count - 1u;              // times[lo] <= t < times[hi]
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (times[first + mid] <= t) lo = mid; else hi = mid;
    }
    i = lo;
    float span = times[first + lo + 1u] - times[first + lo];
    a = span > 0.0 ? (t - times[first + lo]) / span : 0.0;
}

vec4 slerpQ(vec4 q0, vec4 q1, float a) {
    float d = dot(q0, q1);
    if (d < 0.0) { q1 = -q1; d = -d; }
    vec4 q;
    if (d > 1.0 - 1e-6) {                       // nearly identical: lerp (float32 threshold; the CPU's is 1e-9)
        q = q0 + a * (q1 - q0);
    } else {
        float th = acos(clamp(d, -1.0, 1.0));
        q = (sin((1.0 - a) * th) * q0 + sin(a * th) * q1) / sin(th);
    }
    return normalize(q);
}

vec4 sampleChannel(uint c, float t) {
    uvec4 ch = channels[c];
    uint mode = ch.x & 15u, first = ch.y, count = ch.z, fv = ch.w;
    bool quat = (ch.x & QUATERNION) != 0u;
    uint i;
    float a;
    locate(first, count, t, i, a);
    bool cubic = mode == CUBIC;
    vec4 vi = cubic ? values[fv + 3u * i + 1u] : values[fv + i];
    vec4 outv = vi;
    if (mode != STEP && a != 0.0 && i < count - 1u) {
        uint j = i + 1u;
        if (cubic) {
            float dt = times[first + j] - times[first + i];
            vec4 p0 = vi, m0 = values[fv + 3u * i + 2u] * dt;
            vec4 p1 = values[fv + 3u * j + 1u], m1 = values[fv + 3u * j] * dt;
            float a2 = a * a, a3 = a2 * a;
            outv = (2.0 * a3 - 3.0 * a2 + 1.0) * p0 + (a3 - 2.0 * a2 + a) * m0 + (-2.0 * a3 + 3.0 * a2) * p1
                 + (a3 - a2) * m1;
        } else if (quat) {
            outv = slerpQ(vi, values[fv + j], a);
        } else {
            outv = mix(vi, values[fv + j], a);
        }
    }
    if (quat) {
        float n = length(outv);
        outv = n > 0.0 ? outv / n : vec4(0.0, 0.0, 0.0, 1.0);
    }
    return outv;
}

mat4 trs(vec3 t, vec4 q, vec3 s) {              // skeleton.trs_matrix; GLSL constructors take columns
    float x = q.x, y = q.y, z = q.z, w = q.w;
    vec3 c0 = vec3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + z * w), 2.0 * (x * z - y * w)) * s.x;
    vec3 c1 = vec3(2.0 * (x * y - z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + x * w)) * s.y;
    vec3 c2 = vec3(2.0 * (x * z + y * w), 2.0 * (y * z - x * w), 1.0 - 2.0 * (x * x + y * y)) * s.z;
    return mat4(vec4(c0, 0.0), vec4(c1, 0.0), vec4(c2, 0.0), vec4(t, 1.0));
}

void main() {
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.instanceCount) return;
    uint inst = pc.firstInstance + k;
    uvec4 p = params[inst];
    uint clip = p.x;
    if (clip == NO_CLIP) return;                // posed on the CPU: the host wrote this instance's palettes
    float duration = uintBitsToFloat(p.w);
    float t = uintBitsToFloat(p.y) + uintBitsToFloat(p.z) * pc.time;
    if (duration > 0.0) t -= duration * floor(t / duration);
    mat4 world[MAX_NODES];
    for (uint n = 0u; n < pc.nodeCount; ++n) {
        vec4 rt = nodes[3u * n], rr = nodes[3u * n + 1u], rs = nodes[3u * n + 2u];
        uvec4 nc = nodeChannels[clip * pc.nodeCount + n];
        vec3 tr = nc.x != 0u ? sampleChannel(nc.x - 1u, t).xyz : rt.xyz;
        vec4 ro = nc.y != 0u ? sampleChannel(nc.y - 1u, t) : rr;
        vec3 sc = nc.z != 0u ? sampleChannel(nc.z - 1u, t).xyz : rs.xyz;
        uint parent = floatBitsToUint(rt.w);
        mat4 local = trs(tr, ro, sc);
        world[n] = (parent == ROOT ? transforms[inst] : world[parent]) * local;
    }
    // an entry (node, inverse bind, column, relative): world[node] x inverse bind, and with relative = r + 1 (the
    // bake's mesh space) that relative to node r: inverse(world[r]) x it. The caller guarantees world[r] is
    // regular (vkmorph/bake.py: no zero scale can reach r in the clip); entries of one r are consecutive.
    uint base = inst * pc.paletteWidth;
    uint relNode = 0u;
    mat4 rel = mat4(1.0);
    for (uint e = 0u; e < pc.entryCount; ++e) {
        uvec4 en = entries[e];
        mat4 m = world[en.x] * inverseBinds[en.y];
        if (en.w != 0u) {
            if (en.w != relNode) {                  // the affine inverse: 3x3 inverted, translation by it
                relNode = en.w;
                mat4 r = world[en.w - 1u];
                mat3 ia = inverse(mat3(r));
                rel = mat4(vec4(ia[0], 0.0), vec4(ia[1], 0.0), vec4(ia[2], 0.0), vec4(-(ia * r[3].xyz), 1.0));
            }
            m = rel * m;
        }
        dst.joints[base + en.z] = m;
    }
}
