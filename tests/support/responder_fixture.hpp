#pragma once

// A probe responder without an RDMA device on 127.0.0.1, its event loop on
// a thread of its own, and blocking clients from any loopback address.

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <thread>

#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::testing {

class ResponderFixture : public ::testing::Test {
 protected:
  using tcp = boost::asio::ip::tcp;

  void start(probe::ResponderSettings settings) {
    settings.listen_address = "127.0.0.1:0";
    responder_ = std::make_unique<probe::Responder>(io_, settings, stats_);
    ASSERT_TRUE(responder_->start());
    port_ = responder_->port();
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (responder_) boost::asio::post(io_, [this] { responder_->stop(); });
    work_.reset();
    if (thread_.joinable()) thread_.join();
  }

  // A connection from `source` (an address of 127/8).
  tcp::socket connect(const std::string& source = "127.0.0.1") {
    tcp::socket s(client_io_);
    s.open(tcp::v4());
    s.bind(tcp::endpoint(boost::asio::ip::make_address(source), 0));
    s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_));
    return s;
  }

  // rdma_probe_responder_rejected_total{reason=why}, 0 when absent.
  double rejected(const std::string& why) const {
    const double v =
        sample(metrics_of(*stats_), "rdma_probe_responder_rejected_total", {{"reason", why}});
    return std::isnan(v) ? 0 : v;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  boost::asio::io_context client_io_;
  std::shared_ptr<probe::ProbeStats> stats_ = std::make_shared<probe::ProbeStats>();
  std::unique_ptr<probe::Responder> responder_;
  unsigned short port_ = 0;
  std::thread thread_;
};

}  // namespace rdma_exporter::testing
