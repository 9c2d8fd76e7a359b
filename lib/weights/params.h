/*
 * params: the parameters of a model, as its architecture declares them,
 * and their binding to data.
 *
 * An architecture declares every parameter once (arch/<name>.c): its
 * Hugging Face (or fairseq) name, its shape in terms of the configuration,
 * how a new model initialises it, and a slot, the address of the pointer
 * in the architecture's struct of weights that the data will be bound
 * to; tied weights get alias names. From that one declaration:
 *
 *   - loading: params_bind_tensors matches a weight file's tensors
 *     (safetensors or pytorch_model.bin) against it, refuses a missing
 *     (unless optional), extra (unless ignored), repeated or mis-shaped
 *     tensor and a non-float dtype, and points every slot at float32 data
 *     (the file's bytes in memory, or a copy owned by the set: converted,
 *     or out of a file mapping);
 *   - training: every parameter has an offset into one flat float array
 *     (declaration order); params_bind_flat points the slots into such an
 *     array (weights, or their gradients);
 *   - new models: params_init draws initial values; params_write writes
 *     a safetensors file of every parameter in declaration order.
 *
 * Errors are remembered: a failed declaration (out of memory, a name
 * declared twice) makes params_status fail, so that declaring code needs
 * no checks of its own.
 */
#ifndef LC_PARAMS_H
#define LC_PARAMS_H

#include <stdint.h>

#include "base/err.h"
#include "weights/safetensors.h"

#define PARAM_NAME 160
#define PARAM_RANK 4

/* Element j's initial value, given g, a standard normal draw, and rng for
 * further draws. */
typedef double (*param_init_fn)(uint64_t j, uint32_t rank, const uint64_t *dims, double g,
                                uint64_t *rng);

/* The usual ones: */
double param_init_matrix(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
                                          /* 0.9 g / sqrt(dims[1]) (fan-in scaled) */
double param_init_normal(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
                                          /* g (embeddings) */
double param_init_norm(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
                                          /* 1 + 0.1 g (norm weights) */
double param_init_bias(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
                                          /* 0.1 g */
double param_init_zero(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
double param_init_one(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);

enum {
	PARAM_NO_DECAY = 1u,   /* no weight decay in training (norms, biases, SSM parameters) */
	PARAM_OPTIONAL = 2u,   /* a weight file may lack it: then it is zero (HF buffers such
	                          as BART's final_logits_bias) */
};

typedef struct lc_param {
	char name[PARAM_NAME];
	uint32_t rank;
	uint64_t dims[PARAM_RANK];
	uint64_t numel;
	uint64_t off;           /* in floats, into the flat layout */
	unsigned flags;
	param_init_fn init;
	double std;             /* > 0: init is N(0, std) instead (params_set_normal) */
	int64_t zero_row;       /* with std: this row of a matrix is 0 (-1: none) */
	float **slot;           /* the architecture's pointer to this parameter */
	const st_tensor *src;   /* after params_bind_tensors: the file's tensor (NULL: absent, optional) */
} lc_param;

typedef struct lc_params lc_params;

lc_params *params_new(void);
void params_free(lc_params *p);

/* Declares a parameter of shape dims (rank = the leading non-zero entries,
 * 1 to PARAM_RANK) named by the printf format. */
__attribute__((format(printf, 6, 7)))
void params_add(lc_params *p, float **slot, param_init_fn init, unsigned flags,
                const uint64_t dims[PARAM_RANK], const char *fmt, ...);
/* `alias` is another name of the declared parameter `target` in weight
 * files (tied weights): a file may hold either or several, with the same
 * shape and bytes. */
void params_alias(lc_params *p, const char *alias, const char *target);
/* A tensor name that weight files may hold and loading skips (buffers
 * that are not parameters); a trailing '*' matches any suffix. */
void params_ignore(lc_params *p, const char *name);
/* Parameter i's initial values: init; or, std > 0, N(0, std) with row
 * zero_row (>= 0; -1: none) of a matrix 0 (an embedding's padding row).
 * The draws are params_init's either way (one normal per element). */
void params_set_init(lc_params *p, uint32_t i, param_init_fn init, double std, int64_t zero_row);
/* 0, or -1 with the first declaration error. */
int params_status(const lc_params *p, lc_err *err);

uint32_t params_count(const lc_params *p);
const lc_param *params_at(const lc_params *p, uint32_t i);
const lc_param *params_find(const lc_params *p, const char *name);   /* by name or alias */
uint64_t params_total(const lc_params *p);                           /* floats in the flat layout */

/* Binds every slot to the tensors t(0..n-1) of one weight file (see
 * above); label names the file in messages. release (NULL: none) says
 * the file's bytes are a mapping of it: each tensor is then copied into
 * the process's own memory and release(file, t) called once it has been
 * (st_release); where that memory cannot be had, the mapping is used.
 * The decoders read every weight once a generated token, and from the
 * page cache's pages that ran at half the speed of the same bytes copied
 * (lc-decode, 64 states, greedy, one thread: 46-56 ms a step against
 * 24-27; two threads 17-20 against 13-16). */
int params_bind_tensors(lc_params *p, const st_tensor *(*at)(const void *file, uint32_t i),
                        void (*release)(const void *file, const st_tensor *t),
                        const void *file, uint32_t n, const char *label, lc_err *err);

/* Every slot to base + offset (base [params_total] floats). */
void params_bind_flat(lc_params *p, float *base);
/* base[off ...] = the data the slots point to, for every parameter. */
void params_copy_to_flat(const lc_params *p, float *base);
/* Initial values of every parameter into base, deterministic in seed. */
void params_init(const lc_params *p, float *base, uint64_t seed);
/* Writes base's parameters (or, base NULL, the slots' data) as float32
 * safetensors without aliases, the tensors in name order (as transformers'
 * save_pretrained writes them). */
int params_write(const lc_params *p, const float *base, const char *path, lc_err *err);

#endif
