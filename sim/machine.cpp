#include "sim/machine.hpp"

#include <cmath>
#include <sstream>

#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/text_input.hpp"
#include "common/usage_error.hpp"

namespace sb::sim {
namespace {

// A number followed by one of the suffixes, each with its factor; a bare number takes factor 1.
std::optional<double> parse_with_units(const std::string& text,
                                       const std::vector<std::pair<std::string, double>>& units) {
  for (const auto& [suffix, factor] : units) {
    if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const auto number = parse_whole_number(text.substr(0, text.size() - suffix.size()));
    if (!number || *number < 0 || !std::isfinite(*number * factor)) return std::nullopt;
    return *number * factor;
  }
  const auto number = parse_whole_number(text);
  if (!number || *number < 0) return std::nullopt;
  return number;
}

// Reads `key value` pairs after a line's keyword.
class LineReader {
 public:
  LineReader(const std::string& what, int number, std::istringstream& words)
      : what_(what), number_(number), words_(words) {}

  UsageError error(const std::string& why) const {
    return UsageError("machine '" + what_ + "' line " + std::to_string(number_) + ": " + why);
  }
  // The rest of the line as key -> value.
  std::map<std::string, std::string> pairs(const std::vector<std::string>& allowed) {
    std::map<std::string, std::string> out;
    std::string key, value;
    while (words_ >> key) {
      bool known = false;
      for (const std::string& a : allowed) known = known || a == key;
      if (!known) throw error("unknown key '" + key + "'");
      if (!(words_ >> value)) throw error("'" + key + "' has no value");
      out[key] = value;
    }
    return out;
  }
  std::string word(const std::string& what) {
    std::string w;
    if (!(words_ >> w)) throw error("expected " + what);
    return w;
  }
  // Latencies up to a second and rates from 1 KB/s: past either is no machine's, and a price of
  // 1e300 us had been printed as a 300-digit prediction.
  double seconds(const std::string& key, const std::string& text) const {
    const auto v = parse_seconds(text);
    if (!v || *v > 1) throw error(key + " '" + text + "' is not a time from 0 to 1s (e.g. 2us, 1.5ms)");
    return *v;
  }
  double rate(const std::string& key, const std::string& text) const {
    const auto v = parse_rate(text);
    if (!v || !(*v >= 1e3)) throw error(key + " '" + text + "' is not a rate of at least 1KB/s (e.g. 12.5GB/s, 100Gb/s)");
    return *v;
  }
  // Counts that the simulator holds as int (ranks per level, links per rank): a larger one had
  // wrapped to a negative count, on which the flow solver never ended.
  int integer(const std::string& key, const std::string& text, int least) const {
    constexpr int kMost = 1 << 30;
    const auto v = parse_whole_integer(text);
    if (!v || *v < least || *v > kMost)
      throw error(key + " '" + text + "' is not a whole number from " + std::to_string(least) + " to " + std::to_string(kMost));
    return static_cast<int>(*v);
  }
  void end() {
    std::string extra;
    if (words_ >> extra) throw error("unexpected '" + extra + "'");
  }

 private:
  const std::string& what_;
  int number_;
  std::istringstream& words_;
};

std::string require(LineReader& line, std::map<std::string, std::string>& pairs, const std::string& key) {
  const auto it = pairs.find(key);
  if (it == pairs.end()) throw line.error("missing '" + key + "'");
  return it->second;
}

Level parse_level(LineReader& line) {
  Level level;
  level.name = line.word("a level name");
  auto pairs = line.pairs({"size", "alpha", "bandwidth", "links", "share", "bus", "cached", "cached-bus", "engine"});
  level.size = line.integer("size", require(line, pairs, "size"), 0);
  level.alpha_s = line.seconds("alpha", require(line, pairs, "alpha"));
  level.bandwidth = line.rate("bandwidth", require(line, pairs, "bandwidth"));
  if (pairs.count("links")) level.links = line.integer("links", pairs["links"], 1);
  if (pairs.count("share")) {
    if (pairs["share"] == "rank") level.share = Share::rank;
    else if (pairs["share"] == "group") level.share = Share::group;
    else throw line.error("share must be rank or group, not '" + pairs["share"] + "'");
  }
  if (pairs.count("engine")) {
    if (pairs["engine"] == "dma") level.engine = Engine::dma;
    else if (pairs["engine"] == "cpu") level.engine = Engine::cpu;
    else throw line.error("engine must be dma or cpu, not '" + pairs["engine"] + "'");
  }
  if (pairs.count("bus")) level.bus = line.rate("bus", pairs["bus"]);
  if (pairs.count("cached")) level.cached_bandwidth = line.rate("cached", pairs["cached"]);
  if (pairs.count("cached-bus")) level.cached_bus = line.rate("cached-bus", pairs["cached-bus"]);
  return level;
}

}  // namespace

std::optional<double> parse_seconds(const std::string& text) {
  return parse_with_units(text, {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}});
}

