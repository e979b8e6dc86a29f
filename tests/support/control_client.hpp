#pragma once

// A blocking client of the probe's control protocol, for tests that talk to
// a responder (or play one) over a real socket.

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::testing {

namespace wire = probe::wire;

// Reads one message; nullopt at EOF, on an error or a malformed message.
inline std::optional<wire::Message> read_message(boost::asio::ip::tcp::socket& s) {
  std::array<uint8_t, wire::kHeaderSize> header{};
  boost::system::error_code ec;
  boost::asio::read(s, boost::asio::buffer(header), ec);
  if (ec) return std::nullopt;
  auto h = wire::decode_header(header);
  if (!h) return std::nullopt;
  std::vector<uint8_t> payload(h->length);
  boost::asio::read(s, boost::asio::buffer(payload), ec);
  if (ec) return std::nullopt;
  auto m = wire::decode_payload(h->type, payload);
  if (!m) return std::nullopt;
  return m.value();
}

// Whether the peer closed the connection (the next read finds its end).
inline bool closed_by_peer(boost::asio::ip::tcp::socket& s) {
  std::array<uint8_t, 1> b{};
  boost::system::error_code ec;
  boost::asio::read(s, boost::asio::buffer(b), ec);
  return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
}

inline bool is_hello(const std::optional<wire::Message>& m) {
  return m && std::holds_alternative<wire::Hello>(*m);
}

}  // namespace rdma_exporter::testing
