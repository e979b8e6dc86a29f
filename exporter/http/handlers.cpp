#include "exporter/http/handlers.hpp"

#include <cstdlib>
#include <utility>
#include <vector>

#include "exporter/formats/gzip.hpp"
#include "exporter/formats/text.hpp"
#include "exporter/http/collector_filter.hpp"

namespace rdma_exporter {

namespace http = boost::beast::http;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A fixed response, shared by every request that gets it.
HttpHandler fixed(HttpResponse res) {
  return [res = std::move(res)](const HttpRequest&, const HttpReply& reply) { reply(res); };
}

// Its links are relative, so the page works behind a proxy that serves the
// exporter under a prefix. `telemetry_path` holds no character HTML or a URL
// would treat specially (telemetry_path_problem).
HttpResponse landing_page(const std::string& telemetry_path) {
  const std::string metrics = telemetry_path.substr(1);
  HttpResponse res;
  res.content_type = "text/html; charset=utf-8";
  res.body = std::make_shared<const std::string>(
      "<!DOCTYPE html>\n<html><head><title>rdma_exporter</title></head><body>\n"
      "<h1>rdma_exporter</h1>\n<p>Prometheus exporter for Linux RDMA counters.</p>\n"
      "<ul><li><a href=\"" +
      metrics + "\">" + metrics +
      "</a></li><li><a href=\"healthz\">healthz</a></li></ul>\n"
      "</body></html>\n");
  return res;
}

void serve_snapshot(const std::shared_ptr<const Snapshot>& snap, bool gzip,
                    const HttpReply& reply) {
  if (snap->text.empty()) {
    auto res =
        HttpResponse::text(http::status::internal_server_error, "collection failed to render\n");
    res.close = true;
    return reply(std::move(res));
  }
  HttpResponse res;
  res.content_type = kTextContentType;
  // The body is the snapshot's own text, kept alive with it.
  res.body = std::shared_ptr<const std::string>(snap, gzip ? &snap->gzip : &snap->text);
  res.headers.emplace_back("Vary", "Accept-Encoding");
  if (gzip) res.headers.emplace_back("Content-Encoding", "gzip");
  reply(std::move(res));
}

// collect[] and exclude[] select from the cached snapshot by the collector
// that made each sample: a filtered scrape costs a rendering, never a
// collection of its own.
HttpHandler metrics(SnapshotCache& cache) {
  return [&cache](const HttpRequest& req, HttpReply reply) {
    const bool gzip = accepts_gzip(req.accept_encoding);
    auto filter = parse_collector_filter(req.target);
    if (!filter) {
      return reply(HttpResponse::text(http::status::bad_request, filter.error().message + "\n"));
    }
    cache.get([reply = std::move(reply), gzip,
               selection = std::move(*filter)](const std::shared_ptr<const Snapshot>& snap) {
      if (selection.mode == CollectorFilter::Mode::all) return serve_snapshot(snap, gzip, reply);
      auto chosen = apply_collector_filter(selection, *snap);
      if (!chosen) {
        return reply(HttpResponse::text(http::status::bad_request, chosen.error().message + "\n"));
      }
      if (gzip && !(*chosen)->text.empty()) (*chosen)->gzip = gzip_compress((*chosen)->text);
      serve_snapshot(*chosen, gzip, reply);
    });
  };
}

HttpHandler reload_with(ReloadHook hook) {
  return [hook = std::move(hook)](const HttpRequest&, HttpReply reply) {
    hook([reply = std::move(reply)](bool ok, std::string message) {
      reply(HttpResponse::text(ok ? http::status::ok : http::status::internal_server_error,
                               std::move(message) + "\n"));
    });
  };
}

}  // namespace

std::shared_ptr<const HttpRouter> exporter_routes(SnapshotCache& cache, const ReloadHook& reload,
                                                  const std::string& telemetry_path) {
  const std::vector<http::verb> read{http::verb::get, http::verb::head};
  std::vector<HttpRoute> routes{
      {telemetry_path, read, metrics(cache)},
      {"/", read, fixed(landing_page(telemetry_path))},
      {"/healthz", read, fixed(HttpResponse::text(http::status::ok, "OK\n"))},
  };
  if (reload) {
    routes.push_back({"/-/reload", {http::verb::post, http::verb::put}, reload_with(reload)});
  } else {
    routes.push_back(
        {"/-/reload",
         {},
         fixed(HttpResponse::text(http::status::forbidden,
                                  "the lifecycle API is off (web.enable_lifecycle)\n"))});
  }
  return std::make_shared<const HttpRouter>(std::move(routes));
}

// "gzip" or "*" with a q-value that is not 0.
bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    std::string_view coding = trim(item.substr(0, item.find(';')));
    if (coding != "gzip" && coding != "*") continue;
    const auto q = item.find("q=");
    if (q != std::string_view::npos) {
      std::string value(trim(item.substr(q + 2)));
      if (std::strtod(value.c_str(), nullptr) <= 0.0) continue;
    }
    return true;
  }
  return false;
}

}  // namespace rdma_exporter
