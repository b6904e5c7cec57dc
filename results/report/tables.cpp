#include "results/report/tables.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb::report {
namespace {

using Cell = std::pair<std::string, std::string>;  // column, value

// One kind of row: where its groups sit in a program's files and which of their values are its
// columns. Every table row also carries its run's columns, what each "*" of the path matched and,
// unless said otherwise, the scalar attributes of the groups on the way down (a sweep's settings:
// datatype, op, transport...). Which 1-D values are rows is said here, not guessed from their lengths: a group
// may hold a dataset of another length that happens to be as long (sb-buckets' bucket_start_s has
// one value per bucket, as many as the sizes when each size is one bucket).
struct TableSpec {
  const char* name = nullptr;
  const char* program = nullptr;
  const char* path = nullptr;        // below the run's root; "*" matches every child group
  std::vector<const char*> matched = {};  // the column of what each "*" matched
  const char* rows_like = nullptr;   // the dataset whose length is the row count; nullptr: one row
  // For an N-dimensional rows_like, one index column per dimension; its rows are every element, and
  // its columns the datasets of its shape. Empty: a 1-D rows_like, indexed by "row".
  std::vector<const char*> indices = {};
  std::vector<const char*> only = {};     // the row columns, when not every 1-D dataset of that length
  std::vector<const char*> except = {};   // datasets and settings that are not columns
  std::vector<const char*> row_attrs = {};  // string-array attributes with one value per row
  bool parent_rows = false;          // the parent's 1-D datasets as long as the first dimension too
  bool settings = true;              // the scalar attributes of the groups on the way are columns
  bool samples = false;              // a table of every sample: written with --samples only
  const char* attr_group = nullptr;  // a subgroup whose scalar attributes are columns, "<group>.<attr>"
};

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> specs = {
      // /allreduce/<impl>/{out_of_place,in_place}: the rows' sizes are on the implementation's group.
      {.name = "allreduce", .program = "sb-allreduce", .path = "allreduce/*/*", .matched = {"group", "placement"},
       .rows_like = "time_us", .parent_rows = true},
      // Every timed iteration of every rank: the samples behind allreduce's times, for percentiles and
      // jitter. The sweep's settings are allreduce's rows': join on run_id, group and placement.
      {.name = "allreduce-iterations", .program = "sb-allreduce", .path = "allreduce/*/*",
       .matched = {"group", "placement"}, .rows_like = "iteration_us", .indices = {"size_index", "rank", "iteration"},
       .parent_rows = true, .settings = false, .samples = true},
      {.name = "compress", .program = "sb-compress", .path = "compress/*", .matched = {"compressor"},
       .rows_like = "size_bytes"},
      {.name = "buckets", .program = "sb-buckets", .path = "buckets/*", .matched = {"strategy"},
       .rows_like = "iteration_s", .except = {"bucket_start_s", "bucket_end_s"}},
      {.name = "buckets-tensors", .program = "sb-buckets", .path = "buckets", .rows_like = "tensor_ready_s",
       .only = {"tensor_ready_s", "tensor_elements"}},
      {.name = "train-runs", .program = "sb-train", .path = "train", .rows_like = nullptr, .attr_group = "config"},
      // The run's outcome, on /train, is train-runs' row; these join it by run_id.
      {.name = "train-epochs", .program = "sb-train", .path = "train/curve", .rows_like = "epoch", .settings = false},
      {.name = "train-steps", .program = "sb-train", .path = "train", .rows_like = "step_seconds",
       .only = {"step_seconds", "step_buckets", "step_negotiations"}, .settings = false},
      {.name = "train-rank-steps", .program = "sb-train", .path = "train", .rows_like = "rank_compute_s",
       .indices = {"rank", "step"}, .settings = false, .samples = true},
      {.name = "train-ops", .program = "sb-train", .path = "train/op_profile", .rows_like = "calls",
       .row_attrs = {"ops"}, .settings = false},
      {.name = "micro", .program = "sb-micro", .path = "micro", .rows_like = "iterations",
       .row_attrs = {"name", "error"}},
      // `machine`, the description's whole text, is left out: machine_name names it.
      {.name = "validate", .program = "sb-dryrun validate", .path = "validate", .rows_like = "rel_error",
       .except = {"machine"}, .row_attrs = {"run", "implementation"}},
  };
  return specs;
}

