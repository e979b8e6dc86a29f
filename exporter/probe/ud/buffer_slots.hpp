#pragma once

#include <cstddef>
#include <cstdint>

// Where a UD port's slots lie in its one registered buffer: first the
// receive slots, each a GRH (which every UD receive starts with, filled or
// not) and a datagram of the largest size; then the send slots, each a
// datagram of the largest size. Every address of a slot is computed here.
namespace rdma_exporter::probe {

class UdBufferSlots {
 public:
  // The Global Routing Header in front of each received datagram.
  static constexpr std::size_t kGrhSize = 40;

  constexpr UdBufferSlots(uint32_t max_size, uint32_t recv_depth, uint32_t send_depth)
      : max_size_(max_size), recv_depth_(recv_depth), send_depth_(send_depth) {}

  uint32_t max_size() const { return max_size_; }
  uint32_t recv_depth() const { return recv_depth_; }
  uint32_t send_depth() const { return send_depth_; }

  // One receive slot: the GRH and the largest datagram.
  constexpr std::size_t recv_slot_size() const { return kGrhSize + max_size_; }
  constexpr std::size_t recv_offset(uint32_t slot) const { return slot * recv_slot_size(); }
  // One send slot: the largest datagram.
  constexpr std::size_t send_offset(uint32_t slot) const {
    return recv_depth_ * recv_slot_size() + std::size_t{slot} * max_size_;
  }
  // The whole buffer.
  constexpr std::size_t size() const { return send_offset(send_depth_); }

 private:
  uint32_t max_size_;
  uint32_t recv_depth_;
  uint32_t send_depth_;
};

}  // namespace rdma_exporter::probe
