// SPDX-License-Identifier: Apache-2.0
// rendezvous: where one step's _send and _recv meet (TensorFlow's IntraProcessRendezvous), one per
// step. A producer's partition sends a tensor under a key; the consumer's partition receives it
// asynchronously: recv_async never blocks, and its callback runs when the tensor is there (on the
// sending thread, or at once when it already is).
//   key: "src_device;src_incarnation;dst_device;tensor_name;frame:iter", TensorFlow's, made by
//        rendezvous_key(); the partitioner gives each (tensor, destination device) one key.
//   slots: the keys a step will use are known when its partitions are made, so the rendezvous is
//        built with them and send/recv address a slot by index (no string hashing per transfer);
//        send(key)/recv_async(key) look the key up first and work for any key, known or not.
//   abort(status): every pending and later receive ends with that status, and so do later sends:
//        how an error in one partition ends the others' waits (no hang, no leak).
// Each key carries one tensor per step: a second send under it is an error.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

// "/job:localhost/replica:0/task:0/device:CPU:0;0123456789abcdef;/job:.../device:CPU:1;h1:0;0:0"
inline std::string rendezvous_key(std::string_view src_device, std::uint64_t src_incarnation, std::string_view dst_device,
                                  std::string_view tensor_name, std::uint64_t frame = 0, std::uint64_t iter = 0) {
  char hex[17];
  for (int i = 15; i >= 0; --i) {
    hex[i] = "0123456789abcdef"[src_incarnation & 0xf];
    src_incarnation >>= 4;
  }
  hex[16] = '\0';
  return detail::cat(src_device, ";", std::string_view(hex, 16), ";", dst_device, ";", tensor_name, ";", frame, ":", iter).str();
}

// The keys of one kind of step, by slot: made once (per executor signature), shared by its steps.
class rendezvous_keys {
 public:
  // The slot of `key`, added when new.
  std::uint32_t add(std::string key) {
    auto [it, added] = index_.emplace(key, static_cast<std::uint32_t>(keys_.size()));
    if (added) keys_.push_back(std::move(key));
    return it->second;
  }
  std::optional<std::uint32_t> find(std::string_view key) const {
    auto it = index_.find(std::string(key));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  std::size_t size() const noexcept { return keys_.size(); }
  const std::string& operator[](std::size_t slot) const { return keys_[slot]; }

 private:
  std::vector<std::string> keys_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

class rendezvous {
 public:
  // What a receive calls once: the status, and the tensor when it is ok.
  using recv_done = std::function<void(status, tensor)>;

  // A rendezvous whose slots are `keys` (may be null: every key is then looked up when used).
  explicit rendezvous(std::shared_ptr<const rendezvous_keys> keys = nullptr)
      : keys_(std::move(keys)), slots_(keys_ ? keys_->size() : 0) {}
  rendezvous(const rendezvous&) = delete;
  rendezvous& operator=(const rendezvous&) = delete;

  // Gives `t` to the receive of slot `slot`, now or when it comes.
  status send(std::uint32_t slot, tensor t) {
    std::unique_lock lock(mutex_);
    if (!aborted_.ok()) return aborted_;
    slot_state& s = slots_.at(slot);
    if (s.sent) return errors::internal("rendezvous: key '", key_of(slot), "' was sent twice in one step");
    s.sent = true;
    if (!s.waiter) {
      s.value = std::move(t);
      return ok_status();
    }
    recv_done done = std::move(s.waiter);
    s.waiter = nullptr;
    lock.unlock();
    done(ok_status(), std::move(t));
    return ok_status();
  }

  // Calls done(ok, tensor) once the tensor of slot `slot` is sent (at once when it was), or
  // done(status, {}) when the rendezvous is aborted first.
  void recv_async(std::uint32_t slot, recv_done done) {
    std::unique_lock lock(mutex_);
    if (!aborted_.ok()) {
      status st = aborted_;
      lock.unlock();
      return done(std::move(st), tensor());
    }
    slot_state& s = slots_.at(slot);
    if (s.received) {
      lock.unlock();
      return done(errors::internal("rendezvous: key '", key_of(slot), "' was received twice in one step"), tensor());
    }
    s.received = true;
    if (!s.sent) {
      s.waiter = std::move(done);
      return;
    }
    tensor t = std::move(s.value);
    s.value = tensor();
    lock.unlock();
    done(ok_status(), std::move(t));
  }

  // The same by key; a key that is not among the slots gets a slot of its own.
  status send(std::string_view key, tensor t) { return send(slot_for(key), std::move(t)); }
  void recv_async(std::string_view key, recv_done done) { recv_async(slot_for(key), std::move(done)); }

  // Ends every pending receive with `st` (an error), and refuses every later send and receive.
  // The first abort's status stays.
  void abort(status st) {
    std::vector<recv_done> waiting;
    {
      std::lock_guard lock(mutex_);
      if (!aborted_.ok()) return;
      aborted_ = st.ok() ? errors::aborted("the step's rendezvous was aborted") : std::move(st);
      for (slot_state& s : slots_) {
        if (s.waiter) waiting.push_back(std::move(s.waiter));
        s.waiter = nullptr;
        s.value = tensor();  // sent and never received: released now
      }
      st = aborted_;
    }
    for (recv_done& done : waiting) done(st, tensor());
  }

  // Receives still waiting for their tensor, and tensors sent and not yet received (0 when a step
  // ended cleanly).
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const slot_state& s : slots_) n += (s.waiter != nullptr) + (s.sent && !s.received && s.value.valid() && aborted_.ok());
    return n;
  }
  status aborted_status() const {
    std::lock_guard lock(mutex_);
    return aborted_;
  }

 private:
  struct slot_state {
    tensor value;
    recv_done waiter;
    bool sent = false;
    bool received = false;
  };

  std::uint32_t slot_for(std::string_view key) {
    if (keys_)
      if (auto slot = keys_->find(key)) return *slot;
    std::lock_guard lock(mutex_);
    auto [it, added] = extra_.emplace(std::string(key), static_cast<std::uint32_t>(slots_.size()));
    if (added) slots_.emplace_back();
    return it->second;
  }
  std::string key_of(std::uint32_t slot) const {
    if (keys_ && slot < keys_->size()) return (*keys_)[slot];
    for (const auto& [k, v] : extra_)
      if (v == slot) return k;
    return "?";
  }

  std::shared_ptr<const rendezvous_keys> keys_;
  mutable std::mutex mutex_;
  std::deque<slot_state> slots_;  // a deque: slots added for new keys leave the others in place
  std::unordered_map<std::string, std::uint32_t> extra_;
  status aborted_;
};

}  // namespace typeflow
