// The one place where skin.vert and static.vert turn a (morphed, skinned) model-space vertex into the outputs of
// every pass: forward (world position, normal, tangent with handedness, both UV sets, vertex colour), shadow
// (light's clip space) and outline (camera clip space grown along the screen-space normal).

// Binding 1 (inColor: COLOR_0, white when the file has none; inTexcoord1: TEXCOORD_1), from interface.py.
#include "gen/extra_vertex.glsl"

// outWorld, outNormal, outTangent, outTexcoords, outColor, outHeat: declared once in interface.py (SCENE_VARYINGS).
#include "gen/scene_varyings_out.glsl"

// model: item.model (skin.vert, static.vert) or the instance's matrix (crowd_*.vert).
void emitVertexModel(mat4 model, vec3 position, vec3 normal, vec4 tangent, vec2 texcoord0, float heat) {
    vec4 world = model * vec4(position, 1.0);
    mat3 normalMatrix = transpose(inverse(mat3(model)));
    outWorld = world.xyz;
    outNormal = normalMatrix * normal;
    outTangent = vec4(mat3(model) * tangent.xyz, tangent.w);
    outTexcoords = vec4(texcoord0, inTexcoord1);
    outColor = inColor;
    outHeat = heat;
    // Selects, not branches, on the push constants: lavapipe specializes (and keeps) a shader variant per value
    // of a uniform a branch depends on, growing memory on every draw.
    vec4 clip = frame.viewProj * world;
    vec2 dir = (mat3(frame.viewProj) * normalize(outNormal)).xy;
    float len = length(dir);
    vec2 grow = dir * inversesqrt(max(len * len, 1e-12)) * (2.0 * frame.ground.a / frame.viewport.xy) * clip.w;
    clip.xy += grow * float(item.pass == PASS_OUTLINE);
    gl_Position = mix(clip, frame.lightViewProj * world, float(item.pass == PASS_SHADOW));
}

void emitVertex(vec3 position, vec3 normal, vec4 tangent, vec2 texcoord0, float heat) {
    emitVertexModel(item.model, position, normal, tangent, texcoord0, heat);
}
