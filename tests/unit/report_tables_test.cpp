// sb-report's CSV tables: every row of every run, with the run's columns, its labels and the
// settings above it; only the values the schema says are rows; CSV quoting that reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/usage_error.hpp"
#include "results/campaign.hpp"
#include "results/report/tables.hpp"
#include "results/results_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

class ReportTables : public testing::TempDirTest {
 protected:
  // A results file's root with what every run has.
  static void set_run(const h5::Node& root, const std::string& program, int64_t ranks, const std::string& id) {
    root.set_attr("schema_version", kSchemaVersion);
    root.set_attr("program", program);
    root.set_attr("ranks", ranks);
    root.set_attr("run_id", id);
  }

  // An sb-allreduce file: two implementations, each with out_of_place and in_place rows per size.
  void write_allreduce(const std::string& name, const std::string& interconnect) {
    ResultsFile out(path(name));
    set_run(out.root(), "sb-allreduce", 4, "id-" + name);
    out.root().create_group("labels").set_attr("interconnect", interconnect);
    const h5::Node sweep = out.root().create_group("allreduce");
    sweep.set_attr("datatype", "float");
    sweep.set_attr("memcpy_GBps", 12.5);
    sweep.set_attr("transports", std::vector<std::string>{"mpi", "shm"});  // an array: not a column
    for (const char* impl : {"mpi", "ring@mpi"}) {
      const h5::Node group = sweep.create_group(impl);
      group.set_attr("transport", std::string(impl) == "mpi" ? "library" : "mpi");
      group.write("size_bytes", std::vector<uint64_t>{1024, 4096, 16384});
      group.write("count", std::vector<uint64_t>{256, 1024, 4096});
      for (const char* placement : {"out_of_place", "in_place"}) {
        const h5::Node rows = group.create_group(placement);
        rows.write("time_us", std::vector<double>{10.5, 0.1, 1e-300});
        rows.write("busbw_GBps", std::vector<double>{0.25, std::nan(""), 3});
        rows.write("wrong", std::vector<int64_t>{0, -1, 7});
        std::vector<double> iterations;  // [size][rank][iteration]: 100 x size + 10 x rank + iteration
        for (int size = 0; size < 3; ++size)
          for (int rank = 0; rank < 4; ++rank)
            for (int i = 0; i < 2; ++i) iterations.push_back(100 * size + 10 * rank + i);
        rows.write("iteration_us", iterations, {3, 4, 2});
      }
    }
    out.commit();
  }

  static const report::CsvTable& table(const std::vector<report::CsvTable>& tables, const std::string& name) {
    auto it = std::find_if(tables.begin(), tables.end(), [&](const report::CsvTable& t) { return t.name == name; });
    if (it == tables.end()) throw std::runtime_error("no table " + name);
    return *it;
  }

  // The cell of `column` in row `row`; throws when the table has no such column.
  static std::string cell(const report::CsvTable& table, size_t row, const std::string& column) {
    auto it = std::find(table.columns.begin(), table.columns.end(), column);
    if (it == table.columns.end()) throw std::runtime_error(table.name + " has no column " + column);
    return table.rows.at(row).at(static_cast<size_t>(it - table.columns.begin()));
  }

  static bool has_column(const report::CsvTable& table, const std::string& column) {
    return std::find(table.columns.begin(), table.columns.end(), column) != table.columns.end();
  }
};

