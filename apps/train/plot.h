#pragma once
// The loss curve as files a user can open: loss.csv for tools, loss.svg for a browser.
#include <string>
#include <vector>

namespace train {

/** One logged step. */
struct LossPoint {
  long step;           /**< optimizer step, from 1 */
  double loss;         /**< mean training loss of that step's batch (nats per token) */
  double tokens_per_s; /**< throughput of that step */
};

/** Writes `step,loss,tokens_per_s` rows with a header line. */
void write_loss_csv(const std::string& path, const std::vector<LossPoint>& points);

/** Writes an SVG line chart of loss against step: axes with ticks and labels, a title,
 *  and a dashed reference line at `reference` (e.g. the unigram entropy) when > 0. */
void write_loss_svg(const std::string& path, const std::vector<LossPoint>& points,
                    const std::string& title, double reference, const std::string& reference_label);

}  // namespace train
