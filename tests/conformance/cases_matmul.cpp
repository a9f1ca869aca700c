// Conformance cases of the matmul family: numpy.matmul semantics (rank-1 operands, transposes,
// broadcast batch dims, K = 0, empty batches), every dtype group (floats against the f64
// reference; integers exactly, with two's-complement wrap-around).
#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::MatmulDesc;
using tg::Shape;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;
using tg::conformance::Tolerance;

// f32 sums of up to a few hundred products: a little looser than the elementwise default.
const std::map<DType, Tolerance> kTol = {{DType::f32, {1e-4, 1e-4}},
                                         {DType::f16, {3e-3, 1e-3}},
                                         {DType::bf16, {1.5e-2, 5e-3}}};

OpCase mm(std::string name, Shape a, Shape b, MatmulDesc desc = {}, DType dtype = DType::f32,
          double low = -1, double high = 1) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(a), dtype, low, high}, InputSpec{std::move(b), dtype, low, high}};
  c.build = [desc](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{tg::matmul(in[0], in[1], desc)};
  };
  c.tolerance = kTol;
  return c;
}

OpCase mm_values(std::string name, Shape a, std::vector<double> av, Shape b, std::vector<double> bv,
                 std::vector<double> expected, MatmulDesc desc = {}, DType dtype = DType::f32) {
  OpCase c = mm(std::move(name), std::move(a), std::move(b), desc, dtype);
  c.inputs[0].values = std::move(av);
  c.inputs[1].values = std::move(bv);
  c.expected = {std::move(expected)};
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(matmul) {
  // Hand-computed.
  cases.push_back(mm_values("matmul_values", {2, 3}, {1, 2, 3, 4, 5, 6}, {3, 2},
                            {7, 8, 9, 10, 11, 12}, {58, 64, 139, 154}));
  cases.push_back(mm_values("matmul_values_transposed", {3, 2}, {1, 4, 2, 5, 3, 6}, {2, 3},
                            {7, 9, 11, 8, 10, 12}, {58, 64, 139, 154},
                            {.transpose_a = true, .transpose_b = true}));
  cases.push_back(mm_values("matmul_vec_vec", {3}, {1, 2, 3}, {3}, {4, -5, 6}, {12}));  // rank 0

  // Random, against the f64 reference.
  cases.push_back(mm("matmul_2d", {5, 7}, {7, 3}));
  cases.push_back(mm("matmul_transpose_a", {7, 5}, {7, 3}, {.transpose_a = true}));
  cases.push_back(mm("matmul_transpose_b", {5, 7}, {3, 7}, {.transpose_b = true}));
  cases.push_back(mm("matmul_transpose_both", {7, 5}, {3, 7}, {.transpose_a = true, .transpose_b = true}));
  cases.push_back(mm("matmul_vec_mat", {7}, {7, 3}));
  cases.push_back(mm("matmul_mat_vec", {5, 7}, {7}));
  cases.push_back(mm("matmul_vec_batched", {7}, {2, 7, 3}, {.transpose_a = true}));  // ignored on rank 1
  cases.push_back(mm("matmul_batched", {4, 5, 7}, {4, 7, 3}));
  cases.push_back(mm("matmul_batched_mat_vec", {4, 5, 7}, {7}));
  cases.push_back(mm("matmul_shared_b", {2, 3, 5, 7}, {7, 6}));  // batch folds into M
  cases.push_back(mm("matmul_shared_b_transposed_a", {2, 3, 7, 5}, {6, 7},
                     {.transpose_a = true, .transpose_b = true}));
  cases.push_back(mm("matmul_shared_a", {5, 7}, {3, 7, 4}));  // A broadcast (stride 0)
  cases.push_back(mm("matmul_broadcast_batch", {2, 1, 5, 7}, {3, 7, 4}));  // looped outer dim
  cases.push_back(mm("matmul_broadcast_both", {3, 1, 7, 5}, {1, 4, 6, 7},
                     {.transpose_a = true, .transpose_b = true}));
  cases.push_back(mm("matmul_rank5", {2, 1, 3, 4, 6}, {1, 2, 1, 6, 5}));
  cases.push_back(mm("matmul_odd_large", {67, 257}, {257, 93}));
  cases.push_back(mm("matmul_batched_large", {3, 33, 130}, {3, 130, 65}, {.transpose_b = false}));

  // Empty: K = 0 gives zeros; an empty batch or row dim gives an empty result.
  OpCase k0 = mm("matmul_k_zero", {3, 0}, {0, 4});
  k0.expected = {std::vector<double>(12, 0.0)};
  cases.push_back(k0);
  OpCase k0b = mm("matmul_k_zero_batched", {2, 2, 0}, {0, 3});
  k0b.expected = {std::vector<double>(12, 0.0)};
  cases.push_back(k0b);
  cases.push_back(mm("matmul_empty_batch", {0, 3, 4}, {4, 2}));
  cases.push_back(mm("matmul_empty_rows", {0, 4}, {4, 2}));

  // Integers: exact, wrapping like two's complement.
  cases.push_back(mm_values("matmul_i32", {2, 3}, {1, -2, 3, 4, 5, -6}, {3, 2},
                            {7, 8, 9, 10, 11, 12}, {22, 24, 7, 10}, {}, DType::i32));
  cases.push_back(mm_values("matmul_i32_wrap", {1, 2}, {65536, 3}, {2, 1}, {65536, 1}, {3}, {},
                            DType::i32));
  cases.push_back(mm_values("matmul_i8_wrap", {1, 2}, {100, 100}, {2, 1}, {2, 1}, {44}, {},
                            DType::i8));
  cases.push_back(mm_values("matmul_u8_wrap", {1, 2}, {200, 100}, {2, 1}, {2, 1}, {244}, {},
                            DType::u8));
  cases.push_back(mm_values("matmul_i64", {2, 2}, {4294967296.0, 1, -3, 2}, {2, 1}, {3, -5},
                            {12884901883.0, -19}, {}, DType::i64));
  cases.push_back(mm("matmul_i32_random", {3, 17, 20}, {20, 19}, {.transpose_a = false}, DType::i32,
                     -100, 100));
  cases.push_back(mm("matmul_i64_broadcast", {2, 1, 5, 9}, {3, 4, 9}, {.transpose_b = true},
                     DType::i64, -1000, 1000));
  cases.push_back(mm("matmul_i8_random", {2, 6, 40}, {2, 40, 7}, {}, DType::i8, -128, 128));
  cases.push_back(mm("matmul_u8_transposed", {33, 5}, {3, 33}, {.transpose_a = true, .transpose_b = true},
                     DType::u8, 0, 256));
}