TEST_F(ReportTables, AllreduceRowsCarryTheRunTheSettingsAndTheSizesOfTheirImplementation) {
  write_allreduce("fast.h5", "ib");
  write_allreduce("slow.h5", "eth");
  const Campaign campaign = load_campaign({dir_.string()});
  ASSERT_EQ(report::build_tables(campaign.runs).size(), 1u);  // allreduce alone: no other program ran
  const std::vector<report::CsvTable> tables = report::build_tables(campaign.runs, /*samples=*/true);
  ASSERT_EQ(tables.size(), 2u);  // and allreduce-iterations
  const report::CsvTable& t = table(tables, "allreduce");
  ASSERT_EQ(t.rows.size(), 2u * 2 * 2 * 3);  // runs x implementations x placements x sizes
  for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size());
  // Runs in path order, then implementations and placements in name order, then sizes.
  EXPECT_EQ(cell(t, 0, "run"), "fast");
  EXPECT_EQ(cell(t, 0, "program"), "sb-allreduce");
  EXPECT_EQ(cell(t, 0, "run_id"), "id-fast.h5");
  EXPECT_EQ(cell(t, 0, "ranks"), "4");
  EXPECT_EQ(cell(t, 0, "label:interconnect"), "ib");
  EXPECT_EQ(cell(t, 12, "label:interconnect"), "eth");
  EXPECT_EQ(cell(t, 0, "group"), "mpi");
  EXPECT_EQ(cell(t, 0, "placement"), "in_place");
  EXPECT_EQ(cell(t, 3, "placement"), "out_of_place");
  EXPECT_EQ(cell(t, 6, "group"), "ring@mpi");
  EXPECT_EQ(cell(t, 6, "transport"), "mpi");
  EXPECT_EQ(cell(t, 0, "transport"), "library");
  EXPECT_EQ(cell(t, 0, "datatype"), "float");
  EXPECT_EQ(cell(t, 0, "memcpy_GBps"), "12.5");
  // The sizes and counts come from the implementation's group, row by row.
  EXPECT_EQ(cell(t, 1, "size_bytes"), "4096");
  EXPECT_EQ(cell(t, 2, "count"), "4096");
  EXPECT_EQ(cell(t, 0, "row"), "0");
  EXPECT_EQ(cell(t, 2, "row"), "2");
  // Numbers read back exactly: the shortest text of the same double.
  EXPECT_EQ(cell(t, 0, "time_us"), "10.5");
  EXPECT_EQ(cell(t, 1, "time_us"), "0.1");
  EXPECT_EQ(std::stod(cell(t, 2, "time_us")), 1e-300);
  EXPECT_EQ(cell(t, 1, "busbw_GBps"), "nan");
  EXPECT_EQ(cell(t, 1, "wrong"), "-1");
  EXPECT_EQ(cell(t, 2, "wrong"), "7");
  EXPECT_FALSE(has_column(t, "iteration_us"));
  EXPECT_FALSE(has_column(t, "transports"));

  // Every iteration of every rank, indexed, with its size from the implementation's group.
  const report::CsvTable& it = table(tables, "allreduce-iterations");
  // runs x implementations x placements x sizes x ranks x iterations
  ASSERT_EQ(it.rows.size(), 2u * 2 * 2 * 3 * 4 * 2);
  const size_t r = 2 * 8 + 3 * 2 + 1;                  // fast, mpi, in_place: size 2, rank 3, iteration 1
  EXPECT_EQ(cell(it, r, "group"), "mpi");
  EXPECT_EQ(cell(it, r, "size_index"), "2");
  EXPECT_EQ(cell(it, r, "rank"), "3");
  EXPECT_EQ(cell(it, r, "iteration"), "1");
  EXPECT_EQ(cell(it, r, "iteration_us"), "231");
  EXPECT_EQ(cell(it, r, "size_bytes"), "16384");
  EXPECT_EQ(cell(it, r, "count"), "4096");
  EXPECT_FALSE(has_column(it, "time_us"));   // per size, not per iteration
  EXPECT_FALSE(has_column(it, "datatype"));  // the settings are allreduce's
}

TEST_F(ReportTables, TheStreamedFilesAreTheTablesAsBuilt) {
  write_allreduce("fast.h5", "ib");
  write_allreduce("slow.h5", "eth");
  const Campaign campaign = load_campaign({dir_.string()});
  const std::vector<report::CsvTable> built = report::build_tables(campaign.runs, true);
  const std::vector<report::TableFile> written = report::write_tables(campaign.runs, true, path("report"));
  ASSERT_EQ(written.size(), built.size());
  for (size_t i = 0; i < built.size(); ++i) {
    EXPECT_EQ(written[i].name, built[i].name);
    EXPECT_EQ(written[i].rows, built[i].rows.size());
    std::ifstream in(path("report/tables/" + built[i].name + ".csv"), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), report::csv_text(built[i])) << built[i].name;
  }
  std::vector<std::string> names;  // nothing but the tables: no temporary left behind
  for (const auto& entry : std::filesystem::directory_iterator(path("report/tables")))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"allreduce-iterations.csv", "allreduce.csv"}));
}

