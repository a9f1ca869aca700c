// Training curves for `tg train --log-dir`: gnuplot (Debian's gnuplot-nox, installed by
// scripts/bootstrap.sh) draws the per-epoch CSV that tg::nn::CSVLogger writes.
#pragma once
#include <string>

namespace tg::cli {

/// The colours of the two curves (#rrggbb); tests/tools look for them in the PNG.
inline constexpr const char* kLossColor = "#1f77b4";
inline constexpr const char* kAccuracyColor = "#d62728";

/// Writes `dir`/curves.gp, a gnuplot script that draws `dir`/`csv` (columns "epoch", "loss",
/// "accuracy") as two panels, training loss and training accuracy per epoch, into
/// `dir`/curves.png (960x400 pixels), and runs gnuplot on it in `dir`. `title` heads the figure.
/// Returns "" on success, else why the curves were not drawn ("gnuplot was not found; install
/// gnuplot-nox"; gnuplot's exit status); gnuplot's own messages go to stderr. The script stays
/// next to the PNG, to redraw or restyle the curves.
std::string draw_curves(const std::string& dir, const std::string& csv, const std::string& title);

}  // namespace tg::cli
