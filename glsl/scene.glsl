// Shared declarations of the graphics pipelines (skin.vert, static.vert, forward.frag, outline.frag).
// Set 0: per frame (shadow map, frame constants). Set 1: per item (skinning palette). Set 2: per material.

layout(std140, set = 0, binding = 1) uniform Frame {
    mat4 viewProj;        // camera
    mat4 lightViewProj;   // directional light (orthographic), also used to sample the shadow map
    vec4 lightDir;        // xyz: direction the light travels (world), w: intensity (irradiance at normal incidence)
    vec4 cameraPos;       // xyz, w: exposure
    vec4 skyColor;        // rgb: hemisphere ambient from above, a: shadow bias
    vec4 groundColor;     // rgb: hemisphere ambient from below, a: outline width in pixels
    vec4 viewport;        // xy: framebuffer size in pixels
    vec4 outlineColor;    // linear RGBA of the outline of the selected mesh
} frame;

layout(push_constant) uniform Item {
    mat4 model;           // node world matrix
    int pass;             // 0 forward, 1 shadow (depth only, light's view), 2 outline (grown along the normal)
    int heatJoint;        // >= 0: show the weight of this joint as a heat map
} item;

const int PASS_FORWARD = 0;
const int PASS_SHADOW = 1;
const int PASS_OUTLINE = 2;
