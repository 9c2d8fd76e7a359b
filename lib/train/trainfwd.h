/*
 * trainfwd: the LOCOST model as a training graph: forward with every
 * activation kept, and the exact backward pass of every encoder and
 * decoder operation, S4D kernel parameters included.
 *
 * Semantics are those of lib/locost.c (encoder) and lib/decoder.c
 * (decoder, teacher-forced): the encoder output equals locost_encode's
 * and the logits of row t equal decoder_step's after feeding
 * [start, tgt[0..t-1]], up to float rounding (and the inference kernel
 * truncation, below 1e-7 relative). The S4D kernels are computed in
 * double over the full length (no truncation); the convolution and its
 * backward run through FFTs (fftw3f), and the kernel gradient dK is the
 * cross-correlation of the output gradient with the input, also by FFT.
 *
 * Parameters live in one flat float array (tf_model describes it: the
 * Hugging Face names, shapes and offsets); a gradient array has the same
 * layout. tf_view gives named pointers into either.
 *
 * The kernels depend only on the parameters, not on the example, so a
 * training step computes them once up to the longest source
 * (tf_kernels), each example accumulates its dK, and tf_kernels_backward
 * turns the summed dK into gradients of log_dt, inv_A_real, A_imag, B, C.
 */
#ifndef LC_TRAINFWD_H
#define LC_TRAINFWD_H

#include <stdint.h>

#include "base/err.h"
#include "arch/model.h"

typedef struct tf_enc_layer {
	float *prenorm;                 /* [d] */
	float *wq, *bq;                 /* [d, d], [d]; NULL without gating */
	float *wk, *bk;                 /* [d, d], [d] */
	float *D;                       /* [d] */
	float *log_dt;                  /* [d] */
	float *inv_A_real, *A_imag;     /* [d, N2] */
	float *B;                       /* [d, N2, 2] */
	float *C;                       /* [nch, d, N2, 2] */
	float *wo, *bo;                 /* [d, d], [d] */
	float *ln;                      /* [d] */
	float *wi0, *wi1;               /* [d_ff, d]; wi1 NULL when not gated (wi0 is "wi") */
	float *wff;                     /* [d, d_ff] */
} tf_enc_layer;

typedef struct tf_dec_layer {
	float *sa_ln;                   /* [d] */
	float *sa_q, *sa_k, *sa_v;      /* [inner, d] */
	float *sa_o;                    /* [d, inner] */
	float *ca_ln;                   /* [d] */
	float *ca_q, *ca_k, *ca_v;      /* [inner, d] */
	float *ca_o;                    /* [d, inner] */
	float *ff_ln;                   /* [d] */
	float *wi0, *wi1;               /* [d_ff, d]; wi1 NULL when not gated */
	float *wo;                      /* [d, d_ff] */
} tf_dec_layer;

typedef struct tf_view {
	float *shared;                  /* [V, d] */
	float *lm_head;                 /* [V, d]; == shared when tied */
	float *enc_final;               /* [d] */
	float *rel_bias;                /* [buckets, heads] */
	float *dec_final;               /* [d] */
	tf_enc_layer *enc;              /* [num_layers] */
	tf_dec_layer *dec;              /* [num_decoder_layers] */
} tf_view;

typedef struct tf_tensor {
	char name[128];                 /* Hugging Face name */
	uint32_t rank;
	uint64_t dims[4];
	uint64_t off, numel;            /* in floats, into the flat array */
} tf_tensor;

typedef struct tf_model tf_model;

/* The layout of a configuration (every parameter model_open requires). */
tf_model *tf_model_new(const lc_config *c, lc_err *err);
void tf_model_free(tf_model *tm);
const lc_config *tf_config(const tf_model *tm);
uint64_t tf_nparams(const tf_model *tm);          /* floats in the flat array */
uint32_t tf_ntensors(const tf_model *tm);
const tf_tensor *tf_tensor_at(const tf_model *tm, uint32_t i);
const tf_tensor *tf_tensor_find(const tf_model *tm, const char *name);

/* Named pointers into base[tf_nparams] (weights or gradients). */
tf_view *tf_view_new(const tf_model *tm, float *base, lc_err *err);
void tf_view_free(tf_view *v);

/* Copies every parameter of m (same configuration) into w[tf_nparams]. */
int tf_load(const tf_model *tm, lc_model *m, float *w, lc_err *err);

/* Kernels K[layer][c][h][l], l < Lmax, c < nch: [num_layers, nch, d, Lmax],
 * channels split over threads (the result does not depend on their number). */
int tf_kernels(const tf_model *tm, const tf_view *W, int64_t Lmax, float *K, int threads,
               lc_err *err);
/* Given dK [num_layers, nch, d, Lmax] (d loss / d K), adds the gradients of
 * log_dt, inv_A_real, A_imag, B and C to G. */
int tf_kernels_backward(const tf_model *tm, const tf_view *W, int64_t Lmax, const float *dK,
                        tf_view *G, int threads, lc_err *err);

/* FFT plans (powers of two up to 2 * Lmax), made once; shared by threads. */
typedef struct tf_fft tf_fft;
tf_fft *tf_fft_new(int64_t Lmax, lc_err *err);   /* not thread-safe */
void tf_fft_free(tf_fft *f);

typedef struct tf_opts {
	double dropout;                 /* probability, 0 for none */
	uint64_t seed;                  /* dropout masks, deterministic per example */
	float scale;                    /* gradients are of scale * (summed token loss) */
} tf_opts;

typedef struct tf_out {
	double loss;                    /* summed cross-entropy over counted labels */
	int64_t ntok;                   /* labels counted (not pad_id, not < 0) */
	float *logits;                  /* optional [Lt, V]: filled if non-NULL */
	float *enc;                     /* optional [Ls, d]: encoder output, if non-NULL */
} tf_out;

/* One (source, target) pair: src[Ls] ids, tgt[Lt] labels (decoder input
 * is [decoder_start, tgt[0..Lt-2]]). K from tf_kernels with Kld = Lmax >=
 * Ls. With G non-NULL, adds the gradients of scale * loss to G and to dK
 * [num_layers, nch, d, Kld] (the caller then runs tf_kernels_backward
 * once). Thread-safe for distinct G / dK. */
int tf_example(const tf_model *tm, const tf_view *W, const float *K, int64_t Kld,
               const tf_fft *fft, const int32_t *src, int64_t Ls, const int32_t *tgt,
               int64_t Lt, const tf_opts *o, tf_view *G, float *dK, tf_out *out, lc_err *err);

#endif
