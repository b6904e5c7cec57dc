#pragma once
// sb-report's CSV tables: every row of every run in the campaign, one file per kind of row
// (tables/allreduce.csv, tables/train-epochs.csv, ...), each row carrying its run's metadata, its
// labels and the settings of the groups above it, so a campaign loads into pandas, R or a
// spreadsheet in one read, without HDF5. README.md's "CSV tables" lists the files and columns.
#include <string>
#include <vector>

#include "results/campaign.hpp"

namespace sb::report {

struct CsvTable {
  std::string name;  // the file's stem
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // one cell per column; "" where the row has no such value
};

// A table as written: its file's stem and its rows.
struct TableFile {
  std::string name;
  size_t rows = 0;
};

// The tables the runs fill, in a fixed order, held in memory; a kind of row no run has gives no
// table. `samples` adds the tables of every sample (allreduce-iterations, train-rank-steps): at
// scale they are many times the rest, from sizes x ranks x iterations and ranks x steps. Throws
// UsageError naming a run whose rows cannot be read as the schema says.
std::vector<CsvTable> build_tables(const std::vector<Run>& runs, bool samples = false);

// CSV text: a header line, then one line per row, ended by '\n'; a cell holding a comma, a quote or
// a line break is quoted, its quotes doubled (RFC 4180's quoting).
std::string csv_text(const CsvTable& table);

// Writes DIR/tables/<name>.csv for each table build_tables would give, as csv_text would write it,
// streaming each file rather than holding it (the runs are read twice: for the columns, then the
// rows), each file atomically. Throws LibraryError naming a file that cannot be written, and
// UsageError as build_tables does.
std::vector<TableFile> write_tables(const std::vector<Run>& runs, bool samples, const std::string& dir);

}  // namespace sb::report
