#include "plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace train {
namespace {

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write '" + path + "'");
  return f;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks.
double tick_step(double span, int count) {
  double raw = span / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

}  // namespace

void write_loss_csv(const std::string& path, const std::vector<LossPoint>& points) {
  auto f = open_out(path);
  f << "step,loss,tokens_per_s\n";
  // Nine significant digits print a float32 loss exactly (resumed runs compare bitwise).
  char buf[64];
  for (const auto& p : points) {
    std::snprintf(buf, sizeof buf, "%ld,%.9g,%.1f\n", p.step, p.loss, p.tokens_per_s);
    f << buf;
  }
}

void write_loss_svg(const std::string& path, const std::vector<LossPoint>& points,
                    const std::string& title, double reference,
                    const std::string& reference_label) {
  const double W = 720, H = 420, L = 70, R = 20, T = 40, B = 55;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (!points.empty()) {
    x0 = static_cast<double>(points.front().step);
    x1 = std::max(x0 + 1, static_cast<double>(points.back().step));
    y1 = reference;
    for (const auto& p : points)
      if (std::isfinite(p.loss)) y1 = std::max(y1, p.loss);
    y1 = y1 > 0 ? y1 * 1.05 : 1;
  }
  auto X = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='15'>" << escape(title)
    << "</text>\n";
  // Grid and ticks.
  double ys = tick_step(y1 - y0, 6), xs = tick_step(x1 - x0, 8);
  for (double y = y0; y <= y1 + 1e-9; y += ys)
    s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(y) << "' y2='" << Y(y)
      << "' stroke='#e5e5e5'/><text x='" << L - 6 << "' y='" << Y(y) + 4 << "' text-anchor='end'>"
      << fmt(y) << "</text>\n";
  for (double x = std::ceil(x0 / xs) * xs; x <= x1 + 1e-9; x += xs)
    s << "<line x1='" << X(x) << "' x2='" << X(x) << "' y1='" << T << "' y2='" << H - B
      << "' stroke='#e5e5e5'/><text x='" << X(x) << "' y='" << H - B + 16
      << "' text-anchor='middle'>" << fmt(x) << "</text>\n";
  s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << H - B << "' y2='" << H - B
    << "' stroke='black'/><line x1='" << L << "' x2='" << L << "' y1='" << T << "' y2='" << H - B
    << "' stroke='black'/>\n"
    << "<text x='" << (L + W - R) / 2 << "' y='" << H - 12 << "' text-anchor='middle'>step</text>\n"
    << "<text transform='translate(18," << (T + H - B) / 2
    << ") rotate(-90)' text-anchor='middle'>training loss (nats per character)</text>\n";
  if (reference > 0)
    s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(reference) << "' y2='"
      << Y(reference) << "' stroke='#d62728' stroke-dasharray='6,4'/><text x='" << W - R - 4
      << "' y='" << Y(reference) - 6 << "' text-anchor='end' fill='#d62728'>"
      << escape(reference_label) << "</text>\n";
  s << "<polyline fill='none' stroke='#1f77b4' stroke-width='1.5' points='";
  for (const auto& p : points)
    if (std::isfinite(p.loss)) s << X(static_cast<double>(p.step)) << ',' << Y(p.loss) << ' ';
  s << "'/>\n</svg>\n";
  auto f = open_out(path);
  f << s.str();
}

}  // namespace train
