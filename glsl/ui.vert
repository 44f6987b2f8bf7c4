#version 450
#extension GL_GOOGLE_include_directive : require
// Dear ImGui draw lists (vkmorph demo panel): pixel positions -> NDC through a scale/translate push constant.
// ImGui colours are sRGB; the swapchain is an sRGB format that encodes on write, so decode them here.
#include "gen/ui.glsl"
#include "gen/ui_vertex.glsl"

layout(location = 0) out vec4 outColor;
layout(location = 1) out vec2 outUV;

void main() {
    outColor = vec4(pow(inColor.rgb, vec3(2.2)), inColor.a);
    outUV = inUv;
    gl_Position = vec4(inPos * pc.scale + pc.translate, 0.0, 1.0);
}
