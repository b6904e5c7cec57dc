#include "results/report/gnuplot_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/check.hpp"
#include "common/sizes.hpp"
#include "common/atomic_file.hpp"
#include "results/report/label_placement.hpp"

namespace sb::report {
namespace {

// A gnuplot double-quoted string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::set<double> all_x(const Plot& plot) {
  std::set<double> xs;
  for (const Series& s : plot.series)
    for (double x : s.x) xs.insert(x);
  return xs;
}

// Explicit tics: sizes at every power of 4 in range, labelled 4K, 1M...; ranks and MiB at the
// values the data has.
std::string x_tics(const Plot& plot) {
  const std::set<double> xs = all_x(plot);
  if (xs.empty()) return "";
  std::string tics;
  auto add = [&](const std::string& label, double at) {
    tics += (tics.empty() ? "" : ", ") + quoted(label) + " " + number(at);
  };
  if (!plot.x_categories.empty()) {
    for (size_t i = 0; i < plot.x_categories.size(); ++i) add(plot.x_categories[i], static_cast<double>(i + 1));
    return "set xtics rotate by 40 right (" + tics + ")\nset xrange [0.5:" + number(plot.x_categories.size() + 0.5) +
           "]\n";
  }
  if (plot.x_scale == Scale::bytes) {
    for (double at = 1; at <= *xs.rbegin(); at *= 4)
      if (at >= *xs.begin()) add(format_size(static_cast<uint64_t>(at)), at);
  } else if (plot.x_scale == Scale::log2 && xs.size() <= 24) {
    // Ranks and bucket MiB (0.25, 0.5, 1, ...) read best as the values measured; anything else
    // (compression ratios like 3.9997) as gnuplot's own round tics.
    for (double x : xs)
      if (std::fmod(x * 4, 1) != 0) return "";
    for (double x : xs) add(number(x), x);
  }
  return tics.empty() ? "" : "set xtics (" + tics + ")\n";
}

void axis_scale(std::ostream& out, const char* axis, Scale scale) {
  if (scale == Scale::log2 || scale == Scale::bytes) out << "set logscale " << axis << " 2\n";
  if (scale == Scale::log10) out << "set logscale " << axis << " 10\n";
}

bool has_point_labels(const Plot& plot) {
  return std::any_of(plot.series.begin(), plot.series.end(), [](const Series& s) { return !s.point_labels.empty(); });
}

// The key right of the plot, unless a title is long: a key as wide as the plot's frame would
// squeeze it into a strip, so long titles go below it, one under another.
std::string key_placement(const Plot& plot) {
  constexpr size_t kLongestBeside = 32;  // characters that fit right of a 1000-px-wide plot
  size_t longest = 0;
  for (const Series& s : plot.series) longest = std::max(longest, s.title.size());
  return longest <= kLongestBeside ? "set key outside right top noenhanced\n"
                                   : "set key outside below left Left reverse maxcols 1 noenhanced\n";
}

}  // namespace

void write_plot_data(const Plot& plot, const std::string& dir) {
  const std::string path = dir + "/data/" + plot.name + ".dat";
  AtomicFile file(path);
  std::ostream& out = file.stream();
  const bool labelled = has_point_labels(plot);
  out << "# " << plot.title << "\n# columns: " << plot.x_title << " | " << plot.y_title
      << (labelled ? " | point label | label line (0 above the point, 1.. below)" : "") << "\n";
  const std::vector<std::vector<int>> lines = label_lines(plot);
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    if (i > 0) out << "\n\n";  // gnuplot's block separator: `index i` picks block i
    out << "# index " << i << ": " << s.title << (s.reference ? " (reference)" : "") << "\n";
    for (size_t k = 0; k < s.x.size(); ++k) {
      out << number(s.x[k]) << ' ' << number(s.y[k]);
      if (k < s.point_labels.size()) out << ' ' << quoted(s.point_labels[k]) << ' ' << lines[i][k];
      out << '\n';
    }
  }
  file.commit();
}

