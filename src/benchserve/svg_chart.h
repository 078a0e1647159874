// Line charts as SVG text, drawn by hand (a chart is a few hundred lines of markup):
// axes with ticks and units, one polyline with point markers per series, a legend.
// Several charts sit side by side in one figure. Each series' polyline carries
// data-series="NAME" so that tests and scripts can find it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace llms::benchserve {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); drawn in the order given
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;  // with units, e.g. "throughput (req/s)"
  // When set, x values are positions 0..n-1 labelled with these (e.g. rates with "inf").
  std::vector<std::string> x_categories;
  std::vector<ChartSeries> series;
};

// Round tick positions covering [0, max_value]: steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double max_value, int target_count = 5);

// One SVG document with `charts` left to right under `title`.
std::string render_svg(const std::vector<LineChart>& charts, const std::string& title);

}  // namespace llms::benchserve
