#include "eval/quant_report.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <mutex>

#include "base/thread_pool.h"
#include "model/model.h"
#include "quant/error_stats.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// A tensor decoded to floats, and its round trip through `type`.
struct Decoded {
  std::vector<float> exact, quantized;
};

Decoded decode_both(const GgufFile& f, const GgufTensorInfo& t, DType type) {
  const TensorData bytes = f.read(t);  // computed, for a tensor of a model directory
  const int64_t cols = t.ne[0], rows = t.num_elements() / cols;
  Decoded d;
  d.exact.resize(static_cast<size_t>(t.num_elements()));
  d.quantized.resize(d.exact.size());
  std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(type, cols)));
  const int64_t in_row = dtype_row_bytes(t.dtype, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float* x = d.exact.data() + r * cols;
    dequantize_row(t.dtype, bytes.data() + r * in_row, x, cols);
    quantize_row(type, x, q.data(), cols);
    dequantize_row(type, q.data(), d.quantized.data() + r * cols, cols);
  }
  return d;
}

// Accumulates, per weight, the error of the product on the observed activations.
class OutputErrorObserver : public MatmulObserver {
 public:
  OutputErrorObserver(const GgufFile& file, std::map<std::string, DType> types, ThreadPool& pool)
      : file_(file), types_(std::move(types)), pool_(pool) {}

  void on_matmul(const std::string& name, const WeightMatrix& w, const float* x, int64_t n) override {
    const GgufTensorInfo* t = file_.find_tensor(name);
    const auto type = types_.find(name);
    if (t == nullptr || type == types_.end()) return;
    const Decoded d = decode_both(file_, *t, type->second);
    const int64_t rows = w.rows(), cols = w.cols();
    std::mutex mu;
    double ref = 0, err = 0;
    pool_.parallel_for(rows, 1, 16, [&](int64_t r0, int64_t r1) {
      double lref = 0, lerr = 0;
      for (int64_t r = r0; r < r1; ++r) {
        const float* we = d.exact.data() + r * cols;
        const float* wq = d.quantized.data() + r * cols;
        for (int64_t i = 0; i < n; ++i) {
          const float* xi = x + i * cols;
          double ye = 0, yq = 0;
          for (int64_t c = 0; c < cols; ++c) ye += static_cast<double>(we[c]) * xi[c], yq += static_cast<double>(wq[c]) * xi[c];
          lref += ye * ye;
          lerr += (ye - yq) * (ye - yq);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ref += lref;
      err += lerr;
    });
    auto& acc = errors_[name];
    acc.first += ref;
    acc.second += err;
  }

  double relative_rms(const std::string& name) const {
    const auto it = errors_.find(name);
    if (it == errors_.end() || it->second.first <= 0) return -1;
    return std::sqrt(it->second.second / it->second.first);
  }

 private:
  const GgufFile& file_;
  std::map<std::string, DType> types_;
  ThreadPool& pool_;
  std::map<std::string, std::pair<double, double>> errors_;  // sum y^2, sum (y - yq)^2
};

TensorQuantReport weight_report(const GgufFile& f, const GgufTensorInfo& t, DType type) {
  TensorQuantReport r;
  r.name = t.name;
  r.type = type;
  const Decoded d = decode_both(f, t, type);
  QuantErrorStats s;
  s.add(d.exact.data(), d.quantized.data(), static_cast<int64_t>(d.exact.size()));
  r.relative_rms = s.relative_rms();
  r.max_abs = s.max_abs_err;
  r.snr_db = s.snr_db();
  r.kurtosis = s.excess_kurtosis();
  const double n = static_cast<double>(s.count);
  OutlierCounter oc;
  oc.mean = s.sum / n;
  oc.stddev = std::sqrt(std::max(0.0, s.sum2 / n - oc.mean * oc.mean));
  oc.add(d.exact.data(), static_cast<int64_t>(d.exact.size()));
  r.outlier_share = oc.share();
  return r;
}

// The requested type, or the nearest one that fits the rows (as quantize would choose).
DType fitting_type(DType want, int64_t cols) {
  if (row_fits_blocks(want, cols)) return want;
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kF16}) {
    if (row_fits_blocks(t, cols)) return t;
  }
  return DType::kF32;
}

}  // namespace

Result<QuantReport> quant_report(const std::string& model_path, const QuantReportOptions& o) {
  if (!can_quantize(o.type)) return invalid_argument(fmt::format("cannot quantize to {}", dtype_name(o.type)));
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(model_path));
  const GgufFile& f = model->file();
  QuantReport rep;
  std::map<std::string, DType> types;
  for (const auto& t : f.tensors()) {
    if (t.n_dims < 2) continue;
    const DType type = fitting_type(o.type, t.ne[0]);
    TensorQuantReport r = weight_report(f, t, type);
    r.fits = type == o.type;
    types[t.name] = type;
    rep.tensors.push_back(std::move(r));
  }
  if (!o.tokens.empty()) {
    std::vector<int32_t> tokens = o.tokens;
    const int64_t n = std::min<int64_t>({static_cast<int64_t>(tokens.size()), o.max_tokens, model->config().n_ctx_train});
    if (n < 1) return invalid_argument("the text has no tokens");
    tokens.resize(static_cast<size_t>(n));
    ThreadPool pool(o.threads);
    OutputErrorObserver observer(f, types, pool);
    KvCache kv(model->kv_config(static_cast<int32_t>((n + 15) / 16), 16, DType::kF32, DType::kF32));
    std::vector<int32_t> table;
    for (int32_t b = 0; b < kv.num_blocks(); ++b) table.push_back(b);
    ForwardState state;
    state.set_observer(&observer);
    ForwardOutput out;
    SequenceChunk chunk{tokens, 0, table, LogitsWanted::kAll};
    LLMS_RETURN_IF_ERROR(model->forward({&chunk, 1}, kv, state, pool, out));
    for (auto& r : rep.tensors) r.output_relative_rms = observer.relative_rms(r.name);
    rep.text_tokens = n;
  }
  for (auto& r : rep.tensors) r.flagged = r.relative_rms > o.tolerance || r.output_relative_rms > o.tolerance;
  return rep;
}

}  // namespace llms
