#include "exporter/http/router.hpp"

#include <algorithm>

#include "common/text.hpp"

namespace rdma_exporter {

namespace http = boost::beast::http;

HttpResponse HttpResponse::text(http::status status, std::string body) {
  HttpResponse res;
  res.status = status;
  res.content_type = "text/plain; charset=utf-8";
  res.body = std::make_shared<const std::string>(std::move(body));
  return res;
}

namespace {

Result<std::string> query_decode(std::string_view s) {
  std::string out;
  if (percent_decode(s, out, /*plus_is_space=*/true)) return out;
  // Name the first escape that does not decode.
  std::size_t at = s.find('%');
  std::string ignored;
  while (at != std::string_view::npos && percent_decode(s.substr(at, 3), ignored)) {
    at = s.find('%', at + 3);
  }
  return Error{EINVAL, "malformed percent escape in the query string: \"" +
                           std::string(s.substr(at == std::string_view::npos ? 0 : at, 3)) + "\""};
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> query_parameters(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  // A fragment is never sent, but would not be part of the query.
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    auto name = query_decode(item.substr(0, eq));
    if (!name) return name.error();
    auto value =
        query_decode(eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1));
    if (!value) return value.error();
    out.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

const HttpRoute* HttpRouter::find(std::string_view target) const {
  const std::string_view path = target.substr(0, target.find('?'));
  for (const auto& route : routes_) {
    if (route.path == path) return &route;
  }
  return nullptr;
}

void HttpRouter::dispatch(const HttpRoute* route, const HttpRequest& request, HttpReply reply) {
  if (route == nullptr) return reply(HttpResponse::text(http::status::not_found, "not found\n"));
  const auto& methods = route->methods;
  if (!methods.empty() &&
      std::find(methods.begin(), methods.end(), request.method) == methods.end()) {
    auto res = HttpResponse::text(http::status::method_not_allowed, "method not allowed\n");
    std::string allow;
    for (const auto method : methods) {
      if (!allow.empty()) allow += ", ";
      const auto name = http::to_string(method);
      allow.append(name.data(), name.size());
    }
    res.headers.emplace_back("Allow", std::move(allow));
    return reply(std::move(res));
  }
  route->handler(request, std::move(reply));
}

}  // namespace rdma_exporter