std::optional<double> parse_rate(const std::string& text) {
  return parse_with_units(text, {{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"KB/s", 1e3}, {"B/s", 1.0},
                                 {"Tb/s", 1e12 / 8}, {"Gb/s", 1e9 / 8}, {"Mb/s", 1e6 / 8}});
}

std::string format_seconds(double seconds) {
  std::ostringstream out;
  out.precision(6);
  out << seconds * 1e6 << "us";
  return out.str();
}

std::string format_rate(double bytes_per_s) {
  std::ostringstream out;
  out.precision(6);
  out << bytes_per_s / 1e9 << "GB/s";
  return out.str();
}

size_t Machine::ranks_per_group(size_t level) const {
  size_t ranks = 1;
  for (size_t l = 0; l <= level && l < levels.size(); ++l) {
    if (levels[l].size == 0) return 0;
    ranks *= static_cast<size_t>(levels[l].size);
  }
  return ranks;
}

size_t Machine::group_of(int rank, size_t level) const {
  const size_t per_group = ranks_per_group(level);
  return per_group == 0 ? 0 : static_cast<size_t>(rank) / per_group;
}

size_t Machine::level_between(int a, int b) const {
  for (size_t l = 0; l + 1 < levels.size(); ++l)
    if (group_of(a, l) == group_of(b, l)) return l;
  return levels.size() - 1;
}

double Machine::reduce_rate(DataType type) const {
  const auto it = gamma.find(type);
  if (it == gamma.end())
    throw UsageError("machine '" + name + "' has no 'gamma " + std::string(name_of(type)) + "' reduction rate");
  return it->second;
}

Machine Machine::in_cache() const {
  Machine m = *this;
  for (Level& level : m.levels) {
    if (level.cached_bandwidth > 0) level.bandwidth = level.cached_bandwidth;
    if (level.cached_bus > 0) level.bus = level.cached_bus;
  }
  for (const auto& [type, rate] : cached_gamma) m.gamma[type] = rate;
  if (cached_copy > 0) m.copy = cached_copy;
  if (cached_shm_bandwidth > 0) m.shm_bandwidth = cached_shm_bandwidth;
  return m;
}

Machine Machine::oversubscribed(int ranks) const {
  const double share = core_share(ranks);
  if (share == 1.0) return *this;
  Machine m = *this;
  Level& l = m.levels.front();
  l.alpha_s /= share;
  for (double* rate : {&l.bandwidth, &l.bus, &l.cached_bandwidth, &l.cached_bus, &m.copy, &m.cached_copy,
                       &m.shm_bandwidth, &m.cached_shm_bandwidth})
    *rate *= share;
  m.shm_alpha_s /= share;
  for (auto& [transport, seconds] : m.call_s) seconds /= share;
  for (auto* rates : {&m.gamma, &m.cached_gamma})
    for (auto& [type, rate] : *rates) rate *= share;
  return m;
}

