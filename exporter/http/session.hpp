#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "exporter/http/server_state.hpp"
#include "exporter/http/web_security.hpp"

namespace rdma_exporter {

// Serves an accepted connection until it ends: plain HTTP, or TLS when
// `security` has a context. The session registers itself in
// `state->sessions`, holds a slot for `source` (HttpServerState::slots) until
// it is evicted or torn down, and keeps `security` (users, headers, TLS) for
// its whole life.
void start_session(const std::shared_ptr<HttpServerState>& state,
                   std::shared_ptr<const WebSecurity> security, boost::asio::ip::tcp::socket socket,
                   const boost::asio::ip::address& source);

}  // namespace rdma_exporter
