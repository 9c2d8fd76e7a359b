/*
 * xcache: one document's cross-attention keys and values, computed once
 * from its encoder states for some of a decoder's layers, so that each
 * step reads them (2 L nh dk numbers a layer) instead of doing the folded
 * attention's 4 R nh L d multiply-adds (ops/xattn.h). That is 4 nh d /
 * (2 dk) = 192 times less arithmetic per query row for a 12-head d 768
 * layer, shared by every beam, for memory that grows with L: a decoder
 * keeps as many layers as its budget holds (lc-decode --cross-cache) and
 * folds the rest. Float32, or bf16 under --compute bf16 (half the bytes;
 * the keys and values rounded once, then the bf16 kernels of xattn).
 *
 * Layer i: K_h = E W_k,h^T + b_k,h and V_h = E W_v,h^T + b_v,h for each
 * head h, W [nh dk, d] row-major (the Hugging Face layout), stored
 * head-major [nh][L][dk] so that one head's rows are contiguous.
 */
#ifndef LC_XCACHE_H
#define LC_XCACHE_H

#include <stdint.h>

#include "base/err.h"
#include "ops/xattn.h"

typedef struct xcache xcache;

/* Bytes one layer over L rows takes (keys and values). */
uint64_t xcache_layer_bytes(int64_t L, int nh, int dk, int bf16);

/* Room for nl layers over L rows (bf16: bf16 numbers); NULL and err
 * when out of memory. */
xcache *xcache_new(int nl, int64_t L, int nh, int dk, int bf16, lc_err *err);
void xcache_free(xcache *c);
int xcache_layers(const xcache *c);

/* One layer's projections: W [nh dk, d], biases [nh dk] or NULL. */
typedef struct xcache_w {
	const float *wk, *bk, *wv, *bv;
} xcache_w;

/* Computes every layer from the states, E [L, d] float32 or, E NULL, E16
 * bf16, and w [the cache's layers]. nth threads for the products. */
int xcache_fill(xcache *c, const float *E, const uint16_t *E16, int d, const xcache_w *w,
                int nth, lc_err *err);

/* Attention of the queries q [R, nh dk] (rows ldq apart) over layer li:
 * ctx [R, nh dk] (rows ldc apart), the heads side by side. w as for
 * xattn_fw_kv. */
void xcache_attend(const xcache *c, int li, xattn_work *w, const float *q, int64_t R,
                   int64_t ldq, float *ctx, int64_t ldc);

#endif
