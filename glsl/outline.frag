#version 450
#extension GL_GOOGLE_include_directive : require
// Outline of the selected mesh: drawn where the stencil written by its forward draw is not set.
#include "scene.glsl"
#include "varyings.glsl"

layout(location = 0) out vec4 outColor;

void main() {
    outColor = frame.outlineColor;
}
