// Shared declarations of the graphics pipelines (skin.vert, static.vert, forward.frag).
// Set 0: per frame (shadow map, frame constants). Set 1: per item (skinning palette).

layout(std140, set = 0, binding = 1) uniform Frame {
    mat4 viewProj;        // camera
    mat4 lightViewProj;   // directional light (orthographic), also used to sample the shadow map
    vec4 lightDir;        // xyz: direction the light travels (world), w: intensity
    vec4 cameraPos;       // xyz
    vec4 ambient;         // rgb sky ambient, a: shadow bias
} frame;

layout(push_constant) uniform Item {
    mat4 model;           // node world matrix
    vec4 baseColor;       // linear RGBA
    int pass;             // 0 forward, 1 shadow (depth only, light's view)
    int heatJoint;        // >= 0: show the weight of this joint as a heat map
} item;
