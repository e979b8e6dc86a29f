#include "exporter/http/router.hpp"

#include <algorithm>

namespace rdma_exporter {

namespace http = boost::beast::http;

HttpResponse HttpResponse::text(http::status status, std::string body) {
  HttpResponse res;
  res.status = status;
  res.content_type = "text/plain; charset=utf-8";
  res.body = std::make_shared<const std::string>(std::move(body));
  return res;
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
