// Fuzz harness: configuration text. The first byte chooses what the rest is:
// the exporter's YAML configuration (parsed, then validated as at start-up
// and reload), a probe file_sd targets file, or the web configuration (TLS
// and basic auth).

#include "exporter/config.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "exporter/http/web_config.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = fuzz::bytes_of(data, size);
  if (bytes.empty()) return 0;
  const std::string text = fuzz::text_of(bytes.subspan(1));
  switch (bytes[0] % 3) {
    case 0: {
      Config config;
      if (parse_config(text, "/etc/rdma_exporter/rdma_exporter.yml", config).empty()) {
        (void)validate_config(config);
      }
      break;
    }
    case 1:
      if (auto targets = probe::parse_file_sd(text, "/etc/rdma_exporter/targets.yml")) {
        for (const auto& target : *targets) (void)probe::valid_target_address(target.address);
      }
      (void)probe::valid_target_address(text);
      (void)probe::target_label_problem(text);
      break;
    default: {
      WebConfig web;
      (void)parse_web_config(text, "/etc/rdma_exporter/web-config.yml", web);
      (void)is_bcrypt_hash(text);
      break;
    }
  }
  return 0;
}
