#pragma once
// What the shm transport does in each round of one rank's schedule, worked out once per schedule
// and kept: which chunks peers read from this rank's input and which from its working buffer,
// which receives must wait in staging, and how each received piece lands.
//
// Out of place, the working buffer is filled lazily instead of by a copy of the whole input
// first: a range that was never written is still the rank's input, so a peer reads it straight
// from the input buffer, a reduction into it reads the input as its other operand
// (work = input op received), and a copy into it needs no fill at all. Only what is still
// unwritten at the end is copied. For the ring on two ranks that saves the read and the write of
// the whole buffer: a third of the memory traffic.
//
// Small sends go through an outbox instead: the sender copies the chunk into its own slot of a
// shared outbox before the round and never waits for its readers, which takes a round trip off
// every round of a small allreduce. Outboxes alternate between two halves from call to call.
// That is safe without waiting because every rank's result depends on every rank's input: a
// rank that has finished call k+1 knows that every peer has started k+1, so has finished reading
// what it was sent in call k, and the half used in call k may be written again in call k+2.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/schedule.hpp"

namespace sb {

// Where a sent chunk is read from by its receiver: the sender's input, working buffer or outbox.
enum class ShmSource : uint8_t { input, work, outbox };

// How a received piece lands in the working buffer.
enum class ShmApply : uint8_t {
  copy,          // work = received
  reduce_into,   // work = work op received
  reduce_input,  // work = input op received: the range was never written
};

struct ShmPiece {
  size_t offset;  // in the working buffer
  size_t from;    // elements from the start of the received chunk
  size_t count;
  ShmApply apply;
};

struct ShmReceive {
  int peer;
  bool on_node;  // read from the peer's memory; otherwise an MPI message
  bool staged;   // read into staging and applied once the round's readers are done
  size_t count;
  int nth;  // among this round's receives from this peer (matches the peer's nth send to us)
  std::vector<ShmPiece> pieces;
  // Where the peer holds the chunk; set by resolve_shm_sources for on-node receives.
  ShmSource source = ShmSource::work;
  size_t peer_offset = 0;
};

struct ShmSend {
  int peer;
  bool on_node;
  int nth;  // among this round's sends to this peer
  ShmSource source;  // outbox: copied there from `holder` before the round
  size_t offset, count;
  ShmSource holder;        // where the chunk is in this rank's buffers: input or work
  size_t outbox_offset;    // in elements, when source is outbox
};

struct ShmRound {
  std::vector<Chunk> fill;  // input -> work before the round: ranges sent or used locally while partly written
  std::vector<ShmSend> sends;
  std::vector<ShmReceive> receives;  // direct ones first, then staged and off-node: the order they apply in
  std::vector<int> work_readers;     // on-node peers that read this rank's working buffer this round
  std::vector<Step> locals;          // local steps, on ranges filled before the round
};

struct ShmPlan {
  bool in_place = true;
  std::vector<ShmRound> rounds;
  std::vector<Chunk> final_fill;  // never written: copied from the input at the end
  // On-node peers that read this rank's input, with the last round each reads in: the rank
  // waits for them before it returns, so that the caller may change its input afterwards.
  std::vector<std::pair<int, size_t>> input_readers;
};

// The plan for `schedule` (which must have no scratch). In place, the working buffer starts as
// the input and everything is read from it. `on_node(peer)` says whether a peer's memory is
// mapped here. On-node sends of at most `outbox_elements` in all go through the outbox (0: none).
ShmPlan plan_shm(const Schedule& schedule, bool in_place, const std::function<bool(int)>& on_node,
                 size_t outbox_elements = 0);

// What a rank tells the ranks of its node about its on-node sends, so that they know where to
// read: (round, to, nth) -> (source, offset).
struct ShmSendRecord {
  int64_t round, to, nth, source, offset;
};
std::vector<ShmSendRecord> shm_send_records(const ShmPlan& plan);
// Sets source and peer_offset of every on-node receive of `rank` from its peers' records
// (`records_of[peer]`); false when one has no matching record (schedules that disagree).
bool resolve_shm_sources(ShmPlan& plan, int rank, const std::vector<std::vector<ShmSendRecord>>& records_of);

}  // namespace sb
