// Training curves drawn by gnuplot (plot.h).
#include "plot.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tg::cli {
namespace {

// gnuplot's single-quoted strings end at the first quote; '' is a quote inside them.
std::string gnuplot_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Runs `gnuplot script` in `dir`; "" on success, else the reason.
std::string run_gnuplot(const std::string& dir, const std::string& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::string program = "gnuplot";
  char* argv[] = {program.data(), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) return "gnuplot was not found (install it: apt-get install gnuplot-nox)";
  if (rc != 0) return fmt::format("cannot start gnuplot: {}", std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fmt::format("waiting for gnuplot failed: {}", std::strerror(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return WIFEXITED(status) ? fmt::format("gnuplot exited with status {}", WEXITSTATUS(status))
                           : std::string("gnuplot was killed");
}

// gnuplot lines giving the next plot of `column` a y range: autoscaled, except when every value
// is the same (one epoch), where autoscaling warns "empty y range" on stderr: then a range around
// the value.
std::string flat_range(const std::string& csv, const std::string& column) {
  return fmt::format(
      "set autoscale y\n"
      "stats {0} using {1} nooutput prefix 'Y'\n"
      "if (Y_max - Y_min <= 1e-12 * (abs(Y_max) + 1)) "
      "set yrange [Y_min - 0.05 * (abs(Y_min) + 1) : Y_max + 0.05 * (abs(Y_max) + 1)]\n",
      gnuplot_string(csv), gnuplot_string(column));
}

}  // namespace

std::string draw_curves(const std::string& dir, const std::string& csv, const std::string& title) {
  const std::string script = "curves.gp";
  std::ofstream out(std::filesystem::path(dir) / script);
  if (!out) return fmt::format("cannot write {}", (std::filesystem::path(dir) / script).string());
  // pngcairo: anti-aliased lines (noenhanced: "mnist_cnn" has no subscript); the curves' colours
  // are fixed (plot.h). Columns are read by name from the CSV's header line; an epoch axis with
  // integer tics; the legends where a falling loss and a rising accuracy leave room.
  out << "# Training curves of tg train --log-dir: gnuplot " << script << " redraws curves.png.\n"
      << "set terminal pngcairo noenhanced size 960,400 font ',10'\n"
      << "set output 'curves.png'\n"
      << "set datafile separator ','\n"
      << "set multiplot layout 1,2 title " << gnuplot_string(title) << "\n"
      << "set xlabel 'epoch'\nset grid\nset offsets 0, 0, graph 0.08, graph 0.08\n"
      << "stats " << gnuplot_string(csv) << " using 'epoch' nooutput\n"
      << "set xrange [STATS_min - 0.25 : STATS_max + 0.25]\n"
      << "set xtics 1\nif (STATS_max > 20) set xtics autofreq\n"
      << "set title 'loss'\nset ylabel 'cross-entropy'\nset key top right\n"
      << flat_range(csv, "loss")
      << "plot " << gnuplot_string(csv) << " using 'epoch':'loss' with linespoints lw 2 pt 7 lc rgb '"
      << kLossColor << "' title 'training loss'\n"
      << "set title 'accuracy'\nset ylabel 'fraction correct'\nset key bottom right\n"
      << flat_range(csv, "accuracy")
      << "plot " << gnuplot_string(csv) << " using 'epoch':'accuracy' with linespoints lw 2 pt 7 lc rgb '"
      << kAccuracyColor << "' title 'training accuracy'\n"
      << "unset multiplot\n";
  out.close();
  if (!out) return fmt::format("cannot write {}", (std::filesystem::path(dir) / script).string());
  return run_gnuplot(dir, script);
}

}  // namespace tg::cli
