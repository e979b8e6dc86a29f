#include "exporter/probe/control/discovery.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>

#include "common/address.hpp"
#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::probe {

Discovery::Discovery(boost::asio::io_context& io, std::string address, DiscoverySettings settings,
                     Handlers handlers)
    : io_(io),
      address_(std::move(address)),
      settings_(settings),
      handlers_(std::move(handlers)),
      resolver_(io),
      timer_(io),
      deadline_(io),
      backoff_({settings.backoff_initial, settings.backoff_max}) {}

void Discovery::start() {
  attempt();
}

void Discovery::stop() {
  stopped_ = true;
  ++generation_;
  timer_.cancel();
  deadline_.cancel();
  resolver_.cancel();
  if (control_) control_->close();
  control_.reset();
}

void Discovery::attempt() {
  const uint64_t gen = ++generation_;
  auto self = shared_from_this();
  auto live = [self, gen] { return !self->stopped_ && gen == self->generation_; };
  ListenAddress target;
  if (!parse_listen_address(address_, target) || target.host.empty()) {
    return failed(reason::unreachable, "target address is not host:port");
  }
  deadline_.expires_after(settings_.connect_timeout);
  deadline_.async_wait([this, live](const boost::system::error_code& ec) {
    if (!ec && live()) failed(reason::connect_timeout, "no hello within the connect timeout");
  });
  resolver_.async_resolve(
      target.host, std::to_string(target.port),
      [this, live](const boost::system::error_code& ec,
                   const boost::asio::ip::tcp::resolver::results_type& results) {
        if (!live()) return;
        if (ec) return failed(reason::unreachable, "resolving: " + ec.message());
        control_ = std::make_shared<ControlChannel>(boost::asio::ip::tcp::socket(io_));
        boost::asio::async_connect(
            control_->socket(), results,
            [this, live, channel = control_](const boost::system::error_code& cec, const auto&) {
              if (!live()) return;
              if (cec) {
                const char* why = cec == boost::asio::error::connection_refused ? reason::refused
                                  : cec == boost::asio::error::timed_out ? reason::connect_timeout
                                                                         : reason::unreachable;
                return failed(why, "connecting: " + cec.message());
              }
              channel->read([this, live](Result<wire::Message> m) {
                if (!live()) return;
                if (!m) {
                  return failed(
                      is_protocol_error(m.error()) ? reason::protocol : reason::disconnected,
                      m.error().message);
                }
                const auto* hello = std::get_if<wire::Hello>(&m.value());
                if (hello == nullptr) {
                  // A responder that refuses the connection (capacity, rate)
                  // says so instead of a hello.
                  if (const auto* r = std::get_if<wire::Reject>(&m.value())) {
                    return failed(reason::rejected, r->reason);
                  }
                  return failed(reason::protocol, "expected a hello");
                }
                auto ports = hello->ports;
                done();
                handlers_.ports(std::move(ports));
              });
            });
      });
}

void Discovery::done() {
  backoff_.succeeded();
  again(settings_.interval);
}

void Discovery::failed(const char* why, const std::string& detail) {
  again(backoff_.failed());
  handlers_.failed(why, detail);
}

void Discovery::again(std::chrono::milliseconds after) {
  ++generation_;
  deadline_.cancel();
  resolver_.cancel();
  if (control_) control_->close();
  control_.reset();
  if (stopped_) return;
  const uint64_t gen = generation_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), gen](const boost::system::error_code& ec) {
    if (!ec && !self->stopped_ && gen == self->generation_) self->attempt();
  });
}

}  // namespace rdma_exporter::probe
