// Prometheus-style metrics: counters, gauges and histograms, optionally labelled,
// held in a Registry that renders the text exposition format (version 0.0.4).
//
// Thread-safety: every metric may be updated from any thread without locks on the hot
// path (atomics); families with labels take a mutex only to find or create a child.
// render() may run concurrently with updates.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace llms {

class Counter {
 public:
  void inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending; +Inf implied
  void observe(double v);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative count of observations <= bounds()[i] (i == bounds().size(): all).
  uint64_t cumulative(size_t i) const;
  // Estimated quantile (linear within the bucket), for benchmarks and logs.
  double quantile(double q) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket, not cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
};

// Buckets for latencies in seconds, from 1 ms to 2 minutes.
std::vector<double> latency_buckets();
// Buckets for counts (batch sizes, tokens per step), powers of two up to `max`.
std::vector<double> count_buckets(double max);

enum class MetricType { kCounter, kGauge, kHistogram };

// A metric name with one child per label value set.
template <typename M>
class Family {
 public:
  Family(std::vector<std::string> label_names, std::vector<double> bounds = {})
      : label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}
  M& with(const std::vector<std::string>& label_values);
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Snapshot of children for rendering.
  std::vector<std::pair<std::vector<std::string>, const M*>> children() const;

 private:
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

class Registry;

// A metric shown a second time under another name (another server's, for tools that
// read those names).
struct MetricAlias {
  std::string name;   // ours
  std::string alias;  // theirs
};

// A registry and the labels render_all() adds to each of its series.
struct LabeledRegistry {
  const Registry* registry = nullptr;
  std::vector<std::pair<std::string, std::string>> labels;
};

class Registry {
 public:
  Counter& counter(const std::string& name, const std::string& help);
  Gauge& gauge(const std::string& name, const std::string& help);
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds);
  Family<Counter>& counter_family(const std::string& name, const std::string& help, std::vector<std::string> labels);
  Family<Gauge>& gauge_family(const std::string& name, const std::string& help, std::vector<std::string> labels);
  Family<Histogram>& histogram_family(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels, std::vector<double> bounds);

  // Prometheus text format, metrics in registration order.
  std::string render() const;
  // Several registries as one exposition, each with labels added to all its series
  // (a version's engine metrics under version="v2"): a metric name appears once, with
  // the series of every registry that has it.
  static std::string render_all(std::span<const LabeledRegistry> parts);
  // The metrics of `aliases` found in the parts, each under its alias (and its own help
  // and type), with the parts' labels; aliases of absent metrics are left out.
  static std::string render_aliases(std::span<const LabeledRegistry> parts, std::span<const MetricAlias> aliases);

 private:
  struct Entry {
    std::string name, help;
    MetricType type;
    std::unique_ptr<Family<Counter>> counters;
    std::unique_ptr<Family<Gauge>> gauges;
    std::unique_ptr<Family<Histogram>> histograms;
  };
  Entry& add(const std::string& name, const std::string& help, MetricType type);
  static void render_entry(const Entry& e, const std::string& name, const std::string& constant_labels, std::string& out);
  static std::vector<std::string> constant_labels(std::span<const LabeledRegistry> parts);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace llms
