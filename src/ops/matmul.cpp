// The matmul op family: dtype/shape rules and the builder (numpy.matmul semantics).
#include "ops/builder.h"

namespace tg {
namespace {

constexpr std::string_view kOp = "matmul";

// The [rows, cols] matrix view of an operand after rank-1 promotion and the transpose flag.
struct MatrixDims {
  int64_t rows;
  int64_t cols;
};

MatrixDims matrix_dims(const TensorType& t, bool transpose, bool is_b) {
  if (t.rank() == 1) return is_b ? MatrixDims{t.shape[0], 1} : MatrixDims{1, t.shape[0]};
  int64_t r = t.shape[t.rank() - 2], c = t.shape[t.rank() - 1];
  return transpose ? MatrixDims{c, r} : MatrixDims{r, c};
}

Shape batch_dims(const TensorType& t) {
  return t.rank() <= 2 ? Shape{} : Shape(t.shape.begin(), t.shape.end() - 2);
}

void check_operands(const TensorType& a, const TensorType& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    fail(ErrorCode::invalid_argument, kOp, "operands must have rank >= 1, got {} and {}",
         a.to_string(), b.to_string());
  }
  if (a.dtype != b.dtype) {
    fail(ErrorCode::dtype_mismatch, kOp, "operand dtypes differ: {} and {} (use cast)",
         a.to_string(), b.to_string());
  }
  if (!is_numeric(a.dtype)) {
    fail(ErrorCode::dtype_mismatch, kOp, "needs numeric operands, got {} and {}", a.to_string(),
         b.to_string());
  }
}

std::vector<TensorType> infer_matmul(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType& a = in[0];
  const TensorType& b = in[1];
  const auto& desc = std::get<MatmulDesc>(node.attrs);
  check_operands(a, b);
  MatrixDims ma = matrix_dims(a, desc.transpose_a, false);
  MatrixDims mb = matrix_dims(b, desc.transpose_b, true);
  int64_t k = 0;
  if (!ops::unify_dims(ma.cols, mb.rows, k)) {  // symbols: noted equal, checked per signature
    fail(ErrorCode::shape_mismatch, kOp,
         "contraction dims differ: a gives K={}, b gives K={} (a {}, b {}, transpose_a={}, "
         "transpose_b={})",
         ma.cols, mb.rows, a.to_string(), b.to_string(), desc.transpose_a, desc.transpose_b);
  }
  Shape out;
  try {
    out = ops::broadcast_shapes(batch_dims(a), batch_dims(b), kOp);
  } catch (const Error&) {
    fail(ErrorCode::shape_mismatch, kOp, "batch dims {} and {} do not broadcast (a {}, b {})",
         str(batch_dims(a)), str(batch_dims(b)), a.to_string(), b.to_string());
  }
  if (a.rank() >= 2) out.push_back(ma.rows);
  if (b.rank() >= 2) out.push_back(mb.cols);
  return {{out, a.dtype}};
}

}  // namespace

namespace ops {
void register_matmul_ops(OpRegistry& r) { r.set(ir::OpKind::matmul, infer_matmul); }
}  // namespace ops

Tensor matmul(Tensor a, Tensor b, MatmulDesc desc) {
  return ops::make_op(ir::OpKind::matmul, {a, b}, desc);
}

}  // namespace tg
