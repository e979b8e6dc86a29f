// Fuzz harness: what a port's UD queue pair receives. The input is one
// receive buffer: the 40 bytes of GRH (or unused bytes and an IPv4 header)
// the device writes first, then the datagram. Whatever decode_datagram
// accepts must survive a round trip through encode_datagram.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "exporter/probe/ud/port.hpp"
#include "exporter/probe/wire/datagram.hpp"
#include "exporter/probe/wire/protocol.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter::probe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = rdma_exporter::fuzz::bytes_of(data, size);
  if (bytes.size() < 40) return 0;
  (void)grh_source_gid(std::span<const uint8_t, 40>(bytes.data(), 40));
  const auto payload = bytes.subspan(40);
  auto datagram = wire::decode_datagram(payload);
  if (!datagram) return 0;
  std::vector<uint8_t> out(payload.begin(), payload.end());
  wire::encode_datagram(*datagram, out);
  auto again = wire::decode_datagram(out);
  if (!again) std::abort();               // an accepted datagram encodes to one that is refused
  if (*again != *datagram) std::abort();  // or to another datagram
  return 0;
}
