#include "exporter/exposition.hpp"

#include <prometheus/text_serializer.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "common/text.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

std::string render_text(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

namespace {

// Shortest decimal that reads back as the same double; integers without
// exponent or fraction.
std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string label_text(const prometheus::ClientMetric& m, const std::string& extra_name = "",
                       const std::string& extra_value = "") {
  if (m.label.empty() && extra_name.empty()) return "";
  std::string out = "{";
  for (const auto& l : m.label) {
    if (out.size() > 1) out += ',';
    out += l.name + "=\"" + escape_label(l.value) + "\"";
  }
  if (!extra_name.empty()) {
    if (out.size() > 1) out += ',';
    out += extra_name + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

const char* type_name(prometheus::MetricType t) {
  switch (t) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Untyped:
      return "unknown";
  }
  return "unknown";
}

double value_of(const prometheus::MetricFamily& f, const prometheus::ClientMetric& m) {
  switch (f.type) {
    case prometheus::MetricType::Counter:
      return m.counter.value;
    case prometheus::MetricType::Gauge:
      return m.gauge.value;
    case prometheus::MetricType::Untyped:
      return m.untyped.value;
    default:
      return std::nan("");
  }
}

}  // namespace

std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  for (const auto& f : families) {
    std::string name = f.name;
    const bool counter = f.type == prometheus::MetricType::Counter;
    if (counter && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0) {
      name.resize(name.size() - 6);
    }
    out += "# TYPE " + name + " " + type_name(f.type) + "\n";
    if (!f.help.empty()) out += "# HELP " + name + " " + escape_label(f.help) + "\n";
    for (const auto& m : f.metric) {
      if (f.type == prometheus::MetricType::Histogram) {
        uint64_t last = 0;
        for (const auto& b : m.histogram.bucket) {
          out += name + "_bucket" + label_text(m, "le", format_number(b.upper_bound)) + " " +
                 std::to_string(b.cumulative_count) + "\n";
          last = b.cumulative_count;
        }
        if (m.histogram.bucket.empty() || !std::isinf(m.histogram.bucket.back().upper_bound)) {
          out += name + "_bucket" + label_text(m, "le", "+Inf") + " " +
                 std::to_string(std::max(last, m.histogram.sample_count)) + "\n";
        }
        out +=
            name + "_count" + label_text(m) + " " + std::to_string(m.histogram.sample_count) + "\n";
        out += name + "_sum" + label_text(m) + " " + format_number(m.histogram.sample_sum) + "\n";
        continue;
      }
      out += name + (counter ? "_total" : "") + label_text(m) + " " +
             format_number(value_of(f, m)) + "\n";
    }
  }
  out += "# EOF\n";
  return out;
}

std::string render_json(const std::vector<prometheus::MetricFamily>& families,
                        const std::vector<CollectorOutcome>& outcomes, double timestamp_seconds) {
  std::string out =
      "{\"schema\":\"rdma_exporter/v1\",\"timestamp_seconds\":" + format_number(timestamp_seconds) +
      ",\"collectors\":[";
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    if (i > 0) out += ',';
    out += "{\"name\":" + json_quote(o.name) +
           ",\"success\":" + (o.errors.empty() ? "true" : "false") +
           ",\"duration_seconds\":" + format_number(o.duration_seconds) + ",\"errors\":[";
    for (std::size_t e = 0; e < o.errors.size(); ++e) {
      out += (e > 0 ? "," : "") + json_quote(o.errors[e]);
    }
    out += "]}";
  }
  out += "],\"metrics\":[";
  for (std::size_t i = 0; i < families.size(); ++i) {
    const auto& f = families[i];
    if (i > 0) out += ',';
    out += "{\"name\":" + json_quote(f.name) + ",\"type\":\"" + type_name(f.type) +
           "\",\"help\":" + json_quote(f.help) + ",\"samples\":[";
    for (std::size_t j = 0; j < f.metric.size(); ++j) {
      const auto& m = f.metric[j];
      if (j > 0) out += ',';
      out += "{\"labels\":{";
      for (std::size_t l = 0; l < m.label.size(); ++l) {
        out +=
            (l > 0 ? "," : "") + json_quote(m.label[l].name) + ":" + json_quote(m.label[l].value);
      }
      out += "}";
      if (f.type == prometheus::MetricType::Histogram) {
        out += ",\"count\":" + std::to_string(m.histogram.sample_count) +
               ",\"sum\":" + format_number(m.histogram.sample_sum) + ",\"buckets\":[";
        for (std::size_t b = 0; b < m.histogram.bucket.size(); ++b) {
          const auto& bk = m.histogram.bucket[b];
          out += std::string(b > 0 ? "," : "") + "{\"le\":" +
                 (std::isinf(bk.upper_bound) ? std::string("\"+Inf\"")
                                             : format_number(bk.upper_bound)) +
                 ",\"count\":" + std::to_string(bk.cumulative_count) + "}";
        }
        out += "]}";
      } else {
        const double v = value_of(f, m);
        out +=
            ",\"value\":" + (std::isfinite(v) ? format_number(v) : json_quote(format_number(v))) +
            "}";
      }
    }
    out += "]}";
  }
  return out + "]}\n";
}

bool write_file_atomically(const std::string& path, std::string_view data, std::string& error) {
  std::string tmp = path + ".tmpXXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    error = "create a temporary file next to " + path + ": " + std::strerror(errno);
    return false;
  }
  auto fail = [&](const char* what) {
    error = std::string(what) + " " + tmp + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  };
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) return fail("chmod");
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    error = "close " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string gzip_compress(std::string_view data) {
  z_stream zs{};
  // windowBits 15 + 16 selects the gzip wrapper.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  return out;
}

}  // namespace rdma_exporter
