#include "common/log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/cli.hpp"
#include "exporter/config.hpp"

namespace rdma_exporter {
namespace {

using namespace std::chrono;

// 2026-12-01T17:00:00.042Z
const system_clock::time_point kNow =
    sys_days{year{2026} / December / 1} + hours{17} + milliseconds{42};

std::string logfmt(log::Level level, std::string_view msg, log::Fields fields = {}) {
  return log::format_line(log::Format::logfmt, level, kNow, msg, fields);
}

std::string json(log::Level level, std::string_view msg, log::Fields fields = {}) {
  return log::format_line(log::Format::json, level, kNow, msg, fields);
}

TEST(Log, LogfmtLineWithFields) {
  EXPECT_EQ(logfmt(log::Level::warn, "device went away",
                   {{"device", "mlx5_0"}, {"port", 1}, {"err", "No such device"}}),
            "ts=2026-12-01T17:00:00.042Z level=warn msg=\"device went away\" device=mlx5_0 "
            "port=1 err=\"No such device\"\n");
  EXPECT_EQ(logfmt(log::Level::info, "stopped"),
            "ts=2026-12-01T17:00:00.042Z level=info msg=stopped\n");
  EXPECT_EQ(logfmt(log::Level::debug, "x", {{"on", true}, {"off", false}, {"n", -3}}),
            "ts=2026-12-01T17:00:00.042Z level=debug msg=x on=true off=false n=-3\n");
  EXPECT_EQ(logfmt(log::Level::error, "x", {{"path", std::string("/sys/class/infiniband")}}),
            "ts=2026-12-01T17:00:00.042Z level=error msg=x path=/sys/class/infiniband\n");
}

TEST(Log, TimestampIsRfc3339UtcWithMilliseconds) {
  const auto t =
      sys_days{year{2027} / January / 5} + hours{3} + minutes{4} + seconds{5} + microseconds{7999};
  EXPECT_EQ(log::format_line(log::Format::logfmt, log::Level::info, t, "m", {}),
            "ts=2027-01-05T03:04:05.007Z level=info msg=m\n");
  const auto t2 = sys_days{year{2026} / December / 31} + hours{23} + minutes{59} + seconds{59} +
                  milliseconds{999};
  EXPECT_EQ(log::format_line(log::Format::json, log::Level::info, t2, "m", {}),
            "{\"ts\":\"2026-12-31T23:59:59.999Z\",\"level\":\"info\",\"msg\":\"m\"}\n");
}

TEST(Log, LogfmtQuotesWhatIsNotAPlainWord) {
  EXPECT_EQ(log::logfmt_value("mlx5_0"), "mlx5_0");
  EXPECT_EQ(log::logfmt_value(""), "\"\"");
  EXPECT_EQ(log::logfmt_value("a b"), "\"a b\"");
  EXPECT_EQ(log::logfmt_value("a=b"), "\"a=b\"");
  EXPECT_EQ(log::logfmt_value("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(log::logfmt_value("C:\\x"), "\"C:\\\\x\"");
  EXPECT_EQ(log::logfmt_value("café"), "café");  // printable UTF-8 stays as it is
}

TEST(Log, LogfmtEscapesControlCharactersAndBadUtf8) {
  EXPECT_EQ(log::logfmt_value("a\nb\rc\td"), "\"a\\nb\\rc\\td\"");
  EXPECT_EQ(log::logfmt_value("\x1b[31mred"), "\"\\x1b[31mred\"");
  EXPECT_EQ(log::logfmt_value(std::string_view("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(log::logfmt_value("del\x7f"), "\"del\\x7f\"");
  EXPECT_EQ(log::logfmt_value("bad\xff\xc3"), "\"bad\\xff\\xc3\"");
  EXPECT_EQ(log::logfmt_value("c1\xc2\x85"), "\"c1\\u0085\"");  // U+0085 NEL
  EXPECT_EQ(log::logfmt_value("nbsp\xc2\xa0"), "nbsp\xc2\xa0");
}

TEST(Log, ControlCharactersCannotForgeALineOrAField) {
  const std::string line = logfmt(log::Level::info, "device renamed",
                                  {{"device", "mlx5_0\r\nts=x level=error msg=forged"}});
  EXPECT_EQ(line,
            "ts=2026-12-01T17:00:00.042Z level=info msg=\"device renamed\" "
            "device=\"mlx5_0\\r\\nts=x level=error msg=forged\"\n");
  EXPECT_EQ(logfmt(log::Level::info, "m", {{"device", "x device=y"}}),
            "ts=2026-12-01T17:00:00.042Z level=info msg=m device=\"x device=y\"\n");
}

TEST(Log, KeysAreNamesOnly) {
  EXPECT_EQ(logfmt(log::Level::info, "m", {{"bad key=\"", "v"}, {"", "w"}}),
            "ts=2026-12-01T17:00:00.042Z level=info msg=m bad_key__=v _=w\n");
}

TEST(Log, JsonLineWithFields) {
  EXPECT_EQ(json(log::Level::warn, "device went away", {{"device", "mlx5_0"}, {"port", 1}}),
            "{\"ts\":\"2026-12-01T17:00:00.042Z\",\"level\":\"warn\",\"msg\":\"device went "
            "away\",\"device\":\"mlx5_0\",\"port\":\"1\"}\n");
}

TEST(Log, JsonEscapesPerRfc8259) {
  EXPECT_EQ(json(log::Level::error, "say \"hi\"\\", {{"err", "a\tb\r\nc\x1b\x7f"}}),
            "{\"ts\":\"2026-12-01T17:00:00.042Z\",\"level\":\"error\",\"msg\":\"say "
            "\\\"hi\\\"\\\\\",\"err\":\"a\\tb\\r\\nc\\u001b\\u007f\"}\n");
  // Not UTF-8: U+FFFD, so the line stays a valid JSON text.
  EXPECT_EQ(json(log::Level::info, "m", {{"device", "x\xff"}}),
            "{\"ts\":\"2026-12-01T17:00:00.042Z\",\"level\":\"info\",\"msg\":\"m\",\"device\":"
            "\"x\xef\xbf\xbd\"}\n");
}

TEST(Log, JournalPrefixIsTheSyslogPriority) {
  const auto line = [](log::Format f, log::Level l) {
    return log::format_line(f, l, kNow, "m", {}, true);
  };
  EXPECT_EQ(line(log::Format::logfmt, log::Level::debug),
            "<7>ts=2026-12-01T17:00:00.042Z level=debug msg=m\n");
  EXPECT_EQ(line(log::Format::logfmt, log::Level::info),
            "<6>ts=2026-12-01T17:00:00.042Z level=info msg=m\n");
  EXPECT_EQ(line(log::Format::logfmt, log::Level::warn),
            "<4>ts=2026-12-01T17:00:00.042Z level=warn msg=m\n");
  EXPECT_EQ(line(log::Format::logfmt, log::Level::error),
            "<3>ts=2026-12-01T17:00:00.042Z level=error msg=m\n");
  EXPECT_EQ(line(log::Format::json, log::Level::warn),
            "<4>{\"ts\":\"2026-12-01T17:00:00.042Z\",\"level\":\"warn\",\"msg\":\"m\"}\n");
}

TEST(Log, JournalStreamMatchesOnlyTheFdsOwnDeviceAndInode) {
  char name[] = "/tmp/rdma_log_XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  unlink(name);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  const std::string dev = std::to_string(st.st_dev);
  const std::string ino = std::to_string(st.st_ino);
  EXPECT_TRUE(log::is_journal_stream(fd, (dev + ":" + ino).c_str()));
  EXPECT_FALSE(log::is_journal_stream(fd, (dev + ":" + std::to_string(st.st_ino + 1)).c_str()));
  EXPECT_FALSE(log::is_journal_stream(fd, (std::to_string(st.st_dev + 1) + ":" + ino).c_str()));
  EXPECT_FALSE(log::is_journal_stream(fd, nullptr));
  for (const std::string& bad :
       std::vector<std::string>{"", ":", dev, dev + ":", ":" + ino, dev + ":" + ino + "x",
                                "x" + dev + ":" + ino, dev + " :" + ino, "-1:" + ino}) {
    EXPECT_FALSE(log::is_journal_stream(fd, bad.c_str())) << bad;
  }
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(fstat(p[1], &st), 0);
  const std::string pipe_stream = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(log::is_journal_stream(p[1], pipe_stream.c_str()));
  EXPECT_FALSE(log::is_journal_stream(fd, pipe_stream.c_str()));
  EXPECT_FALSE(log::is_journal_stream(-1, pipe_stream.c_str()));
  close(p[0]);
  close(p[1]);
  close(fd);
}

TEST(Log, ParseFormatAndLevel) {
  log::Format f = log::Format::logfmt;
  EXPECT_TRUE(log::parse_format("json", f));
  EXPECT_EQ(f, log::Format::json);
  EXPECT_TRUE(log::parse_format("logfmt", f));
  EXPECT_EQ(f, log::Format::logfmt);
  EXPECT_FALSE(log::parse_format("JSON", f));
  EXPECT_FALSE(log::parse_format("", f));
  log::Level l = log::Level::info;
  EXPECT_TRUE(log::parse_level("warn", l));
  EXPECT_EQ(l, log::Level::warn);
  EXPECT_FALSE(log::parse_level("warning", l));
}

// write() at the set level and format, on stderr (redirected to a file here).
TEST(Log, WriteFiltersByLevelAndUsesTheFormat) {
  char name[] = "/tmp/rdma_log_XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(fd, STDERR_FILENO), STDERR_FILENO);
  log::set_format(log::Format::json);
  log::set_level(log::Level::warn);
  log::info("not shown", {{"device", "mlx5_0"}});
  log::warn("shown", {{"device", "mlx5_0"}});
  log::set_format(log::Format::logfmt);
  log::error("also shown", {{"err", "x y"}});
  log::set_level(log::Level::info);
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text(4096, '\0');
  text.resize(static_cast<std::size_t>(pread(fd, text.data(), text.size(), 0)));
  close(fd);
  unlink(name);
  const auto nl = text.find('\n');
  ASSERT_NE(nl, std::string::npos) << text;
  const std::string first = text.substr(0, nl + 1);
  const std::string second = text.substr(nl + 1);
  EXPECT_EQ(first.substr(first.find("\"level\"")),
            "\"level\":\"warn\",\"msg\":\"shown\",\"device\":\"mlx5_0\"}\n")
      << text;
  EXPECT_EQ(second.substr(second.find("level=")), "level=error msg=\"also shown\" err=\"x y\"\n")
      << text;
}

TEST(LogConfig, FormatKeyAndFlag) {
  Config c;
  ASSERT_TRUE(parse_config("log: {level: warn, format: json}\n", "t.yml", c).empty());
  EXPECT_EQ(c.log.format, "json");
  Config d;
  EXPECT_EQ(d.log.format, "logfmt");
  auto errors = parse_config("log: {format: xml}\n", "bad.yml", d);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], "bad.yml: log.format: expected logfmt or json, got \"xml\"");

  CommandLine cli;
  const char* argv[] = {"rdma_exporter", "--log.format=json"};
  ASSERT_TRUE(parse_command_line(2, argv, cli).empty());
  Config e;
  ASSERT_TRUE(load_config(cli, e).empty());
  EXPECT_EQ(e.log.format, "json");
  EXPECT_NE(cli.help_text.find("--log.format"), std::string::npos);

  CommandLine bad;
  const char* argv2[] = {"rdma_exporter", "--log.format", "text"};
  ASSERT_TRUE(parse_command_line(3, argv2, bad).empty());
  Config f;
  errors = load_config(bad, f);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], "log.format: expected logfmt or json, got \"text\"");
}

TEST(LogConfig, ShippedExampleSetsTheDefaultFormat) {
  Config c;
  c.log.format = "json";
  ASSERT_TRUE(load_config_file(RDMA_EXPORTER_SOURCE_DIR "/config/rdma_exporter.yml", c).empty());
  EXPECT_EQ(c.log.format, "logfmt");
}

}  // namespace
}  // namespace rdma_exporter