Machine parse_machine(const std::string& text, const std::string& what) {
  Machine machine;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  bool have_copy = false;
  while (std::getline(in, raw)) {
    ++number;
    const size_t hash = raw.find('#');
    std::string line = hash == std::string::npos ? raw : raw.substr(0, hash);
    std::istringstream words(line);
    std::string keyword;
    if (!(words >> keyword)) continue;
    LineReader reader(what, number, words);
    if (keyword == "source") {
      // Free text, '#' included: a source may be a URL with a fragment.
      const size_t at = raw.find("source") + 6;
      const size_t start = raw.find_first_not_of(" \t", at);
      if (start == std::string::npos) throw reader.error("source needs text");
      machine.sources.push_back(raw.substr(start));
    } else if (keyword == "name") {
      machine.name = reader.word("a name");
      reader.end();
    } else if (keyword == "level") {
      machine.levels.push_back(parse_level(reader));
    } else if (keyword == "gamma") {
      const std::string type = reader.word("a datatype (float, half, ...)");
      DataType parsed;
      try {
        parsed = parse_datatype(type);
      } catch (const UsageError&) {
        throw reader.error("unknown datatype '" + type + "'");
      }
      machine.gamma[parsed] = reader.rate("gamma", reader.word("a reduction rate"));
      auto pairs = reader.pairs({"cached"});
      if (pairs.count("cached")) machine.cached_gamma[parsed] = reader.rate("cached", pairs["cached"]);
    } else if (keyword == "copy") {
      machine.copy = reader.rate("copy", reader.word("a copy rate"));
      have_copy = true;
      auto pairs = reader.pairs({"cached"});
      if (pairs.count("cached")) machine.cached_copy = reader.rate("cached", pairs["cached"]);
    } else if (keyword == "shm") {
      auto pairs = reader.pairs({"alpha", "bandwidth", "cached"});
      machine.shm_alpha_s = reader.seconds("alpha", require(reader, pairs, "alpha"));
      machine.shm_bandwidth = reader.rate("bandwidth", require(reader, pairs, "bandwidth"));
      if (pairs.count("cached")) machine.cached_shm_bandwidth = reader.rate("cached", pairs["cached"]);
    } else if (keyword == "call") {
      const std::string transport = reader.word("a transport (mpi, shm, nccl)");
      if (transport != "mpi" && transport != "shm" && transport != "nccl")
        throw reader.error("call: unknown transport '" + transport + "' (mpi, shm, nccl)");
      machine.call_s[transport] = reader.seconds("call", reader.word("a time"));
      reader.end();
    } else if (keyword == "cores") {
      machine.cores = reader.integer("cores", reader.word("the cores of a node"), 1);
      reader.end();
    } else if (keyword == "cache") {
      const std::string size = reader.word("the last-level cache size (e.g. 32M)");
      try {
        machine.cache_bytes = static_cast<double>(parse_size(size, "cache"));
      } catch (const UsageError&) {
        throw reader.error("cache '" + size + "' is not a size (e.g. 32M)");
      }
      reader.end();
    } else if (keyword == "compute") {
      const std::string model = reader.word("a model name");
      ComputeRate rate;
      const auto images = parse_whole_number(reader.word("images/s per rank"));
      // At least one image in 1000 s, as the other figures stay within a machine's: at 1e-300 a
      // step's compute (batch / rate) would be priced past 1e300 s.
      if (!images || !(*images >= 1e-3)) throw reader.error("compute needs images/s per rank of at least 0.001");
      rate.images_per_s = *images;
      rate.batch = reader.integer("batch", reader.word("the per-rank batch"), 1);
      reader.end();
      machine.compute[model] = rate;
    } else {
      throw reader.error("unknown keyword '" + keyword + "'");
    }
  }
  if (machine.name.empty()) throw UsageError("machine '" + what + "' has no 'name' line");
  if (machine.levels.empty()) throw UsageError("machine '" + what + "' has no 'level' line");
  if (machine.gamma.empty()) throw UsageError("machine '" + what + "' has no 'gamma' line");
  if (!have_copy) throw UsageError("machine '" + what + "' has no 'copy' line");
  for (size_t l = 0; l + 1 < machine.levels.size(); ++l)
    if (machine.levels[l].size == 0)
      throw UsageError("machine '" + what + "': only the outermost level may have size 0 (unbounded)");
  return machine;
}

Machine read_machine(const std::string& path) { return parse_machine(read_text_input(path, "machine file"), path); }

std::string format_machine(const Machine& m) {
  std::ostringstream out;
  out << "name " << m.name << "\n";
  for (const std::string& source : m.sources) out << "source " << source << "\n";
  for (const Level& level : m.levels) {
    out << "level " << level.name << " size " << level.size << " alpha " << format_seconds(level.alpha_s)
        << " bandwidth " << format_rate(level.bandwidth);
    if (level.links != 1) out << " links " << level.links;
    out << " share " << (level.share == Share::rank ? "rank" : "group");
    if (level.engine == Engine::cpu) out << " engine cpu";
    if (level.bus > 0) out << " bus " << format_rate(level.bus);
    if (level.cached_bandwidth > 0) out << " cached " << format_rate(level.cached_bandwidth);
    if (level.cached_bus > 0) out << " cached-bus " << format_rate(level.cached_bus);
    out << "\n";
  }
  const auto cached = [](double rate) { return rate > 0 ? " cached " + format_rate(rate) : std::string(); };
  for (const auto& [type, rate] : m.gamma) {
    const auto c = m.cached_gamma.find(type);
    out << "gamma " << name_of(type) << " " << format_rate(rate) << cached(c == m.cached_gamma.end() ? 0 : c->second) << "\n";
  }
  out << "copy " << format_rate(m.copy) << cached(m.cached_copy) << "\n";
  if (m.has_shm())
    out << "shm alpha " << format_seconds(m.shm_alpha_s) << " bandwidth " << format_rate(m.shm_bandwidth)
        << cached(m.cached_shm_bandwidth) << "\n";
  for (const auto& [transport, seconds] : m.call_s) out << "call " << transport << " " << format_seconds(seconds) << "\n";
  if (m.cores > 0) out << "cores " << m.cores << "\n";
  if (m.cache_bytes > 0) out << "cache " << format_size(static_cast<uint64_t>(m.cache_bytes)) << "\n";
  for (const auto& [model, rate] : m.compute) out << "compute " << model << " " << rate.images_per_s << " " << rate.batch << "\n";
  return out.str();
}

}  // namespace sb::sim
