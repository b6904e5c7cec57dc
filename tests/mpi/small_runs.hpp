#pragma once
// What the MPI tests that train share: a short run of ResNet-20 on Fashion-MNIST, and a
// temporary folder that every rank names alike.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "models/trainer.hpp"

namespace sb::models {

// `steps` steps of ResNet-20 on Fashion-MNIST, one thread and one loader worker a rank, no
// progress lines; a global batch of 60, which divides over 1 to 5 ranks.
inline TrainConfig few_steps(int64_t steps) {
  TrainConfig c;
  c.model = "resnet20";
  c.data = "fashion-mnist";
  c.batch = 60;
  c.epochs = 1;
  c.max_steps = steps;
  c.threads = 1;
  c.workers = 1;
  c.print_every = 0;
  c.seed = 3;
  return c;
}

// A new folder under /tmp named `prefix`-XXXXXX, made by rank 0 and its name sent to the others;
// "" on every rank when it could not be made. Collective.
inline std::string shared_temp_dir(const std::string& prefix) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char name[64] = {};
  const std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  if (rank == 0 && pattern.size() < sizeof name) {
    pattern.copy(name, pattern.size());
    if (mkdtemp(name) == nullptr) name[0] = 0;
  }
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
  return name;
}

}  // namespace sb::models
