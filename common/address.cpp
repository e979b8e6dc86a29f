#include "common/address.hpp"

#include <algorithm>
#include <boost/asio/ip/v6_only.hpp>
#include <charconv>
#include <vector>

namespace rdma_exporter {

using boost::asio::ip::tcp;

bool parse_listen_address(const std::string& text, ListenAddress& out) {
  std::string host;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    host = text.substr(0, colon);
    if (host.find(':') != std::string::npos) return false;  // IPv6 needs brackets
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || value > 65535) {
    return false;
  }
  out.host = host;
  out.port = static_cast<unsigned short>(value);
  return true;
}

Status open_listener(tcp::acceptor& acceptor, const std::string& address) {
  ListenAddress addr;
  const std::string& listen = address;
  if (!parse_listen_address(listen, addr)) {
    return Error{EINVAL, "invalid listen address \"" + listen + "\""};
  }
  std::vector<tcp::endpoint> candidates;
  if (addr.host.empty()) {
    candidates = {tcp::endpoint(tcp::v6(), addr.port), tcp::endpoint(tcp::v4(), addr.port)};
  } else {
    boost::system::error_code ec;
    tcp::resolver resolver(acceptor.get_executor());
    auto results = resolver.resolve(addr.host, std::to_string(addr.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec) return Error{ec.value(), "resolve " + listen + ": " + ec.message()};
    for (const auto& r : results) candidates.push_back(r.endpoint());
  }
  boost::system::error_code ec;
  for (const auto& ep : candidates) {
    acceptor.close(ec);
    ec.clear();
    acceptor.open(ep.protocol(), ec);
    if (ec) continue;
    acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (ep.protocol() == tcp::v6() && addr.host.empty()) {
      acceptor.set_option(boost::asio::ip::v6_only(false), ec);
    }
    ec.clear();
    acceptor.bind(ep, ec);
    if (ec) continue;
    acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec) continue;
    return ok_status();
  }
  return Error{ec.value(), "listen on " + listen + ": " + ec.message()};
}

std::string source_group(const boost::asio::ip::address& address) {
  namespace ip = boost::asio::ip;
  if (address.is_v4()) return address.to_v4().to_string();
  const ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6).to_string();
  ip::address_v6::bytes_type bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return ip::address_v6(bytes, v6.scope_id()).to_string() + "/64";
}

}  // namespace rdma_exporter