// Shortest text that reads back as the same double (nan, inf and -inf as such).
std::string number_text(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

bool is_scalar(const h5::ValueShape& shape) {
  return shape.dims.empty() || (shape.dims.size() == 1 && shape.dims[0] == 1);
}

std::optional<std::string> scalar_attr(const h5::Node& node, const std::string& name) {
  const h5::ValueShape shape = node.attr_shape(name);
  if (!is_scalar(shape)) return std::nullopt;
  switch (shape.kind) {
    case h5::ValueKind::integer: return std::to_string(node.attr_int(name));
    case h5::ValueKind::floating: return number_text(node.attr_double(name));
    case h5::ValueKind::string: return node.attr_string(name);
    default: return std::nullopt;
  }
}

// Sets a cell, replacing an earlier one of that column: an inner group's setting wins.
void set_cell(std::vector<Cell>& cells, const std::string& column, std::string value) {
  for (Cell& cell : cells)
    if (cell.first == column) {
      cell.second = std::move(value);
      return;
    }
  cells.emplace_back(column, std::move(value));
}

void add_scalar_attrs(const h5::Node& node, std::vector<Cell>& cells, const std::string& prefix = "") {
  for (const std::string& name : node.attr_names())
    if (std::optional<std::string> value = scalar_attr(node, name)) set_cell(cells, prefix + name, *value);
}

// A numeric dataset of this shape, as cells in row-major order; nullopt for anything else.
std::optional<std::vector<std::string>> column_of(const h5::Node& node, const std::string& name,
                                                  const std::vector<hsize_t>& dims) {
  if (node.is_group(name)) return std::nullopt;
  const h5::ValueShape shape = node.dataset_shape(name);
  if (shape.dims != dims) return std::nullopt;
  std::vector<std::string> cells;
  if (shape.kind == h5::ValueKind::integer) {
    for (int64_t v : node.read_ints(name)) cells.push_back(std::to_string(v));
  } else if (shape.kind == h5::ValueKind::floating) {
    for (double v : node.read_doubles(name)) cells.push_back(number_text(v));
  } else {
    return std::nullopt;
  }
  return cells;
}

bool listed(const std::vector<const char*>& names, const std::string& name) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// The run's own columns: where it came from, what ran, and every label key of the campaign.
std::vector<Cell> run_cells(const Run& run, const std::set<std::string>& label_keys) {
  const h5::Node& root = *run.root;
  std::vector<Cell> cells = {{"run", run.name},          {"source", run.source},
                             {"program", run.program},   {"run_id", run.run_id},
                             {"ranks", std::to_string(run.ranks)}};
  // Always these columns, empty where a run lacks one (machine_name: sb-dryrun's predictions), so
  // that every table starts with the same columns in the same order.
  for (const char* name : {"nodes", "ranks_per_node", "start_time_utc", "git_commit", "machine_name"})
    set_cell(cells, name, root.has_attr(name) ? scalar_attr(root, name).value_or("") : "");
  set_cell(cells, "status", run.status);
  set_cell(cells, "simulated", run.simulated ? "1" : "0");
  for (const std::string& key : label_keys) set_cell(cells, "label:" + key, run.label(key));
  return cells;
}

// Where the walk down a spec's path stands: what each "*" matched and the settings met so far.
struct Place {
  std::vector<std::string> matched;
  std::vector<Cell> settings;
};

using Visit = std::function<void(const h5::Node& group, const h5::Node& parent, const Place& place)>;

void walk(const h5::Node& group, const std::vector<std::string>& parts, size_t depth, const Place& place,
          const Visit& visit) {
  auto enter = [&](const std::string& child, bool wildcard) {
    const h5::Node next = group.open_group(child);
    Place below = place;
    if (wildcard) below.matched.push_back(child);
    add_scalar_attrs(next, below.settings);
    if (depth + 1 == parts.size())
      visit(next, group, below);
    else
      walk(next, parts, depth + 1, below, visit);
  };
  if (parts[depth] == "*") {
    for (const std::string& child : group.children())
      if (group.is_group(child)) enter(child, true);
  } else if (group.has(parts[depth]) && group.is_group(parts[depth])) {
    enter(parts[depth], false);
  }
}

// The union of the rows' columns, in the order first met.
class ColumnIndex {
 public:
  void add(const std::vector<Cell>& cells) {
    for (const Cell& cell : cells)
      if (index_.emplace(cell.first, columns_.size()).second) columns_.push_back(cell.first);
  }
  const std::vector<std::string>& columns() const { return columns_; }
  // The row's cells in column order, "" where it has no value.
  std::vector<std::string> line_up(const std::vector<Cell>& cells) const {
    std::vector<std::string> row(columns_.size());
    for (const auto& [column, value] : cells) row[index_.at(column)] = value;
    return row;
  }

 private:
  std::vector<std::string> columns_;
  std::map<std::string, size_t> index_;
};

using RowSink = std::function<void(const std::vector<Cell>& cells)>;

void add_rows(const TableSpec& spec, const std::vector<Cell>& run_columns, const h5::Node& group,
              const h5::Node& parent, const Place& place, const RowSink& sink) {
  // A value named as one of the run's columns that the run fills (sb-dryrun validate's per-row `run`
  // and `ranks`, the measured run's) leaves the run's value there and goes under "<table>.<name>".
  auto column = [&](const std::string& name) {
    for (const Cell& cell : run_columns)
      if (cell.first == name && !cell.second.empty()) return std::string(spec.name) + "." + name;
    return name;
  };
  std::vector<Cell> fixed = run_columns;
  for (size_t i = 0; i < place.matched.size() && i < spec.matched.size(); ++i)
    set_cell(fixed, column(spec.matched[i]), place.matched[i]);
  if (spec.settings)
    for (const auto& [name, value] : place.settings)
      if (!listed(spec.except, name)) set_cell(fixed, column(name), value);

  if (!spec.rows_like) {
    if (spec.attr_group && group.has(spec.attr_group) && group.is_group(spec.attr_group))
      add_scalar_attrs(group.open_group(spec.attr_group), fixed, std::string(spec.attr_group) + ".");
    sink(fixed);
    return;
  }
  if (!group.has(spec.rows_like)) return;
  const std::vector<hsize_t> dims = group.dataset_shape(spec.rows_like).dims;
  const size_t dimensions = std::max<size_t>(spec.indices.size(), 1);
  if (dims.size() != dimensions)
    throw LibraryError(std::string("'") + spec.rows_like + "' has " + std::to_string(dims.size()) +
                       " dimensions, not " + std::to_string(dimensions));
  hsize_t rows = 1;
  for (hsize_t d : dims) rows *= d;
  std::vector<hsize_t> strides(dims.size(), 1);  // row-major: the rows one index step spans
  for (size_t k = dims.size() - 1; k > 0; --k) strides[k - 1] = strides[k] * dims[k];

  // A value's column (renamed once here, not per row), its cells, and the stride of the index that
  // picks its cell: 1 for the group's own, the first dimension's for the parent's (allreduce's
  // size_bytes beside every rank and iteration).
  struct RowColumn {
    std::string column;
    std::vector<std::string> cells;
    hsize_t stride;
  };
  std::vector<RowColumn> columns;
  if (spec.parent_rows)
    for (const std::string& name : parent.children())
      if (auto cells = column_of(parent, name, {dims[0]}))
        columns.push_back({column(name), std::move(*cells), strides[0]});
  for (const std::string& name : group.children()) {
    if ((!spec.only.empty() && !listed(spec.only, name)) || listed(spec.except, name)) continue;
    if (auto cells = column_of(group, name, dims)) columns.push_back({column(name), std::move(*cells), 1});
  }
  for (const char* name : spec.row_attrs) {
    if (!group.has_attr(name)) continue;
    std::vector<std::string> values = group.attr_strings(name);
    if (values.size() == rows) columns.push_back({column(name), std::move(values), 1});
  }
  // Appended, not set: a value named as a setting comes after it, and ColumnIndex::line_up puts
  // the later one in the column, as set_cell would.
  for (hsize_t r = 0; r < rows; ++r) {
    std::vector<Cell> cells = fixed;
    if (spec.indices.empty()) cells.emplace_back("row", std::to_string(r));
    for (size_t k = 0; k < spec.indices.size(); ++k)
      cells.emplace_back(spec.indices[k], std::to_string(r / strides[k] % dims[k]));
    for (const RowColumn& c : columns) cells.emplace_back(c.column, c.cells[r / c.stride]);
    sink(cells);
  }
}

// Every row of one kind, run by run, to `sink`.
void for_each_row(const TableSpec& spec, const std::vector<Run>& runs, const std::set<std::string>& label_keys,
                  const RowSink& sink) {
  const std::vector<std::string> parts = split_list(spec.path, '/');
  for (const Run& run : runs) {
    if (run.program != spec.program) continue;
    // The file read whole and matched its checksum (load_campaign): a value here that cannot be
    // read as the schema says (written by another tool) makes the file bad input, named.
    try {
      const std::vector<Cell> run_columns = run_cells(run, label_keys);
      walk(*run.root, parts, 0, Place{}, [&](const h5::Node& group, const h5::Node& parent, const Place& place) {
        add_rows(spec, run_columns, group, parent, place, sink);
      });
    } catch (const LibraryError& e) {
      throw UsageError(run.source + ": its " + spec.name + " table cannot be read: " + e.what());
    }
  }
}

void append_csv_line(std::string& text, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) text += ',';
    const std::string& cell = cells[i];
    if (cell.find_first_of(",\"\r\n") == std::string::npos) {
      text += cell;
      continue;
    }
    text += '"';
    for (char c : cell) text += c == '"' ? std::string("\"\"") : std::string(1, c);
    text += '"';
  }
  text += '\n';
}

}  // namespace

