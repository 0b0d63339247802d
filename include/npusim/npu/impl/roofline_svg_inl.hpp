// Definitions for npusim/npu/roofline_svg.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <cmath>
#include <sstream>

#include "npusim/config.hpp"
#include "npusim/npu/roofline_svg.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC const char* bound_colour(Bound b) {
  switch (b) {
    case Bound::compute: return "#1f77b4";
    case Bound::dma: return "#ff7f0e";
    case Bound::sram: return "#d62728";
    default: return "#7f7f7f";
  }
}

NPUSIM_FUNC std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

NPUSIM_FUNC std::string roofline_svg(const Estimate& e, const std::string& title) {
  const double W = 820, H = 520, L = 80, R = 170, T = 50, B = 60;
  const double peak = 2 * e.peak_macs_per_s > 0 ? 2 * e.peak_macs_per_s : 1e12;  // ops/s
  const double bw = e.dma_gb_per_s * 1e9;                                        // bytes/s
  struct Pt {
    double x, y, share;
    Bound b;
    std::string label;
  };
  std::vector<Pt> pts;
  double xmax_data = 0;
  for (const auto& k : e.kernels) {
    if (k.placement != Placement::npu || k.time_ns <= 0) continue;
    const double ops = 2.0 * static_cast<double>(k.macs) + k.vector_ops;
    if (ops <= 0) continue;
    const double x = k.dma.total() > 0 ? ops / static_cast<double>(k.dma.total()) : -1;
    xmax_data = std::max(xmax_data, x);
    pts.push_back({x, ops / (k.time_ns * 1e-9), e.latency_ns > 0 ? k.time_ns / e.latency_ns : 0, k.bound,
                   k.kind + " " + k.name + ": " + kernel_brief(k)});
  }
  const double ridge = peak / bw;
  const double x0 = std::pow(10, std::floor(std::log10(std::max(1e-2, std::min(ridge, 0.1))))),
               x1 = std::pow(10, std::ceil(std::log10(std::max({ridge * 10, xmax_data * 2, 10.0}))));
  const double y1 = std::pow(10, std::ceil(std::log10(peak * 1.5))), y0 = y1 / 1e6;
  for (auto& p : pts)
    if (p.x < 0) p.x = x1;  // no DRAM traffic: at the right edge
  auto px = [&](double x) { return L + (W - L - R) * (std::log10(std::clamp(x, x0, x1)) - std::log10(x0)) / (std::log10(x1) - std::log10(x0)); };
  auto py = [&](double y) { return H - B - (H - T - B) * (std::log10(std::clamp(y, y0, y1)) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << xml_escape(title) << "</text>\n";
  for (double x = x0; x <= x1 * 1.0001; x *= 10) {
    s << "<line x1=\"" << px(x) << "\" y1=\"" << T << "\" x2=\"" << px(x) << "\" y2=\"" << H - B << "\" stroke=\"#eee\"/>\n";
    s << "<text x=\"" << px(x) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << format("%g", x) << "</text>\n";
  }
  for (double y = y0; y <= y1 * 1.0001; y *= 10) {
    s << "<line x1=\"" << L << "\" y1=\"" << py(y) << "\" x2=\"" << W - R << "\" y2=\"" << py(y) << "\" stroke=\"#eee\"/>\n";
    s << "<text x=\"" << L - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">" << format("%g", y * 1e-9) << "</text>\n";
  }
  s << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B << "\" fill=\"none\" stroke=\"black\"/>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">arithmetic intensity (operations per DRAM byte)</text>\n";
  s << "<text x=\"18\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << (T + H - B) / 2
    << ")\">attained GOP/s</text>\n";
  // The roof: bandwidth slope up to the ridge, then the compute peak.
  s << "<polyline class=\"roof\" fill=\"none\" stroke=\"black\" stroke-width=\"2\" points=\"" << px(x0) << "," << py(bw * x0) << " " << px(ridge) << ","
    << py(peak) << " " << px(x1) << "," << py(peak) << "\"/>\n";
  s << "<text x=\"" << px(ridge) + 6 << "\" y=\"" << py(peak) - 6 << "\">peak " << format("%.2f", peak * 1e-12) << " TOPS, ridge "
    << format("%.3g", ridge) << " op/B</text>\n";
  for (const auto& p : pts) {
    const double r = 2.5 + 14 * std::sqrt(p.share);
    s << "<circle cx=\"" << px(p.x) << "\" cy=\"" << py(p.y) << "\" r=\"" << r << "\" fill=\"" << bound_colour(p.b)
      << "\" fill-opacity=\"0.55\" stroke=\"" << bound_colour(p.b) << "\"><title>" << xml_escape(p.label) << "</title></circle>\n";
  }
  int row = 0;
  for (Bound b : {Bound::compute, Bound::dma, Bound::sram}) {
    const double y = T + 20 + 20 * row++;
    s << "<circle cx=\"" << W - R + 20 << "\" cy=\"" << y - 4 << "\" r=\"6\" fill=\"" << bound_colour(b) << "\" fill-opacity=\"0.55\"/>\n";
    s << "<text x=\"" << W - R + 32 << "\" y=\"" << y << "\">" << bound_name(b) << "-bound</text>\n";
  }
  s << "<text x=\"" << W - R + 12 << "\" y=\"" << T + 90 << "\">circle area: share</text>\n";
  s << "<text x=\"" << W - R + 12 << "\" y=\"" << T + 106 << "\">of the latency</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace npusim::inline NPUSIM_ABI::npu
