#include "metrics/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace llms {

namespace {
void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string format_value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string labels_text(const std::vector<std::string>& names, const std::vector<std::string>& values,
                        const std::string& extra = "") {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    s += (s.empty() ? "" : ",") + names[i] + "=\"" + escape_label(values[i]) + "\"";
  }
  if (!extra.empty()) s += (s.empty() ? "" : ",") + extra;
  return s.empty() ? "" : "{" + s + "}";
}
}  // namespace

void Counter::inc(double v) { atomic_add(value_, v); }
void Gauge::add(double v) { atomic_add(value_, v); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  LLMS_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram bounds must ascend");
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  atomic_add(sum_, v);
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t c = 0;
  for (size_t j = 0; j <= i && j <= bounds_.size(); ++j) c += buckets_[j].load(std::memory_order_relaxed);
  return c;
}

double Histogram::quantile(double q) const {
  const uint64_t n = count();
  if (n == 0) return 0.0;
  const double target = q * static_cast<double>(n);
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    const uint64_t b = buckets_[i].load(std::memory_order_relaxed);
    if (static_cast<double>(cum + b) >= target && b > 0) {
      if (i == bounds_.size()) return bounds_.empty() ? 0.0 : bounds_.back();
      const double lo = i == 0 ? 0.0 : bounds_[i - 1];
      return lo + (bounds_[i] - lo) * (target - static_cast<double>(cum)) / static_cast<double>(b);
    }
    cum += b;
  }
  return bounds_.empty() ? 0.0 : bounds_.back();
}

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
          0.75,  1.0,    1.5,   2.0,  3.0,  5.0,  7.5,  10.0, 15.0, 20.0, 30.0, 60.0, 120.0};
}

std::vector<double> count_buckets(double max) {
  std::vector<double> b;
  for (double v = 1; v <= max; v *= 2) b.push_back(v);
  return b;
}

template <typename M>
M& Family<M>::with(const std::vector<std::string>& values) {
  LLMS_CHECK(values.size() == label_names_.size(), "label count mismatch");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) return *it->second;
  std::unique_ptr<M> m;
  if constexpr (std::is_same_v<M, Histogram>) {
    m = std::make_unique<M>(bounds_);
  } else {
    m = std::make_unique<M>();
  }
  M& ref = *m;
  children_.emplace(values, std::move(m));
  return ref;
}

template <typename M>
std::vector<std::pair<std::vector<std::string>, const M*>> Family<M>::children() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::vector<std::string>, const M*>> out;
  for (const auto& [k, v] : children_) out.emplace_back(k, v.get());
  return out;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Registry::Entry& Registry::add(const std::string& name, const std::string& help, MetricType type) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) LLMS_CHECK(e->name != name, "metric registered twice: " + name);
  entries_.push_back(std::make_unique<Entry>());
  Entry& e = *entries_.back();
  e.name = name;
  e.help = help;
  e.type = type;
  return e;
}

Counter& Registry::counter(const std::string& name, const std::string& help) {
  return counter_family(name, help, {}).with({});
}
Gauge& Registry::gauge(const std::string& name, const std::string& help) { return gauge_family(name, help, {}).with({}); }
Histogram& Registry::histogram(const std::string& name, const std::string& help, std::vector<double> bounds) {
  return histogram_family(name, help, {}, std::move(bounds)).with({});
}

Family<Counter>& Registry::counter_family(const std::string& name, const std::string& help,
                                          std::vector<std::string> labels) {
  Entry& e = add(name, help, MetricType::kCounter);
  e.counters = std::make_unique<Family<Counter>>(std::move(labels));
  return *e.counters;
}
Family<Gauge>& Registry::gauge_family(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  Entry& e = add(name, help, MetricType::kGauge);
  e.gauges = std::make_unique<Family<Gauge>>(std::move(labels));
  return *e.gauges;
}
Family<Histogram>& Registry::histogram_family(const std::string& name, const std::string& help,
                                              std::vector<std::string> labels, std::vector<double> bounds) {
  Entry& e = add(name, help, MetricType::kHistogram);
  e.histograms = std::make_unique<Family<Histogram>>(std::move(labels), std::move(bounds));
  return *e.histograms;
}

