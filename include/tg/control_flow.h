// Control flow computed on the device: branches and loops whose predicate and trip count are
// tensors (MPSGraph's if/then/else, for-loop and while-loop). Semantics: docs/control_flow.md.
//
// Blocks are C++ callables that build ops; they run once (or a few times, see below) while the op
// is built, never at run time. They capture outer tensors by closure: every outer tensor a block
// reads becomes an explicit input of the control-flow op (a "captured value") and a parameter of
// its region. The nodes a block builds form the op's region (sub-graph) and are removed from the
// outer graph, so a tensor or operation created inside a block must not be used outside it (return
// it from the block instead); a block must not create placeholders. Variables read and assigned
// inside a block (read_variable, assign_variable) take effect when and each time the region runs,
// in build order; a failed run still leaves every variable as it was. A block may itself build
// control flow (nesting) and control_dependency scopes; a control-flow op built inside a
// control_dependency block runs after the scope's operations. To run a region for its side
// effects only, use an output's op() as a target operation or control dependency.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// A branch of if_else: builds and returns the branch's results.
using BranchBlock = std::function<std::vector<Tensor>()>;
/// The body of for_loop: gets the 0-based i32 scalar iteration index and the loop values of this
/// iteration, returns the next loop values.
using ForBody = std::function<std::vector<Tensor>(Tensor index, std::span<const Tensor> values)>;
/// The `before` block of while_loop: gets the loop values, returns the condition (a scalar) and
/// the values handed to `after` (or returned once the condition is false).
using WhileCondition =
    std::function<std::pair<Tensor, std::vector<Tensor>>(std::span<const Tensor> values)>;
/// The `after` block of while_loop: gets the values `before` passed, returns the next loop values.
using WhileBody = std::function<std::vector<Tensor>(std::span<const Tensor> passed)>;

/// if (predicate) then_block() else else_block(), choosing at run time: only the taken branch
/// runs. `predicate` is a tensor of exactly one element (shape [], [1], [1, 1]...) of any dtype:
/// bool, or a number where non-zero (and NaN) means true. On CUDA the choice is made on the
/// device (a conditional node of the run's CUDA graph; docs/control_flow.md). Both blocks return
/// the same number (>= 1) of tensors with the same dtypes and ranks; a dim on which the branches
/// differ is -1 (dynamic) in the result and at run time has the taken branch's size. Gradients
/// flow through the taken branch only (the gradient is itself an if_else on the same predicate).
/// Errors (tg::Error at build time, "[if_else] ..."): a predicate of more than one element
/// (shape_mismatch, naming its type);
/// blocks returning no tensors, an empty tensor or a tensor of another graph (invalid_argument);
/// different result counts (invalid_argument), dtypes (dtype_mismatch) or ranks (shape_mismatch),
/// naming the result and both types; a block that uses a tensor built inside the other block or
/// creates a placeholder (invalid_argument). Errors of the ops the blocks build propagate.
TG_API std::vector<Tensor> if_else(Tensor predicate, const BranchBlock& then_block,
                            const BranchBlock& else_block);

/// Runs `body` n_iterations times: values = initial_values; for i in [0, n): values = body(i,
/// values); returns values. `n_iterations` is an integer scalar tensor (i8/u8/i32/i64) read at run
/// time; n <= 0 returns initial_values unchanged (the body never runs); n above 2^31-1 raises
/// tg::Error(out_of_range) at run time (the index is i32). The body returns as many values as
/// there are initial values, with the same dtypes and ranks; a dim that changes between
/// iterations becomes -1 (dynamic) in the loop values and the results (the body is then traced
/// again with the relaxed types). Gradients flow to initial_values and to captured values; the
/// backward pass replays the loop once more saving the values of every iteration (no variable
/// assignments are repeated) and runs the body's vector-Jacobian product in reverse.
/// Errors ("[for_loop] ..."): n_iterations not an integer scalar (dtype_mismatch /
/// shape_mismatch); no initial values, or an empty or foreign tensor (invalid_argument); a body
/// returning another number of values (invalid_argument), another dtype (dtype_mismatch) or
/// rank (shape_mismatch) than a value's initial one, naming the value and both types.
TG_API std::vector<Tensor> for_loop(Tensor n_iterations, const std::vector<Tensor>& initial_values,
                             const ForBody& body);
/// for_loop with a trip count fixed when the graph is built (an i32 constant).
TG_API std::vector<Tensor> for_loop(int64_t n_iterations, const std::vector<Tensor>& initial_values,
                             const ForBody& body);

/// Options of while_loop.
struct WhileLoopOptions {
  /// When set (>= 0), `after` runs at most this many times: the loop then ends as if the
  /// condition were false, returning what the last `before` passed. A bounded loop is
  /// differentiable (like a for_loop); an unbounded one is not.
  std::optional<int64_t> max_iterations;
};

/// MPSGraph's while loop: values = initial_values; loop { (cond, passed) = before(values); if
/// (!cond) return passed; values = after(passed); }. `before` runs first, so a condition that is
/// false at once runs `after` zero times and returns before(initial_values)'s passed values. The
/// condition is a one-element tensor as if_else's predicate. `after` returns as many values as
/// there are initial values with the same dtypes and ranks (dims that change become -1, as
/// for_loop);
/// `before` passes >= 1 values, of any types, which are the loop's results.
/// Gradients: only with options.max_iterations; otherwise tg::gradients raises
/// tg::Error(unsupported) "[gradients] while_loop ... maximum iteration count".
/// Errors ("[while_loop] ..."): as for_loop, plus a condition of more than one element
/// (shape_mismatch), `before` passing no values (invalid_argument), a negative max_iterations
/// (invalid_argument).
TG_API std::vector<Tensor> while_loop(const std::vector<Tensor>& initial_values,
                               const WhileCondition& before, const WhileBody& after,
                               WhileLoopOptions options = {});

}  // namespace tg
