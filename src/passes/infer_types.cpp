#include "ops/control.h"
#include "passes/passes.h"

namespace tg::passes {

bool infer_types(ir::Graph& g) { return ops::infer_graph_types(g); }

}  // namespace tg::passes
