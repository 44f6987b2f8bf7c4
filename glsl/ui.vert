#version 450
// Dear ImGui draw lists (vkmorph demo panel): pixel positions -> NDC through a scale/translate push constant.
// ImGui colours are sRGB; the swapchain is an sRGB format that encodes on write, so decode them here.
layout(location = 0) in vec2 inPos;
layout(location = 1) in vec2 inUV;
layout(location = 2) in vec4 inColor;  // R8G8B8A8_UNORM

layout(push_constant) uniform Push {
    vec2 scale;
    vec2 translate;
} pc;

layout(location = 0) out vec4 outColor;
layout(location = 1) out vec2 outUV;

void main() {
    outColor = vec4(pow(inColor.rgb, vec3(2.2)), inColor.a);
    outUV = inUV;
    gl_Position = vec4(inPos * pc.scale + pc.translate, 0.0, 1.0);
}
