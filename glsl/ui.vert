#version 450
#extension GL_GOOGLE_include_directive : require
// Dear ImGui draw lists (vkmorph demo panel): pixel positions -> NDC through a scale/translate push constant.
// ImGui colours are sRGB; the swapchain is an sRGB format that encodes on write, so decode them here.
#include "gen/ui.glsl"
#include "gen/ui_vertex.glsl"

#include "gen/ui_varyings_out.glsl"

void main() {
    outColor = vec4(pow(inColor.rgb, vec3(2.2)), inColor.a);
    outUv = inUv;
    gl_Position = vec4(inPos * pc.scale + pc.translate, 0.0, 1.0);
}