namespace {

// The label text of one series: the registry's constant labels, then the family's.
std::string series_labels(const std::string& constant, const std::vector<std::string>& names,
                          const std::vector<std::string>& values, const std::string& extra = "") {
  std::string inner = labels_text(names, values, extra);
  if (constant.empty()) return inner;
  if (inner.empty()) return "{" + constant + "}";
  return "{" + constant + "," + inner.substr(1);
}

}  // namespace

void Registry::render_entry(const Entry& e, const std::string& name, const std::string& constant, std::string& out) {
  if (e.counters) {
    for (const auto& [labels, c] : e.counters->children())
      out += name + series_labels(constant, e.counters->label_names(), labels) + " " + format_value(c->value()) + "\n";
  } else if (e.gauges) {
    for (const auto& [labels, g] : e.gauges->children())
      out += name + series_labels(constant, e.gauges->label_names(), labels) + " " + format_value(g->value()) + "\n";
  } else {
    const auto& names = e.histograms->label_names();
    for (const auto& [labels, h] : e.histograms->children()) {
      for (size_t i = 0; i < h->bounds().size(); ++i) {
        out += name + "_bucket" + series_labels(constant, names, labels, "le=\"" + format_value(h->bounds()[i]) + "\"") +
               " " + std::to_string(h->cumulative(i)) + "\n";
      }
      out += name + "_bucket" + series_labels(constant, names, labels, "le=\"+Inf\"") + " " + std::to_string(h->count()) +
             "\n";
      out += name + "_sum" + series_labels(constant, names, labels) + " " + format_value(h->sum()) + "\n";
      out += name + "_count" + series_labels(constant, names, labels) + " " + std::to_string(h->count()) + "\n";
    }
  }
}

std::string Registry::render() const {
  const LabeledRegistry self{this, {}};
  return render_all({&self, 1});
}

std::vector<std::string> Registry::constant_labels(std::span<const LabeledRegistry> parts) {
  std::vector<std::string> constants;
  for (const auto& p : parts) {
    std::vector<std::string> names, values;
    for (const auto& [k, v] : p.labels) names.push_back(k), values.push_back(v);
    const std::string t = labels_text(names, values);
    constants.push_back(t.empty() ? t : t.substr(1, t.size() - 2));
  }
  return constants;
}

namespace {

const char* type_name(MetricType t) {
  return t == MetricType::kCounter ? "counter" : t == MetricType::kGauge ? "gauge" : "histogram";
}

}  // namespace

std::string Registry::render_all(std::span<const LabeledRegistry> parts) {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& p : parts) locks.emplace_back(p.registry->mu_);
  const std::vector<std::string> constants = constant_labels(parts);
  // Metric names in first-registration order across the parts, each once.
  std::vector<const Entry*> order;
  for (const auto& p : parts) {
    for (const auto& e : p.registry->entries_) {
      if (std::none_of(order.begin(), order.end(), [&](const Entry* o) { return o->name == e->name; })) order.push_back(e.get());
    }
  }
  std::string out;
  for (const Entry* first : order) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", first->name, first->help, first->name, type_name(first->type));
    for (size_t i = 0; i < parts.size(); ++i) {
      for (const auto& e : parts[i].registry->entries_) {
        if (e->name == first->name && e->type == first->type) render_entry(*e, e->name, constants[i], out);
      }
    }
  }
  return out;
}

std::string Registry::render_aliases(std::span<const LabeledRegistry> parts, std::span<const MetricAlias> aliases) {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& p : parts) locks.emplace_back(p.registry->mu_);
  const std::vector<std::string> constants = constant_labels(parts);
  std::string out;
  for (const MetricAlias& a : aliases) {
    std::string series;
    const Entry* first = nullptr;
    for (size_t i = 0; i < parts.size(); ++i) {
      for (const auto& e : parts[i].registry->entries_) {
        if (e->name != a.name || (first && e->type != first->type)) continue;
        if (!first) first = e.get();
        render_entry(*e, a.alias, constants[i], series);
      }
    }
    if (!first) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", a.alias, first->help, a.alias, type_name(first->type)) + series;
  }
  return out;
}

}  // namespace llms
