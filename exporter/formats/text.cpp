#include "exporter/formats/text.hpp"

#include <prometheus/text_serializer.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace rdma_exporter {
namespace {

// A sample value as prometheus-cpp's TextSerializer writes it: "Nan",
// "+Inf", "-Inf", otherwise printf's "%.16g" (max_digits10 - 1 significant
// digits). Integral values of at most 16 digits, what counters mostly are,
// come out as plain digits there, and are written here without printf.
void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
    return;
  }
  char buf[64];
  if (v > -1e16 && v < 1e16 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
    out.append(buf, ptr);
    return;
  }
  const int n = std::snprintf(buf, sizeof buf, "%.16g", v);
  out.append(buf, static_cast<std::size_t>(n));
}

void append_label_value(std::string& out, const std::string& value) {
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
}

void append_sample(std::string& out, const prometheus::MetricFamily& family,
                   const prometheus::ClientMetric& m, double value) {
  out += family.name;
  if (!m.label.empty()) {
    out += '{';
    bool first = true;
    for (const auto& l : m.label) {
      if (!first) out += ',';
      first = false;
      out += l.name;
      out += "=\"";
      append_label_value(out, l.value);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_value(out, value);
  if (m.timestamp_ms != 0) {
    char buf[24];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, m.timestamp_ms);
    out += ' ';
    out.append(buf, ptr);
  }
  out += '\n';
}

}  // namespace

// Counters, gauges and untyped samples are written here, byte for byte as
// prometheus::TextSerializer writes them, into one string; histograms and
// summaries, rare here, by the TextSerializer itself.
std::string render_text(const std::vector<prometheus::MetricFamily>& families) {
  std::size_t samples = 0;
  for (const auto& f : families) samples += f.metric.size();
  std::string out;
  out.reserve(samples * 64 + families.size() * 128);
  for (const auto& family : families) {
    const char* type = nullptr;
    switch (family.type) {
      case prometheus::MetricType::Counter:
        type = "counter";
        break;
      case prometheus::MetricType::Gauge:
        type = "gauge";
        break;
      case prometheus::MetricType::Untyped:
        type = "untyped";
        break;
      default:
        break;
    }
    if (type == nullptr) {
      std::ostringstream s;
      prometheus::TextSerializer().Serialize(s, {family});
      out += s.str();
      continue;
    }
    if (!family.help.empty()) {
      out += "# HELP ";
      out += family.name;
      out += ' ';
      out += family.help;
      out += '\n';
    }
    out += "# TYPE ";
    out += family.name;
    out += ' ';
    out += type;
    out += '\n';
    for (const auto& m : family.metric) {
      const double value = family.type == prometheus::MetricType::Counter ? m.counter.value
                           : family.type == prometheus::MetricType::Gauge ? m.gauge.value
                                                                          : m.untyped.value;
      append_sample(out, family, m, value);
    }
  }
  return out;
}

}  // namespace rdma_exporter
