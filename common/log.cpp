#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace rdma_exporter::log {
namespace {

std::atomic<Level> g_level{Level::info};
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

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + '"';
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

void write(Level level, std::string_view message) {
  if (level < g_level.load()) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  const std::string line = std::string("ts=") + ts + "." +
                           (ms < 100 ? (ms < 10 ? "00" : "0") : "") + std::to_string(ms) +
                           "Z level=" + name(level) + " msg=" + quote(message) + "\n";
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace rdma_exporter::log
