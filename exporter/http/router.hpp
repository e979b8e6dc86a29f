#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter {

// A response as a handler makes it. The session adds what every response
// carries (Server, the web configuration's headers, Connection,
// Content-Length) and writes it.
struct HttpResponse {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string content_type;
  std::shared_ptr<const std::string> body;  // null: empty
  std::vector<std::pair<std::string, std::string>> headers;
  // An error that ends the connection: the body goes out even after HEAD.
  bool close = false;

  // A text/plain response.
  static HttpResponse text(boost::beast::http::status status, std::string body);
};

// What a handler sees of a request; valid for the handler call only.
struct HttpRequest {
  boost::beast::http::verb method;
  std::string_view accept_encoding;
  std::string_view target;  // path and query string, as sent
};

// The query string of a request target as (name, value) pairs in order,
// percent-decoded ('+' is a space, as in HTML forms). A malformed
// percent escape is an error.
Result<std::vector<std::pair<std::string, std::string>>> query_parameters(std::string_view target);

// A handler answers once, through `reply`, now or later on the event loop.
using HttpReply = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(const HttpRequest&, HttpReply)>;

struct HttpRoute {
  std::string path;                               // matched exactly, without the query string
  std::vector<boost::beast::http::verb> methods;  // empty: every method
  HttpHandler handler;
};

// The table of routes. A path not in it is answered 404, a method its route
// does not take 405 with an Allow header naming the ones it does.
class HttpRouter {
 public:
  explicit HttpRouter(std::vector<HttpRoute> routes) : routes_(std::move(routes)) {}

  // The route of a request target (its query string ignored); null if none.
  const HttpRoute* find(std::string_view target) const;

  // Answers a request for `route` (from find) through `reply`.
  static void dispatch(const HttpRoute* route, const HttpRequest& request, HttpReply reply);

 private:
  std::vector<HttpRoute> routes_;
};

}  // namespace rdma_exporter