TEST_F(ReportTables, OnlyTheValuesTheSchemaSaysAreRowsBecomeColumnsHoweverLongTheOthersAre) {
  {
    ResultsFile out(path("buckets.h5"));
    set_run(out.root(), "sb-buckets", 2, "b");
    const h5::Node buckets = out.root().create_group("buckets");
    buckets.write("tensor_ready_s", std::vector<double>{0.1, 0.2});
    buckets.write("tensor_elements", std::vector<uint64_t>{10, 20});
    const h5::Node fused = buckets.create_group("fused");
    fused.write("iteration_s", std::vector<double>{1, 2});
    fused.write("bucket_mb", std::vector<double>{25, 50});
    // One bucket per size: as many bucket times as sizes, and still not the sizes' rows.
    fused.write("bucket_start_s", std::vector<double>{0.5, 0.6});
    out.commit();
  }
  {
    ResultsFile out(path("train.h5"));
    set_run(out.root(), "sb-train", 2, "t");
    const h5::Node train = out.root().create_group("train");
    train.set_attr("images_per_s", 123.0);
    train.create_group("config").set_attr("batch", int64_t{64});
    train.write("step_seconds", std::vector<double>{0.3, 0.4});
    train.write("step_buckets", std::vector<int64_t>{7, 6});
    train.write("rank_peak_host_bytes", std::vector<int64_t>{5, 6});  // per rank, as many as the steps
    train.write("rank_compute_s", std::vector<double>{1, 2, 3, 4}, {2, 2});  // [rank][step]
    train.write("rank_wait_s", std::vector<double>{5, 6, 7, 8}, {2, 2});
    const h5::Node curve = train.create_group("curve");
    curve.write("epoch", std::vector<double>{1});
    curve.write("images_per_s", std::vector<double>{99});
    out.commit();
  }
  const std::vector<report::CsvTable> tables = report::build_tables(load_campaign({dir_.string()}).runs, true);
  const report::CsvTable& buckets = table(tables, "buckets");
  ASSERT_EQ(buckets.rows.size(), 2u);
  EXPECT_EQ(cell(buckets, 1, "strategy"), "fused");
  EXPECT_EQ(cell(buckets, 1, "bucket_mb"), "50");
  EXPECT_FALSE(has_column(buckets, "bucket_start_s"));
  EXPECT_FALSE(has_column(buckets, "tensor_ready_s"));
  const report::CsvTable& tensors = table(tables, "buckets-tensors");
  ASSERT_EQ(tensors.rows.size(), 2u);
  EXPECT_EQ(cell(tensors, 1, "tensor_elements"), "20");

  const report::CsvTable& steps = table(tables, "train-steps");
  ASSERT_EQ(steps.rows.size(), 2u);
  EXPECT_EQ(cell(steps, 1, "step_seconds"), "0.4");
  EXPECT_EQ(cell(steps, 1, "step_buckets"), "6");
  EXPECT_FALSE(has_column(steps, "rank_peak_host_bytes"));
  // The run's outcome is train-runs' one row, with its configuration; the curve's images_per_s
  // is the epoch's, not the run's.
  const report::CsvTable& runs = table(tables, "train-runs");
  ASSERT_EQ(runs.rows.size(), 1u);
  EXPECT_EQ(cell(runs, 0, "images_per_s"), "123");
  EXPECT_EQ(cell(runs, 0, "config.batch"), "64");
  const report::CsvTable& rank_steps = table(tables, "train-rank-steps");
  ASSERT_EQ(rank_steps.rows.size(), 4u);
  EXPECT_EQ(cell(rank_steps, 2, "rank"), "1");
  EXPECT_EQ(cell(rank_steps, 2, "step"), "0");
  EXPECT_EQ(cell(rank_steps, 2, "rank_compute_s"), "3");
  EXPECT_EQ(cell(rank_steps, 2, "rank_wait_s"), "7");
  EXPECT_FALSE(has_column(rank_steps, "step_seconds"));
  const report::CsvTable& epochs = table(tables, "train-epochs");
  ASSERT_EQ(epochs.rows.size(), 1u);
  EXPECT_EQ(cell(epochs, 0, "images_per_s"), "99");
}

