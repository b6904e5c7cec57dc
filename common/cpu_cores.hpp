#pragma once
// The cores this process may run on: its CPU affinity (mpirun binds a rank to one core by
// default), or, where that cannot be read, the cores online.
namespace sb {

int allowed_cores();

}  // namespace sb
