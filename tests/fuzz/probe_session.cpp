// Fuzz harness: sequences of control messages on one session, over a real
// loopback TCP connection. The first byte chooses the end under test, the
// rest is what its peer sends, message after message:
//   0: a responder without RDMA devices (bit 2 of the byte: with a secret);
//      it answers with a hello and at most one reject, then closes;
//   1: a session's keep-alive loop; every keep-alive is answered, and the
//      loop ends "closed" when the input ends on keep-alives (or inside a
//      message) and "protocol" when anything else comes first;
//   2: a prober's control client (a UD set-up, so no verbs); it takes an
//      accept only after a hello that lists its port, and never more than
//      one per connection.
// Every run ends with nothing held: sessions closed, handlers run.

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/client.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/wire/auth.hpp"

using namespace rdma_exporter::probe;
using boost::asio::ip::tcp;

namespace {

const auto kLoopback = boost::asio::ip::make_address("127.0.0.1");

// The messages in `bytes` as a peer would read them; stops at the first
// that does not decode. `rest` is whether bytes were left after them.
std::vector<wire::Message> messages_of(std::span<const uint8_t> bytes, bool* rest = nullptr) {
  std::vector<wire::Message> out;
  while (bytes.size() >= wire::kHeaderSize) {
    auto h = wire::decode_header(bytes);
    if (!h || bytes.size() < wire::kHeaderSize + h->length) break;
    auto m = wire::decode(bytes.first(wire::kHeaderSize + h->length));
    if (!m) break;
    out.push_back(std::move(*m));
    bytes = bytes.subspan(wire::kHeaderSize + h->length);
  }
  if (rest != nullptr) *rest = !bytes.empty();
  return out;
}

// Reads what the other end sends until it closes.
std::vector<uint8_t> read_all(tcp::socket& s) {
  std::vector<uint8_t> got;
  std::array<uint8_t, 4096> buf{};
  boost::system::error_code ec;
  for (;;) {
    const std::size_t n = s.read_some(boost::asio::buffer(buf), ec);
    if (ec) return got;
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

void fuzz_responder(std::span<const uint8_t> input, bool with_secret) {
  boost::asio::io_context io;
  ResponderSettings settings;
  settings.listen_address = "127.0.0.1:0";
  settings.limits.setups_per_minute_per_source = 1000000;
  if (with_secret) settings.keyring = std::make_shared<Keyring>("the-fuzzed-probe-secret");
  auto stats = std::make_shared<ProbeStats>();
  Responder responder(io, settings, stats);
  if (!responder.start()) std::abort();
  tcp::socket client(io);
  client.connect(tcp::endpoint(kLoopback, responder.port()));
  boost::system::error_code ec;
  boost::asio::write(client, boost::asio::buffer(input.data(), input.size()), ec);
  client.shutdown(tcp::socket::shutdown_send, ec);
  // The client reads until the responder closes; then the responder stops.
  std::vector<uint8_t> answers;
  std::array<uint8_t, 4096> buf{};
  std::function<void()> read_more = [&] {
    client.async_read_some(
        boost::asio::buffer(buf), [&](const boost::system::error_code& rec, std::size_t n) {
          if (rec) return responder.stop();
          answers.insert(answers.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
          read_more();
        });
  };
  read_more();
  io.run();
  if (responder.sessions() != 0) std::abort();  // a session outlived its connection
  bool rest = false;
  const auto said = messages_of(answers, &rest);
  if (rest) std::abort();  // the responder sent bytes that are not a whole message
  if (said.empty() || !std::holds_alternative<wire::Hello>(said[0])) std::abort();
  if (said.size() > 2) std::abort();  // a hello and at most one answer, then the end
  if (said.size() == 2 && !std::holds_alternative<wire::Reject>(said[1])) std::abort();
  if (std::get<wire::Hello>(said[0]).auth_required() != with_secret) std::abort();
}

void fuzz_keepalives(std::span<const uint8_t> input) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(kLoopback, 0));
  tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  auto channel = std::make_shared<ControlChannel>(acceptor.accept());
  std::optional<KeepaliveEnd> ended;
  long alive = 0;
  serve_keepalives(
      channel, [&] { ++alive; },
      [&](KeepaliveEnd why) {
        if (ended) std::abort();  // ended twice
        ended = why;
        channel->close();
      });
  boost::system::error_code ec;
  boost::asio::write(client, boost::asio::buffer(input.data(), input.size()), ec);
  client.shutdown(tcp::socket::shutdown_send, ec);
  io.run();
  const std::vector<uint8_t> answers = read_all(client);
  if (!ended) std::abort();

  // The oracle: the keep-alives the input starts with, and what follows.
  const std::vector<uint8_t> keepalive = wire::encode(wire::Keepalive{});
  std::size_t at = 0;
  long leading = 0;
  while (input.size() - at >= keepalive.size() &&
         std::equal(keepalive.begin(), keepalive.end(), input.begin() + at)) {
    at += keepalive.size();
    ++leading;
  }
  // What follows them: less than a header, or a good header and less than
  // its payload, is a connection that ended ("closed"); anything else is a
  // bad header, a bad payload or another message ("protocol").
  const std::span<const uint8_t> after = input.subspan(at);
  bool cut = after.size() < wire::kHeaderSize;
  if (!cut) {
    auto h = wire::decode_header(after.first(wire::kHeaderSize));
    cut = h && after.size() < wire::kHeaderSize + h->length;
  }
  const KeepaliveEnd want = cut ? KeepaliveEnd::closed : KeepaliveEnd::protocol;
  if (*ended != want) std::abort();
  if (alive != leading) std::abort();
  // Every keep-alive answered, whole, and nothing else.
  bool rest = false;
  const auto said = messages_of(answers, &rest);
  if (rest || static_cast<long>(said.size()) != leading) std::abort();
  for (const auto& m : said) {
    if (!std::holds_alternative<wire::Keepalive>(m)) std::abort();
  }
}

// A prober's control client whose set-up is a UD one.
class Client : public ControlClient {
 public:
  static std::shared_ptr<Client> make(boost::asio::io_context& io, unsigned short port) {
    ProberSettings settings;
    settings.backoff_initial = std::chrono::hours(1);
    settings.connect_timeout = std::chrono::seconds(20);
    wire::PortAd remote;
    remote.device = "mlx5_0";
    remote.port = 1;
    return std::shared_ptr<Client>(
        new Client(io, "127.0.0.1:" + std::to_string(port), remote, settings));
  }
  int accepted = 0;
  int hellos = 0;
  bool torn_down = false;

 private:
  Client(boost::asio::io_context& io, std::string address, wire::PortAd remote,
         ProberSettings settings)
      : ControlClient(io, std::move(address), std::move(remote), "fuzz", std::move(settings),
                      std::make_shared<SeriesStats>(rdma_exporter::Labels{{"target", "fuzz"}})) {}
  void on_hello() override {
    ++hellos;
    wire::UdSetup s;
    s.size = 64;
    s.peer = {0x22, 0x1234, 0, {}};
    s.device = "mlx5_0";
    s.port = 1;
    send_setup(std::move(s));
  }
  void on_accept(const wire::Message&) override {
    ++accepted;
    established();
  }
  void on_teardown() override {
    if (torn_down) return;
    torn_down = true;
    boost::asio::post(io_, [self = shared_from_this()] { self->stop(); });
  }
};

void fuzz_prober(std::span<const uint8_t> input) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(kLoopback, 0));
  auto client = Client::make(io, acceptor.local_endpoint().port());
  tcp::socket server(io);
  acceptor.async_accept(server, [&](const boost::system::error_code& ec) {
    if (ec) return;
    boost::system::error_code ignored;
    boost::asio::write(server, boost::asio::buffer(input.data(), input.size()), ignored);
    server.shutdown(tcp::socket::shutdown_send, ignored);
  });
  client->start();
  io.run();
  if (!client->torn_down) std::abort();  // the input always ends: so does the session
  const auto said = messages_of(input);
  // An accept is taken once at most, and only after a hello listing the
  // port and an accept of the set-up's kind.
  if (client->accepted > 1 || client->hellos > 1) std::abort();
  if (client->accepted == 1) {
    if (said.size() < 2 || !std::holds_alternative<wire::Hello>(said[0]) ||
        !std::holds_alternative<wire::UdAccept>(said[1])) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    rdma_exporter::log::set_level(rdma_exporter::log::Level::error);
    return true;
  }();
  (void)quiet;
  if (size == 0 || size > 16384) return 0;
  const std::span<const uint8_t> input(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      fuzz_responder(input, (data[0] & 4) != 0);
      break;
    case 1:
      fuzz_keepalives(input);
      break;
    default:
      fuzz_prober(input);
      break;
  }
  return 0;
}
