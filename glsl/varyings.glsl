// Fragment-side inputs matching vertex_out.glsl (forward.frag and outline.frag declare the same interface).
layout(location = 0) in vec3 inWorld;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec4 inTangent;
layout(location = 3) in vec4 inTexcoords;   // xy: TEXCOORD_0, zw: TEXCOORD_1
layout(location = 4) in vec4 inColor;
layout(location = 5) in float inHeat;
