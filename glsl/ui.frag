#version 450
#extension GL_GOOGLE_include_directive : require
// Dear ImGui: vertex colour times the font/texture atlas (R8G8B8A8_UNORM), alpha-blended over the scene.
#include "gen/ui.glsl"

#include "gen/ui_varyings_in.glsl"
#include "gen/ui_target_out.glsl"

void main() {
    outColor = inColor * texture(atlas, inUv);
}
