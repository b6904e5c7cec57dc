#pragma once
// A collective algorithm as data: for one rank, a list of rounds, each a set of steps on chunks
// of the rank's working buffer (which starts as the rank's input and ends as the result) or of a
// scratch buffer. An algorithm is a pure function (rank, nranks, count) -> Schedule; the
// verifier (verify.hpp) proves a schedule correct without data, transports (transports/) execute
// it on real bytes, and later the simulator prices it.
//
// Semantics of a round, which every executor follows:
//   1. every send reads its chunk as it is at the start of the round;
//   2. every receive completes (recv_reduce into a staging area);
//   3. recv_reduce steps are applied in order, then local steps in order.
// Between a pair of ranks, the sends of one round match the receives in the order listed, and
// must agree on their element counts. Round i is the same round on every rank: a rank with
// nothing to do in it still has it, empty (executors skip empty rounds at no cost).
#include <cstddef>
#include <string>
#include <vector>

namespace sb {

enum class BufferId { work, scratch };

struct Chunk {
  BufferId buffer = BufferId::work;
  size_t offset = 0;  // in elements
  size_t count = 0;
};

enum class StepKind {
  send,          // send `src` to `peer`
  recv_reduce,   // receive from `peer` and reduce into `dst`
  recv_copy,     // receive from `peer` into `dst`
  reduce_local,  // dst = dst op src
  copy_local,    // dst = src
};

struct Step {
  StepKind kind;
  int peer = -1;  // for the communicating steps
  Chunk dst;      // recv_*, *_local
  Chunk src;      // send, *_local
};

struct Round {
  std::vector<Step> steps;
};

struct Schedule {
  int rank = 0;
  int nranks = 1;
  size_t count = 0;          // elements of the working buffer
  size_t scratch_count = 0;  // elements of scratch the schedule needs
  std::vector<Round> rounds;

  // Builders used by the algorithms; each skips a step of zero elements, which keeps schedules
  // free of empty messages (the peer's builder skips the matching one by the same rule).
  Round& new_round() { return rounds.emplace_back(); }
  // Round `index`, adding empty rounds up to it: algorithms place steps by global round number.
  Round& round_at(size_t index) {
    while (rounds.size() <= index) new_round();
    return rounds[index];
  }
  static void send(Round& round, int peer, Chunk src);
  static void recv_reduce(Round& round, int peer, Chunk dst);
  static void recv_copy(Round& round, int peer, Chunk dst);
  static void reduce_local(Round& round, Chunk dst, Chunk src);
  static void copy_local(Round& round, Chunk dst, Chunk src);
};

// Whether two chunks share an element (of the same buffer).
inline bool overlaps(const Chunk& a, const Chunk& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

// A person-readable listing, one line per step, for --print-schedule.
std::string to_string(const Schedule& schedule);

// Element range of block `block` of `blocks` nearly equal blocks of `count` elements (the first
// count % blocks blocks are one longer).
Chunk block_of(size_t count, int blocks, int block);

}  // namespace sb
