#pragma once

#include <string>
#include <string_view>

namespace rdma_exporter::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// One line per event on stderr: "ts=... level=info msg=\"...\"".
void set_level(Level level);
bool parse_level(std::string_view text, Level& out);
void write(Level level, std::string_view message);

inline void debug(std::string_view m) {
  write(Level::debug, m);
}
inline void info(std::string_view m) {
  write(Level::info, m);
}
inline void warn(std::string_view m) {
  write(Level::warn, m);
}
inline void error(std::string_view m) {
  write(Level::error, m);
}

}  // namespace rdma_exporter::log
