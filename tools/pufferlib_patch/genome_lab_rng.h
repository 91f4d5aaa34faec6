// genome_lab patch of PufferLib 3.0.0 (tools/pufferlib_patch/apply.py): every env owns its random stream.
// Stock PufferLib draws from libc's process-global rand(), seeded by srand(), so any other rand() caller in the
// process (another thread included) shifts a game, and glibc's srand(0) and srand(1) give the same stream.
// Here each env keeps a 64-bit splitmix64 state (Steele, Lea and Flood 2014, "Fast splittable pseudorandom number
// generators"; the finaliser of Vigna's reference splitmix64.c), seeded from (seed, env index).
#ifndef GENOME_LAB_RNG_H
#define GENOME_LAB_RNG_H
#include <stdint.h>

static inline uint64_t genome_lab_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The state of env `index` of a game seeded with `seed`: a bijective mix of the seed, offset by the index and mixed
// again, so every (seed, index) pair starts its own stream (seeds 0 and 1 included).
static inline uint64_t genome_lab_rng_seed(long long seed, long long index) {
    return genome_lab_mix64(genome_lab_mix64((uint64_t)seed) + 0x9e3779b97f4a7c15ULL * (uint64_t)index);
}

// The next draw of `state`, in place of rand(): a non-negative int below 2^31 (the top 31 bits of splitmix64's output).
static inline int genome_lab_rand(uint64_t* state) {
    *state += 0x9e3779b97f4a7c15ULL;
    return (int)(genome_lab_mix64(*state) >> 33);
}
#endif
