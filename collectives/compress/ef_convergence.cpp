#include "collectives/compress/ef_convergence.hpp"

#include <cmath>
#include <vector>

#include "collectives/compress/compressed_allreduce.hpp"
#include "common/check.hpp"
#include "kernels/random.hpp"

namespace sb {
namespace {

// A standard normal from two counter-based uniforms (Box-Muller).
double normal(uint64_t key, uint64_t counter) {
  const double u = (static_cast<double>(random_bits(key, 2 * counter) >> 11) + 0.5) * 0x1p-53;
  const double v = static_cast<double>(random_bits(key, 2 * counter + 1) >> 11) * 0x1p-53;
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

class LeastSquares {
 public:
  LeastSquares(const ConvergenceSettings& s, int rank, int nranks, MPI_Comm comm)
      : d_(s.dimension), m_(s.rows_per_rank), total_rows_(static_cast<double>(s.rows_per_rank) * nranks), comm_(comm),
        a_(static_cast<size_t>(d_) * m_), b_(m_) {
    // The same solution on every rank; each rank's own rows. A's columns are scaled unevenly so
    // that the problem is ill-conditioned enough for the compressors to differ.
    const uint64_t shared = random_key(s.seed, 0, 0), mine = random_key(s.seed, 1, static_cast<uint64_t>(rank));
    std::vector<double> solution(d_);
    for (int j = 0; j < d_; ++j) solution[j] = normal(shared, static_cast<uint64_t>(j));
    for (int i = 0; i < m_; ++i) {
      double dot = 0;
      for (int j = 0; j < d_; ++j) {
        const double column_scale = std::exp(-3.0 * j / d_);
        const double value = normal(mine, static_cast<uint64_t>(i) * d_ + j) * column_scale / std::sqrt(d_);
        a_[static_cast<size_t>(i) * d_ + j] = value;
        dot += value * solution[j];
      }
      b_[i] = dot + 0.01 * normal(mine, static_cast<uint64_t>(m_) * d_ + i);
    }
  }

  // The global loss (1 / 2 rows) ||A x - b||^2 (collective), and this rank's share of the global
  // gradient, scaled so that the average over ranks is the gradient.
  double loss_and_gradient(const std::vector<float>& x, std::vector<float>& gradient, int nranks) const {
    std::vector<double> g(d_, 0.0);
    double local = 0;
    for (int i = 0; i < m_; ++i) {
      const double* row = &a_[static_cast<size_t>(i) * d_];
      double r = -b_[i];
      for (int j = 0; j < d_; ++j) r += row[j] * x[j];
      local += r * r;
      for (int j = 0; j < d_; ++j) g[j] += r * row[j];
    }
    for (int j = 0; j < d_; ++j) gradient[j] = static_cast<float>(g[j] * nranks / total_rows_);
    double global = 0;
    SB_MPI_CHECK(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, comm_));
    return global / (2 * total_rows_);
  }

  // The step: 1 / 2L, with L the largest eigenvalue of A^T A / rows from a few power iterations
  // (1 / L is the fastest safe step for exact gradients; error feedback's delayed residuals need a
  // margin).
  double step_size(int nranks) const {
    std::vector<float> v(d_, 1.0f), gradient(d_);
    double lambda = 1;
    for (int it = 0; it < 30; ++it) {
      // A^T A v / rows, the gradient at x = v of the problem with b = 0.
      std::vector<double> av(m_, 0.0), atav(d_, 0.0);
      for (int i = 0; i < m_; ++i)
        for (int j = 0; j < d_; ++j) av[i] += a_[static_cast<size_t>(i) * d_ + j] * v[j];
      for (int i = 0; i < m_; ++i)
        for (int j = 0; j < d_; ++j) atav[j] += av[i] * a_[static_cast<size_t>(i) * d_ + j];
      SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, atav.data(), d_, MPI_DOUBLE, MPI_SUM, comm_));
      double norm = 0;
      for (double value : atav) norm += value * value;
      norm = std::sqrt(norm);
      double vnorm = 0;
      for (float value : v) vnorm += static_cast<double>(value) * value;
      lambda = norm / std::sqrt(vnorm) / total_rows_;
      for (int j = 0; j < d_; ++j) v[j] = static_cast<float>(atav[j] / norm);
    }
    (void)nranks;
    return 0.5 / lambda;
  }

  int dimension() const { return d_; }

 private:
  int d_, m_;
  double total_rows_;
  MPI_Comm comm_;
  std::vector<double> a_, b_;
};

}  // namespace

ConvergenceResult ef_convergence(const std::string& compressor, const CompressorParams& params, bool error_feedback,
                                 const ConvergenceSettings& s, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  const LeastSquares problem(s, rank, nranks, comm);
  const double lr = problem.step_size(nranks);
  const size_t d = static_cast<size_t>(problem.dimension());
  std::vector<float> gradient(d);

  // The reference: plain averaged gradients.
  std::vector<float> x(d, 0.0f);
  double loss = 0;
  for (int step = 0; step <= s.reference_steps; ++step) {
    loss = problem.loss_and_gradient(x, gradient, nranks);
    if (step == s.reference_steps) break;
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, gradient.data(), static_cast<int>(d), MPI_FLOAT, MPI_SUM, comm));
    for (size_t j = 0; j < d; ++j) x[j] -= static_cast<float>(lr * gradient[j] / nranks);
  }
  ConvergenceResult result;
  result.target_loss = loss * 1.01;

  CompressorParams mine = params;
  mine.stream = static_cast<uint64_t>(rank);
  CompressedAllreduce allreduce(make_compressor(compressor, mine), error_feedback, comm);
  std::fill(x.begin(), x.end(), 0.0f);
  double initial = 0;
  for (int step = 0; step <= s.max_steps; ++step) {
    loss = problem.loss_and_gradient(x, gradient, nranks);
    if (step == 0) initial = loss;
    if (loss <= result.target_loss) {
      result.steps = step;
      break;
    }
    if (!(loss < 100 * initial)) {  // NaN included
      result.steps = ConvergenceResult::kDiverged;
      break;
    }
    if (step == s.max_steps) break;
    allreduce.run(gradient.data(), d, static_cast<uint64_t>(step));
    for (size_t j = 0; j < d; ++j) x[j] -= static_cast<float>(lr * gradient[j]);
  }
  result.final_loss = loss;
  return result;
}

}  // namespace sb
