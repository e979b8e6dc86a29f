#pragma once

#include <boost/asio/ip/address.hpp>
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

// The source group a client counts in wherever clients are limited per
// source: an IPv4 address alone ("192.0.2.7"; an IPv4-mapped IPv6 address as
// its IPv4 address), an IPv6 address by its /64 ("2001:db8:1:2::/64", with
// its scope when it has one), since one IPv6 host can use any address of its
// subnet.
std::string source_group(const boost::asio::ip::address& address);

}  // namespace rdma_exporter
