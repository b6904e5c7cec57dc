#include "common/agreed_usage.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <utility>
#include <vector>

#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb {

std::optional<std::string> first_usage_error(const std::optional<std::string>& mine, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  const int candidate = mine ? rank : nranks;
  int first = nranks;
  SB_MPI_CHECK(MPI_Allreduce(&candidate, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == nranks) return std::nullopt;
  const std::string reason = broadcast_string(rank == first ? *mine : std::string(), first, comm);
  return first == 0 ? reason : "rank " + std::to_string(first) + ": " + reason;
}

std::optional<std::string> first_reason_against(const std::string& why_not, MPI_Comm comm) {
  return first_usage_error(why_not.empty() ? std::nullopt : std::optional<std::string>(why_not), comm);
}

namespace {

constexpr const char* kSameEverywhere = "every rank must run the same build, given the same flags";

// flags_to_agree's text as (name, value) pairs, in order.
std::vector<std::pair<std::string, std::string>> flag_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t equals = line.find('=');
    if (equals == std::string::npos) lines.emplace_back(line, "");
    else lines.emplace_back(line.substr(0, equals), line.substr(equals + 1));
  }
  return lines;
}

// A word of a value as the number it means, when it is one: a decimal ("0.1", ".10", "1e-1") or
// a size ("64K", "65536").
std::optional<double> number_in(const std::string& word) {
  double number = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), number);
  if (ec == std::errc() && end == word.data() + word.size()) return number;
  try {
    return static_cast<double>(parse_size(word, "a flag's value"));
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

// Whether two ranks' values of a flag are the same, however written: word by word, equal as text
// or as the numbers they mean (a node's launch line may say -e 1M where another's says 1048576).
// The build and the program are compared as text.
bool same_value(const std::string& name, const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (name == "build" || name == "program") return false;
  const std::vector<std::string> as = split_list(a, ' '), bs = split_list(b, ' ');
  if (as.size() != bs.size()) return false;
  for (size_t i = 0; i < as.size(); ++i) {
    if (as[i] == bs[i]) continue;
    const std::optional<double> x = number_in(as[i]), y = number_in(bs[i]);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

}  // namespace

std::string why_flags_differ(const std::string& flags, MPI_Comm comm) {
  const std::string first = broadcast_string(flags, 0, comm);
  if (flags == first) return {};
  const auto mine = flag_lines(flags), theirs = flag_lines(first);
  for (const auto& [name, value] : theirs) {
    const auto here = std::find_if(mine.begin(), mine.end(), [&](const auto& line) { return line.first == name; });
    if (here != mine.end() && !same_value(name, here->second, value))
      return name + " is " + here->second + " here but " + value + " on rank 0; " + kSameEverywhere;
  }
  const bool same_flags = std::equal(mine.begin(), mine.end(), theirs.begin(), theirs.end(),
                                     [](const auto& a, const auto& b) { return a.first == b.first; });
  if (same_flags) return {};  // every value the same, written differently
  // Flags that are not rank 0's at all: --help on some ranks only, or another program.
  return std::string("its command line is not rank 0's (another program, or --help on some ranks only); ") +
         kSameEverywhere;
}

std::optional<std::string> agree_on_command_line(const std::optional<std::string>& parse_error,
                                                 const std::string& flags, MPI_Comm comm) {
  if (std::optional<std::string> reason = first_usage_error(parse_error, comm)) return reason;
  return first_reason_against(why_flags_differ(flags, comm), comm);
}

void agree_on_usage(MPI_Comm comm, const std::function<void()>& check) {
  std::optional<std::string> mine;
  try {
    check();
  } catch (const UsageError& e) {
    mine = e.what();
  }
  if (const std::optional<std::string> reason = first_usage_error(mine, comm)) throw UsageError(*reason);
}

}  // namespace sb