void write_plot_script(const Plot& plot, const ImageFormats& formats, const std::string& dir) {
  const std::string path = dir + "/" + plot.name + ".gp";
  AtomicFile file(path);
  std::ostream& out = file.stream();
  const std::string data = "data/" + plot.name + ".dat";
  out << "# " << plot.title << "\n"
      << "# Written by sb-report. Edit and re-run from the report folder: gnuplot " << plot.name << ".gp\n"
      << "reset\nset encoding utf8\n"
      << "set title " << quoted(plot.title) << " noenhanced\n"
      << "set xlabel " << quoted(plot.x_title) << " noenhanced\n"
      << "set ylabel " << quoted(plot.y_title) << " noenhanced\n"
      << "set grid\n" << key_placement(plot);
  axis_scale(out, "x", plot.x_scale);
  axis_scale(out, "y", plot.y_scale);
  out << x_tics(plot);
  if (plot.y_scale == Scale::linear && plot.y_from_zero) out << "set yrange [0:*]\n";
  // Labels are written right of and above their points: room for those of the rightmost and
  // topmost ones, which would otherwise run off the frame.
  // Otherwise, over a range from zero, a little room above the top: an ideal line at the maximum
  // (efficiency 1) would lie on the frame.
  if (has_point_labels(plot))
    out << "set offsets graph 0.03, graph 0.12, graph 0.08, 0\n";
  else if (plot.y_scale == Scale::linear && plot.y_from_zero)
    out << "set offsets 0, 0, graph 0.05, 0\n";
  std::ostringstream command;
  command << "plot \\\n";
  // A predicted line (line_title's " (predicted)") takes the colour of the measured line of the
  // same name and is dashed, so each pair reads as one thing, measured and predicted.
  std::map<std::string, int> colours;
  const std::vector<std::vector<int>> label_rows = label_lines(plot);
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    const std::string name = s.title.substr(0, s.title.find(" ("));
    const int colour = colours.try_emplace(name, static_cast<int>(colours.size()) + 1).first->second;
    const bool predicted = s.title.find(" (predicted)") != std::string::npos;
    command << "  " << quoted(data) << " index " << i << " using 1:2 ";
    if (s.reference)
      command << "with lines dashtype 2 lw 2";
    else if (plot.points_only)  // past gnuplot's 8 colours, another point shape
      command << "with points pt " << 5 + 2 * ((colour - 1) / 8 % 4) << " ps 1.5 linecolor " << colour;
    else if (predicted)
      command << "with linespoints lw 2 pt 6 dashtype 3 linecolor " << colour;
    else
      command << "with linespoints lw 2 pt 7 linecolor " << colour;
    command << " title " << quoted(s.title);
    // A labels plot per line the labels take, each drawing only its own line's.
    const std::set<int> used(label_rows[i].begin(), label_rows[i].end());
    for (int line : used)
      command << ", \\\n  " << quoted(data) << " index " << i << " using 1:2:($4 == " << line
              << " ? stringcolumn(3) : \"\") with labels offset char 1," << number(label_line_offset(line))
              << " left notitle";
    command << (i + 1 < plot.series.size() ? ", \\\n" : "\n");
  }
  // The plot is drawn once per image format: the first draws it, the others replot it.
  bool drawn = false;
  auto image = [&](const char* terminal, const char* extension) {
    out << "set terminal " << terminal << " size 1000,620 noenhanced\n"
        << "set output " << quoted(plot.name + extension) << "\n"
        << (drawn ? "replot\n" : command.str());
    drawn = true;
  };
  if (formats.png) image("pngcairo", ".png");
  if (formats.svg) image("svg", ".svg");
  if (!drawn) out << "# no image format chosen: the plot command, for an interactive terminal\n" << command.str();
  out << "unset output\n";
  file.commit();
}

namespace {

bool executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool program_found(const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return executable_file(program);
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "/usr/bin:/bin");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::string candidate = (folder.empty() ? std::string(".") : folder) + "/" + program;
    if (executable_file(candidate)) return true;
  }
  return false;
}

bool image_is_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  const std::streamoff tail_size = std::min<std::streamoff>(size, 64);
  std::string tail(static_cast<size_t>(tail_size), '\0');
  in.seekg(size - tail_size);
  if (!in.read(tail.data(), tail_size)) return false;
  if (path.ends_with(".png")) {
    static const std::string kEnd("IEND\xAE\x42\x60\x82", 8);  // the last chunk's type and CRC
    return tail.ends_with(kEnd);
  }
  const size_t close = tail.rfind("</svg>");
  return close != std::string::npos && tail.find_first_not_of(" \t\r\n", close + 6) == std::string::npos;
}

namespace {

// Why an image came out cut short: a full disk, as a failed write would say, where the folder's
// file system has no room left; otherwise gnuplot's own trouble, in its log.
std::string why_cut_short(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0 && fs.f_bavail == 0) return std::strerror(ENOSPC);
  return "gnuplot left it cut short; see " + dir + "/gnuplot.log";
}

}  // namespace

void render_plots(const std::vector<Plot>& plots, const ImageFormats& formats, const std::string& dir,
                  const std::string& gnuplot) {
  if (plots.empty()) return;
  std::vector<std::string> args = {gnuplot};
  for (const Plot& plot : plots) args.push_back(plot.name + ".gp");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = dir + "/gnuplot.log";
  const pid_t child = ::fork();
  if (child < 0) throw LibraryError(std::string("cannot start gnuplot: ") + std::strerror(errno));
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw LibraryError("cannot run '" + gnuplot + "' (install gnuplot-nox, or pass --no-render); see " + log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw LibraryError("gnuplot failed on the report's scripts; see " + log);
  std::vector<std::string> extensions, cut;
  if (formats.png) extensions.push_back(".png");
  if (formats.svg) extensions.push_back(".svg");
  for (const Plot& plot : plots)
    for (const std::string& extension : extensions)
      if (!image_is_whole(dir + "/" + plot.name + extension)) cut.push_back(dir + "/" + plot.name + extension);
  if (cut.empty()) return;
  const std::string reason = why_cut_short(dir);
  for (const std::string& image : cut) ::unlink(image.c_str());
  throw LibraryError("cannot write '" + cut.front() + "': " + reason +
                     (cut.size() > 1 ? " (and " + std::to_string(cut.size() - 1) + " more images; removed)" : " (removed)"));
}

}  // namespace sb::report
