#include "results/micro_record.hpp"

#include <limits>
#include <set>

namespace sb {

void write_micro_results(const h5::Node& root, const std::vector<MicroRow>& rows) {
  const h5::Node micro = root.create_group("micro");
  std::vector<std::string> names, errors;
  std::vector<int64_t> iterations;
  std::vector<double> real_time, cpu_time, traffic;
  std::set<std::string> counter_names;
  for (const MicroRow& row : rows) {
    names.push_back(row.name);
    errors.push_back(row.error);
    iterations.push_back(row.iterations);
    real_time.push_back(row.real_time_us);
    cpu_time.push_back(row.cpu_time_us);
    traffic.push_back(row.traffic_GBps);
    for (const auto& [counter, value] : row.counters) counter_names.insert(counter);
  }
  micro.set_attr("name", names);
  micro.set_attr("error", errors);
  micro.write("iterations", iterations);
  micro.write("real_time_us", real_time);
  micro.write("cpu_time_us", cpu_time);
  micro.write("traffic_GBps", traffic);
  for (const std::string& counter : counter_names) {
    std::vector<double> column;
    for (const MicroRow& row : rows) {
      const auto found = row.counters.find(counter);
      column.push_back(found == row.counters.end() ? std::numeric_limits<double>::quiet_NaN() : found->second);
    }
    micro.write(counter, column);
  }
}

}  // namespace sb
