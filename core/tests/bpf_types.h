/* SPDX-License-Identifier: MIT */
/*
 * The few kernel types the core needs when built with LEOCC_BPF, for the BPF build test of
 * core/ when no vmlinux.h is at hand. The real BPF program includes vmlinux.h instead.
 */
#ifndef LEOCC_TEST_BPF_TYPES_H
#define LEOCC_TEST_BPF_TYPES_H
typedef unsigned long long __u64;
typedef unsigned int __u32;
typedef unsigned short __u16;
typedef unsigned char __u8;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif
