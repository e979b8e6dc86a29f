// Fuzz harness: the probe's control protocol. The input is one message as it
// arrives on the control connection. Whatever wire::decode accepts must
// survive a round trip: encode(decode(x)) decodes to an equal message, and
// the header and payload decoders agree with the whole-message decoder.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <variant>

#include "exporter/probe/wire/protocol.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter::probe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = rdma_exporter::fuzz::bytes_of(data, size);
  if (auto header = wire::decode_header(bytes)) {
    const auto payload = bytes.subspan(std::min(bytes.size(), wire::kHeaderSize));
    (void)wire::decode_payload(
        header->type, payload.first(std::min<std::size_t>(payload.size(), header->length)));
  }
  auto message = wire::decode(bytes);
  if (!message) return 0;

  const auto encoded = wire::encode(*message);
  auto again = wire::decode(encoded);
  if (!again) std::abort();              // an accepted message encodes to one that is refused
  if (*again != *message) std::abort();  // or to a different message
  if (const auto* setup = std::get_if<wire::Setup>(&*message)) (void)wire::mac_input(*setup);
  if (const auto* setup = std::get_if<wire::UdSetup>(&*message)) (void)wire::mac_input(*setup);
  if (const auto* reject = std::get_if<wire::Reject>(&*message)) {
    (void)wire::reject_code_name(reject->code);
  }
  return 0;
}
