/*
 * act: the activation functions of the feed-forward layers, forward and
 * backward, optionally gated (T5's gated feed-forward: act(a) * b).
 *
 *   ACT_GELU_TANH  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), written
 *                  as x / (1 + exp(-2y)) with ops/vmath.h's exp (about 2 ulp)
 *   ACT_GELU       0.5 x (1 + erf(x / sqrt 2)) (the erf form; BART's "gelu"),
 *                  erf within 1.5e-7 (ops/vmath.h)
 *   ACT_RELU       max(x, 0)
 *   ACT_SILU       x / (1 + exp(-x)) (same exp)
 *
 * act_parse maps the names configs use (Hugging Face's ACT2FN keys) to
 * these: gelu_new, gelu_fast and gelu_pytorch_tanh are the tanh form,
 * gelu the erf form, swish is silu.
 */
#ifndef LC_ACT_H
#define LC_ACT_H

#include <stdint.h>

enum lc_act { ACT_GELU_TANH, ACT_GELU, ACT_RELU, ACT_SILU };

/* -1 if the name is not one of the above. */
int act_parse(const char *name);
/* The canonical name ("gelu_new", "gelu", "relu", "silu"). */
const char *act_name(enum lc_act a);

/* out[i] = act(a[i]) * (b ? b[i] : 1), n values; out may equal a or b. */
void act_fw(enum lc_act k, const float *a, const float *b, int64_t n, float *out);

/* Given dout [n] of the forward above: da[i] = dout[i] * (b ? b[i] : 1) *
 * act'(a[i]) and, with b, db[i] = dout[i] * act(a[i]) (written, not added;
 * da may equal dout). */
void act_bw(enum lc_act k, const float *a, const float *b, const float *dout, int64_t n,
            float *da, float *db);

#endif
