#pragma once
// Values built on first use and kept by key, at most `capacity` of them: past it, the one used
// least recently is dropped (and built again if asked for again). The oneDNN backend keeps its
// primitives in one, keyed by op and shape (onednn_backend.hpp says why they need the bound).
#include <cstddef>
#include <list>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace sb::models {

class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("an LRU cache needs room for one value");
  }

  // The value under `key`, built by make() (which returns a std::shared_ptr<T>) when absent. The
  // reference stays valid until `capacity` other keys have been asked for.
  template <class T, class Make>
  T& get(const std::string& key, Make&& make) {
    auto found = index_.find(key);
    if (found != index_.end()) {
      entries_.splice(entries_.begin(), entries_, found->second);  // now the most recently used
      return *static_cast<T*>(found->second->second.get());
    }
    std::shared_ptr<void> value = std::static_pointer_cast<void>(make());
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
    if (entries_.size() > capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
      ++evictions_;
    }
    return *static_cast<T*>(entries_.front().second.get());
  }

  size_t size() const { return entries_.size(); }
  size_t evictions() const { return evictions_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<void>>;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t evictions_ = 0;
};

}  // namespace sb::models
