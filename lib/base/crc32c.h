/*
 * crc32c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI
 * and ext4 use it, incremental: crc = lc_crc32c(crc, p, n), starting at 0;
 * lc_crc32c(0, "123456789", 9) == 0xE3069283. The stream format's record
 * checksum. Thread-safe.
 */
#ifndef LC_CRC32C_H
#define LC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t lc_crc32c(uint32_t crc, const void *p, size_t n);

#endif
