#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>

namespace rdma_exporter::testing {

// "127.0.0.1:<port>" for a port nothing listens on (bound, then closed).
inline std::string closed_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const unsigned short port = a.local_endpoint().port();
  a.close();
  return "127.0.0.1:" + std::to_string(port);
}

}  // namespace rdma_exporter::testing
