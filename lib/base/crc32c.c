/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI and ext4
 * use it. The SSE4.2 instruction does 8 bytes a cycle where the CPU has it;
 * the table fallback is slicing-by-8. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/crc32c.h"

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int s = 1; s < 8; s++)
			tab[s][i] = (tab[s - 1][i] >> 8) ^ tab[0][tab[s - 1][i] & 0xff];
}

static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n)
{
	pthread_once(&tab_once, tab_init);
	while (n >= 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
		                   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
		              (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		c = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
		    tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
		    tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
		    tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;

	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

uint32_t lc_crc32c(uint32_t crc, const void *buf, size_t n)
{
	uint32_t c = ~crc;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(c, buf, n);
#endif
	return ~crc_soft(c, buf, n);
}
