#version 450
#extension GL_GOOGLE_include_directive : require
// The ground: a procedural grid (a line every cell, a stronger one every 5 cells) on the ground colour, lit by
// the shadowed directional light and the sky's ambient. Lines are anti-aliased by their screen-space footprint
// and fade out where the cells shrink to a few pixels (far away: no moire) and away from the model; the whole
// ground fades into the sky (its alpha, blended over the clear colour) well before the square's edge, so no edge
// shows. static.vert draws it: TEXCOORD_0 = grid-cell coordinates, TEXCOORD_1 = 0 at the centre, 1 at the edges
// (render/renderer.py _ground_primitive); the model matrix scales a cell to the model's size.
// No branch on a uniform or push constant (lavapipe keeps a specialized variant per value; see lighting.glsl).
#include "scene.glsl"

#include "gen/scene_varyings_in.glsl"

#include "gen/scene_target_out.glsl"

#include "lighting.glsl"

// Coverage (0..1) of lines ``widthPx`` pixels wide through the integer values of ``coord``, faded out as the
// cells fall below ~10 pixels.
float gridLines(vec2 coord, float widthPx) {
    vec2 w = max(fwidth(coord), vec2(1e-6));        // cells per pixel
    vec2 d = abs(fract(coord - 0.5) - 0.5) / w;     // pixels to the nearest line
    float line = clamp(0.5 * widthPx + 0.5 - min(d.x, d.y), 0.0, 1.0);
    return line * (1.0 - smoothstep(0.05, 0.25, max(w.x, w.y)));
}

void main() {
    float r = length(inTexcoords.zw);
    float nearModel = 1.0 - smoothstep(0.15, 0.6, r);
    float minor = gridLines(inTexcoords.xy, 1.0);
    float major = gridLines(inTexcoords.xy / 5.0, 1.5);
    vec3 base = material.baseColor.rgb * (1.0 - nearModel * max(0.2 * minor, 0.35 * major));

    vec3 l = normalize(-frame.lightDir.xyz);
    float ndotl = max(l.y, 0.0);
    float lit = shadowFactor(inWorld, ndotl);
    vec3 color = base / PI * ndotl * frame.lightDir.w * lit + base * hemisphere(vec3(0.0, 1.0, 0.0));
    outColor = vec4(pbrNeutral(color * frame.cameraPos.w), 1.0 - smoothstep(0.2, 0.85, r));
}
