/*
 * loss: token cross-entropy over vocabulary logits, and its gradient.
 *
 * Labels equal to ignore or negative are not counted (padding). The loss
 * is summed (not averaged) over counted rows; the gradient is that of
 * scale x the summed loss, written over the logits.
 */
#ifndef LC_LOSS_H
#define LC_LOSS_H

#include <stdint.h>

/* logits [T, V], labels [T]. Returns the summed loss and sets *counted.
 * With grad non-zero, logits are replaced by d(scale * loss) / d logits
 * (zero rows for uncounted labels). */
double xent_fw_bw(float *logits, int64_t T, int V, const int32_t *labels, int32_t ignore,
                  float scale, int grad, int64_t *counted);

#endif