std::vector<CsvTable> build_tables(const std::vector<Run>& runs, bool samples) {
  const std::set<std::string> label_keys = sb::label_keys(runs);
  std::vector<CsvTable> tables;
  for (const TableSpec& spec : table_specs()) {
    if (spec.samples && !samples) continue;
    std::vector<std::vector<Cell>> rows;
    ColumnIndex columns;
    for_each_row(spec, runs, label_keys, [&](const std::vector<Cell>& cells) {
      columns.add(cells);
      rows.push_back(cells);
    });
    if (rows.empty()) continue;
    CsvTable table{spec.name, columns.columns(), {}};
    for (const auto& row : rows) table.rows.push_back(columns.line_up(row));
    tables.push_back(std::move(table));
  }
  return tables;
}

std::string csv_text(const CsvTable& table) {
  std::string text;
  append_csv_line(text, table.columns);
  for (const auto& row : table.rows) append_csv_line(text, row);
  return text;
}

std::vector<TableFile> write_tables(const std::vector<Run>& runs, bool samples, const std::string& dir) {
  const std::string folder = dir + "/tables";
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw LibraryError("cannot create '" + folder + "': " + error.message());
  const std::set<std::string> label_keys = sb::label_keys(runs);
  std::vector<TableFile> written;
  for (const TableSpec& spec : table_specs()) {
    if (spec.samples && !samples) continue;
    // Two passes, so that no table is held whole: the first learns the columns, the second writes
    // each row as it is made (the sample tables run to millions of rows at scale).
    ColumnIndex columns;
    size_t rows = 0;
    for_each_row(spec, runs, label_keys, [&](const std::vector<Cell>& cells) {
      columns.add(cells);
      ++rows;
    });
    if (rows == 0) continue;
    AtomicFileWriter file(folder + "/" + spec.name + ".csv");
    std::string text;
    append_csv_line(text, columns.columns());
    for_each_row(spec, runs, label_keys, [&](const std::vector<Cell>& cells) {
      append_csv_line(text, columns.line_up(cells));
      if (text.size() >= (1 << 20)) {
        file.write(text);
        text.clear();
      }
    });
    file.write(text);
    file.commit(/*sync=*/false);
    written.push_back({spec.name, rows});
  }
  return written;
}

}  // namespace sb::report
