// Bindings of control flow with Python callables as blocks (if_else, for_loop, while_loop; the
// blocks run while the op is built, never at run time: docs/control_flow.md) and of autodiff
// (gradients, vjp, stop_gradient).
#include "common.h"

namespace tgpy {

namespace {

// A block's result: a Tensor (then the op returns one Tensor) or a sequence of Tensors.
std::vector<tg::Tensor> block_result(py::handle r, bool* single, const char* what) {
  if (is_tensor(r)) {
    if (single) *single = true;
    return {r.cast<tg::Tensor>()};
  }
  try {
    return r.cast<std::vector<tg::Tensor>>();
  } catch (const py::cast_error&) {
    throw tg::Error(tg::ErrorCode::invalid_argument, std::string("[") + what + "] a block returned " +
                                                         py::repr(r).cast<std::string>() +
                                                         ", not a tg.Tensor or a list of them");
  }
}

py::object pack(const std::vector<tg::Tensor>& v, bool single) {
  return single && v.size() == 1 ? py::cast(v[0]) : py::cast(v);
}

std::vector<tg::Tensor> values_of(py::handle h) {
  if (is_tensor(h)) return {h.cast<tg::Tensor>()};
  return h.cast<std::vector<tg::Tensor>>();
}

}  // namespace

void bind_control_flow(py::module_& m) {
  m.def("if_else", [](const tg::Tensor& pred, py::function then_block, py::function else_block) {
          bool single = false;
          auto out = tg::if_else(
              pred, [&]() { return block_result(then_block(), &single, "if_else"); },
              [&]() { return block_result(else_block(), nullptr, "if_else"); });
          return pack(out, single);
        }, py::arg("predicate"), py::arg("then_block"), py::arg("else_block"),
        "if predicate: then_block() else: else_block(), chosen at run time (only the taken branch\n"
        "runs). The blocks are Python callables with no arguments that build ops and return a\n"
        "Tensor or a list of Tensors of the same dtypes and ranks; they run once, while the op is\n"
        "built. predicate: a scalar (bool, or a number: non-zero is true). Returns what the blocks\n"
        "return. Differentiable (through the taken branch).");
  m.def("for_loop", [](py::handle n, py::handle initial, py::function body) {
          bool single = is_tensor(initial);
          std::vector<tg::Tensor> init = values_of(initial);
          tg::ForBody fb = [&](tg::Tensor i, std::span<const tg::Tensor> values) {
            std::vector<tg::Tensor> v(values.begin(), values.end());
            py::object r = single ? body(i, v.at(0)) : body(i, v);
            return block_result(r, nullptr, "for_loop");
          };
          std::vector<tg::Tensor> out = is_tensor(n) ? tg::for_loop(n.cast<tg::Tensor>(), init, fb)
                                                     : tg::for_loop(n.cast<int64_t>(), init, fb);
          return pack(out, single);
        }, py::arg("n_iterations"), py::arg("initial_values"), py::arg("body"),
        "values = initial_values; for i in range(n): values = body(i, values); returns values.\n"
        "n_iterations: an int, or an integer scalar Tensor read at run time. body(i, values) gets\n"
        "the int32 index and the values (a list, or the Tensor when initial_values is one Tensor)\n"
        "and returns the next values. Differentiable.");
  m.def("while_loop", [](py::handle initial, py::function before, py::function after, py::handle max_iterations) {
          bool single = is_tensor(initial);
          std::vector<tg::Tensor> init = values_of(initial);
          bool single_passed = false;
          tg::WhileCondition cond = [&](std::span<const tg::Tensor> values) {
            std::vector<tg::Tensor> v(values.begin(), values.end());
            py::object r = single ? before(v.at(0)) : before(v);
            // Only a tuple or list: casting a Tensor to a tuple would iterate it through __getitem__
            // and raise getitem's error instead of this one.
            if (!py::isinstance<py::tuple>(r) && !py::isinstance<py::list>(r)) {
              throw tg::Error(tg::ErrorCode::invalid_argument,
                              "[while_loop] before must return (condition, values), not " + py::repr(r).cast<std::string>());
            }
            py::tuple t = r.cast<py::tuple>();
            if (t.size() != 2) {
              throw tg::Error(tg::ErrorCode::invalid_argument,
                              "[while_loop] before must return (condition, values), a pair");
            }
            single_passed = false;
            auto passed = block_result(t[1], &single_passed, "while_loop");
            return std::make_pair(t[0].cast<tg::Tensor>(), passed);
          };
          tg::WhileBody body = [&](std::span<const tg::Tensor> passed) {
            std::vector<tg::Tensor> v(passed.begin(), passed.end());
            py::object r = single_passed ? after(v.at(0)) : after(v);
            return block_result(r, nullptr, "while_loop");
          };
          tg::WhileLoopOptions o;
          if (!max_iterations.is_none()) o.max_iterations = max_iterations.cast<int64_t>();
          return pack(tg::while_loop(init, cond, body, o), single_passed);
        }, py::arg("initial_values"), py::arg("before"), py::arg("after"), py::arg("max_iterations") = py::none(),
        "MPSGraph's while loop: values = initial_values; loop: (cond, passed) = before(values);\n"
        "if not cond: return passed; values = after(passed). before returns a pair (condition\n"
        "scalar Tensor, values); after returns the next loop values. With max_iterations the loop\n"
        "is bounded and differentiable.");

  m.def("gradients", [](const tg::Tensor& y, py::handle xs) {
          bool single = is_tensor(xs);
          return pack(tg::gradients(y, values_of(xs)), single);
        }, py::arg("y"), py::arg("xs"),
        "Gradients of y (summed first when not a scalar) with respect to each of xs (a Tensor or a\n"
        "list), appended to the graph; each has its x's shape and dtype. An x that y does not\n"
        "depend on gets zeros.");
  m.def("vjp", [](py::handle ys, py::handle xs, py::handle cotangents) {
          return tg::vjp(values_of(ys), values_of(xs), values_of(cotangents));
        }, py::arg("ys"), py::arg("xs"), py::arg("cotangents"),
        "Vector-Jacobian products: sum over k of cotangents[k]^T d ys[k] / d x, for each x.");
  m.def("stop_gradient", &tg::stop_gradient, py::arg("x"), "Identity that blocks gradients.");
}

}  // namespace tgpy
