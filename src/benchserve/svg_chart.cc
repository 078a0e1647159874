#include "benchserve/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace llms::benchserve {

namespace {

constexpr double kPanelW = 560, kPanelH = 400;
constexpr double kLeft = 70, kRight = 150, kTop = 50, kBottom = 60;  // plot margins in a panel
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string tick_label(double v) { return fmt::format("{:g}", v); }

// Maps data to pixels inside one panel.
struct Frame {
  double x0, y0, w, h, x_max, y_max;
  double px(double x) const { return x0 + (x_max > 0 ? x / x_max : 0) * w; }
  double py(double y) const { return y0 + h - (y_max > 0 ? y / y_max : 0) * h; }
};

void axes(std::string& s, const LineChart& c, const Frame& f, const std::vector<double>& xt,
          const std::vector<double>& yt) {
  s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#333"/>)" "\n",
                   f.x0, f.y0, f.w, f.h);
  for (size_t i = 0; i < xt.size(); ++i) {
    const double x = f.px(xt[i]);
    const std::string label = c.x_categories.empty() ? tick_label(xt[i]) : c.x_categories[i];
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#ddd"/>)" "\n", x, f.y0,
                     f.y0 + f.h);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="middle">{}</text>)" "\n", x,
                     f.y0 + f.h + 18, esc(label));
  }
  for (double v : yt) {
    const double y = f.py(v);
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#ddd"/>)" "\n", f.x0, y,
                     f.x0 + f.w);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="end">{}</text>)" "\n", f.x0 - 6,
                     y + 4, tick_label(v));
  }
  s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="13" text-anchor="middle">{}</text>)" "\n",
                   f.x0 + f.w / 2, f.y0 + f.h + 42, esc(c.x_label));
  s += fmt::format(
      R"svg(<text x="{0:.1f}" y="{1:.1f}" font-size="13" text-anchor="middle" transform="rotate(-90 {0:.1f} {1:.1f})">{2}</text>)svg"
      "\n",
      f.x0 - 50, f.y0 + f.h / 2, esc(c.y_label));
  s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="15" font-weight="bold" text-anchor="middle">{}</text>)"
                   "\n",
                   f.x0 + f.w / 2, f.y0 - 18, esc(c.title));
}

void lines_and_legend(std::string& s, const LineChart& c, const Frame& f) {
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& sr = c.series[i];
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string pts;
    for (const auto& [x, y] : sr.points) pts += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(y));
    if (!pts.empty()) pts.pop_back();
    s += fmt::format(R"(<polyline data-series="{}" points="{}" fill="none" stroke="{}" stroke-width="2"/>)" "\n",
                     esc(sr.name), pts, color);
    for (const auto& [x, y] : sr.points) {
      s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)" "\n", f.px(x), f.py(y), color);
    }
    const double ly = f.y0 + 10 + 20 * static_cast<double>(i), lx = f.x0 + f.w + 12;
    s += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/>)" "\n",
                     lx, ly, lx + 20, ly, color);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12">{}</text>)" "\n", lx + 26, ly + 4, esc(sr.name));
  }
}

void panel(std::string& s, const LineChart& c, double offset_x) {
  double x_max = 0, y_max = 0;
  for (const auto& sr : c.series) {
    for (const auto& [x, y] : sr.points) {
      if (std::isfinite(x)) x_max = std::max(x_max, x);
      if (std::isfinite(y)) y_max = std::max(y_max, y);
    }
  }
  std::vector<double> xt;
  if (c.x_categories.empty()) {
    xt = nice_ticks(x_max);
  } else {
    for (size_t i = 0; i < c.x_categories.size(); ++i) xt.push_back(static_cast<double>(i));
  }
  const std::vector<double> yt = nice_ticks(y_max);
  const double x_end = c.x_categories.empty() ? xt.back() : std::max(1.0, static_cast<double>(xt.size() - 1));
  const Frame f{offset_x + kLeft, kTop + 30, kPanelW - kLeft - kRight, kPanelH - kTop - kBottom, x_end, yt.back()};
  axes(s, c, f, xt, yt);
  lines_and_legend(s, c, f);
}

}  // namespace

std::vector<double> nice_ticks(double max_value, int target_count) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return {0, 1};
  const double raw = max_value / target_count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> t;
  for (int i = 0;; ++i) {
    const double v = step * i;
    t.push_back(v);
    if (v >= max_value * (1 - 1e-9)) break;
  }
  return t;
}

std::string render_svg(const std::vector<LineChart>& charts, const std::string& title) {
  const double width = kPanelW * static_cast<double>(std::max<size_t>(1, charts.size()));
  const double height = kPanelH + 30;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif">)"
      "\n",
      width, height);
  s += fmt::format(R"(<rect width="{:.0f}" height="{:.0f}" fill="white"/>)" "\n", width, height);
  s += fmt::format(R"(<text x="{:.1f}" y="24" font-size="17" text-anchor="middle">{}</text>)" "\n", width / 2,
                   esc(title));
  for (size_t i = 0; i < charts.size(); ++i) panel(s, charts[i], kPanelW * static_cast<double>(i));
  s += "</svg>\n";
  return s;
}

}  // namespace llms::benchserve
