#include "common/kubernetes/options.hpp"

#include <unistd.h>

namespace rdma_exporter::kubernetes {

void parse_options(Walker& w, const YAML::Node& node, const std::string& path, Options& out) {
  w.mapping(node, path,
            {{"enabled", w.boolean(out.enabled)},
             {"cri_socket", w.string(out.cri_socket)},
             {"pod_resources_socket", w.string(out.pod_resources_socket)},
             {"refresh_interval", w.duration(out.refresh_interval)},
             {"timeout", w.duration(out.timeout)}});
}

std::string find_cri_socket(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    if (::access(c.c_str(), F_OK) == 0) return c;
  }
  return "";
}

std::vector<std::string> validate_options(const Options& o) {
  std::vector<std::string> errors;
  for (const auto& [key, socket] :
       {std::pair<const char*, const std::string&>{"cri_socket", o.cri_socket},
        {"pod_resources_socket", o.pod_resources_socket}}) {
    if (!socket.empty() && socket.front() != '/') {
      errors.push_back(std::string("kubernetes.") + key + ": expected an absolute path, got \"" +
                       socket + "\"");
    }
  }
  if (o.refresh_interval < std::chrono::seconds(1)) {
    errors.emplace_back("kubernetes.refresh_interval: must be at least 1s");
  }
  if (o.timeout.count() <= 0 || o.timeout > o.refresh_interval) {
    errors.emplace_back("kubernetes.timeout: must be positive and at most refresh_interval");
  }
  return errors;
}

}  // namespace rdma_exporter::kubernetes
