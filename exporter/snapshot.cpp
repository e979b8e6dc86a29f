#include "exporter/snapshot.hpp"

#include "common/log.hpp"
#include "exporter/formats/text.hpp"

namespace rdma_exporter {

bool Snapshot::all_succeeded() const {
  for (const auto& o : outcomes) {
    if (!o.errors.empty()) return false;
  }
  return true;
}

std::shared_ptr<Snapshot> Snapshot::only(
    const std::set<std::string, std::less<>>& collectors) const {
  auto out = std::make_shared<Snapshot>();
  out->taken = taken;
  std::vector<bool> keep{true};  // by tag; 0: the exporter's own
  for (const auto& o : outcomes) {
    keep.push_back(collectors.contains(o.name));
    if (keep.back()) out->outcomes.push_back(o);
  }
  for (std::size_t f = 0; f < families.size(); ++f) {
    const auto& family = families[f];
    const std::vector<uint16_t>* family_tags = f < tags.size() ? &tags[f] : nullptr;
    prometheus::MetricFamily kept{family.name, family.help, family.type, {}};
    std::vector<uint16_t> kept_tags;
    for (std::size_t m = 0; m < family.metric.size(); ++m) {
      const uint16_t tag =
          family_tags != nullptr && m < family_tags->size() ? (*family_tags)[m] : 0;
      if (tag < keep.size() && !keep[tag]) continue;
      kept.metric.push_back(family.metric[m]);
      kept_tags.push_back(tag);
    }
    if (kept.metric.empty() && !family.metric.empty()) continue;
    out->families.push_back(std::move(kept));
    out->tags.push_back(std::move(kept_tags));
  }
  try {
    out->text = render_text(out->families);
  } catch (const std::exception& e) {
    log::error(std::string("rendering the exposition failed: ") + e.what());
  }
  return out;
}

}  // namespace rdma_exporter
