#pragma once
/** Losses with optax's names and conventions (per-example values; reduce them
 *  yourself, e.g. with mean). */
#include "tsr/array.h"

namespace tsr::nn {

/** optax.softmax_cross_entropy_with_integer_labels: logsumexp(logits) -
 *  logits[label] over the last dimension, per position: logits [..., V], labels [...]
 *  (integer, in [0, V)) -> [...]. Stable (logsumexp); a custom_vjp whose backward is
 *  ct * (softmax(logits) - one_hot(labels)), saving only logits and the logsumexp. The
 *  label's logit is read as sum(logits * one_hot(labels)), so a vocab-sharded logits
 *  needs one small all-reduce, not a gather. A label outside [0, V) picks no logit (its
 *  loss is the logsumexp alone): labels are not checked on the device. TypeError for
 *  non-integer labels or non-float logits; ValueError when labels' shape is not
 *  logits' without its last dimension. */
Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels);

/** The mean squared error mean((pred - target)^2) over every element, a scalar.
 *  ValueError when the shapes differ (no broadcasting: it would hide a mistake). */
Array mse(const Array& pred, const Array& target);

}  // namespace tsr::nn
