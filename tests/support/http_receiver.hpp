#pragma once

// An HTTP receiver on 127.0.0.1 for tests of the OTLP push: it records every
// request and answers as the test scripts it (a status, with an optional
// Retry-After, or no answer at all).

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rdma_exporter::testing {

class HttpReceiver {
 public:
  struct Answer {
    unsigned status = 200;
    std::string retry_after;
    bool hang = false;  // read the request, never answer
  };
  struct Request {
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;
    std::chrono::steady_clock::time_point at;
  };

  HttpReceiver();
  ~HttpReceiver();  // hanging requests are let go
  HttpReceiver(const HttpReceiver&) = delete;
  HttpReceiver& operator=(const HttpReceiver&) = delete;

  // http://127.0.0.1:<port>/v1/metrics
  std::string url() const;
  // Answers for the next requests, in order; `then` after they are used up.
  void script(std::vector<Answer> first, Answer then);
  std::vector<Request> requests() const;
  // Waits until `n` requests have come; false when `timeout` passes first.
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout);

 private:
  void accept_loop();
  void handle(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::vector<std::thread> handlers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool closing_ = false;
  std::vector<Answer> script_;
  Answer then_;
  std::vector<Request> requests_;
};

}  // namespace rdma_exporter::testing
