/*
 * statediff: compares two files of little-endian float32 values (lc-cat
 * -o raw of two hidden-state streams, fp32 compute and bf16 compute) and
 * prints, on one line:
 *
 *   n  max|a-b|  max|a|  max|a-b|/max|a|  ||a-b||/||a||  max_i |a_i-b_i|/|a_i| (|a_i| >= max|a|/100)
 *
 * the project's usual figure (the largest difference over the largest
 * value), the relative Euclidean error, and the elementwise relative error
 * over the entries that are not tiny. With -b, B holds bfloat16 values
 * (lc-encode --dtype bf16), widened to float32. A benchmark aid; asserts
 * nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	FILE *fa, *fb;
	float a[4096], b[4096];
	uint16_t h[4096];
	size_t na, nb, n = 0;
	double maxd = 0, maxa = 0, sd = 0, sa = 0, maxrel = 0;
	int pass, bf = argc == 4 && strcmp(argv[1], "-b") == 0;

	if (argc != 3 + bf) {
		fprintf(stderr, "usage: statediff [-b] A.raw B.raw\n");
		return 2;
	}
	argv += bf;
	/* two passes: the first finds max|a| for the elementwise threshold */
	for (pass = 0; pass < 2; pass++) {
		fa = fopen(argv[1], "rb");
		fb = fopen(argv[2], "rb");
		if (!fa || !fb) {
			fprintf(stderr, "statediff: cannot open %s\n", !fa ? argv[1] : argv[2]);
			return 1;
		}
		n = 0;
		while ((na = fread(a, sizeof *a, 4096, fa)) > 0) {
			if (bf) {
				nb = fread(h, sizeof *h, na, fb);
				for (size_t i = 0; i < nb; i++) {
					uint32_t u = (uint32_t)h[i] << 16;
					memcpy(&b[i], &u, sizeof u);
				}
			} else {
				nb = fread(b, sizeof *b, na, fb);
			}
			if (nb != na) {
				fprintf(stderr, "statediff: %s is shorter than %s\n", argv[2], argv[1]);
				return 1;
			}
			for (size_t i = 0; i < na; i++) {
				double x = a[i], d = fabs((double)a[i] - b[i]);

				if (pass == 0) {
					maxa = fabs(x) > maxa ? fabs(x) : maxa;
					maxd = d > maxd ? d : maxd;
					sd += d * d;
					sa += x * x;
				} else if (fabs(x) >= maxa / 100 && d / fabs(x) > maxrel) {
					maxrel = d / fabs(x);
				}
			}
			n += na;
		}
		if (fread(h, sizeof *h, 1, fb) == 1) {
			fprintf(stderr, "statediff: %s is longer than %s\n", argv[2], argv[1]);
			return 1;
		}
		fclose(fa);
		fclose(fb);
	}
	printf("%zu %.3e %.3e %.3e %.3e %.3e\n", n, maxd, maxa, maxa > 0 ? maxd / maxa : 0,
	       sa > 0 ? sqrt(sd / sa) : 0, maxrel);
	return 0;
}
