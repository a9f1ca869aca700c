// Host harness of a generated fused_stencil kernel (tg_stencil_emu writes k<i>.cu, the node's input
// tensors d<i>_<m>.bin, the CPU backend's result of the node e<i>.bin and an h<i>.cpp including
// the kernel and this file): runs the kernel under shim.h on those inputs and compares every
// output with the CPU's, bit for bit (the CPU runs the node stage by stage: prologue program,
// stencil op, epilogue program; backends/fused_stepwise.cpp).
#pragma once
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stencil_harness.h"

namespace tg_emu_fused {

inline std::vector<char> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Runs config G on sizes `a` with the node's `n_inputs` inputs from `prefix`_<m>.bin (x is input 0,
/// the weights input `w_input` or -1, the others go to StPtrs in order) and compares with
/// `expected`; returns the number of mismatching outputs.
template <class G>
int run(tg_dev::StencilArgs a, unsigned blocks, unsigned threads, const char* name, const std::string& prefix,
        int n_inputs, int w_input, const std::string& expected) {
  a.small = 1;
  const long long divisors[4] = {a.tiles[0], a.tiles[1], a.tiles[2], a.out[0]};
  for (int i = 0; i < 4; ++i) tg_emu_stencil::magic(divisors[i], a.div_m[i], a.div_s[i]);
  std::vector<std::vector<char>> in;
  for (int m = 0; m < n_inputs; ++m) in.push_back(read(prefix + "_" + std::to_string(m) + ".bin"));
  const std::vector<char> want = read(expected);
  tg_dev::StPtrs P{};
  int slot = 0;
  for (int m = 1; m < n_inputs; ++m) {
    if (m != w_input) P.p[slot++] = in[static_cast<size_t>(m)].data();
  }
  typedef typename G::O O;
  std::vector<O> y(want.size() / sizeof(O));
  const auto* xp = reinterpret_cast<const typename G::X*>(in[0].data());
  const auto* wp = w_input >= 0 ? reinterpret_cast<const typename G::T*>(in[static_cast<size_t>(w_input)].data())
                                : nullptr;
  O* yp = y.data();
  tg_emu::launch(dim3(blocks), dim3(threads), [&] { tg_dev::stencil_kernel<G>(xp, wp, yp, P, a); });
  int bad = 0;
  for (size_t e = 0; e < y.size(); ++e) {
    if (std::memcmp(&y[e], want.data() + e * sizeof(O), sizeof(O)) != 0) {
      if (bad < 5) {
        O w;
        std::memcpy(&w, want.data() + e * sizeof(O), sizeof(O));
        std::printf("%s: output %zu differs: got %g want %g\n", name, e, static_cast<double>(tg_dev::cv(y[e])),
                    static_cast<double>(tg_dev::cv(w)));
      }
      ++bad;
    }
  }
  std::printf("%s: %zu outputs, %d mismatches\n", name, y.size(), bad);
  return bad;
}

}  // namespace tg_emu_fused
