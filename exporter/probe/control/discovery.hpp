#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/backoff.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

struct DiscoverySettings {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds interval{30000};  // between answers
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
};

// Asks a target, over and over, which ports it answers on: connects to its
// control port, reads the hello (which lists them) and leaves. Targets are
// hosts; this is how a host's NICs are found. After an answer it asks again
// `interval` later; after a failure, after a backoff with jitter.
class Discovery : public std::enable_shared_from_this<Discovery> {
 public:
  // `ports` gets each answer; `failed` each failure, with a reason of
  // rdma_probe_errors_total (refused, unreachable, connect_timeout,
  // protocol, disconnected) and a detail.
  struct Handlers {
    std::function<void(std::vector<wire::PortAd>)> ports;
    std::function<void(const char* reason, const std::string& detail)> failed;
  };

  Discovery(boost::asio::io_context& io, std::string address, DiscoverySettings settings,
            Handlers handlers);

  void start();
  void stop();

 private:
  void attempt();
  void done();
  void failed(const char* why, const std::string& detail);
  void again(std::chrono::milliseconds after);

  boost::asio::io_context& io_;
  const std::string address_;
  const DiscoverySettings settings_;
  const Handlers handlers_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer deadline_;
  std::shared_ptr<ControlChannel> control_;
  uint64_t generation_ = 0;
  bool stopped_ = false;
  Backoff backoff_;
};

}  // namespace rdma_exporter::probe
