#include "exporter/probe/wire/datagram.hpp"

#include <algorithm>
#include <string>

#include "exporter/probe/wire/bytes.hpp"

namespace rdma_exporter::probe::wire {

void encode_datagram(const Datagram& d, std::span<uint8_t> out) {
  Writer w;
  w.u8('R');
  w.u8('X');
  w.u8('U');
  w.u8(kDatagramVersion);
  w.u8(static_cast<uint8_t>(d.kind));
  w.u8(d.flags);
  w.u8(d.path);
  w.u8(d.tclass);
  w.u32(d.session);
  w.u64(d.seq);
  w.u64(d.responder_delay_ns);
  w.u32(0);
  const std::vector<uint8_t> bytes = w.take();
  std::copy_n(bytes.begin(), std::min(bytes.size(), out.size()), out.begin());
}

Result<Datagram> decode_datagram(std::span<const uint8_t> bytes) {
  if (bytes.size() < kDatagramSize) return protocol_error("datagram: truncated");
  if (bytes.size() > kMaxDatagramBytes) {
    return protocol_error("datagram: above " + std::to_string(kMaxDatagramBytes / 1024) + " KiB");
  }
  Reader r(bytes.first(kDatagramSize));
  if (r.u8() != 'R' || r.u8() != 'X' || r.u8() != 'U') {
    return protocol_error("datagram: bad magic");
  }
  if (const uint8_t v = r.u8(); v != kDatagramVersion) {
    return Error{EPROTONOSUPPORT, "datagram: version " + std::to_string(v)};
  }
  Datagram d;
  const uint8_t kind = r.u8();
  if (kind != static_cast<uint8_t>(DatagramKind::request) &&
      kind != static_cast<uint8_t>(DatagramKind::reply)) {
    return protocol_error("datagram: unknown kind " + std::to_string(kind));
  }
  d.kind = static_cast<DatagramKind>(kind);
  d.flags = r.u8();
  d.path = r.u8();
  d.tclass = r.u8();
  d.session = r.u32();
  d.seq = r.u64();
  d.responder_delay_ns = r.u64();
  if (r.u32() != 0) return protocol_error("datagram: reserved bytes are not zero");
  if ((d.flags & ~(kDelayDeviceClock | kResponderStalled)) != 0)
    return protocol_error("datagram: unknown flags");
  if (d.kind == DatagramKind::request && (d.flags != 0 || d.responder_delay_ns != 0)) {
    return protocol_error("datagram: a request carries a delay");
  }
  if (d.responder_delay_ns > kMaxResponderDelayNs) {
    return protocol_error("datagram: responder delay above " +
                          std::to_string(kMaxResponderDelayNs / 1'000'000'000) + " s");
  }
  return d;
}

}  // namespace rdma_exporter::probe::wire
