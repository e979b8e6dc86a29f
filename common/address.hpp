#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "common/result.hpp"

namespace rdma_exporter {

struct ListenAddress {
  std::string host;  // empty: all addresses
  unsigned short port = 0;
};
// "host:port", ":port", "[v6]:port"; false when malformed.
bool parse_listen_address(const std::string& text, ListenAddress& out);

// Opens, binds and listens on `address` ("host:port", ":port" for every
// address, IPv6 and IPv4). The error names the address.
Status open_listener(boost::asio::ip::tcp::acceptor& acceptor, const std::string& address);

}  // namespace rdma_exporter
