#pragma once

// The daemon's log: one line per event on stderr, in logfmt (default) or
// JSON, with a message and string key=value fields:
//
//   log::warn("device went away", {{"device", name}, {"port", 1}, {"err", e.message}});
//
//   ts=2026-12-01T17:00:00.000Z level=warn msg="device went away" device=mlx5_0 port=1 err="..."
//   {"ts":"2026-12-01T17:00:00.000Z","level":"warn","msg":"device went away","device":"mlx5_0",...}
//
// Values are escaped so that no byte of them can end the line or start a
// field of its own (docs/configuration.md, "Logging"). When stderr is the
// systemd journal's stream (JOURNAL_STREAM names it), each line starts with
// its syslog priority, "<4>" for warn, for `journalctl -p`.

#include <chrono>
#include <concepts>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace rdma_exporter::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };
enum class Format { logfmt, json };

// One key=value field. Keys are names written in the code (letters, digits,
// '_', '.', '-'; anything else becomes '_'); values are any bytes.
struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, std::string&& v) : key(k), value(std::move(v)) {}
  Field(std::string_view k, const char* v) : key(k), value(v) {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  template <std::integral T>
  Field(std::string_view k, T v) : key(k), value(std::to_string(v)) {}

  std::string_view key;
  std::string value;
};
using Fields = std::initializer_list<Field>;

void set_level(Level level);
bool parse_level(std::string_view text, Level& out);
void set_format(Format format);
bool parse_format(std::string_view text, Format& out);

void write(Level level, std::string_view message, Fields fields = {});

inline void debug(std::string_view m, Fields f = {}) {
  write(Level::debug, m, f);
}
inline void info(std::string_view m, Fields f = {}) {
  write(Level::info, m, f);
}
inline void warn(std::string_view m, Fields f = {}) {
  write(Level::warn, m, f);
}
inline void error(std::string_view m, Fields f = {}) {
  write(Level::error, m, f);
}

// The line write() prints at time `now`, newline included; `journal` puts the
// syslog priority prefix ("<6>" for info) in front.
std::string format_line(Format format, Level level, std::chrono::system_clock::time_point now,
                        std::string_view message, Fields fields, bool journal = false);

// A logfmt value: as is when it is a plain word, else quoted and escaped.
std::string logfmt_value(std::string_view value);

// Whether `fd` is the stream systemd-journald handed over: `journal_stream`
// (the JOURNAL_STREAM variable, "<device>:<inode>" in decimal) names the
// device and inode fstat(2) gives for it. Null, malformed or another file:
// false.
bool is_journal_stream(int fd, const char* journal_stream);

}  // namespace rdma_exporter::log