TEST_F(ReportTables, ARowsOwnRunAndRanksKeepTheirNamesApartFromTheRunsColumns) {
  {
    ResultsFile out(path("validate.h5"));
    set_run(out.root(), "sb-dryrun validate", 1, "v");
    const h5::Node v = out.root().create_group("validate");
    v.set_attr("machine_name", "vm");
    v.set_attr("machine", "name vm\nlevel ...");  // the description's text: left out
    v.set_attr("run", std::vector<std::string>{"ar-np2", "ar-np4"});
    v.set_attr("implementation", std::vector<std::string>{"ring@mpi", "mpi"});
    v.write("ranks", std::vector<int64_t>{2, 4});
    v.write("rel_error", std::vector<double>{0.25, -0.5});
    out.commit();
  }
  const report::CsvTable t = table(report::build_tables(load_campaign({dir_.string()}).runs), "validate");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 1, "run"), "validate");
  EXPECT_EQ(cell(t, 1, "ranks"), "1");
  EXPECT_EQ(cell(t, 1, "validate.run"), "ar-np4");
  EXPECT_EQ(cell(t, 1, "validate.ranks"), "4");
  EXPECT_EQ(cell(t, 1, "implementation"), "mpi");
  EXPECT_EQ(cell(t, 1, "machine_name"), "vm");
  EXPECT_FALSE(has_column(t, "machine"));
}

TEST_F(ReportTables, CellsWithCommasQuotesOrLineBreaksAreQuotedAndMissingCellsAreEmpty) {
  const report::CsvTable t{"t", {"a", "b", "c"}, {{"plain", "x,y", "say \"hi\""}, {"two\nlines", "", "-0.5"}}};
  EXPECT_EQ(report::csv_text(t), "a,b,c\nplain,\"x,y\",\"say \"\"hi\"\"\"\n\"two\nlines\",,-0.5\n");
}

TEST_F(ReportTables, RunsWithDifferentValuesShareOneHeaderWithEmptyCellsWhereARunHasNone) {
  write_allreduce("a.h5", "ib");
  {
    ResultsFile out(path("b.h5"));  // a prediction: no labels, no count, one implementation
    set_run(out.root(), "sb-allreduce", 2, "b");
    out.root().set_attr("simulated", int64_t{1});
    out.root().set_attr("machine_name", "dgx");
    const h5::Node group = out.root().create_group("allreduce").create_group("mpi");
    group.write("size_bytes", std::vector<uint64_t>{8});
    group.create_group("out_of_place").write("time_us", std::vector<double>{2});
    out.commit();
  }
  const report::CsvTable t = table(report::build_tables(load_campaign({dir_.string()}).runs), "allreduce");
  ASSERT_EQ(t.rows.size(), 12u + 1);
  const size_t last = t.rows.size() - 1;
  EXPECT_EQ(cell(t, last, "run"), "b");
  EXPECT_EQ(cell(t, last, "size_bytes"), "8");
  EXPECT_EQ(cell(t, last, "label:interconnect"), "");
  EXPECT_EQ(cell(t, last, "count"), "");
  EXPECT_EQ(cell(t, last, "busbw_GBps"), "");
  EXPECT_EQ(cell(t, 0, "count"), "256");
  EXPECT_EQ(cell(t, last, "simulated"), "1");
  EXPECT_EQ(cell(t, last, "machine_name"), "dgx");
  EXPECT_EQ(cell(t, 0, "simulated"), "0");
  EXPECT_EQ(cell(t, 0, "machine_name"), "");
  // The run's columns come first whichever run has them.
  const auto at = [&](const char* c) { return std::find(t.columns.begin(), t.columns.end(), c) - t.columns.begin(); };
  EXPECT_LT(at("machine_name"), at("status"));
  EXPECT_LT(at("label:interconnect"), at("group"));
}

TEST_F(ReportTables, RowsThatCannotBeReadAsTheSchemaSaysAreBadInputNamingTheFile) {
  {
    ResultsFile out(path("odd.h5"));  // a sound file, but its rows are a matrix
    set_run(out.root(), "sb-micro", 1, "odd");
    out.root().create_group("micro").write("iterations", std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
    out.commit();
  }
  const Campaign campaign = load_campaign({dir_.string()});
  try {
    report::build_tables(campaign.runs);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string why = "odd.h5: its micro table cannot be read: 'iterations' has 2 dimensions, not 1";
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sb
