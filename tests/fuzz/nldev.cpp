// Fuzz harness: netlink message walking and every rdma netlink (nldev)
// decoder. The input is one reply (fuzz_input.hpp); each decoder reads it as
// the answer to its own request, so a message type the fuzzer sets reaches
// the decoder of that command.

#include <cstddef>
#include <cstdint>

#include "common/kernel/netlink/messages.hpp"
#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "common/kernel/nldev/optional_counter_codec.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const netlink::Reply reply = fuzz::reply_from(fuzz::bytes_of(data, size));
  for (const auto& datagram : reply.datagrams) (void)netlink::ends_exchange(datagram);

  (void)nldev::decode_devices(reply);
  (void)nldev::decode_ports(reply);
  (void)nldev::decode_port_counters(reply);
  (void)nldev::decode_resource_summaries(reply);
  (void)nldev::decode_counter_mode(reply);
  (void)nldev::decode_counter_sets(reply);
  (void)nldev::decode_set_auto_mode(reply);
  (void)nldev::decode_bind_qp(reply);
  (void)nldev::decode_unbind_qp(reply);
  (void)nldev::decode_counter_status(reply);
  (void)nldev::decode_set_optional_counters(reply);
  if (auto mode = nldev::decode_counter_mode(reply)) {
    (void)nldev::counter_mode_name(mode->mode);
    (void)nldev::auto_mask_name(mode->auto_mask);
  }
  if (auto qps = nldev::decode_qps(reply)) {
    for (const auto& qp : *qps) {
      (void)nldev::qp_type_name(qp.type);
      (void)nldev::qp_state_name(qp.state);
    }
  }
  return 0;
}
