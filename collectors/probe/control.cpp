#include "collectors/probe/control.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace rdma_exporter::probe {

bool is_protocol_error(const Error& e) {
  return e.code == EPROTO || e.code == EPROTONOSUPPORT;
}

Error network_error(const boost::system::error_code& ec, const std::string& what) {
  if (ec == boost::asio::error::eof) return Error{ECONNRESET, what + ": connection closed by peer"};
  if (ec == boost::asio::error::operation_aborted) return Error{ECANCELED, what + ": cancelled"};
  if (ec.category() == boost::system::system_category()) return Error::system(ec.value(), what);
  return Error{EIO, what + ": " + ec.message()};
}

void ControlChannel::read(std::function<void(Result<wire::Message>)> handler) {
  boost::asio::async_read(
      socket_, boost::asio::buffer(header_),
      [this, self = shared_from_this(), handler = std::move(handler)](
          const boost::system::error_code& ec, std::size_t) {
        if (ec) return handler(network_error(ec, "control connection"));
        auto header = wire::decode_header(header_);
        if (!header) return handler(header.error());
        payload_.assign(header->length, 0);
        const wire::Type type = header->type;
        boost::asio::async_read(
            socket_, boost::asio::buffer(payload_),
            [this, self, type, handler](const boost::system::error_code& ec2, std::size_t) {
              if (ec2) return handler(network_error(ec2, "control connection"));
              handler(wire::decode_payload(type, payload_));
            });
      });
}

void ControlChannel::write(const wire::Message& message, std::function<void(Status)> handler) {
  out_ = wire::encode(message);
  boost::asio::async_write(socket_, boost::asio::buffer(out_),
                           [self = shared_from_this(), handler = std::move(handler)](
                               const boost::system::error_code& ec, std::size_t) {
                             if (ec) return handler(network_error(ec, "control connection"));
                             handler(ok_status());
                           });
}

void ControlChannel::close() {
  boost::system::error_code ignored;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace rdma_exporter::probe
