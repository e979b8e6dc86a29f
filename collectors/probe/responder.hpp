#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectors/probe/local_port.hpp"
#include "collectors/probe/stats.hpp"
#include "collectors/probe/verbs_endpoint.hpp"
#include "common/result.hpp"

namespace rdma_exporter::probe {

struct ResponderSettings {
  std::string listen_address = ":10911";
  int max_sessions = 256;
  int max_sessions_per_source = 32;
  int setups_per_minute_per_source = 120;
  uint32_t max_message_size = 1 << 20;
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds handshake_timeout{5000};
  std::string secret;  // empty: peers need not authenticate
  std::string memory = "host";
  int gid_index = -1;  // -1: each port's default GID
};

// Answers probers on every local port the probe uses: accepts control
// connections on one TCP port, lists the local ports in its hello, sets up
// one RC queue pair per session on the port the set-up names, echoes sends, and leaves one-sided
// writes and reads to the hardware. What a peer can make it allocate is bounded: sessions in all
// and per source address, set-ups per minute per source, and message size.
class Responder {
 public:
  Responder(boost::asio::io_context& io, ResponderSettings settings,
            std::shared_ptr<ProbeStats> stats);
  ~Responder();

  Status start();
  void stop();
  // The ports sessions are made on. Sessions on a device that is no longer
  // among them are closed at once, so the device can be released. Until
  // there is a port, set-ups are refused with "resources".
  void set_ports(std::vector<LocalPort> ports);
  unsigned short port() const;
  std::size_t sessions() const { return sessions_.size(); }

 private:
  class Session;
  struct Source {
    int sessions = 0;
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
  };

  void accept();
  void admit(boost::asio::ip::tcp::socket socket);
  void refuse(boost::asio::ip::tcp::socket socket, wire::RejectCode code, const char* why);
  void closed(const std::shared_ptr<Session>& session, bool idle);

  boost::asio::io_context& io_;
  const ResponderSettings settings_;
  std::shared_ptr<ProbeStats> stats_;
  std::vector<LocalPort> ports_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::map<std::string, Source> sources_;
  bool stopped_ = false;
};

}  // namespace rdma_exporter::probe
