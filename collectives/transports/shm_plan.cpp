#include "collectives/transports/shm_plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace sb {
namespace {

// The ranges of the working buffer written so far, as disjoint [begin, end) intervals.
class WrittenRanges {
 public:
  struct Piece {
    size_t offset, count;
    bool written;
  };

  void mark(size_t begin, size_t end) {
    if (begin >= end) return;
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
    while (it != ranges_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

  // [offset, offset + count) cut where it goes from written to unwritten and back.
  std::vector<Piece> split(size_t offset, size_t count) const {
    std::vector<Piece> pieces;
    const size_t end = offset + count;
    size_t at = offset;
    auto it = ranges_.upper_bound(offset);
    if (it != ranges_.begin() && std::prev(it)->second > offset) --it;
    for (; it != ranges_.end() && it->first < end && at < end; ++it) {
      if (it->first > at) pieces.push_back({at, it->first - at, false});
      const size_t stop = std::min(end, it->second);
      if (stop > std::max(at, it->first)) pieces.push_back({std::max(at, it->first), stop - std::max(at, it->first), true});
      at = std::max(at, stop);
    }
    if (at < end) pieces.push_back({at, end - at, false});
    return pieces;
  }

 private:
  std::map<size_t, size_t> ranges_;
};

// Fills whatever of `chunk` is unwritten, so that the rank can read or send it from work.
void fill_unwritten(WrittenRanges& written, const Chunk& chunk, std::vector<Chunk>& fill) {
  for (const auto& piece : written.split(chunk.offset, chunk.count))
    if (!piece.written) fill.push_back({BufferId::work, piece.offset, piece.count});
  written.mark(chunk.offset, chunk.offset + chunk.count);
}

}  // namespace

ShmPlan plan_shm(const Schedule& schedule, bool in_place, const std::function<bool(int)>& on_node,
                 size_t outbox_elements) {
  // The outbox serves only a schedule whose on-node sends all fit: then no rank ever waits for its
  // readers, which is the point; a half-served schedule would still wait.
  size_t on_node_sent = 0;
  for (const Round& round : schedule.rounds)
    for (const Step& step : round.steps)
      if (step.kind == StepKind::send && on_node(step.peer)) on_node_sent += step.src.count;
  const bool use_outbox = on_node_sent > 0 && on_node_sent <= outbox_elements;
  size_t outbox_used = 0;
  ShmPlan plan;
  plan.in_place = in_place;
  WrittenRanges written;
  if (in_place) written.mark(0, schedule.count);
  std::map<int, size_t> input_last_round;

  for (size_t index = 0; index < schedule.rounds.size(); ++index) {
    const Round& round = schedule.rounds[index];
    ShmRound& out = plan.rounds.emplace_back();

    for (const Step& step : round.steps) {
      if (step.kind != StepKind::reduce_local && step.kind != StepKind::copy_local) continue;
      fill_unwritten(written, step.src, out.fill);
      fill_unwritten(written, step.dst, out.fill);
      out.locals.push_back(step);
    }

    std::map<int, int> sends_to;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::send) continue;
      const auto pieces = written.split(step.src.offset, step.src.count);
      const bool untouched = std::none_of(pieces.begin(), pieces.end(), [](const auto& p) { return p.written; });
      ShmSource source = ShmSource::input;
      if (!untouched) {  // written, or partly: send from work, filling the rest first
        fill_unwritten(written, step.src, out.fill);
        source = ShmSource::work;
      }
      const bool on = on_node(step.peer);
      ShmSend send{step.peer, on, sends_to[step.peer]++, source, step.src.offset, step.src.count, source, 0};
      if (on && use_outbox) {
        send.source = ShmSource::outbox;
        send.outbox_offset = outbox_used;
        outbox_used += step.src.count;
      }
      out.sends.push_back(send);
      source = send.source;
      if (on && source == ShmSource::work &&
          std::find(out.work_readers.begin(), out.work_readers.end(), step.peer) == out.work_readers.end())
        out.work_readers.push_back(step.peer);
      if (on && source == ShmSource::input) input_last_round[step.peer] = index;
    }

    // A range this rank also sends from work this round is still being read (by peers, or by
    // MPI until the round's wait): what is received into it waits in staging.
    auto sent_from_work = [&](const Chunk& chunk) {
      return std::any_of(out.sends.begin(), out.sends.end(), [&](const ShmSend& send) {
        return send.source == ShmSource::work && overlaps(Chunk{BufferId::work, send.offset, send.count}, chunk);
      });
    };
    std::vector<std::pair<ShmReceive, const Step*>> direct, staged;
    std::map<int, int> receives_from;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
      ShmReceive receive{step.peer, on_node(step.peer), false, step.dst.count, receives_from[step.peer]++, {}};
      receive.staged = !receive.on_node || sent_from_work(step.dst);
      (receive.staged ? staged : direct).emplace_back(std::move(receive), &step);
    }
    // Pieces are worked out in the order the transport applies them.
    for (auto* list : {&direct, &staged}) {
      for (auto& [receive, step] : *list) {
        const Chunk& dst = step->dst;
        if (step->kind == StepKind::recv_copy) {
          receive.pieces.push_back({dst.offset, 0, dst.count, ShmApply::copy});
        } else {
          for (const auto& piece : written.split(dst.offset, dst.count))
            receive.pieces.push_back({piece.offset, piece.offset - dst.offset, piece.count,
                                      piece.written ? ShmApply::reduce_into : ShmApply::reduce_input});
        }
        written.mark(dst.offset, dst.offset + dst.count);
        out.receives.push_back(std::move(receive));
      }
    }
  }

  for (const auto& piece : written.split(0, schedule.count))
    if (!piece.written) plan.final_fill.push_back({BufferId::work, piece.offset, piece.count});
  plan.input_readers.assign(input_last_round.begin(), input_last_round.end());
  return plan;
}

std::vector<ShmSendRecord> shm_send_records(const ShmPlan& plan) {
  std::vector<ShmSendRecord> records;
  for (size_t index = 0; index < plan.rounds.size(); ++index)
    for (const ShmSend& send : plan.rounds[index].sends)
      if (send.on_node)
        records.push_back({static_cast<int64_t>(index), send.peer, send.nth, static_cast<int64_t>(send.source),
                           static_cast<int64_t>(send.source == ShmSource::outbox ? send.outbox_offset : send.offset)});
  return records;
}

bool resolve_shm_sources(ShmPlan& plan, int rank, const std::vector<std::vector<ShmSendRecord>>& records_of) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, const ShmSendRecord*> to_me;  // (round, from, nth)
  for (size_t from = 0; from < records_of.size(); ++from)
    for (const ShmSendRecord& record : records_of[from])
      if (record.to == rank) to_me[{record.round, static_cast<int64_t>(from), record.nth}] = &record;
  for (size_t index = 0; index < plan.rounds.size(); ++index) {
    for (ShmReceive& receive : plan.rounds[index].receives) {
      if (!receive.on_node) continue;
      const auto it = to_me.find({static_cast<int64_t>(index), receive.peer, receive.nth});
      if (it == to_me.end()) return false;
      receive.source = static_cast<ShmSource>(it->second->source);
      receive.peer_offset = static_cast<size_t>(it->second->offset);
    }
  }
  return true;
}

}  // namespace sb
