#version 450
#extension GL_GOOGLE_include_directive : require
// Dear ImGui: vertex colour times the font/texture atlas (R8G8B8A8_UNORM), alpha-blended over the scene.
#include "gen/ui.glsl"

layout(location = 0) in vec4 inColor;
layout(location = 1) in vec2 inUV;
layout(location = 0) out vec4 outColor;

void main() {
    outColor = inColor * texture(atlas, inUV);
}
