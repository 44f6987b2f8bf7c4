// Four-bone linear blend skinning (seed 000 / GPU Gems "Dawn"): shared by skin.vert and skin.comp so the
// captured positions that tests compare are produced by the same code as the drawn ones.

mat4 blendJoints(mat4 m0, mat4 m1, mat4 m2, mat4 m3, vec4 w) {
    return w.x * m0 + w.y * m1 + w.z * m2 + w.w * m3;
}

// Position by the weighted matrix, normal and tangent by its 3x3 part (renormalized; fallback keeps input).
void skinVertex(mat4 skin, inout vec3 position, inout vec3 normal, inout vec3 tangent) {
    position = (skin * vec4(position, 1.0)).xyz;
    mat3 r = mat3(skin);
    vec3 n = r * normal;
    vec3 t = r * tangent;
    normal = dot(n, n) > 1e-12 ? normalize(n) : normal;
    tangent = dot(t, t) > 1e-12 ? normalize(t) : tangent;
}
