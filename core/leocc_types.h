/* SPDX-License-Identifier: MIT */
/*
 * Fixed-width integer types and function qualifiers for the LeoCC core, so that the same
 * source compiles on the host (libc's <stdint.h>) and inside a BPF program (the BPF side
 * defines LEOCC_BPF and includes vmlinux.h, which provides __u64 and friends, before
 * including core/leocc.c).
 *
 * Only unsigned types are provided on purpose: clang cannot emit signed 64-bit division for
 * BPF, so the core never divides signed values.
 */
#ifndef LEOCC_TYPES_H
#define LEOCC_TYPES_H

#ifdef LEOCC_BPF
typedef __u64 leocc_u64;
typedef __u32 leocc_u32;
typedef __u16 leocc_u16;
typedef __u8 leocc_u8;
/* Every core function is inlined into the struct_ops program that calls it. vmlinux.h does
 * not define __always_inline (bpf_helpers.h does); provide it when absent. */
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define LEOCC_API static __always_inline
#define LEOCC_INTERNAL static __always_inline
#else
#include <stdint.h>
typedef uint64_t leocc_u64;
typedef uint32_t leocc_u32;
typedef uint16_t leocc_u16;
typedef uint8_t leocc_u8;
/* Host: public functions have external linkage (FFI, tests); helpers stay file-local. */
#define LEOCC_API
#define LEOCC_INTERNAL static inline
#endif

#endif /* LEOCC_TYPES_H */
