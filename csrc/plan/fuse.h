// Fusion: consecutive elementwise nodes over one shape become one fused node (one dispatch) at
// flush time. What fuses, when, and why not otherwise: docs/fusion.md.
#pragma once
#include "core/limits.h"
#include "graph/graph.h"
#include "util/result.h"

namespace vkml::plan {

// Rewrites g.nodes in place; the fused programs go into g.keepalive. A no-op under VKML_FUSE=0.
// Matches graph/graph.h Planner.
Result<void> fuse(Graph& g, const Limits& lim);

}  // namespace vkml::plan
