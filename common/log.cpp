#include "common/log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "common/text.hpp"

namespace rdma_exporter::log {
namespace {

std::atomic<Level> g_level{Level::info};
std::atomic<Format> g_format{Format::logfmt};
std::mutex g_mutex;

const char* name(Level l) {
  switch (l) {
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
      return "warn";
    case Level::error:
      return "error";
  }
  return "info";
}

// syslog(3) priorities: LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR.
const char* priority(Level l) {
  switch (l) {
    case Level::debug:
      return "<7>";
    case Level::info:
      return "<6>";
    case Level::warn:
      return "<4>";
    case Level::error:
      return "<3>";
  }
  return "<6>";
}

// Whether a logfmt value must be quoted: empty, or a byte that is not a
// printable ASCII character other than '=', '"' and '\\', or not part of
// well-formed UTF-8, or a C1 control character (U+0080 to U+009F).
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c <= 0x20 || c == 0x7f || c == '=' || c == '"' || c == '\\') return true;
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(s, i);
    if (n == 0) return true;
    if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) return true;
    i += n;
  }
  return false;
}

std::string key_of(std::string_view key) {
  std::string out(key);
  if (out.empty()) return "_";
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

// RFC 3339 in UTC with milliseconds: 2026-12-01T17:00:00.000Z.
std::string timestamp(std::chrono::system_clock::time_point now) {
  const auto ms_total =
      std::chrono::floor<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const auto ms_part = ((ms_total % 1000) + 1000) % 1000;
  const std::time_t secs = static_cast<std::time_t>((ms_total - ms_part) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[40];
  const std::size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms_part));
  return std::string(ts, n) + frac;
}

bool stderr_is_journal() {
  // Read once; the program never changes its environment.
  static const bool journal = is_journal_stream(
      STDERR_FILENO, std::getenv("JOURNAL_STREAM"));  // NOLINT(concurrency-mt-unsafe)
  return journal;
}

}  // namespace

void set_level(Level level) {
  g_level = level;
}

bool parse_level(std::string_view text, Level& out) {
  for (Level l : {Level::debug, Level::info, Level::warn, Level::error}) {
    if (text == name(l)) {
      out = l;
      return true;
    }
  }
  return false;
}

void set_format(Format format) {
  g_format = format;
}

bool parse_format(std::string_view text, Format& out) {
  if (text == "logfmt") {
    out = Format::logfmt;
    return true;
  }
  if (text == "json") {
    out = Format::json;
    return true;
  }
  return false;
}

std::string logfmt_value(std::string_view s) {
  if (!needs_quotes(s)) return std::string(s);
  return quote(s, QuoteStyle::logfmt);
}

std::string format_line(Format format, Level level, std::chrono::system_clock::time_point now,
                        std::string_view message, Fields fields, bool journal) {
  std::string line = journal ? priority(level) : "";
  const std::string ts = timestamp(now);
  if (format == Format::json) {
    line +=
        "{\"ts\":\"" + ts + "\",\"level\":\"" + name(level) + "\",\"msg\":" + json_quote(message);
    for (const Field& f : fields)
      line += "," + json_quote(key_of(f.key)) + ":" + json_quote(f.value);
    line += "}\n";
    return line;
  }
  line += "ts=" + ts + " level=" + name(level) + " msg=" + logfmt_value(message);
  for (const Field& f : fields) line += " " + key_of(f.key) + "=" + logfmt_value(f.value);
  line += "\n";
  return line;
}

bool is_journal_stream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  const std::string_view text(journal_stream);
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  const char* const dev_end = text.data() + colon;
  const char* const ino_end = text.data() + text.size();
  auto d = std::from_chars(text.data(), dev_end, dev);
  auto i = std::from_chars(dev_end + 1, ino_end, ino);
  if (d.ec != std::errc() || d.ptr != dev_end || i.ec != std::errc() || i.ptr != ino_end ||
      colon == 0 || colon + 1 == text.size()) {
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void write(Level level, std::string_view message, Fields fields) {
  if (level < g_level.load()) return;
  const std::string line = format_line(g_format.load(), level, std::chrono::system_clock::now(),
                                       message, fields, stderr_is_journal());
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace rdma_exporter::log
