/*
 * The exact placement search of the `optimal` planner, apart from its CPython
 * binding (_solver.c): plain C99 over arrays, no Python, no global state.
 */
#ifndef MCU_PLANNER_SOLVER_CORE_H
#define MCU_PLANNER_SOLVER_CORE_H

#include <stdint.h>

enum SearchStatus { NOT_FOUND = 0, FOUND = 1, OUT_OF_NODES = 2, OUT_OF_TIME = 3, OUT_OF_MEMORY = 4, OUT_OF_WORK = 5 };

/* 1 when `preorders` (e.g. "WAT,TAW,TWA": up to 8 comma-separated keys of up
 * to 4 letters from WATZCOLUR, see compute_keys) is well formed. */
int solver_preorders_valid(const char *preorders);

/* Looks, for at most `seconds` and (when `max_nodes` > 0) at most `max_nodes`
 * search nodes, for offsets placing every buffer b (size[b] >
 * 0, alive over [start[b], end[b])) below `capacity` with no two buffers alive
 * at once sharing a unit, except that for each of the `num_pairs` triples
 * (lower, upper, height) in `overlap_pairs` (valid: two distinct buffers
 * alive together, 1 <= height <= lower's size, no pair twice), `upper` may
 * start `height` units above `lower` when `lower` sits below it.  Returns
 * FOUND (offset[0..n) filled in), NOT_FOUND (the search was exhausted: no
 * placement exists), OUT_OF_TIME, OUT_OF_WORK (the nodes ran out: the same
 * answer on every machine) or OUT_OF_MEMORY; *nodes is the number of search
 * nodes visited.  `preorders` must be valid. */
int solver_fit(int n, const int64_t *size, const int64_t *start, const int64_t *end, int num_pairs,
               const int64_t *overlap_pairs, int64_t capacity, double seconds, int64_t max_nodes,
               const char *preorders, int64_t *offset, int64_t *nodes);

/* Largest first, first fit: a quick feasible packing (no capacity).  Returns
 * 0 when out of memory. */
int solver_first_fit(int n, const int64_t *size, const int64_t *start, const int64_t *end, int64_t *offset);

#endif /* MCU_PLANNER_SOLVER_CORE_H */
