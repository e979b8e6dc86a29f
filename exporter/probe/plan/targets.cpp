#include "exporter/probe/plan/targets.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/address.hpp"
#include "common/yaml_text.hpp"

namespace rdma_exporter::probe {

bool valid_target_address(const std::string& address) {
  ListenAddress parsed;
  return parse_listen_address(address, parsed) && !parsed.host.empty() && parsed.port != 0;
}

std::string target_label_problem(const std::string& name) {
  if (name.empty()) return "a label name is empty";
  const auto ok_first = [](unsigned char c) { return std::isalpha(c) || c == '_'; };
  const auto ok_rest = [](unsigned char c) { return std::isalnum(c) || c == '_'; };
  if (!ok_first(static_cast<unsigned char>(name.front())) ||
      !std::all_of(name.begin() + 1, name.end(), [&](char c) { return ok_rest(c); })) {
    return "\"" + name + "\" is not a valid label name";
  }
  for (const char* reserved : {"target", "device", "port", "remote_device", "remote_port", "rail",
                               "op", "size", "tclass", "reason", "le", "path"}) {
    if (name == reserved) return "the label \"" + name + "\" is set by the probe itself";
  }
  return "";
}

std::string target_key(const std::string& address) {
  ListenAddress parsed;
  if (!parse_listen_address(address, parsed)) return address;
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(parsed.host, ec);
  std::string host;
  if (!ec) {
    host = ip.is_v6() ? "[" + ip.to_string() + "]" : ip.to_string();
  } else {
    host = parsed.host;
    std::transform(host.begin(), host.end(), host.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  return host + ":" + std::to_string(parsed.port);
}

TargetSelection first_per_address(const std::vector<Target>& entries) {
  TargetSelection out;
  std::map<std::string, std::size_t> first;  // target_key -> index of its first entry
  std::set<std::string> conflicting;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Target& t = entries[i];
    const auto [it, fresh] = first.try_emplace(target_key(t.address), i);
    if (fresh) {
      out.kept.push_back(i);
      continue;
    }
    const Target& kept = entries[it->second];
    if (t.labels != kept.labels || t.classes != kept.classes || t.rail != kept.rail) {
      conflicting.insert(kept.address);
    }
  }
  out.conflicting.assign(conflicting.begin(), conflicting.end());
  return out;
}

Result<std::vector<Target>> parse_file_sd(const std::string& text, const std::string& source) {
  const auto fail = [&](const YAML::Mark& mark, const std::string& what) {
    std::string where = source;
    if (mark.line >= 0) {
      where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    return Error{EINVAL, where + ": " + what};
  };
  YAML::Node root;
  try {
    root = load_yaml(text);
  } catch (const YAML::Exception& e) {
    return fail(e.mark, e.msg);
  }
  std::vector<Target> out;
  if (root.IsNull()) return out;
  if (!root.IsSequence()) return fail(root.Mark(), "expected a list of target groups");
  for (const auto& group : root) {
    if (!group.IsMap()) return fail(group.Mark(), "expected a mapping with targets and labels");
    std::vector<std::string> addresses;
    std::map<std::string, std::string> labels;
    std::string rail;  // the meta label __rail__
    for (const auto& kv : group) {
      const std::string key = kv.first.Scalar();
      if (key == "targets") {
        if (!kv.second.IsSequence()) return fail(kv.second.Mark(), "targets: expected a list");
        for (const auto& t : kv.second) {
          if (!t.IsScalar() || !valid_target_address(t.Scalar())) {
            return fail(t.Mark(), "targets: expected host:port");
          }
          addresses.push_back(t.Scalar());
        }
      } else if (key == "labels") {
        if (kv.second.IsNull()) continue;
        if (!kv.second.IsMap()) return fail(kv.second.Mark(), "labels: expected a mapping");
        for (const auto& l : kv.second) {
          const std::string name = l.first.Scalar();
          if (!l.second.IsScalar())
            return fail(l.second.Mark(), "labels." + name + ": expected a string");
          if (name == "__rail__") {
            rail = l.second.Scalar();
            continue;
          }
          if (name.rfind("__", 0) == 0) continue;
          if (std::string p = target_label_problem(name); !p.empty())
            return fail(l.first.Mark(), p);
          labels[name] = l.second.Scalar();
        }
      } else {
        return fail(kv.first.Mark(), key + ": unknown key (expected targets, labels)");
      }
    }
    for (auto& a : addresses) out.push_back(Target{std::move(a), labels, {}, rail});
  }
  return out;
}

}  // namespace rdma_exporter::probe
